//! `serve --rate-limit N`: at most N requests per second per account on
//! the `/v3` routes (off by default). Over it the answer is 429 with
//! `Retry-After` (whole seconds, at least 1) and the error body, as the live
//! service does and as clients expect (wire.md, "Errors").
//!
//! A keyed GCRA limiter (`governor`): the quota is N per second with a burst
//! of N, so an account may send N requests at once, then one every 1/N s.
//! The key is the account the token belongs to, so every token of it shares
//! the one quota. Decision (issue 43): keyed per token before, the quota
//! was multiplied by minting more tokens, which any client may do. It runs
//! after authentication, so requests without a valid token are refused by
//! the token check first.
//!
//! On PostgreSQL the quota is kept in the database (`store::rates`), so it
//! holds across every server process sharing it.
//!
//! The in-process limiter runs on governor's clock moved on by the server's
//! ([`store::Clock`]): the same on the real clock, and a test that advances
//! the server's clock refills the quota as the time would.

use crate::error::ApiError;
use crate::store::accounts::Caller;
use crate::store::{self, Backend, Store, rates};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, QuantaClock, QuantaInstant};
use governor::nanos::Nanos;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// Above this many tracked accounts, the ones back at their full quota are
/// forgotten (they would pass anyway), so the table stays small.
const RETAIN_ABOVE: usize = 10_000;

pub struct RateLimit {
    per_second: NonZeroU32,
    limiter: RateLimiter<String, DefaultKeyedStateStore<String>, LimiterClock>,
}

/// Governor's default clock, as far ahead as the server's clock is of the
/// real time (not at all on the real clock).
#[derive(Clone)]
struct LimiterClock {
    real: QuantaClock,
    server: store::Clock,
}

impl Clock for LimiterClock {
    type Instant = QuantaInstant;

    fn now(&self) -> QuantaInstant {
        let ahead = u64::try_from(self.server.ahead_secs()).unwrap_or(0);
        self.real.now() + Nanos::from(Duration::from_secs(ahead))
    }
}

impl RateLimit {
    /// The limit of `per_second` requests per second, on the server's `clock`.
    pub fn per_second(per_second: NonZeroU32, clock: &store::Clock) -> Self {
        let clock = LimiterClock {
            real: QuantaClock::default(),
            server: clock.clone(),
        };
        RateLimit {
            per_second,
            limiter: RateLimiter::new(
                Quota::per_second(per_second),
                DefaultKeyedStateStore::default(),
                clock,
            ),
        }
    }

    /// `Ok` when `key` may go on now; otherwise the whole seconds to wait.
    fn check(&self, key: &str) -> Result<(), u64> {
        if self.limiter.len() > RETAIN_ABOVE {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key.to_string())
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                wait.as_secs_f64().ceil().max(1.0) as u64
            })
    }
}

/// What [`limit`] needs: the limit, if any, and the store (that keeps the
/// quota on PostgreSQL).
#[derive(Clone)]
pub struct Limited {
    pub store: Store,
    pub rate: Option<Arc<RateLimit>>,
}

/// The middleware on the `/v3` routes, inside the token check.
pub async fn limit(State(state): State<Limited>, req: Request, next: Next) -> Response {
    let Some(rate) = &state.rate else {
        return next.run(req).await;
    };
    let key = req
        .extensions()
        .get::<Caller>()
        .map(|c| format!("account:{}", c.account.0))
        .unwrap_or_default();
    let checked = match state.store.backend() {
        Backend::Sqlite => rate.check(&key),
        Backend::Postgres => {
            let (n, ahead) = (rate.per_second.get(), state.store.clock().ahead_secs());
            match state
                .store
                .write(move |db| rates::take(db, &key, n, ahead))
                .await
            {
                Ok(checked) => checked,
                Err(e) => return ApiError::from(e).into_response(),
            }
        }
    };
    match checked {
        Ok(()) => next.run(req).await,
        Err(secs) => too_many(
            secs,
            format!(
                "Too Many Requests: over {} requests per second for this account; retry after {secs} s",
                rate.per_second
            ),
        ),
    }
}

/// A 429 with `Retry-After` and the error body (also used by fault injection).
pub fn too_many(retry_after_secs: u64, message: String) -> Response {
    let mut res = ApiError::new(StatusCode::TOO_MANY_REQUESTS, message).into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_burst_then_waits_while_another_key_goes_on() {
        let rate = RateLimit::per_second(NonZeroU32::new(3).unwrap(), &store::Clock::real());
        for _ in 0..3 {
            assert_eq!(rate.check("a"), Ok(()));
        }
        assert_eq!(rate.check("a"), Err(1));
        assert_eq!(rate.check("b"), Ok(()));
    }

    #[test]
    fn advancing_the_servers_clock_a_second_gives_a_key_its_burst_again() {
        let clock = store::Clock::test();
        let rate = RateLimit::per_second(NonZeroU32::new(3).unwrap(), &clock);
        for _ in 0..3 {
            assert_eq!(rate.check("a"), Ok(()));
        }
        assert_eq!(rate.check("a"), Err(1));
        clock.advance(1);
        for _ in 0..3 {
            assert_eq!(rate.check("a"), Ok(()));
        }
        assert_eq!(rate.check("a"), Err(1));
    }
}
