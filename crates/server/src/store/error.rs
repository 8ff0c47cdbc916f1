//! What a store operation can fail with, and the shorthands that raise it.

use super::pg;

/// What a busy answer asks the client to wait, in seconds: a full write
/// queue here ([`StoreError::Busy`]), a request over the server's bound
/// (`server::overload`); every 503 carries it as `Retry-After`
/// (`server::error`). Decision: kept here, at the bottom of the server's
/// modules, so that all three read it while imports run one way, down to
/// the store.
pub const RETRY_AFTER_SECS: u64 = 1;

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
    /// The writer's queue is full: a 503 with `Retry-After`; nothing was written.
    #[error("{0}")]
    Busy(String),
    /// A write lost a race with another transaction on PostgreSQL and was
    /// rolled back whole; run again (see [`pg::Pool::write`]), else a 503.
    #[error("{0}")]
    Raced(String),
    #[error("database error")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database error")]
    Postgres(#[source] postgres::Error),
    /// The database cannot be reached: a 503 with `Retry-After`; nothing
    /// was written.
    #[error("{0}")]
    Unavailable(String),
    /// The database's folder or file cannot be made.
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A blocking store task panicked or was cancelled.
    #[error("a store task failed")]
    Task(#[from] tokio::task::JoinError),
    #[error("internal error: {0}")]
    Internal(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl From<postgres::Error> for StoreError {
    /// A lost connection is "unavailable, come back" (503 with
    /// `Retry-After`). So is a write that lost a race with another server
    /// process on the same database (a deadlock, a serialization failure,
    /// a unique key taken between its check and its insert, a contact
    /// deleted between its lookup and its receiver's insert): it was rolled
    /// back whole, and the same request again sees the winner's row (and
    /// answers, say, 409). Anything else is a database error.
    fn from(e: postgres::Error) -> Self {
        use postgres::error::SqlState;
        if pg::is_connection_lost(&e) {
            return StoreError::Unavailable(format!(
                "Service Unavailable: the database cannot be reached; retry after {RETRY_AFTER_SECS} s"
            ));
        }
        let raced = [
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::UNIQUE_VIOLATION,
            SqlState::FOREIGN_KEY_VIOLATION,
        ];
        if e.code().is_some_and(|c| raced.contains(c)) {
            tracing::debug!(target: log_target!(), error = %e, "a write lost a race");
            return StoreError::raced();
        }
        StoreError::Postgres(e)
    }
}

impl StoreError {
    /// A write that lost a race with another process: rolled back, and run
    /// again (`pg::Pool::write`), or answered 503 when it keeps losing.
    pub fn raced() -> Self {
        StoreError::Raced(format!(
            "Service Unavailable: a concurrent write got there first; retry after {RETRY_AFTER_SECS} s"
        ))
    }
}

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
