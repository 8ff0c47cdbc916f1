//! The store on PostgreSQL (`serve --db postgres://user:pw@host/db`): a few
//! connections shared by the server's requests, each read in one snapshot,
//! each write in its own transaction. Several `serve` processes on one
//! database are one server: everything they share (accounts, tokens, ids,
//! receivers) is in the database, and its unique keys decide races.
//!
//! Decision: the synchronous `postgres` client on the store's blocking
//! threads, as SQLite's connections are used: a store function reads the
//! same on both backends, and no async database layer is added.

use super::db::{Db, PgConn};
use super::{RETRY_AFTER_SECS, StoreError, StoreResult};
use std::cell::RefCell;
use std::path::Path;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The schema, one migration per file, applied in order on start (and by
/// `listpipe serve migrate`); `listpipe_schema` records how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/pg/001_core.sql"),
    include_str!("migrations/pg/002_rate_limits.sql"),
    include_str!("migrations/pg/003_receivers_unkeyed.sql"),
    include_str!("migrations/pg/004_token_families.sql"),
];

/// Connections per server process. PostgreSQL serves about a hundred by
/// default: several processes fit.
const CONNECTIONS: usize = 8;
/// Runs of a write that keeps losing races before it is answered 503.
const RACE_ATTEMPTS: u32 = 8;

/// The wait before run `attempt` of a raced write: doubling from 2 ms to at
/// most 128 ms, with up to as much again at random, so that the writers
/// that collided do not collide again in step.
fn backoff(attempt: u32) -> std::time::Duration {
    let base = 2u64 << attempt.min(6);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    std::time::Duration::from_millis(base + nanos % (base + 1))
}

/// How long a connection attempt waits before the request is answered 503.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The URL `db` holds when it names a PostgreSQL database.
pub(super) fn url(db: &Path) -> Option<&str> {
    let s = db.to_str()?;
    (s.starts_with("postgres://") || s.starts_with("postgresql://")).then_some(s)
}

/// Whether `e` says the server is gone (or going), so that the request is
/// a 503 to retry and the connection is made again.
pub(super) fn is_connection_lost(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code),
        None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
    }
}

/// The connections of one server process.
pub(super) struct Pool {
    config: postgres::Config,
    /// `None` until first used, and again after its connection was lost.
    slots: Vec<Mutex<Option<RefCell<PgConn>>>>,
    next: AtomicUsize,
}

