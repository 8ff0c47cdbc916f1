//! The run lock: one run of a pipeline against a target at a time. A second
//! run is refused with a message naming the first (its process, host and
//! start), instead of both writing the same receivers and each taking the
//! other's journal for a crashed run's.
//!
//! The lock is an advisory file lock (`flock`) on a file in the system's
//! temporary folder, named by a hash of the pipeline file's full path and
//! the target. The operating system releases it when the process ends, so a
//! crashed or killed run never leaves a stale lock behind.

use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Held for the length of a run; dropping it releases the lock.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

/// The folder of the lock files.
fn dir() -> PathBuf {
    std::env::temp_dir().join("listpipe-locks")
}

/// The lock file of `pipeline` against `target`.
pub fn path(pipeline: &Path, target: &str) -> PathBuf {
    let full = std::fs::canonicalize(pipeline).unwrap_or_else(|_| pipeline.to_path_buf());
    let digest = Sha256::digest(format!("{}\n{target}", full.display()).as_bytes());
    let name = full
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir().join(format!("{name}-{}.lock", &hex::encode(digest)[..16]))
}

/// Takes the lock, or answers why not: the other run, as it described itself.
pub fn acquire(pipeline: &Path, target: &str) -> Result<RunLock, String> {
    let dir = dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = path(pipeline, target);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("cannot open the run lock {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut other = String::new();
            let _ = file.read_to_string(&mut other);
            let other = other.trim();
            return Err(format!(
                "another run of {} against {target} is in progress ({}); wait for it to finish, or stop it first (lock file {})",
                pipeline.display(),
                if other.is_empty() { "starting" } else { other },
                path.display()
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into());
    let me = format!(
        "process {} on {host}, started {}",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
    );
    // Only the holder writes; a failure to describe itself is not a failure to lock.
    let _ = file
        .set_len(0)
        .and_then(|_| file.rewind())
        .and_then(|_| file.write_all(me.as_bytes()))
        .and_then(|_| file.flush());
    Ok(RunLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_pipeline_and_target_is_refused_until_the_first_ends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nightly.toml");
        std::fs::write(&p, "").unwrap();
        let first = acquire(&p, "https://api.example").unwrap();
        let err = acquire(&p, "https://api.example").unwrap_err();
        assert!(err.contains("another run of"), "{err}");
        assert!(
            err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        // Another target is another lock.
        let other = acquire(&p, "builtin").unwrap();
        drop((first, other));
        acquire(&p, "https://api.example").unwrap();
    }
}
