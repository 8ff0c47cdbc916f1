//! Mirror mode: a group kept equal to its source. Receivers that listpipe
//! imported into the group in earlier runs and that the source no longer
//! holds are deactivated (or deleted). Receivers listpipe did not import
//! (added by hand, by a form, by another tool) are never touched.
//!
//! What listpipe imported is kept in a ledger per step, target and group
//! (`.listpipe/ledger/<pipeline>/<step>-<hash>.txt`, one address a line):
//! every import run adds the receivers it created or updated, mirror mode or
//! not, so turning mirror mode on later knows them. A plain import never
//! reads the ledger: it appends each chunk's addresses
//! ([`crate::state_file::append_lines`]), so its memory does not grow with
//! the ledger. Mirror mode reads it whole (it plans its removals from it)
//! and writes it back compacted at the end. Reading ignores a last line cut
//! by a crash and repeated lines: forgetting an address is the safe
//! direction, inventing one is not. A lost ledger means nothing is
//! removed.
//!
//! A guard refuses the whole step, before it writes any receiver, when the
//! planned removals exceed a share of the group (default 10%): a truncated
//! or wrong source file must not empty a list. `--allow-mass-removal`
//! overrides it.

use super::held::TargetIndex;
use super::target::Connected;
use super::{LoadError, retry};
use crate::api::{Id, ReceiverInput};
use crate::pipeline::STATE_DIR;
// The settings are the pipeline's plain data; what they do is here.
pub use crate::pipeline::{MirrorSpec, Removal};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first line of every ledger: a file without it is not one.
const LEDGER_HEADER: &str =
    "# Receivers listpipe imported into this group (mirror mode removes only these).\n";

/// The ledger of one group of one target.
pub struct Ledger {
    path: PathBuf,
    /// What it holds: read in mirror mode only (a plain import appends
    /// without reading), with what this run added.
    pub emails: Option<BTreeSet<String>>,
}

impl Ledger {
    /// The ledger of `step` of `pipeline` for group `group` of `target`,
    /// read when `read` (mirror mode). None yet is an empty ledger. One
    /// that cannot be read or is not a ledger is refused, and left as it
    /// is: emptied, it would make mirror mode forget what it imported.
    /// Unread, only its first line is checked, so a plain import does not
    /// append to a file that is not a ledger.
    pub fn open(
        pipeline: &str,
        step: &str,
        target: &str,
        group: Id,
        read: bool,
    ) -> Result<Ledger, LoadError> {
        let digest = Sha256::digest(format!("{target}\n{group}").as_bytes());
        let path = Path::new(STATE_DIR)
            .join("ledger")
            .join(pipeline)
            .join(format!("{step}-{}.txt", &hex::encode(digest)[..16]));
        let emails = if read {
            Some(read_ledger(&path)?)
        } else {
            check_header(&path)?;
            None
        };
        Ok(Ledger { path, emails })
    }

    /// Adds the addresses a chunk imported: appended to the file at once
    /// (flushed and fsync'd), and to what was read.
    pub fn add(&mut self, emails: &[String]) -> Result<(), LoadError> {
        if emails.is_empty() {
            return Ok(());
        }
        let mut lines = String::with_capacity(emails.iter().map(|e| e.len() + 1).sum());
        for e in emails {
            lines.push_str(e);
            lines.push('\n');
        }
        crate::state_file::append_lines(&self.path, LEDGER_HEADER, lines.as_bytes())
            .map_err(|e| self.failed(e))?;
        if let Some(read) = self.emails.as_mut() {
            read.extend(emails.iter().cloned());
        }
        Ok(())
    }

    fn failed(&self, e: crate::state_file::WriteError) -> LoadError {
        LoadError::Output {
            path: self.path.clone(),
            message: e.source.to_string(),
        }
    }

    /// Writes a ledger that was read back whole, compacted (through a
    /// temporary file, so a crash leaves the old one or the new one).
    pub fn save(&self) -> Result<(), LoadError> {
        let Some(emails) = &self.emails else {
            return Ok(());
        };
        let mut text = String::from(LEDGER_HEADER);
        for e in emails {
            text.push_str(e);
            text.push('\n');
        }
        crate::state_file::write(
            &self.path,
            text.as_bytes(),
            crate::state_file::Access::Shared,
        )
        .map_err(|e| self.failed(e))
    }
}

