//! What a run takes before its first step, as the binary runs one: the
//! run lock of the groups it writes ([`crate::load::lock`]), then the
//! decision on the journals an earlier run left ([`super::journals`]).
//! A dry run writes nothing: it takes no lock and leaves the journals be.

use super::ExitStatus;
use super::journals::{Leftover, leftover_journals};
use super::pipeline::written_groups;
use crate::load::journal::Again;
use crate::load::lock::{self, LockError, RunLock};
use crate::pipeline::Pipeline;
use listpipe_base::cause;

/// A run cleared to start: its lock, held until this is dropped, and the
/// lines it says of journals it keeps (another target's).
pub struct Cleared {
    _lock: Option<RunLock>,
    pub notes: Vec<String>,
}

/// Why a run did not start.
#[derive(Debug)]
pub struct NotStarted {
    pub status: ExitStatus,
    /// What to print, `listpipe: ...`.
    pub message: String,
    /// The report's words for the steps not run.
    pub why: &'static str,
}

/// Takes the lock of the groups `pipeline` writes on the resolved
/// `target`, then decides on the journals an earlier run left, as
/// `leftover` asks; `again` names the run in the messages. Neither is
/// touched when the lock is refused.
pub fn clear(
    pipeline: &Pipeline,
    target: &str,
    again: &Again<'_>,
    leftover: Leftover,
    dry_run: bool,
) -> Result<Cleared, NotStarted> {
    if dry_run {
        return Ok(Cleared {
            _lock: None,
            notes: Vec::new(),
        });
    }
    let lock = lock::acquire(&pipeline.file, target, &written_groups(pipeline)).map_err(|e| {
        NotStarted {
            message: format!("listpipe: {}", cause::Chain(&e)),
            status: match e {
                LockError::Held { .. } => ExitStatus::LOCKED,
                LockError::Io { .. } => ExitStatus::IO,
            },
            why: "not run: the run lock could not be taken",
        }
    })?;
    let notes =
        leftover_journals(pipeline, target, again, leftover).map_err(|(status, message)| {
            NotStarted {
                status,
                message,
                why: "not run: a journal of an unfinished run was found",
            }
        })?;
    Ok(Cleared {
        _lock: Some(lock),
        notes,
    })
}