impl Pool {
    /// Connects to `url` and brings its schema up to date. On a thread of
    /// its own: the synchronous client runs a runtime of its own, which
    /// cannot start inside the server's.
    pub(super) fn open(url: &str) -> StoreResult<Pool> {
        std::thread::scope(|s| {
            s.spawn(|| Self::open_here(url))
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    fn open_here(url: &str) -> StoreResult<Pool> {
        let mut config = postgres::Config::from_str(url)
            .map_err(|e| StoreError::Invalid(format!("--db is not a PostgreSQL URL: {e}")))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("listpipe serve");
        // Every statement planned for its values and the tables as they
        // are now, not once for all: a prepared statement may otherwise
        // settle on a generic plan made when the tables were small (a first
        // import starts from none) and keep it as they grow. Planning costs
        // a fraction of a millisecond. (Statistics lag behind a growing
        // table all the same: the batch's lookups are written so that they
        // cannot be planned as joins, see `receivers::bulk`.)
        config.options("-c plan_cache_mode=force_custom_plan");
        let pool = Pool {
            config,
            slots: (0..CONNECTIONS).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        };
        // At start the reason is the message (a wrong password, no such
        // database); later a lost database is a 503 to retry.
        let client = pool.config.connect(postgres::NoTls).map_err(|e| {
            StoreError::Internal(format!(
                "cannot connect to the PostgreSQL database at {}: {}",
                redacted(url),
                listpipe_base::cause::flat(&e)
            ))
        })?;
        let first = RefCell::new(PgConn::new(client));
        migrate(&first)?;
        *pool.slots[0].lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        Ok(pool)
    }

    fn connect(&self) -> StoreResult<RefCell<PgConn>> {
        let client = self.config.connect(postgres::NoTls).map_err(|e| {
            tracing::warn!(target: log_target!(), error = %listpipe_base::cause::flat(&e), "cannot connect to PostgreSQL");
            StoreError::Unavailable(format!(
                "Service Unavailable: the database cannot be reached; retry after {RETRY_AFTER_SECS} s"
            ))
        })?;
        Ok(RefCell::new(PgConn::new(client)))
    }

    /// Runs `f` in a transaction begun with `begin`, on a free connection.
    /// A connection found lost (the database restarted since its last use)
    /// is made again, and its transaction begun again: nothing of `f` has
    /// run then, so nothing is sent twice.
    fn in_transaction<T>(
        &self,
        begin: &str,
        f: impl FnOnce(&Db) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let n = self.slots.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut slot = (0..n)
            .find_map(|i| self.slots[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| {
                self.slots[start % n]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
            });
        let mut conn = match slot.take() {
            Some(c) if !c.borrow().client.is_closed() => c,
            _ => self.connect()?,
        };
        for attempt in 0.. {
            match Db::Pg(&conn).batch(begin) {
                Ok(()) => break,
                Err(StoreError::Unavailable(_)) if attempt == 0 => conn = self.connect()?,
                Err(e) => {
                    *slot = Some(conn);
                    return Err(e);
                }
            }
        }
        let out = finish(&conn, f);
        if !conn.borrow().client.is_closed() {
            *slot = Some(conn);
        }
        out
    }

    /// Runs `f`, which only reads, in one snapshot.
    pub(super) fn read<T>(&self, f: impl FnOnce(&Db) -> StoreResult<T>) -> StoreResult<T> {
        self.in_transaction("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", f)
    }

    /// Runs `f` as one transaction: all of it is committed, or none. A
    /// transaction that lost a race (a deadlock, a unique key taken by
    /// another process between a check and an insert) was rolled back
    /// whole; it runs again after a short, jittered wait, and sees the
    /// winner's rows. After [`RACE_ATTEMPTS`] it is a 503 to retry.
    pub(super) fn write<T>(&self, f: impl Fn(&Db) -> StoreResult<T>) -> StoreResult<T> {
        let mut attempt = 0;
        loop {
            // What an attempt rolled back wrote is not counted.
            super::written::discard();
            match self.in_transaction("BEGIN", &f) {
                Err(StoreError::Raced(_)) if attempt + 1 < RACE_ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(backoff(attempt));
                }
                done => return done,
            }
        }
    }
}

impl Pool {
    /// Connections in use (their slot held), open and free, and at most,
    /// looking at each slot without waiting for it.
    pub(super) fn stats(&self) -> (usize, usize, usize) {
        let (mut in_use, mut idle) = (0, 0);
        for slot in &self.slots {
            match slot.try_lock() {
                Ok(s) if s.is_some() => idle += 1,
                Ok(_) => {}
                Err(std::sync::TryLockError::Poisoned(p)) if p.get_ref().is_some() => idle += 1,
                Err(std::sync::TryLockError::Poisoned(_)) => {}
                Err(std::sync::TryLockError::WouldBlock) => in_use += 1,
            }
        }
        (in_use, idle, self.slots.len())
    }
}

impl Drop for Pool {
    /// The connections are closed on a thread of their own, for the reason
    /// [`Pool::open`] connects on one: each holds a runtime, which cannot be
    /// dropped inside the server's.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        let _ = std::thread::spawn(move || drop(slots)).join();
    }
}

/// Runs `f` in the transaction begun on `c`, and commits it, or rolls it
/// back when `f` fails or panics.
fn finish<T>(c: &RefCell<PgConn>, f: impl FnOnce(&Db) -> StoreResult<T>) -> StoreResult<T> {
    let db = Db::Pg(c);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&db))) {
        Ok(Ok(v)) => {
            db.batch("COMMIT")?;
            Ok(v)
        }
        Ok(Err(e)) => {
            // A lost connection has nothing to roll back.
            let _ = db.batch("ROLLBACK");
            Err(e)
        }
        Err(panic) => {
            let _ = db.batch("ROLLBACK");
            std::panic::resume_unwind(panic)
        }
    }
}

/// Applies the migrations not yet applied, in one transaction (PostgreSQL's
/// DDL is transactional: all or none), holding a lock that other processes
/// starting on the same database wait for.
fn migrate(c: &RefCell<PgConn>) -> StoreResult<()> {
    Db::Pg(c).batch("BEGIN")?;
    finish(c, |db| {
        db.batch(
            "SELECT pg_advisory_xact_lock(7236814251437302119);
             CREATE TABLE IF NOT EXISTS listpipe_schema (version BIGINT NOT NULL)",
        )?;
        let done: i64 = db.value(
            "SELECT COALESCE(MAX(version), 0) FROM listpipe_schema",
            super::db::params![],
        )?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(done.max(0) as usize) {
            db.batch(sql)?;
            db.exec(
                "INSERT INTO listpipe_schema (version) VALUES (?1)",
                super::db::params![i as i64 + 1],
            )?;
        }
        Ok(())
    })
}

/// `url` without its password, for messages.
pub(super) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_told_from_a_file_path() {
        assert_eq!(
            url(Path::new("postgres://u:p@127.0.0.1:5432/db")),
            Some("postgres://u:p@127.0.0.1:5432/db")
        );
        assert!(url(Path::new("postgresql://h/db")).is_some());
        assert_eq!(url(Path::new("./postgres/listpipe.db")), None);
    }

    #[test]
    fn messages_name_the_database_without_its_password() {
        assert_eq!(
            redacted("postgres://me:secret@db.example:5432/lp"),
            "postgres://me@db.example:5432/lp"
        );
        assert_eq!(
            redacted("postgres://db.example/lp"),
            "postgres://db.example/lp"
        );
    }
}
