//! The run lock: one run writing a group of a target at a time. A second
//! run is refused with a message naming the first (its process and start),
//! instead of both writing the same receivers and each taking the other's
//! journal for a crashed run's.
//!
//! The lock is keyed by the resolved target ([`super::identity`]: canonical
//! URL and account) and the group written, not by the pipeline file or the
//! URL as typed: `127.0.0.1` and `localhost` are one target, and two
//! pipelines writing one group are kept apart. A run takes one lock per
//! group its steps write.
//!
//! A second run of the same pipeline is refused (it would race the first
//! over the same rows and journal). A run of another pipeline writing the
//! same group waits for the first to finish, saying so once: two nightly
//! imports into one list are a normal schedule, not a failure.
//!
//! Each lock is an advisory file lock (`flock`) on a file in the system's
//! temporary folder, named by a hash of the key. The operating system
//! releases it when the process ends, so a crashed or killed run never
//! leaves a stale lock behind. A run removes its lock files when it ends
//! (they piled up, one per target and group ever written: thousands after a
//! test suite): it unlinks the file while still holding the lock, and a run
//! that takes a lock checks that the file it locked is still the one under
//! the name, opening it again if not, so that two runs never hold locks on
//! two files of one name.

use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Held for the length of a run; dropping it removes the lock files and
/// releases the locks.
#[derive(Debug)]
pub struct RunLock {
    files: Vec<(PathBuf, File)>,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        for (path, _file) in self.files.drain(..) {
            // Unlinked while locked; the lock goes with `_file` right after.
            #[cfg(unix)]
            let _ = std::fs::remove_file(&path);
            #[cfg(not(unix))]
            let _ = path;
        }
    }
}

/// Whether `file` is still the file named `path` (a run that ended may have
/// removed it after this one opened it).
#[cfg(unix)]
fn still_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_named(_file: &File, _path: &Path) -> bool {
    true
}

/// Why a run could not take its lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live run writes the same group of the same target.
    #[error(
        "another run is in progress: {other}; it writes {what}. Wait for it to finish, or stop it first (lock file {})",
        path.display()
    )]
    Held {
        other: String,
        what: String,
        path: PathBuf,
    },
    #[error("cannot take the run lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How often a run waiting for another pipeline's lock tries again.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The folder of the lock files.
fn dir() -> PathBuf {
    std::env::temp_dir().join("listpipe-locks")
}

/// The lock file of `group` of the resolved `target`.
pub fn path(target: &str, group: &str) -> PathBuf {
    let digest = Sha256::digest(format!("{target}\n{group}").as_bytes());
    dir().join(format!("{}.lock", &hex::encode(digest)[..24]))
}

/// Takes the lock of every group in `groups` of `target`, or answers why
/// not: the other run, as it described itself ("pid N since T ...").
pub fn acquire(pipeline: &Path, target: &str, groups: &[String]) -> Result<RunLock, LockError> {
    let dir = dir();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LockError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let full = std::fs::canonicalize(pipeline).unwrap_or_else(|_| pipeline.to_path_buf());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into());
    let me = format!(
        "pid {} since {} ({} on {host})",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC"),
        full.display()
    );
    let mut sorted: Vec<&String> = groups.iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut files = Vec::with_capacity(sorted.len());
    for group in sorted {
        let path = path(target, group);
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))
        };
        let mut file = open()?;
        let mine = format!("({} on {host})", full.display());
        let mut waiting = false;
        loop {
            match file.try_lock() {
                Ok(()) if still_named(&file, &path) => break,
                // Locked a file its last holder removed: the name's file now.
                Ok(()) => file = open()?,
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut other = String::new();
                    // Deliberately ignored: a holder whose description cannot
                    // be read is waited for like one that wrote none yet.
                    let _ = file.rewind().and_then(|_| file.read_to_string(&mut other));
                    let other = other.trim();
                    let what = format!("{group} of {target}");
                    // The same pipeline: refuse. Another one, or one that
                    // has not described itself yet (it writes that right
                    // after locking): wait, which is safe either way.
                    if other.contains(&mine) {
                        return Err(LockError::Held {
                            other: other.to_string(),
                            what,
                            path,
                        });
                    }
                    if !waiting && !other.is_empty() {
                        listpipe_base::errln!(
                            "listpipe: waiting for another run writing {what} to finish: {other}"
                        );
                        waiting = true;
                    }
                    std::thread::sleep(WAIT_POLL);
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
            }
        }
        // Only the holder writes; a failure to describe itself is not a failure to lock.
        let _ = file
            .set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| file.write_all(me.as_bytes()))
            .and_then(|_| file.flush());
        files.push((path, file));
    }
    Ok(RunLock { files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_pipeline_is_refused_and_another_waits_for_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
        let target = format!("https://api.example:443 (account {})", std::process::id());
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let first = acquire(&a, &target, &groups(&["group \"News\""])).unwrap();
        // The same pipeline again is refused, naming the first run.
        let err = acquire(&a, &target, &groups(&["group \"News\""]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "another run is in progress: pid {} since ",
                std::process::id()
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("it writes group \"News\" of {target}")),
            "{err}"
        );
        // Another group, or another target, is another lock.
        let other = acquire(&b, &target, &groups(&["group \"Other\""])).unwrap();
        let elsewhere = acquire(&a, "builtin", &groups(&["group \"News\""])).unwrap();
        drop((other, elsewhere));
        // Another pipeline writing the same group waits until the first ends.
        let (t, b2) = (target.clone(), b.clone());
        let second = std::thread::spawn(move || {
            acquire(&b2, &t, &["group \"News\"".to_string()]).map(|_| std::time::Instant::now())
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        let released = std::time::Instant::now();
        drop(first);
        let taken = second.join().unwrap().unwrap();
        assert!(
            taken >= released,
            "the second took the lock before the first let go"
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_run_removes_its_lock_file_and_the_next_one_locks_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let pipeline = dir.path().join("p.toml");
        let target = format!("https://files.example:443 (account {})", std::process::id());
        let groups = ["group \"Files\"".to_string()];
        let file = path(&target, &groups[0]);
        let first = acquire(&pipeline, &target, &groups).unwrap();
        assert!(file.exists());
        // A second pipeline waits on the file the first holds...
        let (t, g, other) = (target.clone(), groups.clone(), dir.path().join("q.toml"));
        let second = std::thread::spawn(move || acquire(&other, &t, &g));
        std::thread::sleep(std::time::Duration::from_millis(300));
        // ...which the first removes as it ends: the second locks the new one.
        drop(first);
        let second = second.join().unwrap().unwrap();
        assert!(file.exists());
        assert!(still_named(&second.files[0].1, &file));
        drop(second);
        assert!(!file.exists());
    }
}
