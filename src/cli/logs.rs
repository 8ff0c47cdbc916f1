//! The log lines (`tracing`) on standard error, fit for a person at a
//! terminal and for a scheduler that captures the stream (cron, Airflow,
//! Kubernetes, a Vector agent):
//!
//! - colour only when standard error is a terminal, and never with
//!   `NO_COLOR` set to anything but the empty string (no-color.org);
//! - `--log-format json` (or `LISTPIPE_LOG_FORMAT=json`): one JSON object a
//!   line, its fields at the top level (`timestamp`, `level`, `message`,
//!   `target`, the event's own such as `rate` or `cause`), the step being
//!   run as `span.step`, and one `step finished` line per step with its
//!   counts, or `step stopped` with its `cause`;
//! - `LISTPIPE_LOG` filters as `RUST_LOG` does (default `listpipe=info`).
//!
//! The summary lines a run prints are not logs: they stay as they are.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for a person (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object a line, for log collectors.
    Json,
}

static JSON: AtomicBool = AtomicBool::new(false);

/// Log lines are JSON: the run also logs each step's end as an event.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// `LISTPIPE_LOG` is not a filter `tracing` understands.
#[derive(Debug, thiserror::Error)]
#[error("LISTPIPE_LOG=\"{value}\" is not a log filter (e.g. \"listpipe=debug\" or \"info\")")]
pub struct FilterError {
    value: String,
    #[source]
    source: tracing_subscriber::filter::ParseError,
}

/// Colour is for a person at a terminal who did not turn it off.
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Sets up the process's log lines once, as the module says.
pub fn init(format: LogFormat) -> Result<(), FilterError> {
    let filter = match std::env::var("LISTPIPE_LOG") {
        Ok(value) if !value.trim().is_empty() => tracing_subscriber::EnvFilter::try_new(&value)
            .map_err(|source| FilterError { value, source })?,
        // Unset (or not Unicode, which no filter is): the default.
        _ => tracing_subscriber::EnvFilter::new("listpipe=info"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR"),
            ))
            .init(),
        LogFormat::Json => {
            JSON.store(true, Ordering::Relaxed);
            builder
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .init()
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
