//! The v3 wire model: serde types for every resource of the API, the route
//! paths and the error body. Shared by the client and the built-in server, so
//! both sides agree on one reading of `spec/api-v3.md` and `docs/wire.md`.
//!
//! Types here hold no I/O: no reqwest, no axum, no SQL. Read types are
//! lenient (a number may arrive as a string, a boolean as `"1"`), because the
//! same structs decode XML and form bodies, where every value is text. The
//! one file written here is the credentials file ([`credentials_file`]),
//! which the server and the client both write.
//!
//! With them, the contract's rules for the two values both sides must read
//! alike: an address ([`email`]) and a date or timestamp ([`time`]).
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

pub mod attribute;
pub mod batch;
pub mod blacklist;
pub mod client_info;
pub mod credentials_file;
pub mod debug;
pub mod email;
pub mod error;
pub mod filter;
pub mod form;
pub mod group;
pub mod id;
pub mod lenient;
pub mod oauth;
pub mod paths;
pub mod receiver;
pub mod tag;
pub mod time;

pub use attribute::{
    Attribute, AttributeInput, AttributeType, AttributeValue, AttributeValueInput,
};
pub use batch::{BatchReceiver, BatchStatus};
pub use blacklist::{BlacklistBatch, BlacklistEntry, BlacklistValidate, BlocklistInput};
pub use error::ErrorBody;
pub use group::{Group, GroupInput, GroupStats};
pub use id::Id;
pub use oauth::{OAuthError, TokenResponse};
pub use receiver::{
    Event, Order, Receiver, ReceiverInput, ReceiverQuery, ReceiverRow, ReceiverType, detail,
};
pub use tag::{TagsInput, normalize_tag};
