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
//!
//! The folder is shared by every user of the machine, as the targets are:
//! two users' runs into one group exclude each other like two of one user.
//! So it is sticky and world-writable (1777, like `/tmp`), set explicitly
//! after creating it since the umask strips those bits; a run that finds it
//! with another mode (made by an earlier version: 0755, and every other
//! user's run then failed with exit 74) sets it again when the folder is its
//! own. Lock files are created 0666, so that any user can open one to lock
//! it; `flock` needs only an open file, so a file this user may not write
//! (an earlier version's 0644) is locked through a read-only open, and its
//! holder then cannot describe itself in it. A sticky folder
//! forbids removing another user's file: such a lock file stays when its
//! run ends, and the next run locks it (it is still the file of its name).
//! The folder and its lock files are opened without following a symbolic
//! link, and a holder writes its description only into a regular file of
//! one link: in a folder anyone can write, a planted link must not make a
//! run change or overwrite another file.

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
            // Another user's file cannot be removed from the sticky folder
            // (EPERM): it stays for the next run, which is harmless.
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
    /// The folder or a lock file cannot be used (exit 74): `what` says
    /// which, and how to fix it when this user can.
    #[error("{what}: {source}")]
    Io {
        path: PathBuf,
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    fn io(path: &Path, source: std::io::Error) -> LockError {
        LockError::Io {
            path: path.to_path_buf(),
            what: format!("cannot take the run lock {}", path.display()),
            source,
        }
    }

    /// The folder exists but this user cannot create lock files in it.
    fn folder(dir: &Path, source: std::io::Error) -> LockError {
        let d = dir.display();
        LockError::Io {
            path: dir.to_path_buf(),
            what: format!(
                "the lock folder {d} is not writable by this user: `chmod 1777 {d}` or set TMPDIR to a folder of your own"
            ),
            source,
        }
    }
}

/// How often a run waiting for another pipeline's lock tries again.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The folder of the lock files, one for every user (see the module).
fn dir() -> PathBuf {
    std::env::temp_dir().join("listpipe-locks")
}

/// The folder's mode: anyone may create a lock file in it, no one may
/// remove or rename another user's (sticky).
#[cfg(unix)]
const DIR_MODE: u32 = 0o1777;

/// A lock file's mode: anyone may open it to lock it and describe itself.
#[cfg(unix)]
const FILE_MODE: u32 = 0o666;

/// Creates the folder shared (1777), or makes an existing one shared again.
/// Only its owner (or root) may change its mode; anyone else's refusal is
/// ignored here, and the folder's use says what to do if it is not usable.
fn prepare_dir(dir: &Path) -> Result<(), LockError> {
    std::fs::create_dir_all(dir).map_err(|source| LockError::Io {
        path: dir.to_path_buf(),
        what: format!(
            "cannot create the lock folder {}: set TMPDIR to a folder of your own",
            dir.display()
        ),
        source,
    })?;
    // Through a handle of the folder itself, never through a symbolic link
    // (planted in a shared /tmp, it would make root's run chmod its target).
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let folder = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)
            .map_err(|e| LockError::folder(dir, e))?;
        let mode = folder
            .metadata()
            .map_err(|e| LockError::folder(dir, e))?
            .permissions()
            .mode();
        if mode & 0o7777 != DIR_MODE {
            // Deliberately ignored: refused (EPERM) when it is another user's.
            let _ = folder.set_permissions(std::fs::Permissions::from_mode(DIR_MODE));
        }
    }
    Ok(())
}