/// The refusal of a ledger that cannot be used, and why.
fn refuse(path: &Path, why: String) -> LoadError {
    LoadError::State {
        path: path.to_path_buf(),
        message: format!(
            "the mirror ledger cannot be used: {why}. It was left as it is; \
             restore it from a backup, or move it away to start a new ledger \
             (mirror mode then removes nothing until receivers are imported again)"
        ),
    }
}

fn not_a_ledger(path: &Path) -> LoadError {
    refuse(
        path,
        format!(
            "it does not start with the ledger's first line \"{}\"",
            LEDGER_HEADER.trim_end()
        ),
    )
}

/// Refuses a file that is not a ledger, from its first bytes only. Empty,
/// or its first line cut by a crash, it is a ledger with nothing in it.
fn check_header(path: &Path) -> Result<(), LoadError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(refuse(path, format!("cannot read it: {e}"))),
    };
    let mut start = Vec::with_capacity(LEDGER_HEADER.len());
    file.take(LEDGER_HEADER.len() as u64)
        .read_to_end(&mut start)
        .map_err(|e| refuse(path, format!("cannot read it: {e}")))?;
    if LEDGER_HEADER.as_bytes().starts_with(&start) {
        Ok(())
    } else {
        Err(not_a_ledger(path))
    }
}

/// Every address of the ledger at `path` (see the module's doc).
fn read_ledger(path: &Path) -> Result<BTreeSet<String>, LoadError> {
    let mut bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(refuse(path, format!("cannot read it: {e}"))),
    };
    // A last line without its newline is an append cut by a crash: dropped
    // (before the text is decoded: the cut may split a character).
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if complete == 0 && LEDGER_HEADER.as_bytes().starts_with(&bytes) {
        return Ok(BTreeSet::new());
    }
    bytes.truncate(complete);
    let text = String::from_utf8(bytes).map_err(|_| refuse(path, "it is not text".into()))?;
    if !text.starts_with(LEDGER_HEADER) {
        return Err(not_a_ledger(path));
    }
    let mut emails = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.contains('@') || line.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse(path, format!("line {} is not an address", i + 1)));
        }
        emails.insert(line.to_string());
    }
    Ok(emails)
}

/// The receivers to remove: imported by listpipe earlier, in the group
/// now, absent from the source; sorted.
pub fn planned(
    ledger: &BTreeSet<String>,
    source: &HashSet<String>,
    existing: &TargetIndex,
    removal: Removal,
) -> Result<Vec<String>, LoadError> {
    let mut out = Vec::new();
    for e in ledger.iter().filter(|e| !source.contains(*e)) {
        let remove = match existing.get(e)? {
            None => false,
            // Already deactivated: nothing left to do.
            Some(h) => removal == Removal::Delete || h.deactivated() == 0,
        };
        if remove {
            out.push(e.clone());
        }
    }
    Ok(out)
}

/// The guard: `Err` with the reason when `removals` of a group of `total`
/// exceed the spec's share.
pub fn guard(
    spec: &MirrorSpec,
    removals: usize,
    total: usize,
    allowed: bool,
) -> Result<(), String> {
    let limit = (spec.max_share * total as f64).floor() as usize;
    if removals <= limit || allowed {
        return Ok(());
    }
    Err(format!(
        "mirror mode would {} {removals} of the group's {total} receivers ({:.1}%), more than the limit of {:.0}% ({limit}); \
         no receiver was written. Check the source; if the removals are meant, run again with --allow-mass-removal \
         (a --dry-run lists them in its plan)",
        spec.removal.as_str(),
        100.0 * removals as f64 / total.max(1) as f64,
        100.0 * spec.max_share,
    ))
}

/// What the removals did.
#[derive(Debug, Default)]
pub struct Removed {
    pub done: Vec<String>,
    /// Address and the target's reason.
    pub failed: Vec<(String, String)>,
    pub retries: u64,
}

