//! A credentials file shared by processes (two scheduled runs, a run and
//! `auth status`) is refreshed under an advisory lock on `<file>.lock`.
//!
//! Why: refresh tokens are single-use, and presenting a spent one again is
//! taken as a leak: the target revokes the whole token family (RFC 9700;
//! the built-in server does, and so may the real service). Two processes
//! that read the same file and both refresh would present one refresh token
//! twice and lose every token. Under the lock, a process first reads the
//! file again: when another process has refreshed since, it takes the
//! tokens found there instead of refreshing with its spent one.
//!
//! Decision: a separate lock file, because the credentials file itself is
//! replaced by a rename on each write ([`listpipe_base::state_file`]), so a lock on
//! it would lock a file that is no longer the one the next reader opens.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// Held while the lock is: dropping it releases the lock.
#[derive(Debug)]
pub struct Locked {
    _file: File,
}

/// The lock file beside `credentials`: `credentials.json.lock`.
pub fn lock_path(credentials: &Path) -> PathBuf {
    let mut name = credentials.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// Waits for the exclusive lock of `credentials` (blocking: call it on a
/// blocking thread from async code). The lock file is created owner-only
/// when missing and left in place: removing it would race another process
/// that has it open.
pub fn lock(credentials: &Path) -> std::io::Result<Locked> {
    let path = lock_path(credentials);
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&path).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot open the lock file {}: {e}", path.display()),
        )
    })?;
    file.lock().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot lock {}: {e}", path.display()))
    })?;
    Ok(Locked { _file: file })
}

/// [`lock`] on a blocking thread.
pub async fn lock_async(credentials: &Path) -> std::io::Result<Locked> {
    let path = credentials.to_path_buf();
    tokio::task::spawn_blocking(move || lock(&path))
        .await
        .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_second_holder_waits_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials.json");
        let first = lock(&creds).unwrap();
        let (tx, rx) = mpsc::channel();
        let path = creds.clone();
        let waiter = std::thread::spawn(move || {
            let _second = lock(&path).unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the second lock was taken while the first was held"
        );
        drop(first);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
        assert_eq!(lock_path(&creds), dir.path().join("credentials.json.lock"));
    }
}
