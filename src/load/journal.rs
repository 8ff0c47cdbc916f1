//! The run journal: `.listpipe/journal/<pipeline>/<step>.jsonl`, one JSON
//! line per event, append-only. A row is `start`ed before its write is sent
//! and `done` once the target confirmed it; each line carries the row key
//! (source file, row number, email), the action and a hash of the row's
//! body. Lines go to the OS as they happen (so a `kill -9` of listpipe loses
//! none) and are fsync'd every [`SYNC_EVERY`] confirmations and at the end.
//!
//! The first line is a header naming the resolved target and the group the
//! journal belongs to: `--resume` against another target is refused before
//! anything is sent (see [`belongs_elsewhere`]).
//!
//! `run --resume` reads the journal back: confirmed rows with the same hash
//! are not re-sent if the target still holds them as sent (the caller checks
//! against what the target holds, since a target can be restored from a
//! backup); rows started but not confirmed (in flight) are checked against
//! the target first. Lines that cannot be read (a torn last line, damage)
//! are counted and reported. A run that completes removes its journal.
//!
//! A journal write that fails (a full disk) is never ignored: the first
//! failure is kept, the run is asked to stop taking rows, and the step ends
//! with an error naming the file ([`Journal::failure`]).

use super::{LoadError, Stop};
use crate::api::ReceiverInput;
use crate::pipeline::STATE_DIR;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
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
    /// The resolved target (canonical URL and account), for the header.
    pub target: String,
    /// Set when a journal write fails: the run takes no new rows.
    pub stop: Stop,
}

/// The first line of a journal: what it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub ev: String,
    pub target: String,
    pub group: String,
}

/// The longest line a journal holds; anything longer is damage (or a file
/// that is not a journal, such as a device), and reading stops there.
const MAX_LINE: u64 = 64 * 1024;

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
    unreadable: u64,
    /// The first write that failed; the step ends with it.
    failed: Mutex<Option<std::io::Error>>,
    stop: Stop,
}

/// A journal read back: its header, its events, and how many lines could
/// not be read.
#[derive(Default)]
struct ReadBack {
    header: Option<Header>,
    lines: Vec<Line>,
    unreadable: u64,
    /// The file ends without a newline (a line torn by a kill).
    torn: bool,
}

/// Reads a journal line by line, bounded: a torn or garbled line is
/// counted, not fatal; a line longer than [`MAX_LINE`] ends the reading.
fn read_back(path: &Path, header_only: bool) -> std::io::Result<ReadBack> {
    let mut out = ReadBack::default();
    // Only regular files are read: a device or a pipe in the journal's
    // place is not a journal (and may never end).
    if !std::fs::metadata(path)?.is_file() {
        out.unreadable = 1;
        return Ok(out);
    }
    let mut reader = BufReader::new(File::open(path)?);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let ended = buf.last() == Some(&b'\n');
        if !ended && n as u64 >= MAX_LINE {
            out.unreadable += 1;
            break;
        }
        out.torn = !ended;
        let Ok(text) = std::str::from_utf8(&buf).map(str::trim_end) else {
            out.unreadable += 1;
            continue;
        };
        if let Ok(l) = serde_json::from_str::<Line>(text) {
            if header_only {
                break;
            }
            out.lines.push(l);
        } else if let Ok(h) = serde_json::from_str::<Header>(text)
            && h.ev == "header"
            && out.header.is_none()
        {
            out.header = Some(h);
            if header_only {
                break;
            }
        } else if !text.is_empty() {
            out.unreadable += 1;
        }
    }
    Ok(out)
}

/// The header of a leftover journal (`None`: none could be read).
pub fn header(path: &Path) -> Option<Header> {
    read_back(path, true).ok().and_then(|r| r.header)
}