/// Deactivates or deletes `emails` in group `g`, with bounded concurrency.
pub async fn remove(
    conn: &Connected,
    g: Id,
    emails: Vec<String>,
    removal: Removal,
    concurrency: usize,
    retries: u32,
) -> Removed {
    let retried = AtomicU64::new(0);
    let now = chrono::Utc::now().timestamp();
    let retried_ref = &retried;
    let results: Vec<(String, Result<(), String>)> = futures::stream::iter(emails)
        .map(|email| async move {
            let c = &conn.client;
            let result = match removal {
                Removal::Deactivate => {
                    let body = ReceiverInput {
                        deactivated: Some(now),
                        ..Default::default()
                    };
                    retry::retrying(conn, retries, retried_ref, || {
                        c.update_receiver(g, &email, &body)
                    })
                    .await
                    .map(|_| ())
                }
                Removal::Delete => retry::retrying(conn, retries, retried_ref, || {
                    c.delete_receiver(&email, Some(g))
                })
                .await
                .map(|_| ()),
            };
            (email, result.map_err(|e| e.server_message()))
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut out = Removed {
        retries: retried.load(Ordering::Relaxed),
        ..Default::default()
    };
    for (email, r) in results {
        match r {
            Ok(()) => out.done.push(email),
            Err(reason) => out.failed.push((email, reason)),
        }
    }
    out.done.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_allows_up_to_the_share_and_names_the_override() {
        let spec = MirrorSpec::default();
        assert!(guard(&spec, 10, 100, false).is_ok());
        let err = guard(&spec, 11, 100, false).unwrap_err();
        assert!(
            err.contains("11 of the group's 100 receivers (11.0%)"),
            "{err}"
        );
        assert!(err.contains("--allow-mass-removal"), "{err}");
        assert!(guard(&spec, 100, 100, true).is_ok());
        // An empty group has nothing to remove; a tiny one none at 10%.
        assert!(guard(&spec, 0, 0, false).is_ok());
        assert!(guard(&spec, 1, 5, false).is_err());
    }

    fn ledger_file(text: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step-0123456789abcdef.txt");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_ledger_read_ignores_a_cut_last_line_and_repeated_lines() {
        let text = format!("{LEDGER_HEADER}a@x.de\nb@x.de\na@x.de\nb@x.de\nc@x");
        let (_dir, path) = ledger_file(text.as_bytes());
        let read: Vec<String> = read_ledger(&path).unwrap().into_iter().collect();
        assert_eq!(read, ["a@x.de", "b@x.de"]);
        // Cut inside a character: still only the cut line is lost.
        let mut cut = format!("{LEDGER_HEADER}a@x.de\n").into_bytes();
        cut.extend_from_slice(&"jürgen@x.de".as_bytes()[..2]);
        let (_dir, path) = ledger_file(&cut);
        assert_eq!(read_ledger(&path).unwrap().len(), 1);
    }

    #[test]
    fn a_ledger_cut_in_its_first_line_is_empty_and_anything_else_is_refused() {
        for cut in ["", &LEDGER_HEADER[..10]] {
            let (_dir, path) = ledger_file(cut.as_bytes());
            assert!(read_ledger(&path).unwrap().is_empty(), "{cut:?}");
            assert!(check_header(&path).is_ok(), "{cut:?}");
        }
        let want = |path: &Path| {
            format!(
                "{}: the mirror ledger cannot be used: it does not start with the ledger's first line \"{}\". It was left as it is",
                path.display(),
                LEDGER_HEADER.trim_end()
            )
        };
        let refused = |e: LoadError| e.to_string();
        let (_dir, path) = ledger_file(b"a@x.de\n");
        assert!(refused(read_ledger(&path).unwrap_err()).starts_with(&want(&path)));
        assert!(refused(check_header(&path).unwrap_err()).starts_with(&want(&path)));
        // Not a cut first line: refused unread too.
        let (_dir, path) = ledger_file(b"garbage");
        assert!(refused(check_header(&path).unwrap_err()).starts_with(&want(&path)));
    }
}
