//! The target's rate limit, remembered between runs (issue 57): what a run
//! learned from the target's 429s is kept per target and account in the
//! run state, `.listpipe/rates/<key>/rate.json` beside the journals
//! (written through [`listpipe_base::state_file`]), with the time it was
//! learned. The next run starts at it and probes upward from there, instead
//! of meeting the limit with a burst of refusals every night.
//!
//! Decisions:
//! - A rate learned within [`TRUSTED_FOR`] is the target's: the run starts
//!   paced at it, as if it had just learned it. An older one is a starting
//!   hint only: the run starts at it but rises quickly, as after a rate
//!   learned from a handful of answers (limits change with plans, and a
//!   rate from last month may be far too low).
//! - Runs on the same target and account at the same time divide it: each
//!   run holds an exclusive lock on a file of its own in the same folder
//!   (`run-<pid>-<n>.lock`) while it runs, and counts the files locked by
//!   others when it starts; the operating system drops the lock of a run
//!   that dies, and the next run removes its file. Each run starts at its
//!   share, and saves its rate times the runs it shared with.
//! - Which rate is saved: the one that held at the end (not a probe above
//!   it that was still being tried), only when the run was paced by the
//!   target (learned or remembered); a run that met no limit leaves the
//!   memory as it was.
//! - Nothing here fails a run: a memory that cannot be read or written is
//!   a debug line, and the run learns the rate again.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a remembered rate is the target's own; older, a hint.
pub const TRUSTED_FOR: Duration = Duration::from_secs(24 * 3600);

/// What is kept of a target's rate.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    /// The target as journals name it (canonical URL and account).
    target: String,
    /// Requests a second the account's runs together went at.
    per_second: f64,
    /// When it was learned (Unix seconds).
    learned_unix: u64,
}

/// Where the run's starting rate came from: the report's `requests.start`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartRate {
    /// Requests a second this run started at (its share).
    pub per_second: f64,
    /// `remembered` (learned within [`TRUSTED_FOR`]) or `hint` (older).
    pub from: &'static str,
    /// The rate remembered for the account, before it was divided.
    pub remembered_per_second: f64,
    /// How long ago it was learned, seconds.
    pub age_secs: u64,
    /// Runs on the same target and account at the start, this one included.
    pub runs_sharing: usize,
}

impl StartRate {
    /// The remembered rate is the target's own (not only a hint).
    pub fn trusted(&self) -> bool {
        self.from == "remembered"
    }