/// The message refusing `--resume` when a leftover journal belongs to
/// another target or group than this run's; `None` when it may continue.
/// A journal without a readable header (damaged, or older than headers) is
/// not refused: every row it calls done is checked against the target anyway.
pub fn belongs_elsewhere(
    path: &Path,
    target: &str,
    group: Option<&str>,
    pipeline_file: &Path,
) -> Option<String> {
    let h = header(path)?;
    let other_target = h.target != target;
    let other_group = group.is_some_and(|g| g != h.group);
    if !other_target && !other_group {
        return None;
    }
    Some(format!(
        "listpipe: the journal {} belongs to {} of {}, not to {} of {}; \
         resume it against that target, or discard it with: listpipe run {} --discard-journal",
        path.display(),
        h.group,
        h.target,
        group.unwrap_or(&h.group),
        target,
        pipeline_file.display()
    ))
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
    /// Opens the journal of `step` (writing `group`) for appending; with
    /// `resume`, reads what an earlier run recorded first.
    pub fn open(opts: &JournalOptions, step: &str, group: &str) -> Result<Journal, LoadError> {
        let path = dir(&opts.pipeline).join(format!("{step}.jsonl"));
        let err = |e: std::io::Error| LoadError::Output {
            path: path.clone(),
            message: e.to_string(),
        };
        let (mut confirmed, mut in_flight) = (HashMap::new(), HashMap::new());
        let mut back = ReadBack::default();
        if opts.resume && path.exists() {
            back = read_back(&path, false).map_err(err)?;
            for l in std::mem::take(&mut back.lines) {
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
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(err)?;
        let empty = file.metadata().map_err(err)?.len() == 0;
        let mut start = Vec::new();
        if back.torn {
            // The next line must not be glued to the torn one.
            start.push(b'\n');
        }
        if empty || back.header.is_none() {
            let header = Header {
                ev: "header".into(),
                target: opts.target.clone(),
                group: group.to_string(),
            };
            start.extend(serde_json::to_vec(&header).map_err(|e| err(std::io::Error::other(e)))?);
            start.push(b'\n');
        }
        if !start.is_empty() {
            file.write_all(&start)
                .and_then(|_| file.sync_data())
                .map_err(err)?;
        }
        Ok(Journal {
            path,
            file: Mutex::new((file, 0)),
            confirmed,
            in_flight,
            unreadable: back.unreadable,
            failed: Mutex::new(None),
            stop: opts.stop.clone(),
        })
    }

    /// Lines of the earlier run's journal that could not be read.
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// The first journal write that failed, as the step's error.
    pub fn failure(&self) -> Option<LoadError> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.as_ref().map(|e| LoadError::Output {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }

    /// Keeps the first failure and stops the run taking rows: rows already
    /// sent finish, the target holds what it confirmed, and `--resume`
    /// checks every row against it.
    fn fail(&self, e: std::io::Error) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_none() {
            *failed = Some(e);
        }
        self.stop.set();
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
        let mut json = match serde_json::to_vec(&line) {
            Ok(j) => j,
            Err(e) => return self.fail(std::io::Error::other(e)),
        };
        json.push(b'\n');
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // One write per line: what reached the OS survives a kill of listpipe.
        let mut written = guard.0.write_all(&json);
        if ev == "done" && written.is_ok() {
            guard.1 += 1;
            if guard.1.is_multiple_of(SYNC_EVERY) {
                written = guard.0.sync_data();
            }
        }
        drop(guard);
        if let Err(e) = written {
            self.fail(e);
        }
    }

    /// Makes everything recorded so far durable.
    pub fn sync(&self) {
        let guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let synced = guard.0.sync_data();
        drop(guard);
        if let Err(e) = synced {
            self.fail(e);
        }
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
    read_back(path, false)
        .map(|r| r.lines.into_iter().map(|l| (l.ev, l.email)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_line_that_cannot_be_written_stops_the_run_and_becomes_the_steps_error() {
        let file = OpenOptions::new().append(true).open("/dev/full").unwrap();
        let stop = Stop::default();
        let j = Journal {
            path: PathBuf::from("people.jsonl"),
            file: Mutex::new((file, 0)),
            confirmed: HashMap::new(),
            in_flight: HashMap::new(),
            unreadable: 0,
            failed: Mutex::new(None),
            stop: stop.clone(),
        };
        let key = (0, 2, "a@example.com".to_string());
        j.started(&key, "create", "h");
        assert!(stop.is_set(), "the run takes no new rows");
        let err = j.failure().unwrap().to_string();
        assert!(
            err.starts_with("cannot write people.jsonl: No space left on device"),
            "{err}"
        );
    }

    #[test]
    fn torn_and_garbled_lines_are_counted_and_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("people.jsonl");
        std::fs::write(
            &path,
            b"{\"ev\":\"header\",\"target\":\"t\",\"group\":\"g\"}\n\
              {\"ev\":\"done\",\"file\":0,\"row\":2,\"email\":\"a@x.de\",\"action\":\"create\",\"hash\":\"h\"}\n\
              \xff\xfe\x00\n\
              {\"ev\":\"done\",\"fi",
        )
        .unwrap();
        let back = read_back(&path, false).unwrap();
        assert_eq!(back.header.unwrap().target, "t");
        assert_eq!(back.lines.len(), 1);
        assert_eq!(back.unreadable, 2);
        assert!(back.torn);
    }
}
