//! The run journal: `.listpipe/journal/<pipeline>/<step>-<key>.jsonl`, one
//! JSON line per event, append-only. `<pipeline>` is the pipeline's path
//! from the working directory ([`crate::pipeline::state_name`]), so two
//! same-named pipelines of two folders never share one; `<key>` is the
//! start of a SHA-256 of the resolved target (canonical URL and account,
//! or the built-in target's database) and the step's group, as the mirror
//! ledger's ([`path`]), so one pipeline run against two targets (its
//! `[target]`, `--target-url`, `LISTPIPE_URL`) or into another group keeps
//! two journals. A run sees only its own ([`found`]): it refuses to write
//! past them, resumes them, discards them, and removes them when it
//! completes; every other journal is kept as it is.
//!
//! A row is `start`ed before its write is sent and `done` once the target
//! confirmed it; each line carries the row key
//! (source file, row number, email), the action and a hash of the row's
//! body. A dedicated thread writes them ([`writer`]), one write per batch
//! of rows: a row's `start` is with the OS before its request is sent, its
//! `done` follows the acknowledgement; lines are fsync'd every
//! [`SYNC_EVERY`] confirmations and at the end.
//!
//! The first line is a header naming the resolved target and the group the
//! journal belongs to: it tells a journal of the layout before targets
//! keyed the name (`<step>.jsonl`) for this run's or another's, and a
//! `--resume` that finds only other targets' journals is refused before
//! anything is sent, naming them (see [`belongs_elsewhere`]).
//!
//! A row given up by a stop before any of its requests went (it waited for
//! room, or for the rate) gets an `unsent` line after its `start`.
//!
//! `run --resume` reads the journal back: confirmed rows with the same hash
//! are not re-sent if the target still holds them as sent (the caller checks
//! against what the target holds, since a target can be restored from a
//! backup); rows started but not confirmed (in flight) are checked against
//! the target first. Lines that cannot be read (a torn last line, damage)
//! are counted and reported. What was read is kept per row in bounded
//! memory, spilled past a budget ([`index`]), and asked a chunk at a time. A run that completes removes its journal.
//!
//! A journal write that fails (a full disk) is never ignored: the first
//! failure is kept, the run is asked to stop taking rows, and the step ends
//! with an error naming the file ([`Journal::failure`]).

mod files;
mod index;
mod writer;

use super::{LoadError, Stop};
pub use files::{
    Again, Elsewhere, Found, StepKey, adopt, belongs_elsewhere, dir, discard, discard_own, found,
    kept_note, leftover_message, path,
};
pub use index::Last;
use index::Recorded;
use listpipe_api::ReceiverInput;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use writer::{Device, Failure, Writer};

/// Confirmations between two fsyncs.
pub const SYNC_EVERY: u64 = 256;

/// A row of a source: file index, row number, email.
pub type RowKey = (u32, u64, String);

/// One row's journal line: its key, the action and the body's hash.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub key: &'a RowKey,
    pub action: &'a str,
    pub hash: &'a str,
}

/// How a step uses the journal (none in a dry run).
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// The run's state folder ([`crate::pipeline::Pipeline::state_dir`]).
    pub state_dir: PathBuf,
    /// Where the pipeline's state lives in it ([`crate::pipeline::state_name`]).
    pub pipeline: String,
    pub resume: bool,
    /// The resolved target (canonical URL and account): names the journal
    /// ([`path`]) and goes in its header.
    pub target: String,
    /// Set when a journal write fails: the run takes no new rows.
    pub stop: Stop,
    /// Rows of an earlier run's journal kept in memory; past this they go
    /// to a temporary file ([`crate::spill::SPILL_AFTER`] unless `LISTPIPE_SPILL_AFTER` says otherwise).
    pub spill_after: usize,
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

/// A line as written: the fields of [`Line`], in its order, borrowed.
#[derive(serde::Serialize)]
struct LineOut<'a> {
    ev: &'a str,
    file: u32,
    row: u64,
    email: &'a str,
    action: &'a str,
    hash: &'a str,
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
    /// Owns the file; keeps the first write that failed (the step ends with it).
    writer: Writer,
    /// What an earlier run recorded, by row (bounded: it spills).
    recorded: Recorded,
    unreadable: u64,
}

/// A journal read back: its header, and how many lines could not be read
/// (its events went to the caller one by one).
#[derive(Default)]
struct ReadBack {
    header: Option<Header>,
    unreadable: u64,
    /// The file ends without a newline (a line torn by a kill).
    torn: bool,
}

/// Reads a journal line by line, bounded: each event goes to `each` as it
/// is read (never all held); a torn or garbled line is counted, not fatal;
/// a line longer than [`MAX_LINE`] ends the reading.
fn read_back(
    path: &Path,
    header_only: bool,
    mut each: impl FnMut(Line),
) -> std::io::Result<ReadBack> {
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
            each(l);
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
    // Deliberately: a journal that cannot be read has no header to refuse
    // it by here; opening it for the resume then fails, naming the file.
    read_back(path, true, |_| {}).ok().and_then(|r| r.header)
}

/// A row's body that cannot be fingerprinted: it does not serialise as
/// JSON (nor could it be sent). The row is refused with this reason.
#[derive(Debug, thiserror::Error)]
#[error("the row cannot be fingerprinted for the journal: its body does not serialise as JSON")]
pub struct FingerprintError {
    #[source]
    pub cause: serde_json::Error,
}

