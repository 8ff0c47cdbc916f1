//! The library's progress ([`crate::progress`]) drawn as indicatif bars on
//! standard error, when it is a terminal and the command is not `--quiet`.

use indicatif::{ProgressBar, ProgressStyle};
use listpipe_etl::progress::{Progress, Reporter, Stage};
use std::io::IsTerminal;
use std::sync::Arc;

/// Bars on a terminal, else nothing.
pub(super) fn on_terminal(quiet: bool) -> Progress {
    (!quiet && std::io::stderr().is_terminal()).then(|| Arc::new(Bars) as Arc<dyn Reporter>)
}

#[derive(Debug)]
struct Bars;

impl Reporter for Bars {
    fn stage(&self, label: &str, total: Option<u64>) -> Box<dyn Stage> {
        let (bar, template) = match total {
            Some(n) => (
                ProgressBar::new(n),
                "{prefix:>12} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
            ),
            None => (
                ProgressBar::no_length(),
                "{prefix:>12} {spinner} {pos} rows {per_sec} {msg}",
            ),
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        Box::new(Bar(bar))
    }
}

struct Bar(ProgressBar);

impl Stage for Bar {
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }
    fn inc_length(&self, n: u64) {
        self.0.inc_length(n);
    }
    fn set_length(&self, n: u64) {
        self.0.set_length(n);
    }
    fn set_message(&self, message: String) {
        self.0.set_message(message);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
