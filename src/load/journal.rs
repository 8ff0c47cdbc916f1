//! The run journal: `.listpipe/journal/<pipeline>/<step>.jsonl`, one JSON
//! line per event, append-only. A row is `start`ed before its write is sent
//! and `done` once the target confirmed it; each line carries the row key
//! (source file, row number, email), the action and a hash of the row's
//! body. Lines go to the OS as they happen (so a `kill -9` of listpipe loses
//! none) and are fsync'd every [`SYNC_EVERY`] confirmations and at the end.
//!
//! `run --resume` reads the journal back: confirmed rows with the same hash
//! are not sent again; rows started but not confirmed (in flight) are checked
//! against the target first. A run that completes removes its journal.

use super::LoadError;
use crate::api::ReceiverInput;
use crate::pipeline::STATE_DIR;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Confirmations between two fsyncs.
pub const SYNC_EVERY: u64 = 256;

/// A row of a source: file index, row number, email.
pub type RowKey = (u32, u64, String);

/// How a step uses the journal (none in a dry run).
#[derive(Debug, Clone)]
pub struct JournalOptions {
    pub pipeline: String,
    pub resume: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    ev: String,
    file: u32,
    row: u64,
    email: String,
    action: String,
    hash: String,
}

/// What an earlier run recorded of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prior {
    /// Not in the journal (or with another body): handled as usual.
    New,
    /// Confirmed by the target with this very body: not sent again.
    Confirmed,
    /// Sent but not confirmed: checked against the target first.
    InFlight,
}

pub struct Journal {
    path: PathBuf,
    file: Mutex<(File, u64)>,
    confirmed: HashMap<RowKey, String>,
    in_flight: HashMap<RowKey, String>,
}

/// The journal directory of a pipeline.
pub fn dir(pipeline: &str) -> PathBuf {
    Path::new(STATE_DIR).join("journal").join(pipeline)
}

/// The journals an earlier run of `pipeline` left behind.
pub fn leftover(pipeline: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir(pipeline)) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    found.sort();
    found
}

/// Removes a pipeline's journals (`--discard-journal`, or a completed run).
pub fn discard(pipeline: &str) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir(pipeline)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A stable hash of a row's body: SHA-256 of its JSON, 16 bytes in hex.
pub fn hash(body: &ReceiverInput) -> String {
    let json = serde_json::to_vec(body).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl Journal {
    /// Opens the journal of `step` for appending; with `resume`, reads what
    /// an earlier run recorded first.
    pub fn open(opts: &JournalOptions, step: &str) -> Result<Journal, LoadError> {
        let path = dir(&opts.pipeline).join(format!("{step}.jsonl"));
        let err = |e: std::io::Error| LoadError::Output {
            path: path.clone(),
            message: e.to_string(),
        };
        let (mut confirmed, mut in_flight) = (HashMap::new(), HashMap::new());
        if opts.resume
            && let Ok(f) = File::open(&path)
        {
            // A line cut short by a kill is skipped: its row counts as unknown.
            for line in BufReader::new(f).lines().map_while(Result::ok) {
                let Ok(l) = serde_json::from_str::<Line>(&line) else {
                    continue;
                };
                let key = (l.file, l.row, l.email);
                if l.ev == "done" {
                    in_flight.remove(&key);
                    confirmed.insert(key, l.hash);
                } else {
                    confirmed.remove(&key);
                    in_flight.insert(key, l.hash);
                }
            }
        }
        std::fs::create_dir_all(dir(&opts.pipeline)).map_err(err)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(err)?;
        Ok(Journal {
            path,
            file: Mutex::new((file, 0)),
            confirmed,
            in_flight,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What an earlier run recorded of `key`, sent with body hash `hash`.
    pub fn prior(&self, key: &RowKey, hash: &str) -> Prior {
        if self.confirmed.get(key).is_some_and(|h| h == hash) {
            Prior::Confirmed
        } else if self.in_flight.contains_key(key) || self.confirmed.contains_key(key) {
            // Confirmed with another body, or sent and never confirmed:
            // either way the target decides.
            Prior::InFlight
        } else {
            Prior::New
        }
    }

    /// Records that `key`'s write is about to be sent.
    pub fn started(&self, key: &RowKey, action: &str, hash: &str) {
        self.append("start", key, action, hash);
    }

    /// Records that the target confirmed `key`'s write.
    pub fn confirmed(&self, key: &RowKey, action: &str, hash: &str) {
        self.append("done", key, action, hash);
    }

    fn append(&self, ev: &str, key: &RowKey, action: &str, hash: &str) {
        let line = Line {
            ev: ev.to_string(),
            file: key.0,
            row: key.1,
            email: key.2.clone(),
            action: action.to_string(),
            hash: hash.to_string(),
        };
        let Ok(mut json) = serde_json::to_vec(&line) else {
            return;
        };
        json.push(b'\n');
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // One write per line: what reached the OS survives a kill of listpipe.
        let _ = guard.0.write_all(&json);
        if ev == "done" {
            guard.1 += 1;
            if guard.1.is_multiple_of(SYNC_EVERY) {
                let _ = guard.0.sync_data();
            }
        }
    }

    /// Makes everything recorded so far durable.
    pub fn sync(&self) {
        let guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = guard.0.sync_data();
    }
}

/// A run's answer to a leftover journal, for the message that stops it.
pub fn leftover_message(pipeline_file: &Path, found: &[PathBuf]) -> String {
    let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
    format!(
        "listpipe: an earlier run of this pipeline did not finish (journal: {}); \
         continue it with: listpipe run {} --resume, or discard it with: \
         listpipe run {} --discard-journal",
        list.join(", "),
        pipeline_file.display(),
        pipeline_file.display()
    )
}

/// Parses the journal lines of a file (for tests and tools): (event, email).
pub fn read_events(path: &Path) -> Vec<(String, String)> {
    let Ok(f) = File::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in BufReader::new(f).lines().map_while(Result::ok) {
        if let Ok(l) = serde_json::from_str::<Line>(&line) {
            out.push((l.ev, l.email));
        }
    }
    out
}
