//! The one way listpipe writes a file it owns (journal aside): the run
//! report, the plan, the mirror ledger, rejects, exports and credentials.
//! The bytes go to a temporary file beside the destination
//! ([`tempfile::NamedTempFile::new_in`]), are fsync'd, and the file is
//! renamed over the destination. A reader, or a run killed midway, sees the
//! old file or the new one, never half of one; a write that fails removes
//! its temporary file (the `NamedTempFile` guard), so no `*.tmp` is left
//! behind on a full disk.
//!
//! A process killed outright (`kill -9`, a lost machine) still leaves its
//! temporary file: hidden, and as big as the export was when it died. So a
//! temporary file is named after its destination, `.NAME.XXXXXX.tmp`
//! ([`is_temp_of`]), and locked (`flock`) by its writer while it exists;
//! starting a file removes the temporaries of the same destination that are
//! older than this process's start ([`mark_start`]) and that no process
//! holds locked, and says how many (`listpipe: note: removed 2 temporary
//! files left by an earlier run beside out.csv`). Both tests are needed: a
//! live writer of another process holds its lock, and one that created its
//! file but has not locked it yet made it after this process started.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;
use tempfile::NamedTempFile;

/// The random part of a temporary file's name: 6 letters or digits.
const RANDOM_LEN: usize = 6;

/// When this process started writing: temporaries older than this are an
/// earlier process's (see the module).
static STARTED: OnceLock<SystemTime> = OnceLock::new();

/// Marks now as this process's start, for the removal of an earlier run's
/// temporary files; the binary calls it first thing. Without it, the first
/// file started marks it, which is later than the process's start but
/// still after any file a process that ended before left. Later calls
/// change nothing.
pub fn mark_start() -> SystemTime {
    *STARTED.get_or_init(SystemTime::now)
}

/// Who may read the file once written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Owner read-write, others read (what `std::fs::write` gives under the
    /// usual umask): reports, plans, rejects, exports.
    Shared,
    /// Owner only (0600): credentials. The temporary file is created 0600,
    /// so the secret is never readable by others, not even for a moment.
    Private,
}

