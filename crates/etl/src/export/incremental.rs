//! Incremental exports (`--incremental`, `incremental = true`): the first
//! run writes every receiver of the selection and records a cursor; each
//! later run writes only the receivers that appeared or whose state changed
//! since (`registered`, `activated`, `deactivated` or `bounced` at or after
//! the cursor, less [`OVERLAP_SECS`]).
//!
//! The changes are read through the API's own runtime filter (spec §4.7):
//! one query per change time, each the selection's rules AND `FIELD bg
//! SECONDS`, over the selection's group; a receiver found by several is
//! written once (by id). So it works against the real service, which has no
//! "changed since" parameter.
//!
//! The cursor is the run's start (this machine's clock, whole seconds),
//! taken before the first page is read: a change landing while the export
//! runs is stamped at or after it, so the next run reads it again even if
//! this one already wrote it. The next run asks from [`OVERLAP_SECS`] before
//! the cursor, so a change in the cursor's own second is never missed; the
//! receivers this run saw in that overlap are kept with the cursor (id and
//! the four times), and the next run skips one it finds unchanged, so an
//! export between two runs without changes is empty.
//!
//! Guarantee: at least once, no gap. Every change of the four times is in
//! the first successful run whose start follows it (given clocks within
//! [`OVERLAP_SECS`] of the server's); a run that fails writes nothing and
//! leaves the cursor where it was, so the next run reads the same changes
//! again. `--full` forgets the cursor: the run writes everything and records
//! a new one. Not followed: changes to attributes or tags alone (they set
//! none of the four times) and deleted receivers.
//!
//! The cursor is a file under `.listpipe/export-cursors/`, named by a hash of what
//! it is bound to: the target (canonical URL and account), and the
//! selection (group, saved filter or rules, type), not the output's path,
//! so dated output names (`out = "…/date={date}/…"`) keep one cursor. It is
//! written through [`listpipe_base::state_file`] only once the export is delivered.

use super::reader::Query;
use crate::load::LoadError;
use listpipe_api::filter::{Rule, RuntimeFilter};
use listpipe_api::{ReceiverRow, ReceiverType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How far before the cursor a run reads again (a change in the cursor's
/// second, or stamped by a clock a little behind this one).
pub const OVERLAP_SECS: i64 = 1;

/// The receiver fields whose times say a receiver appeared or changed.
const CHANGE_FIELDS: [&str; 4] = ["registered", "activated", "deactivated", "bounced"];

/// A receiver as a run saw it: its id and four change times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Seen {
    pub id: i64,
    pub times: [i64; 4],
}

impl Seen {
    fn of(r: &ReceiverRow<'_>) -> Seen {
        Seen {
            id: r.id.0,
            times: [r.registered, r.activated, r.deactivated, r.bounced],
        }
    }
}

/// The file's content.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    /// What the cursor is bound to (the file's name is its hash).
    selection: String,
    /// Unix seconds: the start of the last successful run.
    cursor: i64,
    /// The receivers that run saw at or after `cursor - OVERLAP_SECS`.
    overlap: Vec<Seen>,
}

/// An incremental export's cursor: the last one (if any) and this run's.
#[derive(Debug)]
pub struct Cursor {
    path: PathBuf,
    selection: String,
    /// The last successful run's start; `None`: write everything.
    pub since: Option<i64>,
    before: HashSet<Seen>,
    /// This run's start.
    pub started: i64,
    /// Ids written by this run (only when reading changes: several queries).
    written: Mutex<HashSet<i64>>,
    /// What this run saw in its own overlap.
    overlap: Mutex<Vec<Seen>>,
}

/// Where the cursor of `selection` lives.
fn path_of(state_dir: &Path, selection: &str) -> PathBuf {
    let hash = Sha256::digest(selection.as_bytes());
    let name: String = hash[..12].iter().map(|b| format!("{b:02x}")).collect();
    state_dir
        .join("export-cursors")
        .join(format!("{name}.json"))
}

fn state_error(path: &Path, message: impl std::fmt::Display) -> LoadError {
    LoadError::step(format!(
        "the incremental export's cursor {} cannot be used: {message}; run once with --full to start again",
        path.display()
    ))
}

