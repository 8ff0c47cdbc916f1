//! A throwaway PostgreSQL server for tests (issue 18's query sources, issue 19's store):
//! Debian's `initdb` and `pg_ctl` in a temp dir, on a free loopback port, its socket in the
//! temp dir, a password-protected superuser, stopped (`pg_ctl stop -m immediate`) and
//! removed on drop, leaving nothing behind. Moved here from the root package's
//! `tests/it/pg.rs` (issue 59), which re-exports it.
//!
//! Decision: PostgreSQL refuses to run as root, so as root every command runs through
//! `runuser -u postgres` (or `nobody` where Debian's `postgres` user does not exist), which
//! is given the temp dir. Without the binaries at all a test skips saying so; with `CI=true`
//! it fails instead (`.ci/run` installs them).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The superuser's name and password (the password is what tests look for in output).
pub const USER: &str = "listpipe";
pub const PASSWORD: &str = "s3cret-pg-pw";

pub struct PgServer {
    /// Holds the data directory, socket and log; removed after the server stops.
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The user the server runs as, when the tests run as root.
    run_as: Option<String>,
    pub port: u16,
}

impl PgServer {
    /// A running server, or `None` (with a line saying why) when this machine has no
    /// PostgreSQL binaries; with `CI=true` that is a failure, not a skip.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "no PostgreSQL binaries (initdb, pg_ctl) on this CI machine: .ci/run must install postgresql"
            );
            eprintln!("skipped: no PostgreSQL binaries (initdb, pg_ctl); install postgresql");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let run_as = is_root().then(unprivileged_user);
        if let Some(user) = &run_as {
            give(dir.path(), user);
        }
        let server = PgServer {
            dir,
            bin,
            run_as,
            port: 0,
        };
        std::fs::write(server.path("pwfile"), PASSWORD).expect("password file");
        if let Some(user) = &server.run_as {
            give(&server.path("pwfile"), user);
        }
        let data = server.path("data");
        let pwfile = server.path("pwfile");
        let out = server.command(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                USER.as_ref(),
                "--pwfile".as_ref(),
                pwfile.as_os_str(),
                "--auth=scram-sha-256".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        assert!(out.status.success(), "initdb failed: {}", text(&out));
        Some(server.listen())
    }

    /// Starts the server on a free port (another free one if a race took it).
    fn listen(mut self) -> PgServer {
        let mut last = String::new();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let out = self.pg_ctl_start(port);
            if out.status.success() {
                self.port = port;
                return self;
            }
            last = format!(
                "{}\n{}",
                text(&out),
                std::fs::read_to_string(self.path("log")).unwrap_or_default()
            );
        }
        panic!("PostgreSQL did not start: {last}");
    }

    fn pg_ctl_start(&self, port: u16) -> Output {
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            self.dir.path().display()
        );
        let (data, log) = (self.path("data"), self.path("log"));
        self.command(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "start".as_ref(),
            ],
        )
    }

    /// Stops the server at once, as a crash would, keeping its data and port.
    pub fn stop(&self) {
        let out = self.stop_now();
        assert!(out.status.success(), "pg_ctl stop failed: {}", text(&out));
    }

    fn stop_now(&self) -> Output {
        let data = self.path("data");
        self.command(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        )
    }

    /// A new empty database `name` on this server: its URL.
    pub fn database(&self, name: &str) -> String {
        self.database_with(name, "")
    }

    /// [`database`](Self::database) with `CREATE DATABASE` options (a locale).
    pub fn database_with(&self, name: &str, options: &str) -> String {
        self.execute(&format!("CREATE DATABASE {name} {options}"));
        format!("{}{name}", self.url().trim_end_matches("postgres"))
    }

    /// Starts a stopped server again on its port.
    pub fn start_again(&self) {
        let out = self.pg_ctl_start(self.port);
        assert!(
            out.status.success(),
            "PostgreSQL did not start again: {}",
            text(&out)
        );
    }

    /// `postgres://listpipe:PASSWORD@127.0.0.1:PORT/postgres`
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// Runs SQL statements (on a thread of their own: the synchronous client must not run
    /// inside a test's tokio runtime).
    pub fn execute(&self, sql: &str) {
        let (url, sql) = (self.url(), sql.to_string());
        std::thread::spawn(move || {
            let mut client =
                postgres::Client::connect(&url, postgres::NoTls).expect("connects to PostgreSQL");
            client.batch_execute(&sql).expect("SQL runs");
        })
        .join()
        .expect("SQL thread");
    }

    /// The first column of the first row of a query on the database at
    /// `url`, as a number (on a thread of its own, as [`Self::execute`]).
    pub fn number(&self, url: &str, sql: &str) -> i64 {
        let (url, sql) = (url.to_string(), sql.to_string());
        std::thread::spawn(move || {
            let mut client =
                postgres::Client::connect(&url, postgres::NoTls).expect("connects to PostgreSQL");
            client.query_one(&sql, &[]).expect("SQL runs").get(0)
        })
        .join()
        .expect("SQL thread")
    }

    /// The directory holding the data, socket and log (gone after drop).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, program: &str, args: &[&std::ffi::OsStr]) -> Output {
        let program = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        cmd.args(args)
            .env("LC_ALL", "C")
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.port != 0 {
            let _ = self.stop_now();
        }
    }
}

