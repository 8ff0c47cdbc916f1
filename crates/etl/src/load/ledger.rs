//! The mirror ledger: what listpipe imported into a group, so that mirror
//! mode removes only those (see [`super::mirror`]). One per pipeline, step,
//! target and group (`.listpipe/ledger/<pipeline>/<step>-<hash>.txt`, one
//! address a line; `<pipeline>` its path from the working directory,
//! [`crate::pipeline::state_name`], as for journals and rejects): every
//! import run adds the receivers it created or updated, mirror mode or
//! not, so turning mirror mode on later knows them.
//!
//! Ledgers were once kept under the pipeline file's bare name
//! (`.listpipe/ledger/<name>/`), which two same-named pipelines of two
//! folders shared. A ledger found only there is copied to the pipeline's
//! own place once ([`adopt_former`]), and the old file is left for the
//! other pipeline that may share it: a copy, since taking it away could
//! make that one forget what it imported.
//!
//! Every import appends each chunk's addresses
//! ([`listpipe_base::state_file::append_lines`]). Mirror mode reads the ledger a
//! line at a time ([`Ledger::each_address`]) to plan its removals, and
//! writes it back compacted at the end, streamed too ([`Ledger::save`]):
//! memory never holds the ledger. Reading ignores a last line cut by a
//! crash and repeated lines: forgetting an address is the safe direction,
//! inventing one is not. A lost ledger means nothing is removed.

use super::LoadError;
use crate::key_store::KeyStore;
use crate::spill::SpillError;
use listpipe_api::Id;
use listpipe_base::hash::{FastSet, Key128};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first line of every ledger: a file without it is not one.
const LEDGER_HEADER: &str =
    "# Receivers listpipe imported into this group (mirror mode removes only these).\n";

/// What a ledger is about: a step of a pipeline writing a group of a target.
#[derive(Debug, Clone, Copy)]
pub struct LedgerKey<'a> {
    /// Where the pipeline's state lives ([`crate::pipeline::state_name`]).
    pub pipeline: &'a str,
    /// The pipeline file's bare name, which keyed ledgers before.
    pub formerly: &'a str,
    pub step: &'a str,
    /// The resolved target (canonical URL and account).
    pub target: &'a str,
    pub group: Id,
}

impl LedgerKey<'_> {
    /// `<step>-<16 hex>.txt`, the hex the start of a SHA-256 of the target
    /// and the group.
    fn file_name(&self) -> String {
        let digest = Sha256::digest(format!("{}\n{}", self.target, self.group).as_bytes());
        format!("{}-{}.txt", self.step, &hex::encode(digest)[..16])
    }
}

/// Copies the ledger at `former` (kept under the pipeline file's bare name
/// before its path keyed ledgers) to `path` when `path` has none yet:
/// through a temporary file, so a kill leaves no half ledger. `former` is
/// left as it is (a same-named pipeline of another folder may share it).
fn adopt_former(former: &Path, path: &Path) -> Result<(), LoadError> {
    if path.exists() || !former.is_file() {
        return Ok(());
    }
    let failed = |message: String| LoadError::Output {
        path: path.to_path_buf(),
        message,
    };
    let mut pending =
        listpipe_base::state_file::Pending::new(path, listpipe_base::state_file::Access::Shared)
            .map_err(|e| failed(e.source.to_string()))?;
    let mut from = std::fs::File::open(former)
        .map_err(|e| failed(format!("cannot read {}: {e}", former.display())))?;
    std::io::copy(&mut from, pending.file())
        .map_err(|e| failed(format!("cannot copy {}: {e}", former.display())))?;
    pending.commit().map_err(|e| failed(e.source.to_string()))?;
    tracing::info!(target: log_target!(),
        from = %former.display(),
        to = %path.display(),
        "the mirror ledger kept under the pipeline's bare name was copied to the pipeline's own place"
    );
    Ok(())
}

/// The ledger of one group of one target.
pub struct Ledger {
    path: PathBuf,
    /// Mirror mode: the file is read (a line at a time, never held) to plan
    /// the removals, and written back compacted at the end.
    mirror: bool,
}

/// Ledger lines a compaction asks its set of lines written at once.
const COMPACT_BATCH: usize = 16_384;