impl Cursor {
    /// The cursor bound to `target` and the resolved `query` (`full`: none,
    /// start again). A cursor file that cannot be read is an error, never
    /// silently a full export.
    pub fn open(
        state_dir: &Path,
        target: &str,
        query: &Query,
        full: bool,
    ) -> Result<Cursor, LoadError> {
        let selection = format!("{target}\n{query:?}");
        let path = path_of(state_dir, &selection);
        let started = chrono::Utc::now().timestamp();
        let mut cursor = Cursor {
            path,
            selection,
            since: None,
            before: HashSet::new(),
            started,
            written: Mutex::new(HashSet::new()),
            overlap: Mutex::new(Vec::new()),
        };
        if full {
            return Ok(cursor);
        }
        let bytes = match std::fs::read(&cursor.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cursor),
            Err(e) => return Err(state_error(&cursor.path, e)),
        };
        let saved: Saved =
            serde_json::from_slice(&bytes).map_err(|e| state_error(&cursor.path, e))?;
        if saved.selection != cursor.selection {
            return Err(state_error(
                &cursor.path,
                "it belongs to another target or selection",
            ));
        }
        cursor.since = Some(saved.cursor);
        cursor.before = saved.overlap.into_iter().collect();
        Ok(cursor)
    }

    /// The queries of this run: `base` itself for a full run, else one
    /// runtime filter per change time over the same selection. `filter`:
    /// the saved filter's rules and operator when `base` is one.
    pub fn queries(
        &self,
        base: &Query,
        filter: Option<&(Vec<Rule>, String)>,
    ) -> Result<Vec<Query>, LoadError> {
        let Some(since) = self.since else {
            return Ok(vec![base.clone()]);
        };
        let (rules, operator, groups, activeonly) = match base {
            Query::Group { group, kind } => {
                let activeonly = match kind {
                    ReceiverType::All => false,
                    ReceiverType::Active => true,
                    other => {
                        return Err(LoadError::step(format!(
                            "an incremental export follows the receivers of type \"all\" or \"active\", not \"{}\": changes of state are what it writes (each row says deactivated and bounced)",
                            other.as_str()
                        )));
                    }
                };
                (
                    Vec::new(),
                    "AND".to_string(),
                    Some(vec![group.to_string()]),
                    activeonly,
                )
            }
            Query::Filter { group, .. } => {
                let (rules, operator) = filter.cloned().unwrap_or_default();
                (rules, operator, Some(vec![group.to_string()]), false)
            }
            Query::Runtime(f) => (
                f.rules.clone().unwrap_or_default(),
                f.operator.clone().unwrap_or_else(|| "AND".into()),
                f.groups.clone(),
                f.activeonly.unwrap_or(false),
            ),
        };
        if rules.len() > 1 && !operator.eq_ignore_ascii_case("AND") {
            return Err(LoadError::step(
                "an incremental export needs rules combined with AND (operator = \"AND\"): the change times are added to them as rules, and the API has one operator per filter",
            ));
        }
        let after = (since - OVERLAP_SECS - 1).to_string();
        Ok(CHANGE_FIELDS
            .iter()
            .map(|field| {
                let mut rules = rules.clone();
                rules.push(Rule {
                    field: field.to_string(),
                    logic: "bg".into(),
                    condition: after.clone(),
                });
                Query::Runtime(RuntimeFilter {
                    rules: Some(rules),
                    groups: groups.clone(),
                    operator: Some("AND".into()),
                    activeonly: Some(activeonly),
                    ..Default::default()
                })
            })
            .collect())
    }

    /// Whether `r` is written: not already written by this run, and not
    /// seen unchanged in the last run's overlap. Notes what this run saw in
    /// its own overlap.
    pub fn keep(&self, r: &ReceiverRow<'_>) -> bool {
        let seen = Seen::of(r);
        if seen.times.iter().any(|&t| t >= self.started - OVERLAP_SECS) {
            lock(&self.overlap).push(seen);
        }
        if self.since.is_none() {
            return true;
        }
        if self.before.contains(&seen) {
            return false;
        }
        lock(&self.written).insert(seen.id)
    }

    /// Records this run's cursor (after the export is delivered). Takes
    /// `&self`: a page's preparation on a blocking thread may still hold
    /// its clone of the cursor for a moment after its page came back (an
    /// `Arc::try_unwrap` here failed a run under load, now and then).
    pub fn save(&self) -> Result<(), LoadError> {
        let mut overlap = std::mem::take(&mut *lock(&self.overlap));
        overlap.sort_by_key(|s| s.id);
        overlap.dedup();
        let saved = Saved {
            selection: self.selection.clone(),
            cursor: self.started,
            overlap,
        };
        let bytes = serde_json::to_vec_pretty(&saved).map_err(|e| state_error(&self.path, e))?;
        listpipe_base::state_file::write(
            &self.path,
            &bytes,
            listpipe_base::state_file::Access::Shared,
        )
        .map_err(|e| state_error(&self.path, e))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
