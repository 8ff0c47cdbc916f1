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
//!
//! # Running a pipeline through the library
//!
//! What `listpipe run` does, without the command line: the built-in
//! server started in-process on a free port with a fresh SQLite database,
//! a CSV and its pipeline written, the pipeline run against the server
//! ([`run::run()`]), and the report read. The run keeps its journals and
//! ledgers under `.listpipe/` of the working directory, here the temp dir.
//!
//! ```standalone_crate
//! use listpipe::transport::target::{self, TargetOverrides};
//! use listpipe::{pipeline, run, server};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::env::set_current_dir(dir.path())?;
//! let mut serve = server::ServeOptions::new(dir.path().join("server.db"), "127.0.0.1:0");
//! serve.remember_url = false;
//! let server = server::start(serve).await?;
//! // The first start creates the default account and its token.
//! let token = server.credentials.as_ref().map(|c| c.access_token.clone());
//!
//! std::fs::write(
//!     dir.path().join("people.csv"),
//!     "email,name\nada@example.com,Ada\ngrace@example.com,Grace\nnot an address,Bob\n",
//! )?;
//! std::fs::write(
//!     dir.path().join("news.toml"),
//!     format!(
//!         r#"
//! [target]
//! url = "{}"
//!
//! [[import]]
//! name = "people"
//! source = "people.csv"
//! group = "News"
//! create_group = true
//! [import.receiver]
//! email = "email"
//! [import.global_attributes]
//! firstname = "name"
//! "#,
//!         server.base_url
//!     ),
//! )?;
//! // Its journals, ledgers and rejects in the temp dir, not the working directory.
//! let state = dir.path().join(".listpipe");
//! let pipeline = pipeline::load_in(&dir.path().join("news.toml"), &state)?;
//! let overrides = TargetOverrides {
//!     token,
//!     state_dir: Some(state),
//!     ..Default::default()
//! };
//! let conn = target::connect(&pipeline.target, &overrides, &target::NoBuiltin).await?;
//! let opts = run::RunOptions::new(&pipeline, &conn);
//! let outcome = run::run(&pipeline, &conn, &opts, &mut ()).await;
//! conn.close().await;
//! server.stop().await;
//!
//! let people = &outcome.report.steps[0];
//! assert_eq!(people.import.as_ref().map(|i| i.created), Some(2));
//! assert_eq!(people.prepare.rejected_total(), 1);
//! // A row rejected: exit 1, as `listpipe run` ends.
//! assert_eq!(outcome.status, run::ExitStatus::PARTIAL);
//! assert_eq!(outcome.report.exit_code, 1);
//! # Ok(())
//! # }
//! ```
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

pub use listpipe_api as api;
pub use listpipe_api::email;
pub use listpipe_base::{cause, errln, errtext, hash, outln, state_file};
pub use listpipe_client as client;
pub use listpipe_etl::{
    credentials_lock, export, html_report, init, key_store, load, metrics, pipeline, prepare,
    profile, progress, remote, report, run, source, spill, transport,
};
pub use listpipe_server as server;

pub mod bench;
pub mod cli;