impl Ledger {
    /// The ledger `key` names, read through when `mirror` (every line
    /// checked). None yet is an empty ledger (or a copy of the one kept
    /// under the pipeline's bare name before, [`adopt_former`]). One that
    /// cannot be read or is not a ledger is refused,
    /// and left as it is: emptied, it would make mirror mode forget what it
    /// imported. Otherwise only its first line is checked, so a plain
    /// import does not append to a file that is not a ledger.
    pub fn open(state_dir: &Path, key: &LedgerKey<'_>, mirror: bool) -> Result<Ledger, LoadError> {
        let name = key.file_name();
        let ledgers = state_dir.join("ledger");
        let path = ledgers.join(key.pipeline).join(&name);
        if key.formerly != key.pipeline {
            adopt_former(&ledgers.join(key.formerly).join(&name), &path)?;
        }
        if mirror {
            each_address(&path, &mut |_| Ok(()))?;
        } else {
            check_header(&path)?;
        }
        Ok(Ledger { path, mirror })
    }

    /// Whether the ledger is read (mirror mode).
    pub fn is_read(&self) -> bool {
        self.mirror
    }

    /// Adds the addresses a chunk imported: appended to the file at once
    /// (flushed and fsync'd).
    pub fn add(&mut self, emails: &[String]) -> Result<(), LoadError> {
        if emails.is_empty() {
            return Ok(());
        }
        let mut lines = String::with_capacity(emails.iter().map(|e| e.len() + 1).sum());
        for e in emails {
            lines.push_str(e);
            lines.push('\n');
        }
        listpipe_base::state_file::append_lines(&self.path, LEDGER_HEADER, lines.as_bytes())
            .map_err(|e| self.failed(e))
    }

    fn failed(&self, e: listpipe_base::state_file::WriteError) -> LoadError {
        LoadError::Output {
            path: self.path.clone(),
            message: e.source.to_string(),
        }
    }

    /// Mirror mode: writes the ledger back compacted, through a temporary
    /// file (a crash leaves the old one or the new one). Streamed: the
    /// file's addresses in their order (this run's appended at the end),
    /// each at its first line only, without those in `removed`; memory
    /// holds a set of the addresses written ([`KeyStore`], on disk past
    /// `budget` keys) and a batch of lines.
    pub fn save(&self, removed: &[String], budget: usize) -> Result<(), LoadError> {
        if !self.mirror {
            return Ok(());
        }
        let removed: FastSet<&str> = removed.iter().map(String::as_str).collect();
        let mut pending = listpipe_base::state_file::Pending::new(
            &self.path,
            listpipe_base::state_file::Access::Shared,
        )
        .map_err(|e| self.failed(e))?;
        let write_failed = |e: std::io::Error| LoadError::Output {
            path: self.path.clone(),
            message: e.to_string(),
        };
        {
            let mut out = Compacted {
                seen: KeyStore::new(Key128::default(), budget),
                out: std::io::BufWriter::new(pending.file()),
                batch: Vec::with_capacity(COMPACT_BATCH),
            };
            out.out
                .write_all(LEDGER_HEADER.as_bytes())
                .map_err(write_failed)?;
            each_address(&self.path, &mut |e| {
                if !removed.contains(e) {
                    out.batch.push(e.to_string());
                    if out.batch.len() >= COMPACT_BATCH {
                        out.write_batch().map_err(|e| self.compact_failed(e))?;
                    }
                }
                Ok(())
            })?;
            out.write_batch().map_err(|e| self.compact_failed(e))?;
            out.out.flush().map_err(write_failed)?;
        }
        pending.commit().map_err(|e| self.failed(e))
    }

    fn compact_failed(&self, e: CompactError) -> LoadError {
        match e {
            CompactError::Write(e) => LoadError::Output {
                path: self.path.clone(),
                message: e.to_string(),
            },
            CompactError::Spill(e) => spill_failed(e),
        }
    }
}

/// A compacted ledger being written.
struct Compacted<W: Write> {
    /// The addresses written so far.
    seen: KeyStore,
    out: W,
    /// Addresses read, not yet asked of `seen`.
    batch: Vec<String>,
}

enum CompactError {
    Write(std::io::Error),
    Spill(SpillError),
}

impl<W: Write> Compacted<W> {
    /// Writes the batch's addresses not written before.
    fn write_batch(&mut self) -> Result<(), CompactError> {
        let fresh = self
            .seen
            .fresh(self.batch.iter().map(String::as_str))
            .map_err(CompactError::Spill)?;
        for (e, fresh) in self.batch.iter().zip(fresh) {
            if fresh {
                self.out
                    .write_all(e.as_bytes())
                    .and_then(|()| self.out.write_all(b"\n"))
                    .map_err(CompactError::Write)?;
            }
        }
        self.batch.clear();
        Ok(())
    }
}

