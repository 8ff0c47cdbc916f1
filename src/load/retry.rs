//! Retries: 408, 429, 5xx and connection errors are retried with
//! exponential backoff and full jitter, honouring `Retry-After`; a 401 is
//! retried once after a token refresh; any other error is final and goes to
//! the rejects file with the server's message. Every attempt reports to the
//! run's [circuit breaker](super::breaker): once it opens, no request is
//! sent, and a request in flight or a retry wait ends at once. Every
//! attempt also takes its room from the run's
//! [controller](super::controller) and tells it how the answer went.

use super::target::Connected;
use crate::client::ClientError;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BASE_DELAY_MS: u64 = 200;
const MAX_DELAY_MS: u64 = 20_000;

/// The delay before retry `attempt` (0-based), or what the server asked
/// for. Full jitter, as in AWS's "Exponential Backoff And Jitter": a
/// uniform draw from `[0, min(MAX, BASE * 2^attempt)]`. Decision: full
/// rather than equal jitter, because many workers failing together (a
/// target that restarts) then come back spread over the whole window
/// instead of all in its second half.
pub fn delay(attempt: u32, retry_after: Option<u64>) -> Duration {
    if let Some(secs) = retry_after {
        return Duration::from_secs(secs.min(300));
    }
    let window = window_ms(attempt);
    let mut buf = [0u8; 8];
    let random = getrandom::fill(&mut buf)
        .map(|_| u64::from_le_bytes(buf))
        .unwrap_or(window);
    Duration::from_millis(random % (window + 1))
}

/// The upper bound of retry `attempt`'s delay, in milliseconds.
fn window_ms(attempt: u32) -> u64 {
    BASE_DELAY_MS
        .saturating_mul(1u64 << attempt.min(16))
        .min(MAX_DELAY_MS)
}

/// Runs `call` until it succeeds, fails for good, or `retries` run out.
/// Every retry is counted in `retried`.
pub async fn retrying<T, F, Fut>(
    conn: &Connected,
    retries: u32,
    retried: &AtomicU64,
    mut call: F,
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut attempt = 0;
    let mut refreshed = false;
    let breaker = &conn.breaker;
    let ctl = &conn.controller;
    loop {
        if let Some(stopped) = breaker.stopped() {
            return Err(stopped);
        }
        // Room from the run's controller: a place among the requests in
        // flight, the end of a rate-limit pause, a token of its bucket.
        let ticket = tokio::select! {
            ticket = ctl.acquire() => ticket,
            _ = breaker.opened() => continue,
        };
        let token = conn.client.token();
        // A request in flight when the breaker opens is dropped: the journal
        // holds its row as started, and `--resume` checks it.
        let answer = tokio::select! {
            answer = call() => answer,
            _ = breaker.opened() => {
                ctl.abandon(ticket);
                continue;
            }
        };
        ctl.finish(
            ticket,
            answer.as_ref().err(),
            conn.client.take_rate_headers(),
        );
        match answer {
            Ok(v) => {
                breaker.answered();
                return Ok(v);
            }
            Err(e) => match breaker.failed(e) {
                e if e.status() == Some(401) && !refreshed && conn.refresh(&token).await => {
                    ctl.retrying(&e);
                    refreshed = true
                }
                e if e.is_transient() && attempt < retries && !breaker.is_open() => {
                    ctl.retrying(&e);
                    tokio::select! {
                        _ = tokio::time::sleep(delay(attempt, e.retry_after())) => {}
                        _ = breaker.opened() => continue,
                    }
                    attempt += 1;
                }
                e => return Err(e),
            },
        }
        retried.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_capped_and_retry_after_wins() {
        assert!(delay(0, None) <= Duration::from_millis(BASE_DELAY_MS));
        assert!(delay(30, None) <= Duration::from_millis(MAX_DELAY_MS));
        assert_eq!(delay(0, Some(7)), Duration::from_secs(7));
    }

    /// Full jitter: every draw lies in `[0, window]`, and draws reach into
    /// the window's lower half (equal jitter never goes below half).
    #[test]
    fn delays_are_full_jitter_over_the_whole_window() {
        for attempt in [0, 3, 7, 30] {
            let window = Duration::from_millis(window_ms(attempt));
            let draws: Vec<Duration> = (0..400).map(|_| delay(attempt, None)).collect();
            assert!(draws.iter().all(|d| *d <= window), "attempt {attempt}");
            assert!(
                draws.iter().any(|d| *d < window / 2),
                "attempt {attempt}: no draw below half the window"
            );
        }
        assert_eq!(window_ms(0), BASE_DELAY_MS);
        assert_eq!(window_ms(3), BASE_DELAY_MS * 8);
        assert_eq!(window_ms(30), MAX_DELAY_MS);
    }
}
