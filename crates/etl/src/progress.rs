//! Progress, told to whoever shows it. The library counts; the binary draws
//! the bars (with indicatif, `src/cli/progress.rs`); a program that calls the
//! library passes its own [`Reporter`], or none and nothing is shown.

use std::sync::Arc;

/// Starts the progress of each stage a run goes through (a step's writes,
/// an export's pages).
pub trait Reporter: Send + Sync + std::fmt::Debug {
    /// A stage called `label` starts; `total` when it is known up front.
    fn stage(&self, label: &str, total: Option<u64>) -> Box<dyn Stage>;
}

/// One stage's progress. Every method may be called from several tasks.
pub trait Stage: Send + Sync {
    /// `n` more units done.
    fn inc(&self, n: u64);
    /// `n` more units to do (rows arrive in chunks).
    fn inc_length(&self, n: u64);
    /// The units to do, now known.
    fn set_length(&self, n: u64);
    /// A short note beside the count (the rate, the concurrency, a pause).
    fn set_message(&self, message: String);
    /// The stage is over: its line goes.
    fn finish(&self);
}

/// Where a run's progress goes: `None` shows nothing.
pub type Progress = Option<Arc<dyn Reporter>>;

/// The stage `label` of `progress`, or one that shows nothing.
pub fn stage(progress: &Progress, label: &str, total: Option<u64>) -> Box<dyn Stage> {
    match progress {
        Some(r) => r.stage(label, total),
        None => Box::new(Hidden),
    }
}

/// A stage nobody watches.
struct Hidden;

impl Stage for Hidden {
    fn inc(&self, _: u64) {}
    fn inc_length(&self, _: u64) {}
    fn set_length(&self, _: u64) {}
    fn set_message(&self, _: String) {}
    fn finish(&self) {}
}
