//! listpipe moves subscriber data in and out of an email-marketing service
//! through its REST API v3. The guided tour, in the order data flows:
//!
//! - [`pipeline`]: pipeline files, parsed and checked into steps.
//! - [`source`]: CSV and spreadsheet files read into polars frames.
//! - [`remote`]: `http(s)://` sources downloaded for the run, with their ETags remembered.
//! - [`prepare`]: mapping, validation and dedupe: rows to send and rejects.
//! - [`email`]: addresses read once, as a careful sender checks them.
//! - [`load`]: the target compared and written, with concurrency and retries.
//! - [`export`]: groups, segments and blacklists read back out to files.
//! - [`report`]: what a run did.
//! - [`spill`]: a temporary on-disk table for state that grows with the input.
//! - [`key_store`]: a set of addresses in bounded memory, spilled past a budget.
//! - [`state_file`]: the one atomic-write path for the run's own files.
//! - [`api`]: the v3 wire model, shared by the client and the server.
//! - [`client`]: `ApiClient`, typed async calls to a v3 API over HTTP.
//! - [`server`]: the built-in target server (axum + SQLite).
//! - [`bench`]: the benchmark harness (`listpipe bench`).
//! - [`cause`]: how an error and its causes are printed.
//! - [`cli`]: one module per subcommand; `main.rs` only dispatches.

pub mod api;
pub mod bench;
pub mod cause;
pub mod cli;
pub mod client;
pub mod credentials_lock;
pub mod email;
pub mod export;
pub mod hash;
pub mod init;
pub mod key_store;
pub mod load;
pub mod pipeline;
pub mod prepare;
pub mod remote;
pub mod report;
pub mod server;
pub mod source;
pub mod spill;
pub mod state_file;