/// A file that could not be written: its name and the cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    fn new(path: &Path, source: std::io::Error) -> WriteError {
        WriteError {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Writes `bytes` to `path` atomically, creating its folder.
pub fn write(path: &Path, bytes: &[u8], access: Access) -> Result<(), WriteError> {
    let mut pending = Pending::new(path, access)?;
    pending
        .file()
        .write_all(bytes)
        .map_err(|e| WriteError::new(path, e))?;
    pending.commit()
}

/// A file being written: the temporary file, renamed over the destination
/// by [`Pending::commit`], removed when dropped uncommitted. Writers that
/// open files by name (the export formats) write to [`Pending::temp_path`].
pub struct Pending {
    temp: NamedTempFile,
    path: PathBuf,
    access: Access,
}

impl Pending {
    /// Starts writing `path`: creates its folder and a temporary file beside it.
    pub fn new(path: &Path, access: Access) -> Result<Pending, WriteError> {
        // Beside the destination, so that the rename stays on one file system.
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).map_err(|e| WriteError::new(path, e))?;
        let removed = remove_stale(path, mark_start());
        if removed > 0 {
            let files = if removed == 1 { "file" } else { "files" };
            crate::errln!(
                "listpipe: note: removed {removed} temporary {files} left by an earlier run beside {}",
                path.display()
            );
        }
        let temp = tempfile::Builder::new()
            .prefix(&temp_prefix(path))
            .rand_bytes(RANDOM_LEN)
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| WriteError::new(path, e))?;
        // Held until the file is renamed or removed: a run starting now
        // leaves it alone. A file system without `flock` still gets its
        // file written; its temporary is then protected by its age only.
        let _ = temp.as_file().try_lock();
        Ok(Pending {
            temp,
            path: path.to_path_buf(),
            access,
        })
    }

    /// The temporary file, open for writing.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.temp.as_file_mut()
    }

    /// Where the temporary file is (for writers that open it themselves).
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the written bytes durable and puts them under the real name.
    pub fn commit(self) -> Result<(), WriteError> {
        let path = self.path;
        let err = |e| WriteError::new(&path, e);
        let mut file = self.temp.as_file();
        file.flush().map_err(err)?;
        #[cfg(unix)]
        if self.access == Access::Shared {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(err)?;
        }
        // sync_all on this handle covers bytes written through any other
        // handle of the same file (the export writers open it by name).
        file.sync_all().map_err(err)?;
        self.temp.persist(&path).map_err(|e| err(e.error))?;
        // The rename itself is made durable by syncing the folder; a failure
        // here leaves a complete file under the real name, so it is not fatal.
        #[cfg(unix)]
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// The start of the name of `path`'s temporary files: `.NAME.`.
fn temp_prefix(path: &Path) -> String {
    path.file_name()
        .map(|n| format!(".{}.", n.to_string_lossy()))
        .unwrap_or_else(|| ".listpipe.".into())
}

/// Whether `name` is the name of a temporary file of `path`:
/// `.NAME.` then [`RANDOM_LEN`] letters or digits then `.tmp`, so that no
/// other file, and no other destination's temporary, matches.
pub fn is_temp_of(path: &Path, name: &str) -> bool {
    name.strip_prefix(&temp_prefix(path))
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|random| {
            random.len() == RANDOM_LEN && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Removes the temporary files of `path` that an earlier process left: named
/// for it ([`is_temp_of`]), last changed before `before`, and locked by no
/// one (taking the lock is the test; a file is removed while locked, so two
/// runs cleaning at once remove it once). Answers how many it removed; a
/// file it cannot look at, lock or remove is left, as a folder it cannot
/// read is: leftovers are untidy, never a reason to fail the write.
pub fn remove_stale(path: &Path, before: SystemTime) -> usize {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !is_temp_of(path, &entry.file_name().to_string_lossy()) {
            continue;
        }
        let old = entry
            .metadata()
            .is_ok_and(|m| m.file_type().is_file() && m.modified().is_ok_and(|t| t < before));
        if !old {
            continue;
        }
        let temp = entry.path();
        let Ok(file) = std::fs::File::open(&temp) else {
            continue;
        };
        if file.try_lock().is_ok() && std::fs::remove_file(&temp).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Appends `lines` (whole lines, each ending in `\n`) to the file at
/// `path`, creating it and its folder; a file without a complete line yet
/// gets `header` (a line) first. A last line without its newline (an
/// append cut by a crash) is dropped first, so that the new lines never
/// join it into one that was never written. Flushed and fsync'd.
pub fn append_lines(path: &Path, header: &str, lines: &[u8]) -> Result<(), WriteError> {
    use std::io::{Read, Seek, SeekFrom};
    let err = |e| WriteError::new(path, e);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(err)?;
    let len = file.metadata().map_err(err)?.len();
    // The end of the last complete line: read backwards a block at a time.
    let mut keep = 0;
    let mut end = len;
    let mut block = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let part = &mut block[..(end - start) as usize];
        file.seek(SeekFrom::Start(start)).map_err(err)?;
        file.read_exact(part).map_err(err)?;
        if let Some(i) = part.iter().rposition(|b| *b == b'\n') {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    if keep < len {
        file.set_len(keep).map_err(err)?;
    }
    let mut bytes = Vec::with_capacity(header.len() + lines.len());
    if keep == 0 {
        bytes.extend_from_slice(header.as_bytes());
    }
    bytes.extend_from_slice(lines);
    file.seek(SeekFrom::Start(keep)).map_err(err)?;
    file.write_all(&bytes).map_err(err)?;
    file.flush().map_err(err)?;
    file.sync_data().map_err(err)?;
    // A new file's name is made durable by syncing its folder; a failure
    // leaves the lines written, so it is not fatal.
    #[cfg(unix)]
    if len == 0
        && let Ok(d) = std::fs::File::open(dir.unwrap_or(Path::new(".")))
    {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/report.json");
        write(&path, b"old", Access::Shared).unwrap();
        write(&path, b"new", Access::Shared).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(leftovers(&dir.path().join("sub")), ["report.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_readable_by_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        write(&path, b"{}", Access::Private).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_write_that_is_not_committed_removes_its_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut pending = Pending::new(&dir.path().join("ledger.txt"), Access::Shared).unwrap();
        pending.file().write_all(b"half").unwrap();
        let temp = pending.temp_path().to_path_buf();
        assert!(temp.exists());
        drop(pending);
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn temporaries_are_named_for_their_destination_only() {
        let out = Path::new("exports/out.csv");
        assert!(is_temp_of(out, ".out.csv.a1B2c3.tmp"));
        for other in [
            "out.csv",
            ".out.csv.tmp",
            ".out.csv.a1B2c.tmp",
            ".out.csv.a1B2c3d.tmp",
            ".out.csv.a1-2c3.tmp",
            ".out.csv.a1B2c3.tmp.bak",
            ".other.csv.a1B2c3.tmp",
            ".out.csv.gz.a1B2c3.tmp",
        ] {
            assert!(!is_temp_of(out, other), "{other}");
        }
        // What the builder makes matches.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let pending = Pending::new(&path, Access::Shared).unwrap();
        let name = pending.temp_path().file_name().unwrap().to_string_lossy();
        assert!(is_temp_of(&path, &name), "{name}");
    }

    #[test]
    fn stale_temporaries_go_and_locked_or_new_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let hour_ago = SystemTime::now() - std::time::Duration::from_secs(3600);
        let make = |name: &str, modified: SystemTime| {
            let file = std::fs::File::create(dir.path().join(name)).unwrap();
            file.set_modified(modified).unwrap();
            file
        };
        drop(make(".report.json.aaaaaa.tmp", hour_ago));
        drop(make(".report.json.bbbbbb.tmp", hour_ago));
        let held = make(".report.json.cccccc.tmp", hour_ago);
        held.lock().unwrap();
        drop(make(".report.json.dddddd.tmp", SystemTime::now()));
        drop(make(".other.json.eeeeee.tmp", hour_ago));
        let start = SystemTime::now() - std::time::Duration::from_secs(60);
        assert_eq!(remove_stale(&path, start), 2);
        let mut left = leftovers(dir.path());
        left.sort();
        assert_eq!(
            left,
            [
                ".other.json.eeeeee.tmp",
                ".report.json.cccccc.tmp",
                ".report.json.dddddd.tmp"
            ]
        );
        // Unlocked, the hour-old one goes as the next write starts (older
        // than this process's start); the new one is older than now. A file
        // being written is locked by its writer and stays, however old.
        drop(held);
        let mut pending = Pending::new(&path, Access::Shared).unwrap();
        assert!(!dir.path().join(".report.json.cccccc.tmp").exists());
        pending.file().set_modified(hour_ago).unwrap();
        assert_eq!(remove_stale(&path, SystemTime::now()), 1);
        assert!(pending.temp_path().exists());
        assert_eq!(
            leftovers(dir.path()).len(),
            2,
            "{:?}",
            leftovers(dir.path())
        );
    }

    #[test]
    fn a_folder_that_cannot_be_created_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let path = dir.path().join("file/report.json");
        let err = write(&path, b"{}", Access::Shared).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot write {}: ", path.display())),
            "{err}"
        );
    }

    #[test]
    fn appended_lines_follow_the_header_and_a_cut_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger/step.txt");
        append_lines(&path, "# header\n", b"a@x.de\n").unwrap();
        append_lines(&path, "# header\n", b"b@x.de\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# header\na@x.de\nb@x.de\n"
        );
        // A crash cut the next append: the cut line goes, the rest stays.
        let mut cut = std::fs::read(&path).unwrap();
        cut.extend_from_slice(b"c@x");
        std::fs::write(&path, cut).unwrap();
        append_lines(&path, "# header\n", b"d@x.de\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# header\na@x.de\nb@x.de\nd@x.de\n"
        );
        // A cut header (the very first append) is written again whole.
        std::fs::write(&path, "# hea").unwrap();
        append_lines(&path, "# header\n", b"e@x.de\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# header\ne@x.de\n"
        );
    }

    #[test]
    fn a_line_longer_than_a_block_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.txt");
        let long = format!("{}\n", "x".repeat(10_000));
        append_lines(&path, "# h\n", long.as_bytes()).unwrap();
        std::fs::write(
            &path,
            format!(
                "{}{}",
                std::fs::read_to_string(&path).unwrap(),
                "y".repeat(9_000)
            ),
        )
        .unwrap();
        append_lines(&path, "# h\n", b"z\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("# h\n{long}z\n")
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_append_that_fails_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.txt");
        std::os::unix::fs::symlink("/dev/full", &path).unwrap();
        let err = append_lines(&path, "# h\n", b"a@x.de\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot write {}: No space left on device (os error 28)",
                path.display()
            )
        );
    }
}
