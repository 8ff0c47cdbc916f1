//! The built-in server's storage: one database holding every account, a
//! SQLite file (WAL; the default) or a PostgreSQL database shared by any
//! number of server processes ([`pg`]). Each submodule owns the queries and
//! the rules of one resource, written once against [`Db`] for both
//! backends; routes call them through [`Store::read`], [`Store::write`] and
//! [`Store::call`], which run the closure on a blocking thread.
//!
//! Every query binds its values as parameters; no user input is pasted into
//! SQL text. Multi-step writes run in one transaction.

pub mod accounts;
pub mod attributes;
pub mod blacklist;
pub mod clients;
mod clock;
pub mod db;
mod error;
pub mod events;
pub mod filters;
pub mod forms;
pub mod groups;
mod pg;
mod plans;
pub mod rates;
pub mod receivers;
pub mod redirect_uris;
pub mod tags;
pub mod tokens;
pub mod users;
mod writer;
pub mod written;

pub use clock::{Clock, now};
pub use db::{Backend, Db};
pub use error::{RETRY_AFTER_SECS, StoreError, StoreResult, conflict, invalid, not_found};
use rusqlite::Connection;
use rusqlite::config::DbConfig;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The schema, one migration per file, applied in order; `user_version`
/// records how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_core.sql"),
    include_str!("migrations/002_filters.sql"),
    include_str!("migrations/003_clients_forms.sql"),
    include_str!("migrations/004_users.sql"),
    include_str!("migrations/005_list_order.sql"),
    include_str!("migrations/006_order_key.sql"),
    include_str!("migrations/007_token_families.sql"),
];

/// What a contact carries that is deleted with it (`receivers`, `groups`).
/// The store deletes them itself: on PostgreSQL these tables have no foreign
/// key to cascade (migration 003); on SQLite the cascade then finds nothing
/// left.
pub(crate) const CONTACT_PARTS: [&str; 3] = ["attribute_values", "tags", "orders"];

/// Field size limits (docs/server.md, "Wire format"): a longer value is a 400 naming the
/// field, so absurd sizes never reach the database.
pub const MAX_NAME_CHARS: usize = 255;
/// Free text: group `receiver_info`, blacklist comments, attribute
/// descriptions, previews and defaults, receiver `source`, `last_*`, order fields,
/// filter conditions.
pub const MAX_TEXT_CHARS: usize = 10_000;
pub const MAX_TAG_CHARS: usize = 255;
/// Tags in one write (a create, an update or a tag add).
pub const MAX_TAGS_PER_WRITE: usize = 1_000;
/// Orders in one write.
pub const MAX_ORDERS_PER_WRITE: usize = 1_000;
/// Rules of one filter.
pub const MAX_FILTER_RULES: usize = 100;

/// A 400 when `value` has more than `max` characters.
pub fn check_len(field: &str, value: &str, max: usize) -> StoreResult<()> {
    if value.len() > max && value.chars().count() > max {
        return invalid(format!(
            "Bad Request: {field} is longer than {max} characters"
        ));
    }
    Ok(())
}

/// A 400 when a list has more than `max` items.
pub fn check_count(field: &str, n: usize, max: usize) -> StoreResult<()> {
    if n > max {
        return invalid(format!("Bad Request: {field} holds more than {max} items"));
    }
    Ok(())
}

/// The id of the account a token belongs to: every query is scoped by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountId(pub i64);

/// The database: SQLite in one file (the default) or a PostgreSQL server
/// (`--db postgres://...`, see [`pg`]); store functions see either as a
/// [`Db`].
#[derive(Clone)]
pub struct Store {
    kind: Kind,
    /// The time its functions read ([`now`]).
    clock: Clock,
    /// Rows its writes committed, by table and operation ([`written`]).
    written: written::RowsWritten,
}

/// The store's connections now, for `serve --metrics-listen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections running a statement (or held for one).
    pub in_use: usize,
    /// Connections open and free.
    pub idle: usize,
    /// Connections the store opens at most.
    pub max: usize,
    /// SQLite: writes queued for the writer thread (its group commit);
    /// `None` on PostgreSQL, where each write takes a connection.
    pub write_queue: Option<usize>,
}