/// The directory holding `initdb` and `pg_ctl`: from PATH (Debian links them into
/// /usr/local/bin on some machines), else the newest /usr/lib/postgresql/N/bin.
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("initdb"))
            .find(|p| p.is_file())
    });
    if let Some(initdb) = on_path {
        let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        let dir = real.parent()?.to_path_buf();
        if dir.join("pg_ctl").is_file() {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Debian's `postgres` user where it exists, else `nobody`.
fn unprivileged_user() -> String {
    let exists = Command::new("id")
        .arg("-u")
        .arg("postgres")
        .output()
        .is_ok_and(|o| o.status.success());
    if exists { "postgres" } else { "nobody" }.to_string()
}

/// Makes `path` the user's (its uid and primary gid, as `id` tells them).
fn give(path: &Path, user: &str) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, user]).output().expect("id");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a numeric id")
    };
    std::os::unix::fs::chown(path, Some(id("-u")), Some(id("-g")))
        .expect("chown to the server's user");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the calling test binary again in a child process on PostgreSQL
/// (`LISTPIPE_TEST_BACKEND=postgres`, each test server there on a fresh
/// database of `pg`), with `filters` (none: every test) and without the
/// tests in `skip`; fails the calling test with the child's failures, or
/// when no test ran. A test suite's "again on PostgreSQL" test calls it.
pub fn rerun_on_postgres(pg: &PgServer, filters: &[&str], skip: &[&str]) {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(filters);
    for s in skip {
        cmd.args(["--skip", s]);
    }
    let out = cmd
        .env("LISTPIPE_TEST_BACKEND", "postgres")
        .env("LISTPIPE_TEST_PG_URL", pg.url())
        .output()
        .expect("the suite runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.ends_with("FAILED") || l.starts_with("---- "))
        .collect();
    assert!(
        out.status.success(),
        "the suite failed on PostgreSQL:\n{}\n{stdout}\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|l| l.split_whitespace().next()?.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(passed > 0, "no test ran on PostgreSQL:\n{stdout}");
    eprintln!("{passed} tests passed on PostgreSQL");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throwaway_postgres_server_answers_queries_and_leaves_nothing_behind() {
        let Some(pg) = PgServer::start() else {
            return;
        };
        pg.execute("create table t (a int); insert into t values (1), (2);");
        let url = pg.url();
        let count: i64 = std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            client
                .query_one("select count(*) from t", &[])
                .unwrap()
                .get(0)
        })
        .join()
        .unwrap();
        assert_eq!(count, 2);

        let wrong = pg.url().replace(PASSWORD, "wrong");
        let refused = std::thread::spawn(move || {
            postgres::Client::connect(&wrong, postgres::NoTls)
                .err()
                .and_then(|e| e.as_db_error().map(|d| d.message().to_string()))
        })
        .join()
        .unwrap();
        assert!(
            refused
                .as_deref()
                .unwrap_or("")
                .contains("password authentication failed"),
            "a wrong password is refused: {refused:?}"
        );

        let (dir, port) = (pg.dir().to_path_buf(), pg.port);
        drop(pg);
        assert!(!dir.exists(), "the temp dir is removed");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "nothing listens on the port any more"
        );
    }
}
