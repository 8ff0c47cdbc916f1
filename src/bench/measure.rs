//! Measuring a stage: run a listpipe command as a child process and take
//! its wall time and peak resident memory; watch the server's peak memory
//! alongside.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one child process took.
pub struct Measured {
    pub wall: Duration,
    /// Peak resident set size, bytes.
    pub peak_rss: u64,
    pub exit_code: i32,
}

/// Runs `cmd` to its end; its peak RSS comes from the kernel's accounting
/// of the child (`wait4`), so the last moments before exit count too.
pub fn run(cmd: &mut Command) -> std::io::Result<Measured> {
    let start = Instant::now();
    let child = cmd.spawn()?;
    let (exit_code, peak_rss) = wait(child)?;
    Ok(Measured {
        wall: start.elapsed(),
        peak_rss,
        exit_code,
    })
}

/// Waits for `child` and answers its exit code and peak RSS in bytes.
fn wait(child: Child) -> std::io::Result<(i32, u64)> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet waited for (std's `Child`
        // only reaps in `wait`/`try_wait`, which are never called on it);
        // both pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    // Linux reports ru_maxrss in KiB.
    Ok((code, usage.ru_maxrss.max(0) as u64 * 1024))
}

/// The built-in server as a process of its own, on a fresh database.
pub struct Server {
    child: Child,
    pub url: String,
    pub token: String,
}

impl Server {
    /// Starts `exe serve` on `db` at a free loopback port, with `extra`
    /// flags (faults, a rate limit), and reads its URL and token.
    pub fn start(exe: &Path, dir: &Path, extra: &[String]) -> anyhow::Result<Server> {
        std::fs::create_dir_all(dir)?;
        let db = dir.join("server.db");
        let creds = dir.join("credentials.json");
        // Deliberately ignored: most are absent on a first run; one that
        // stays makes the server's start fail with its own error.
        for p in [&db, &creds] {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_file(dir.join("server.db-wal"));
        let _ = std::fs::remove_file(dir.join("server.db-shm"));
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--token-ttl", "86400"])
            .arg("--db")
            .arg(&db)
            .arg("--credentials")
            .arg(&creds)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut url = None;
        for line in lines.by_ref() {
            let line = line?;
            if let Some(rest) = line.split("serving the v3 API at ").nth(1) {
                url = rest.split_whitespace().next().map(str::to_string);
                break;
            }
        }
        // Keep draining what the server prints, so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let Some(url) = url else {
            // Deliberately ignored: the bail below is the error to show.
            let _ = child.kill();
            anyhow::bail!("the server did not start");
        };
        let creds: serde_json::Value = serde_json::from_slice(&std::fs::read(&creds)?)?;
        let token = creds["access_token"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no access_token in the server's credentials"))?
            .to_string();
        Ok(Server { child, url, token })
    }

    fn status_path(&self) -> String {
        format!("/proc/{}/status", self.child.id())
    }

    /// Starts a new peak-memory window (Linux: `clear_refs` 5 resets VmHWM).
    pub fn reset_peak(&self) {
        // Deliberately ignored off Linux (no such file): the peak then
        // covers the whole run, as BENCHMARKS.md says.
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }

    /// The server's peak RSS in bytes since the last reset.
    pub fn peak_rss(&self) -> u64 {
        std::fs::read_to_string(self.status_path())
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Deliberately ignored: a server that already ended needs neither.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