    /// In words, for the summary and the progress line.
    pub fn describe(&self) -> String {
        let shared = match self.runs_sharing {
            1 => String::new(),
            n => format!(
                ", {} req/s divided between {n} runs",
                round2(self.remembered_per_second)
            ),
        };
        let hint = if self.trusted() {
            ""
        } else {
            " (a hint only: older than a day)"
        };
        format!(
            "started at {} req/s, remembered from a run {} ago{shared}{hint}",
            round2(self.per_second),
            ago(self.age_secs)
        )
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn ago(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

/// A run's hold on the memory of one target: registered among the runs
/// sharing it until dropped.
#[derive(Debug)]
pub struct Memory {
    dir: PathBuf,
    target: String,
    /// This run's lock file, held while it runs.
    run: Option<(PathBuf, File)>,
    /// Runs sharing the target when this one started, itself included.
    sharing: usize,
}

impl Memory {
    /// Opens the memory of `target` under `state` (the state folder,
    /// `.listpipe`) and registers this run among those sharing it.
    pub fn open(state: &Path, target: &str) -> Memory {
        use sha2::{Digest, Sha256};
        let key = hex::encode(&Sha256::digest(target.as_bytes())[..8]);
        let dir = state.join("rates").join(key);
        let run = register(&dir);
        let sharing = others(&dir, run.as_ref().map(|(p, _)| p.as_path())) + 1;
        Memory {
            dir,
            target: target.to_string(),
            run,
            sharing,
        }
    }

    /// The rate to start at, if one is remembered for this target.
    pub fn start(&self) -> Option<StartRate> {
        let saved = self.read()?;
        if !(saved.per_second.is_finite() && saved.per_second > 0.0) {
            return None;
        }
        let age_secs = now_unix().saturating_sub(saved.learned_unix);
        Some(StartRate {
            per_second: saved.per_second / self.sharing as f64,
            from: if Duration::from_secs(age_secs) <= TRUSTED_FOR {
                "remembered"
            } else {
                "hint"
            },
            remembered_per_second: saved.per_second,
            age_secs,
            runs_sharing: self.sharing,
        })
    }

    /// Saves `per_second`, the rate this run held at its end: the
    /// account's, times the runs it shares with (the most of at its start
    /// and now).
    pub fn save(&self, per_second: f64) {
        let now_sharing = others(&self.dir, self.run.as_ref().map(|(p, _)| p.as_path())) + 1;
        let saved = Saved {
            target: self.target.clone(),
            per_second: round2(per_second * self.sharing.max(now_sharing) as f64),
            learned_unix: now_unix(),
        };
        let path = self.dir.join("rate.json");
        let written = serde_json::to_vec_pretty(&saved)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                listpipe_base::state_file::write(
                    &path,
                    &bytes,
                    listpipe_base::state_file::Access::Shared,
                )
                .map_err(|e| e.source)
            });
        match written {
            Ok(()) => {
                tracing::debug!(target: log_target!(), per_second = saved.per_second, "the target's rate remembered")
            }
            Err(e) => {
                tracing::debug!(target: log_target!(), error = %e, path = %path.display(), "the target's rate could not be remembered")
            }
        }
    }

    fn read(&self) -> Option<Saved> {
        let text = std::fs::read(self.dir.join("rate.json")).ok()?;
        let saved: Saved = serde_json::from_slice(&text).ok()?;
        // A hash shared by two targets (never seen) keeps them apart.
        (saved.target == self.target).then_some(saved)
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Some((path, _file)) = self.run.take() {
            // Removed while locked; the lock goes with `_file` right after.
            let _ = std::fs::remove_file(path);
        }
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Creates and locks this run's file in `dir`.
fn register(dir: &Path) -> Option<(PathBuf, File)> {
    std::fs::create_dir_all(dir).ok()?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = dir.join(format!("run-{}-{nanos}.lock", std::process::id()));
    let file = File::create(&path).ok()?;
    match file.try_lock() {
        Ok(()) => Some((path, file)),
        Err(_) => None,
    }
}

/// The run files in `dir` other than `mine` that a running process holds;
/// files no process holds (their run died) are removed.
fn others(dir: &Path, mine: Option<&Path>) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut held = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let is_run = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("run-") && n.ends_with(".lock"));
        if !is_run || Some(path.as_path()) == mine {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match file.try_lock() {
            // Nobody holds it: its run is gone.
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(std::fs::TryLockError::WouldBlock) => held += 1,
            Err(_) => {}
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_rate_is_where_the_next_run_starts_and_runs_at_once_divide_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = "http://localhost:1 (account 1)";
        let first = Memory::open(dir.path(), target);
        assert_eq!(first.start(), None);
        first.save(4.5);
        drop(first);
        let a = Memory::open(dir.path(), target);
        let start = a.start().unwrap();
        assert_eq!(
            (start.per_second, start.from, start.runs_sharing),
            (4.5, "remembered", 1)
        );
        // A second run while the first still runs: half each.
        let b = Memory::open(dir.path(), target);
        let start = b.start().unwrap();
        assert_eq!((start.per_second, start.runs_sharing), (2.25, 2));
        assert!(
            start.describe().contains("divided between 2 runs"),
            "{}",
            start.describe()
        );
        // What b saves is the account's: its share times the runs.
        b.save(2.2);
        drop(b);
        drop(a);
        let c = Memory::open(dir.path(), target);
        assert_eq!(c.start().unwrap().per_second, 4.4);
        // Another target, or an account's other memory, is not this one's.
        assert_eq!(
            Memory::open(dir.path(), "http://localhost:2 (account 1)").start(),
            None
        );
        drop(c);
        // No run files are left behind.
        let left: Vec<_> = walk(dir.path())
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("run-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn an_old_rate_is_a_hint_only() {
        let dir = tempfile::tempdir().unwrap();
        let target = "http://localhost:1 (account 1)";
        let m = Memory::open(dir.path(), target);
        let old = Saved {
            target: target.into(),
            per_second: 10.0,
            learned_unix: now_unix() - TRUSTED_FOR.as_secs() - 60,
        };
        std::fs::write(m.dir.join("rate.json"), serde_json::to_vec(&old).unwrap()).unwrap();
        let start = m.start().unwrap();
        assert_eq!((start.from, start.trusted()), ("hint", false));
        assert!(
            start.describe().contains("a hint only"),
            "{}",
            start.describe()
        );
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }
}