#[derive(Clone)]
enum Kind {
    Lite(Lite),
    Pg(Arc<pg::Pool>),
}

/// SQLite: one connection that writes (SQLite has one writer at a time)
/// and a few that only read, so that reads (pages of receivers, token
/// checks, exports) run beside writes and beside each other (WAL).
#[derive(Clone)]
struct Lite {
    conn: Arc<Mutex<Connection>>,
    readers: Arc<Readers>,
    /// The writer thread's queue (see [`writer`]), bounded.
    writes: writer::Queue,
    /// Single creates waiting for the writer, written as one batch.
    creates: Arc<writer::Merge<receivers::NewReceiver, listpipe_api::Receiver>>,
}

/// Read-only connections, handed out round robin.
struct Readers {
    conns: Vec<Mutex<Connection>>,
    next: std::sync::atomic::AtomicUsize,
}

/// Counts calls on the writing connection (bumped after each), so that
/// what a reader remembers of earlier reads (see `receivers::read`) is
/// dropped once anything may have changed.
pub static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Reading connections per store.
const READERS: usize = 4;
/// Page cache per reading connection, KiB. Decision: 8 MiB, not the
/// writer's 32: a page of receivers reads rows spread over the whole
/// database, so each reader's cache filled to its limit and four of them
/// were most of the server's memory during an export (issue 15: under 256
/// MiB); pages past it come from the operating system's file cache.
const READER_CACHE_KIB: i64 = 8_192;
/// Prepared statements kept per connection: every hot query stays prepared.
const STATEMENT_CACHE: usize = 256;

/// Opens a connection with the settings every connection of the store uses.
fn connect(path: &Path) -> StoreResult<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Plans that never look at bound values. Without it SQLite marks some
    // statements (an `OR` over a parameter, a join with a parameter on its
    // key) as planned for their values, and such a statement is re-parsed
    // and re-planned each time the statement cache clears its bindings:
    // every use. That was a third of the writer's time for single creates
    // (perf, issue 15). Decision: no plan here depends on a value (no
    // `LIKE` prefix, no ANALYZE statistics), so nothing is lost.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // 32 MiB of page cache for the writer (SQLite's default is 2 MiB): the
    // indexes a write touches stay in memory for a million receivers.
    // Readers get less (below).
    conn.pragma_update(None, "cache_size", -32_768)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(conn)
}

impl Store {
    /// Opens the database `db` names, a SQLite file or a `postgres://` URL,
    /// creating what is missing, and brings its schema up to date.
    pub fn open(db: &Path) -> StoreResult<Store> {
        Self::open_with_clock(db, Clock::real())
    }

    /// [`Store::open`] on `clock`: the time every store function reads
    /// ([`now`]) while it runs through [`Store::read`], [`Store::write`] or
    /// [`Store::call`].
    pub fn open_with_clock(db: &Path, clock: Clock) -> StoreResult<Store> {
        if let Some(url) = pg::url(db) {
            return Ok(Store {
                kind: Kind::Pg(Arc::new(pg::Pool::open(url)?)),
                clock,
                written: Default::default(),
            });
        }
        Self::open_sqlite(db, clock)
    }