/// A temporary file of mirror mode's sets failed (most often a full
/// `TMPDIR`): the run stops naming its folder, like any state it writes.
pub(super) fn spill_failed(e: SpillError) -> LoadError {
    let (path, message) = e.dir_and_reason();
    LoadError::Output {
        path,
        message: format!(
            "{message} (the temporary file of a large source's addresses: set TMPDIR to a folder with room)"
        ),
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

impl Ledger {
    /// Passes every address of the ledger to `each` (see [`each_address`]).
    pub(super) fn each_address(
        &self,
        each: &mut dyn FnMut(&str) -> Result<(), LoadError>,
    ) -> Result<(), LoadError> {
        each_address(&self.path, each)
    }
}

/// Passes every address of the ledger at `path` to `each`, a line at a
/// time, in file order, repeats included (see the module's doc); an error
/// of `each` stops the read and is the answer.
fn each_address(
    path: &Path,
    each: &mut dyn FnMut(&str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    use std::io::BufRead;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(refuse(path, format!("cannot read it: {e}"))),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| refuse(path, format!("cannot read it: {e}")))?;
        if read == 0 {
            break;
        }
        // A last line without its newline is an append cut by a crash:
        // dropped (before the text is decoded: the cut may split a
        // character). A first line cut so is a ledger with nothing in it.
        if line.last() != Some(&b'\n') {
            if number == 1 && !LEDGER_HEADER.as_bytes().starts_with(&line) {
                return Err(not_a_ledger(path));
            }
            break;
        }
        let text = std::str::from_utf8(&line).map_err(|_| refuse(path, "it is not text".into()))?;
        if number == 1 {
            if text != LEDGER_HEADER {
                return Err(not_a_ledger(path));
            }
            continue;
        }
        let address = text.strip_suffix('\n').unwrap_or(text);
        let address = address.strip_suffix('\r').unwrap_or(address);
        if address.is_empty() || address.starts_with('#') {
            continue;
        }
        if !address.contains('@') || address.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse(path, format!("line {number} is not an address")));
        }
        each(address)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ledger's distinct addresses, as mirror mode reads them.
    fn read_ledger(path: &Path) -> Result<std::collections::BTreeSet<String>, LoadError> {
        let mut read = std::collections::BTreeSet::new();
        each_address(path, &mut |e| {
            read.insert(e.to_string());
            Ok(())
        })?;
        Ok(read)
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
    fn a_ledger_is_written_back_streamed_each_address_once_in_file_order_without_the_deleted() {
        for budget in [usize::MAX, 1] {
            let text =
                format!("{LEDGER_HEADER}c@x.de\na@x.de\nb@x.de\na@x.de\n\nd@x.de\nb@x.de\ne@x");
            let (_dir, path) = ledger_file(text.as_bytes());
            let ledger = Ledger {
                path: path.clone(),
                mirror: true,
            };
            ledger.save(&["b@x.de".into()], budget).unwrap();
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                format!("{LEDGER_HEADER}c@x.de\na@x.de\nd@x.de\n"),
                "budget {budget}"
            );
            // A plain import's ledger is not rewritten.
            let plain = Ledger {
                path: path.clone(),
                mirror: false,
            };
            plain.save(&["a@x.de".into()], budget).unwrap();
            assert!(read_ledger(&path).unwrap().contains("a@x.de"));
        }
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

    #[test]
    fn a_ledger_kept_under_the_bare_name_is_copied_once_and_left_for_the_other_pipeline() {
        let dir = tempfile::tempdir().unwrap();
        let key = LedgerKey {
            pipeline: "a/nightly",
            formerly: "nightly",
            step: "people",
            target: "http://localhost:1 (account 1)",
            group: Id(7),
        };
        // The name is the one ledgers always had: only the folder moved.
        let name = key.file_name();
        assert!(
            name.starts_with("people-") && name.ends_with(".txt"),
            "{name}"
        );
        assert_eq!(
            name,
            LedgerKey {
                pipeline: "b/nightly",
                ..key
            }
            .file_name()
        );
        assert_ne!(
            name,
            LedgerKey {
                group: Id(8),
                ..key
            }
            .file_name()
        );
        let former = dir.path().join("ledger/nightly").join(&name);
        let path = dir.path().join("ledger/a/nightly").join(&name);
        let text = format!("{LEDGER_HEADER}a@x.de\nb@x.de\n");
        std::fs::create_dir_all(former.parent().unwrap()).unwrap();
        std::fs::write(&former, &text).unwrap();
        adopt_former(&former, &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert_eq!(std::fs::read_to_string(&former).unwrap(), text, "left");
        // Once the pipeline has its own, the old one is never read again.
        std::fs::write(&path, LEDGER_HEADER).unwrap();
        adopt_former(&former, &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), LEDGER_HEADER);
        // None under the bare name: nothing made.
        let none = dir.path().join("ledger/c/nightly").join(&name);
        adopt_former(&dir.path().join("ledger/nothing").join(&name), &none).unwrap();
        assert!(!none.exists());
    }
}
