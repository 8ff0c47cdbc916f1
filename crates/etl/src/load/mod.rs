//! Load: compare the prepared rows with the target and write what differs,
//! with bounded concurrency and retries, never holding the whole file as
//! requests. One module per step kind; [`target`] connects, [`retry`]
//! decides what is tried again.

pub mod blacklist;
mod chunk;
mod diff;
mod held;
pub mod import;
pub mod journal;
mod ledger;
pub mod lock;
mod lookup;
pub mod mirror;
mod outcome;
mod plan;
pub mod plan_file;
mod rows;
mod write;

pub use plan_file::PlanFile;
// The transport, by its old paths too (`load::target`, `load::controller`...).
use crate::transport::flow;
pub use crate::transport::{
    ConnectError, Stop, breaker, controller, identity, remembered, requests, retry, target, window,
};

use listpipe_base::cause::Cause;
use listpipe_client::ClientError;
use std::path::PathBuf;

/// Blacklist entries per batch request (spec §8).
pub const BATCH: usize = listpipe_api::blacklist::MAX_BATCH;
/// Receiver pages are read at the spec's maximum size.
pub const PAGE: i64 = listpipe_api::receiver::MAX_PAGESIZE;

/// Why a step (or the whole run) could not go on. Errors keep their cause
/// as a source, printed as `caused by:` lines ([`crate::cause`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The target cannot be reached, refuses the credentials, or stopped
    /// answering mid-run: the run stops (exit code 3).
    #[error("{what}")]
    Target {
        what: String,
        #[source]
        cause: Option<Cause>,
    },
    /// A request the target answered. Whether it stops the run is
    /// [`LoadError::stops_run`]'s decision: a refusal of this step's
    /// request (400, 404, 409, 422...) fails the step only.
    #[error(transparent)]
    Api(#[from] ClientError),
    /// The step cannot run as written (no such group...).
    #[error("{what}")]
    Step {
        what: String,
        #[source]
        cause: Option<Cause>,
    },
    /// The run's own state or output could not be written (exit code 74).
    #[error("cannot write {path}: {message}")]
    Output { path: PathBuf, message: String },
    /// The run's own state cannot be used as it is (a damaged mirror
    /// ledger): the step is refused and the file left alone (exit code 74).
    #[error("{path}: {message}")]
    State { path: PathBuf, message: String },
    /// Mirror mode's guard: more removals planned than allowed.
    #[error("{0}")]
    Guard(String),
    /// An import stopped by `cause` (the target lost, the journal
    /// unwritable) after writing what `outcome` counts: the run stops as
    /// `cause` says, and its report still shows the step's rows.
    #[error("{cause}")]
    Unfinished {
        outcome: Box<import::ImportOutcome>,
        cause: Box<LoadError>,
    },
}

impl From<ConnectError> for LoadError {
    fn from(e: ConnectError) -> Self {
        LoadError::Target {
            what: e.what,
            cause: e.cause,
        }
    }
}

impl LoadError {
    /// The target is unreachable or refuses us: no later step can do better.
    pub fn target(what: impl Into<String>, cause: impl Into<Option<Cause>>) -> Self {
        LoadError::Target {
            what: what.into(),
            cause: cause.into(),
        }
    }

    /// This step cannot run as written; the run goes on with the next.
    pub fn step(what: impl Into<String>) -> Self {
        LoadError::Step {
            what: what.into(),
            cause: None,
        }
    }

    /// This error, after `outcome`'s rows were written (see
    /// [`LoadError::Unfinished`]).
    pub fn unfinished(self, outcome: &import::ImportOutcome) -> Self {
        let mut outcome = outcome.clone();
        outcome.stopped = true;
        LoadError::Unfinished {
            outcome: Box::new(outcome),
            cause: Box::new(self),
        }
    }

    /// The error itself and what its step wrote, if it says.
    pub fn split(self) -> (LoadError, Option<import::ImportOutcome>) {
        match self {
            LoadError::Unfinished { outcome, cause } => (*cause, Some(*outcome)),
            e => (e, None),
        }
    }

    /// Exit code 3 material: the target unreachable, stopped answering,
    /// refusing the credentials (401, 403), or answering only with errors
    /// of its own (5xx, 429 through every retry). A refusal of the request
    /// itself (other 4xx) is the step's failure, not the target's.
    pub fn stops_run(&self) -> bool {
        match self {
            LoadError::Target { .. } => true,
            LoadError::Unfinished { cause, .. } => cause.stops_run(),
            LoadError::Api(e) => !e.is_refusal(),
            _ => false,
        }
    }
}

/// How receivers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// The batch upsert extension when the target has it, else single requests.
    #[default]
    Auto,
    /// One request per receiver, through the spec's endpoints only.
    Single,
}

/// How a run writes, shared by every step.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// The most requests ever in flight (the controller's upper bound):
    /// bounds the streams of rows; the controller sets the actual limit.
    pub concurrency: usize,
    pub writes: WriteMode,
    /// The run's state folder ([`crate::pipeline::Pipeline::state_dir`]).
    pub state_dir: std::path::PathBuf,
    /// Where the pipeline's state lives ([`crate::pipeline::state_name`]:
    /// its path from the working directory): keys the ledger.
    pub pipeline: String,
    /// The pipeline file's bare name, which keyed the ledger before its
    /// path did: a ledger found only there is copied to its new place.
    pub pipeline_name: String,
    /// The target, named so that it stays the same from run to run (the
    /// built-in target by its database, not its port): keys the ledger.
    pub target: String,
    /// Mirror mode may remove more than its guard allows.
    pub allow_mass_removal: bool,
    pub retries: u32,
    pub dry_run: bool,
    /// Where progress goes (the binary's bars on a terminal; `None`: nowhere).
    pub progress: crate::progress::Progress,
    /// Where import steps journal their writes (`None`: no journal).
    pub journal: Option<journal::JournalOptions>,
    /// Set by Ctrl-C or SIGTERM: take no new rows.
    pub stop: Stop,
    /// Receivers of a target's group kept in memory for the diff; past
    /// this they go to a temporary file (`load/held.rs`). Set once by the
    /// CLI ([`crate::spill::TARGET_SPILL_AFTER`], or `LISTPIPE_SPILL_AFTER`).
    pub spill_after: usize,
}

/// What happened to each input row of a dry run (the plan file's `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    Unchanged,
    Blocked,
    Invalid,
    Duplicate,
    Failed,
    /// Mirror mode: deactivated or deleted (not in the source any more).
    Remove,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Unchanged => "unchanged",
            Action::Blocked => "blocked",
            Action::Invalid => "invalid",
            Action::Duplicate => "duplicate",
            Action::Failed => "failed",
            Action::Remove => "remove",
        }
    }
}

/// One line of a plan file.
pub struct PlanRow {
    pub row_number: u64,
    pub email: String,
    pub action: Action,
    pub detail: String,
}

/// The temporary file of rejected rows could not be written (most often a
/// full `TMPDIR`): the run stops naming the folder, like any state it writes.
pub fn spool_error(e: crate::spill::SpillError) -> LoadError {
    let (path, message) = e.dir_and_reason();
    LoadError::Output {
        path,
        message: format!(
            "{message} (the temporary file of rows the target refused: set TMPDIR to a folder with room)"
        ),
    }
}

/// The progress of a step's writes: its total grows as chunks come.
pub fn progress_bar(opts: &WriteOptions, label: &str) -> Box<dyn crate::progress::Stage> {
    crate::progress::stage(&opts.progress, label, Some(0))
}