/// A stable hash of a row's body: SHA-256 of its JSON, 16 bytes in hex.
pub fn hash(body: &ReceiverInput) -> Result<String, FingerprintError> {
    // The JSON goes straight into the hasher, and the hex into one string:
    // a re-import hashes every row (the copies were a tenth of its
    // allocations, perf of issue 15).
    let mut hasher = Sha256::new();
    serde_json::to_writer(&mut hasher, body).map_err(|cause| FingerprintError { cause })?;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for b in &hasher.finalize()[..16] {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    Ok(out)
}

/// Proof that a request's rows are journalled as started: their `start`
/// lines are with the operating system. Only [`Journal::started`] makes
/// one, and a write is sent only with one ([`super::write`]), so no row
/// is ever sent beyond the journal's last written line.
#[must_use = "a row is sent with it"]
pub struct Started(());

impl Journal {
    /// Opens the journal of `step` (writing `group`) for appending; with
    /// `resume`, reads what an earlier run recorded first.
    pub fn open(opts: &JournalOptions, step: &str, group: &str) -> Result<Journal, LoadError> {
        let path = path(&opts.state_dir, &opts.pipeline, step, &opts.target, group);
        let err = |e: std::io::Error| LoadError::Output {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut recorded = Recorded::new(opts.spill_after);
        let mut back = ReadBack::default();
        if opts.resume && path.exists() {
            let mut spilled = Ok(());
            back = read_back(&path, false, |l| {
                if spilled.is_ok() {
                    spilled = recorded.record(&(l.file, l.row, l.email), &l.ev, &l.hash);
                }
            })
            .map_err(err)?;
            spilled
                .and_then(|()| recorded.flush())
                .map_err(spill_error)?;
        }
        std::fs::create_dir_all(dir(&opts.state_dir, &opts.pipeline)).map_err(err)?;
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
        Journal::with_file(path, file, opts.stop.clone(), recorded).map(|mut j| {
            j.unreadable = back.unreadable;
            j
        })
    }

    /// A journal appending to `file` through its writer thread.
    fn with_file(
        path: PathBuf,
        file: impl Device,
        stop: Stop,
        recorded: Recorded,
    ) -> Result<Journal, LoadError> {
        let writer =
            Writer::start(file, Arc::new(Failure::new(stop))).map_err(|e| LoadError::Output {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(Journal {
            path,
            writer,
            recorded,
            unreadable: 0,
        })
    }

    /// Lines of the earlier run's journal that could not be read.
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// The first journal write that failed, as the step's error.
    pub fn failure(&self) -> Option<LoadError> {
        self.writer
            .failure()
            .message()
            .map(|message| LoadError::Output {
                path: self.path.clone(),
                message,
            })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an earlier run recorded any row: only then are a chunk's
    /// rows asked of it ([`Journal::recorded`]).
    pub fn resumes(&self) -> bool {
        !self.recorded.is_empty()
    }

    /// What an earlier run recorded last of each of `rows` (`None`: nothing),
    /// by position: [`Last::prior`] says what it means for the row's body.
    pub async fn recorded(&self, rows: &[RowKey]) -> Result<Vec<Option<Last>>, LoadError> {
        self.recorded.chunk(rows).await.map_err(spill_error)
    }

    /// Records that the rows' writes are about to be sent (one request's
    /// rows), and returns once the lines are with the operating system:
    /// the [`Started`] that sending them needs. A line that could not be
    /// written is the step's error (the run stops taking rows).
    pub async fn started(&self, rows: &[Entry<'_>]) -> Result<Started, LoadError> {
        let bytes = self.lines("start", rows);
        match self.writer.written(bytes, 0).await {
            Ok(()) => Ok(Started(())),
            Err(message) => Err(LoadError::Output {
                path: self.path.clone(),
                message,
            }),
        }
    }

    /// Records that the target confirmed the rows' writes (what one answer
    /// acknowledged); waits only for room in the writer's queue.
    pub async fn confirmed(&self, rows: &[Entry<'_>]) {
        let bytes = self.lines("done", rows);
        self.writer.append(bytes, rows.len() as u64).await;
    }

    /// Records that the rows' writes, `start`ed, were never sent (a stop
    /// came first): a resume takes them as rows no run has sent. Waits
    /// only for room in the writer's queue.
    pub async fn unsent(&self, rows: &[Entry<'_>]) {
        let bytes = self.lines("unsent", rows);
        self.writer.append(bytes, 0).await;
    }

    /// The JSON lines of `rows` for event `ev`, one buffer.
    fn lines(&self, ev: &str, rows: &[Entry<'_>]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(rows.len() * 160);
        for e in rows {
            let line = LineOut {
                ev,
                file: e.key.0,
                row: e.key.1,
                email: &e.key.2,
                action: e.action,
                hash: e.hash,
            };
            // Strings and numbers only: serialising cannot fail.
            if let Err(err) = serde_json::to_writer(&mut bytes, &line) {
                self.writer.failure().fail(std::io::Error::other(err));
                return Vec::new();
            }
            bytes.push(b'\n');
        }
        bytes
    }

    /// Makes everything recorded so far durable.
    pub async fn sync(&self) {
        self.writer.sync().await;
    }
}

/// Parses the journal lines of a file (for tests and tools): (event, email).
pub fn read_events(path: &Path) -> Vec<(String, String)> {
    let mut events = Vec::new();
    // Deliberately: for a test or a tool, a journal that cannot be read
    // (none yet) has no events.
    if read_back(path, false, |l| events.push((l.ev, l.email))).is_err() {
        events.clear();
    }
    events
}

/// The temporary file of the journal's rows could not be written or read
/// (most often a full `TMPDIR`): the run stops naming the folder.
fn spill_error(e: crate::spill::SpillError) -> LoadError {
    let (path, message) = e.dir_and_reason();
    LoadError::Output {
        path,
        message: format!(
            "{message} (the temporary file of an earlier run's journal: set TMPDIR to a folder with room)"
        ),
    }
}

#[cfg(test)]
mod tests;
