//! listpipe moves subscriber data in and out of an email-marketing service
//! through its REST API v3. The guided tour, in the order data flows:
//!
//! - [`api`]: the v3 wire model, shared by the client and the server.
//! - [`client`]: `ApiClient`, typed async calls to a v3 API over HTTP.
//! - [`server`]: the built-in target server (axum + SQLite).
//! - [`cli`]: one module per subcommand; `main.rs` only dispatches.

pub mod api;
pub mod cli;
pub mod client;
pub mod server;