    fn open_sqlite(path: &Path, clock: Clock) -> StoreResult<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                what: format!("create {}", dir.display()),
                source,
            })?;
        }
        let mut conn = connect(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL in WAL mode survives a crash of the process (not of the
        // machine's power), which is what "acknowledged is kept" needs here.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        migrate(&mut conn)?;
        let conns = (0..READERS)
            .map(|_| {
                let r = connect(path)?;
                // A reader never writes, whatever a caller asks of it.
                r.pragma_update(None, "query_only", "ON")?;
                r.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
                Ok(Mutex::new(r))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let conn = Arc::new(Mutex::new(conn));
        let written = written::RowsWritten::default();
        Ok(Store {
            kind: Kind::Lite(Lite {
                writes: writer::start(conn.clone(), clock.clone(), written.clone()).map_err(
                    |source| StoreError::Io {
                        what: "start the database writer".into(),
                        source,
                    },
                )?,
                conn,
                creates: writer::Merge::new(receivers::create_many),
                readers: Arc::new(Readers {
                    conns,
                    next: Default::default(),
                }),
            }),
            clock,
            written,
        })
    }

    /// Rows its writes committed, by table and operation ([`written`]).
    pub fn rows_written(&self) -> &written::RowsWritten {
        &self.written
    }

    /// Its connections now: in use, idle, at most, and (SQLite) the
    /// writer's queue. A connection is in use while its lock is held, so
    /// this looks (never waits) at each lock.
    pub fn pool(&self) -> PoolStats {
        match &self.kind {
            Kind::Lite(l) => {
                let all = std::iter::once(&*l.conn).chain(l.readers.conns.iter());
                let in_use = all
                    .filter(|c| matches!(c.try_lock(), Err(std::sync::TryLockError::WouldBlock)))
                    .count();
                let max = 1 + l.readers.conns.len();
                PoolStats {
                    in_use,
                    idle: max - in_use,
                    max,
                    write_queue: Some(l.writes.waiting()),
                }
            }
            Kind::Pg(pool) => {
                let (in_use, idle, max) = pool.stats();
                PoolStats {
                    in_use,
                    idle,
                    max,
                    write_queue: None,
                }
            }
        }
    }

    /// The clock its functions read.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Which database this store runs on.
    pub fn backend(&self) -> Backend {
        match self.kind {
            Kind::Lite(_) => Backend::Sqlite,
            Kind::Pg(_) => Backend::Postgres,
        }
    }

    /// Runs `f`, which only reads, on a reading connection on a blocking
    /// thread. It sees every write committed before it starts, in one
    /// snapshot.
    pub async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> StoreResult<T> + Send + 'static,
    {
        let clock = self.clock.clone();
        let readers = match &self.kind {
            Kind::Lite(l) => l.readers.clone(),
            Kind::Pg(pool) => {
                let pool = pool.clone();
                return tokio::task::spawn_blocking(move || clock.enter(|| pool.read(f))).await?;
            }
        };
        tokio::task::spawn_blocking(move || {
            let n = readers.conns.len();
            let start = readers
                .next
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // A free connection if there is one, else wait for the next in turn.
            let guard = (0..n)
                .find_map(|i| readers.conns[(start + i) % n].try_lock().ok())
                .unwrap_or_else(|| {
                    readers.conns[start % n]
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                });
            clock.enter(|| in_one_snapshot(&guard, f))
        })
        .await?
    }

    /// Runs `f` with the writing connection on a blocking thread, outside
    /// the writer's group commits (on PostgreSQL, in its own transaction,
    /// run again if it lost a race, as [`Store::write`]).
    pub async fn call<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Db) -> StoreResult<T> + Send + 'static,
    {
        let clock = self.clock.clone();
        let conn = match &self.kind {
            Kind::Lite(l) => l.conn.clone(),
            Kind::Pg(pool) => {
                let (pool, counts) = (pool.clone(), self.written.clone());
                return tokio::task::spawn_blocking(move || {
                    let out = clock.enter(|| pool.write(f));
                    committed(&out, &counts);
                    out
                })
                .await?;
            }
        };
        let counts = self.written.clone();
        tokio::task::spawn_blocking(move || {
            // A panic in another call poisons the lock but leaves the
            // connection usable (its transaction was rolled back on drop).
            let guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            written::discard();
            let out = clock.enter(|| f(&Db::Lite(&guard)));
            WRITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            committed(&out, &counts);
            out
        })
        .await?
    }

    /// Runs `f` as one all-or-nothing write, answered once committed. On
    /// SQLite, writes waiting at the same time are committed together
    /// ([`writer`]); on PostgreSQL a write that lost a race with another
    /// (two processes creating one address) is rolled back and run again,
    /// so `f` may run more than once and must not consume what it captures.
    pub async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Db) -> StoreResult<T> + Send + 'static,
    {
        let writes = match &self.kind {
            Kind::Lite(l) => &l.writes,
            Kind::Pg(pool) => {
                let (pool, clock) = (pool.clone(), self.clock.clone());
                let counts = self.written.clone();
                return tokio::task::spawn_blocking(move || {
                    let out = clock.enter(|| pool.write(f));
                    committed(&out, &counts);
                    out
                })
                .await?;
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        writes
            .try_send(writer::Job::new(f, tx))
            .map_err(|e| writer::refused(&e))?;
        rx.await
            .map_err(|_| StoreError::Internal("the store's writer dropped a write".into()))?
    }

    /// `POST /groups/{g}/receivers`: creates a receiver, answering as
    /// [`receivers::create`]. On SQLite the creates that wait for the
    /// writer together are written as one batch
    /// ([`receivers::create_many`]): a set-based statement per table
    /// instead of some twenty statements a receiver.
    pub async fn create_receiver(
        &self,
        account: AccountId,
        group: i64,
        input: listpipe_api::ReceiverInput,
    ) -> StoreResult<listpipe_api::Receiver> {
        match &self.kind {
            Kind::Lite(l) => {
                let item = receivers::NewReceiver {
                    account,
                    group,
                    input,
                };
                l.creates.write(&l.writes, item).await
            }
            Kind::Pg(_) => {
                self.write(move |c| receivers::create(c, account, group, &input))
                    .await
            }
        }
    }

    /// Single creates waiting for the SQLite writer, for tests.
    #[cfg(test)]
    pub(crate) fn creates_waiting(&self) -> usize {
        match &self.kind {
            Kind::Lite(l) => l.creates.waiting(),
            Kind::Pg(_) => 0,
        }
    }

    /// The SQLite writer's connection, for tests that hold it.
    #[cfg(test)]
    pub(crate) fn lite_conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        match &self.kind {
            Kind::Lite(l) => l.conn.lock().unwrap(),
            Kind::Pg(_) => panic!("not a SQLite store"),
        }
    }
}

/// A write outside the writer's group commits ended with `out`: what it
/// wrote counts once it succeeded (committed), never when it failed.
fn committed<T>(out: &StoreResult<T>, counts: &written::RowsWritten) {
    match out {
        Ok(_) => written::flush(counts),
        Err(_) => written::discard(),
    }
}

/// Runs a read inside one read transaction: its statements (a page's list,
/// attribute values, tags and orders; a blacklist check per address) see
/// one snapshot, and the WAL's read lock is taken once per read instead of
/// once per statement (a check of 500 addresses took 1,000).
fn in_one_snapshot<T>(conn: &Connection, f: impl FnOnce(&Db) -> StoreResult<T>) -> StoreResult<T> {
    // A read that panicked left its transaction open; end it first.
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK")?;
    }
    conn.prepare_cached("BEGIN")?.execute([])?;
    let out = f(&Db::Lite(conn));
    // Nothing was written: ending the snapshot cannot lose anything.
    let end = conn
        .prepare_cached("COMMIT")
        .and_then(|mut s| s.execute([]));
    let out = out?;
    end?;
    Ok(out)
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let done: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done.max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// Whether `--db` names a PostgreSQL database (a `postgres://` URL).
pub fn is_postgres(db: &Path) -> bool {
    pg::url(db).is_some()
}

/// How messages name the database `--db` gives: the file's path, or the
/// PostgreSQL URL without its password.
pub fn shown(db: &Path) -> String {
    match pg::url(db) {
        Some(url) => pg::redacted(url),
        None => db.display().to_string(),
    }
}

/// Reads a setting kept in the database (for example the last base URL).
pub fn setting(db: &Db, key: &str) -> StoreResult<Option<String>> {
    db.opt_row(
        "SELECT value FROM settings WHERE key = ?1",
        db::params![key],
        |r| r.get(0),
    )
}

pub fn set_setting(db: &Db, key: &str, value: &str) -> StoreResult<()> {
    db.exec(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        db::params![key, value],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
