//! The ETL of listpipe, in the order data flows through an import:
//!
//! - [`pipeline`]: pipeline files, parsed and checked into steps.
//! - [`source`]: files, spreadsheets and queries read into polars frames.
//! - [`remote`]: `http(s)://` and object-store sources downloaded for the
//!   run, with their ETags remembered; uploads of exports.
//! - [`prepare`]: mapping, validation and dedupe: rows to send and rejects.
//! - [`load`]: the target compared and written, with concurrency and
//!   retries. The built-in target is started through
//!   [`load::target::Builtin`], which the binary implements.
//! - [`export`]: groups, segments and blacklists read back out to files.
//! - [`init`]: a first pipeline written from a look at the files.
//! - [`report`]: what a run did; [`html_report`]: the same as one HTML page.
//! - [`metrics`]: the same figures in the Prometheus text format, to a
//!   `*.prom` file rewritten while the run goes and to a Pushgateway.
//! - [`spill`], [`key_store`]: state that grows with the input, spilled to
//!   disk past a budget; [`credentials_lock`]: one refresh of a shared
//!   credentials file at a time.
//! - [`run`]: `listpipe run` and `listpipe check` as functions: a
//!   pipeline's steps in order against a target ([`run::run()`]), or
//!   prepared offline ([`run::check()`]), each answering a report and an
//!   [`run::ExitStatus`].
//!
//! # Checking a pipeline
//!
//! A pipeline file and its CSV, checked offline as `listpipe check` does:
//! the rows are read, mapped and validated, the rejected ones written to
//! the step's rejects file.
//!
//! ```
//! use listpipe_etl::{pipeline, run};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(
//!     dir.path().join("people.csv"),
//!     "email,name\nada@example.com,Ada\nnot an address,Bob\n",
//! )?;
//! std::fs::write(
//!     dir.path().join("news.toml"),
//!     r#"
//! [target]
//! url = "https://api.example.com"
//!
//! [[import]]
//! name = "people"
//! source = "people.csv"
//! group = "News"
//! rejects = "people.rejects.csv"
//! [import.receiver]
//! email = "email"
//! "#,
//! )?;
//! let pipeline = pipeline::load(&dir.path().join("news.toml"))?;
//! let checked = run::check(&pipeline, &run::CheckOptions::default(), &mut ());
//! assert_eq!((checked.verdict.read, checked.verdict.rejected), (2, 1));
//! // Rows were rejected: exit 1, as `listpipe check` ends.
//! assert_eq!(checked.status, run::ExitStatus::PARTIAL);
//! assert_eq!(checked.status.code(), 1);
//! assert!(dir.path().join("people.rejects.csv").exists());
//! # Ok(())
//! # }
//! ```
//!
//! # Running a pipeline
//!
//! The same pipeline run against its target: connect (the token checked
//! with `whoami`), run the steps, close. The run keeps its journals and
//! ledgers under `.listpipe/` of the working directory, as the binary
//! does (`pipeline::load_in` names another folder; [`run::guard::clear`]
//! takes the run lock and decides on an earlier run's journals as the
//! binary does before its first step). The root package's `listpipe` crate has this example running
//! against the built-in server; here, without one, it is only compiled.
//!
//! ```no_run
//! use listpipe_etl::transport::target::{self, TargetOverrides};
//! use listpipe_etl::{pipeline, run};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pipeline = pipeline::load(std::path::Path::new("news.toml"))?;
//! let overrides = TargetOverrides {
//!     token: std::env::var("LISTPIPE_TOKEN").ok(),
//!     ..Default::default()
//! };
//! let conn = target::connect(&pipeline.target, &overrides, &target::NoBuiltin).await?;
//! let opts = run::RunOptions::new(&pipeline, &conn);
//! let outcome = run::run(&pipeline, &conn, &opts, &mut ()).await;
//! conn.close().await;
//! for step in &outcome.report.steps {
//!     step.summary().iter().for_each(|line| eprintln!("{line}"));
//! }
//! std::process::exit(outcome.status.code().into());
//! # }
//! ```
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

/// The target of this module's log events, named as the module was before
/// the crates were split (`listpipe::...`): what `LISTPIPE_LOG` filters on and log
/// lines show stay as they were.
macro_rules! log_target {
    () => {
        const_format::str_replace!(module_path!(), "listpipe_etl", "listpipe")
    };
}

pub mod credentials_lock;
pub mod export;
pub mod html_report;
pub mod init;
pub mod key_store;
pub mod load;
pub mod metrics;
pub mod pipeline;
pub mod prepare;
pub mod profile;
pub mod progress;
pub mod remote;
pub mod report;
pub mod run;
pub mod source;
pub mod spill;
pub mod transport;
