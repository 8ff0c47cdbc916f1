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
//! - [`spill`], [`key_store`]: state that grows with the input, spilled to
//!   disk past a budget; [`credentials_lock`]: one refresh of a shared
//!   credentials file at a time.
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
