//! The built-in target server: every endpoint of the v3 API and its OAuth
//! token service on an embedded SQLite database, so pipelines can be
//! rehearsed and tested without the real service.
//!
//! Request path: [`wire::normalize`] (path suffixes, body decoding, XML
//! answers) → router → [`auth::require_token`] for `/v3` → the resource's
//! route → its store module. [`start`] binds, bootstraps a first account and
//! serves until stopped; tests call it with port 0 and a temp database.
//!
//! Layers, lowest first: [`store`] (knows nothing above it), the error and
//! wire types and the middlewares' own tables, [`state`] ([`AppState`],
//! holding those), [`routes`], and [`serve`] on top, which puts the app
//! together. Beside the app, [`admin`] does the `accounts` commands' work on
//! the store directly. This file only declares the modules and re-exports
//! the entry points; nothing in the crate imports from it.
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

/// The target of this module's log events, named as the module was before
/// the crates were split (`listpipe::server::...`): what `LISTPIPE_LOG` filters on and log
/// lines show stay as they were.
macro_rules! log_target {
    () => {
        const_format::str_replace!(module_path!(), "listpipe_server", "listpipe::server")
    };
}

pub mod admin;
pub mod auth;
pub mod auth_failures;
pub mod connections;
pub mod error;
pub mod faults;
pub mod html;
pub mod metrics;
pub mod openapi;
pub mod overload;
pub mod ratelimit;
pub mod routes;
pub mod serve;
pub mod state;
pub mod store;
pub mod wire;

pub use listpipe_api::credentials_file::{credentials_of, write_credentials};
pub use serve::{DEFAULT_TOKEN_TTL_SECS, RunningServer, ServeError, ServeOptions, app, start};
pub use state::AppState;
pub use store::accounts::DEFAULT_ACCOUNT;
