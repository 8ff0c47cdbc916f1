//! The built-in server's storage: one SQLite database (WAL) per server,
//! holding every account. Each submodule owns the queries and the rules of
//! one resource; routes call them through [`Store::call`], which runs the
//! closure on a blocking thread with the connection.
//!
//! Every query binds its values as parameters; no user input is pasted into
//! SQL text. Multi-step writes run in one transaction.

pub mod accounts;
pub mod attributes;
pub mod blacklist;
pub mod clients;
pub mod events;
pub mod filters;
pub mod forms;
pub mod groups;
pub mod receivers;
pub mod redirect_uris;
pub mod tags;
pub mod users;

use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The schema, one migration per file, applied in order; `user_version`
/// records how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_core.sql"),
    include_str!("migrations/002_filters.sql"),
    include_str!("migrations/003_clients_forms.sql"),
    include_str!("migrations/004_users.sql"),
];

/// What a store operation can fail with; routes map each to a status.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("internal error: {0}")]
    Internal(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Shorthands that read as the rule they enforce.
pub fn not_found<T>(what: impl Into<String>) -> StoreResult<T> {
    Err(StoreError::NotFound(what.into()))
}
pub fn invalid<T>(what: impl Into<String>) -> StoreResult<T> {
    Err(StoreError::Invalid(what.into()))
}
pub fn conflict<T>(what: impl Into<String>) -> StoreResult<T> {
    Err(StoreError::Conflict(what.into()))
}

/// Field size limits (README "Limits"): a longer value is a 400 naming the
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

#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
}

impl Store {
    /// Opens or creates the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> StoreResult<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Internal(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL in WAL mode survives a crash of the process (not of the
        // machine's power), which is what "acknowledged is kept" needs here.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        migrate(&mut conn)?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` with the connection on a blocking thread.
    pub async fn call<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic in another call poisons the lock but leaves the
            // connection usable (its transaction was rolled back on drop).
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))?
    }

    /// Runs `f` inside one transaction, committed only if it succeeds.
    pub async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction) -> StoreResult<T> + Send + 'static,
    {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
        .await
    }
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

/// The current time in Unix seconds.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Reads a setting kept in the database (for example the last base URL).
pub fn setting(conn: &Connection, key: &str) -> StoreResult<Option<String>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?)
}

pub fn set_setting(conn: &Connection, key: &str, value: &str) -> StoreResult<()> {
    conn.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )?;
    Ok(())
}
