//! `serve --rate-limit N` on PostgreSQL: the limit holds for an account across
//! every server process on the database, as one server's would. The same
//! rule as the in-process limiter (`server::ratelimit`): a generic cell rate
//! (GCRA) of N per second with a burst of N, kept per account as the time its
//! next request is due, on the database's clock (the processes' clocks may
//! differ), moved on as far as the server's clock is ahead of the real time
//! (`store::Clock`; not at all but in tests).

use super::db::params;
use super::{Db, StoreResult};

/// Takes one request of `key`'s quota: `Ok(())`, or the whole seconds to
/// wait (at least 1). One statement decides, so two processes never both
/// take the last request of a burst. `ahead_secs`: how far the server's
/// clock is ahead of the real time.
pub fn take(db: &Db, key: &str, per_second: u32, ahead_secs: i64) -> StoreResult<Result<(), u64>> {
    let ahead = ahead_secs as f64;
    let interval = 1.0 / f64::from(per_second.max(1));
    // A burst of N: the next request may be due up to N - 1 intervals ahead.
    let tolerance = interval * f64::from(per_second.max(1) - 1);
    let taken = db.opt_row(
        "WITH now AS (SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) + ?4 AS t)
         INSERT INTO rate_limits (key, tat) SELECT ?1, t + ?2 FROM now
         ON CONFLICT (key) DO UPDATE SET tat = GREATEST(rate_limits.tat, (SELECT t FROM now)) + ?2
         WHERE rate_limits.tat - (SELECT t FROM now) <= ?3
         RETURNING 1",
        params![key, interval, tolerance, ahead],
        |r| r.get::<i32>(0),
    )?;
    if taken.is_some() {
        return Ok(Ok(()));
    }
    let wait: f64 = db.value(
        "SELECT tat - (CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) + ?3) - ?2
         FROM rate_limits WHERE key = ?1",
        params![key, tolerance, ahead],
    )?;
    Ok(Err(wait.ceil().max(1.0) as u64))
}
