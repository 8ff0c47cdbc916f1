//! The one way listpipe writes a file it owns (journal aside): the run
//! report, the plan, the mirror ledger, rejects, exports and credentials.
//! The bytes go to a temporary file beside the destination
//! ([`tempfile::NamedTempFile::new_in`]), are fsync'd, and the file is
//! renamed over the destination. A reader, or a run killed midway, sees the
//! old file or the new one, never half of one; a write that fails removes
//! its temporary file (the `NamedTempFile` guard), so no `*.tmp` is left
//! behind on a full disk.

use std::io::Write;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

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
        let name = path
            .file_name()
            .map(|n| format!(".{}.", n.to_string_lossy()))
            .unwrap_or_else(|| ".listpipe.".into());
        let temp = tempfile::Builder::new()
            .prefix(&name)
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| WriteError::new(path, e))?;
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
}