/// Opens the lock file at `path` in `dir` to lock it, and whether it is
/// open for writing (the holder's description). Created 0666 when new; an
/// existing file is opened for writing without creating it when creating is
/// refused (`fs.protected_regular` refuses `O_CREAT` on another user's file
/// in a sticky folder whatever its mode), else read-only.
fn open(path: &Path, dir: &Path) -> Result<(File, bool), LockError> {
    let options = |write: bool| {
        let mut o = OpenOptions::new();
        o.read(true).write(write).create(write).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(FILE_MODE).custom_flags(libc::O_NOFOLLOW);
        }
        o
    };
    let refused = |e: &std::io::Error| e.kind() == std::io::ErrorKind::PermissionDenied;
    let created = match options(true).open(path) {
        Ok(file) => {
            #[cfg(unix)]
            share(&file);
            return Ok((file, true));
        }
        Err(e) if refused(&e) => e,
        Err(e) => return Err(LockError::io(path, e)),
    };
    // No file and no right to create one: the folder is the problem.
    let missing = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    match options(true).create(false).open(path) {
        Ok(file) => return Ok((file, true)),
        Err(e) if missing(&e) => return Err(LockError::folder(dir, created)),
        Err(e) if refused(&e) => {}
        Err(e) => return Err(LockError::io(path, e)),
    }
    match options(false).open(path) {
        Ok(file) => Ok((file, false)),
        Err(e) if missing(&e) => Err(LockError::folder(dir, created)),
        Err(e) => Err(LockError::Io {
            path: path.to_path_buf(),
            what: format!(
                "cannot take the run lock {p}, another user's file this user cannot open: `chmod 666 {p}` or set TMPDIR to a folder of your own",
                p = path.display()
            ),
            source: e,
        }),
    }
}

/// Gives a lock file this run opened the mode every user can lock it with
/// (the umask stripped it); refused, and ignored, on another user's file.
#[cfg(unix)]
fn share(file: &File) {
    use std::os::unix::fs::PermissionsExt;
    if file
        .metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o777 != FILE_MODE)
    {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE));
    }
}

/// Whether the holder may write its description into `file`: a regular
/// file of one link (not a link planted to another file).
#[cfg(unix)]
fn describable(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.is_file() && m.nlink() == 1)
}

#[cfg(not(unix))]
fn describable(_file: &File) -> bool {
    true
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
    prepare_dir(&dir)?;
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
        let (mut file, mut writable) = open(&path, &dir)?;
        let mine = format!("({} on {host})", full.display());
        let mut waiting = false;
        loop {
            match file.try_lock() {
                Ok(()) if still_named(&file, &path) => break,
                // Locked a file its last holder removed: the name's file now.
                Ok(()) => (file, writable) = open(&path, &dir)?,
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
                Err(std::fs::TryLockError::Error(e)) => return Err(LockError::io(&path, e)),
            }
        }
        // Only the holder writes; a failure to describe itself is not a
        // failure to lock. A file it holds read-only keeps the last
        // holder's description, which waiters then take for this run's: at
        // worst a run of that pipeline is refused (exit 4) instead of waiting.
        if writable && describable(&file) {
            let _ = file
                .set_len(0)
                .and_then(|_| file.rewind())
                .and_then(|_| file.write_all(me.as_bytes()))
                .and_then(|_| file.flush());
        }
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

    #[test]
    #[cfg(unix)]
    fn the_folder_and_lock_files_are_open_to_every_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = format!("https://modes.example:443 (account {})", std::process::id());
        let groups = ["group \"Modes\"".to_string()];
        let lock = acquire(&dir.path().join("p.toml"), &target, &groups).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&super::dir()), 0o1777);
        assert_eq!(mode(&path(&target, &groups[0])), 0o666);
        drop(lock);
    }

    #[test]
    #[cfg(unix)]
    fn a_link_planted_as_a_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let target = format!("https://links.example:443 (account {})", std::process::id());
        let groups = ["group \"Links\"".to_string()];
        let file = path(&target, &groups[0]);
        acquire(&dir.path().join("p.toml"), &target, &[]).unwrap();
        std::os::unix::fs::symlink(&victim, &file).unwrap();
        let err = acquire(&dir.path().join("p.toml"), &target, &groups).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot take the run lock {}: ", file.display())),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}
