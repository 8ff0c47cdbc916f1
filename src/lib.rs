//! listpipe moves subscriber data in and out of an email-marketing service
//! through its REST API v3. This crate is the command line (`cli`, `bench`)
//! over the workspace's libraries, which it re-exports under one name so the
//! commands and the tests read `listpipe::load`, `listpipe::server`. The
//! layers, bottom up (ARCHITECTURE.md):
//!
//! - `listpipe-base`: [`cause`], [`hash`], [`state_file`], the output
//!   streams and exit codes.
//! - `listpipe-api`: the v3 wire model ([`api`]), addresses ([`email`]) and
//!   dates as the contract reads them.
//! - `listpipe-client`: [`client`], typed async calls over HTTP.
//! - `listpipe-server`: [`server`], the built-in target (axum + SQLite or
//!   PostgreSQL).
//! - `listpipe-etl`: [`pipeline`], [`source`], [`remote`], [`prepare`],
//!   [`load`], [`export`], [`init`], [`report`], and the bounded-memory
//!   state ([`spill`], [`key_store`], [`credentials_lock`]).
//! - here: [`cli`], one module per subcommand, and [`bench`], the
//!   benchmark harness; `main.rs` only dispatches.
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

pub use listpipe_api as api;
pub use listpipe_api::email;
pub use listpipe_base::{cause, errln, errtext, hash, outln, state_file};
pub use listpipe_client as client;
pub use listpipe_etl::{
    credentials_lock, export, html_report, init, key_store, load, pipeline, prepare, profile,
    progress, remote, report, run, source, spill, transport,
};
pub use listpipe_server as server;

pub mod bench;
pub mod cli;
