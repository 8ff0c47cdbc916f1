//! Retries: 408, 429, 5xx and connection errors are retried with
//! exponential [backoff](super::backoff) and full jitter, honouring `Retry-After`; a 401 is
//! retried once after a token refresh; any other error is final and goes to
//! the rejects file with the server's message. Every attempt reports to the
//! run's [circuit breaker](super::breaker): once it opens, no request is
//! sent, and a request in flight or a retry wait ends at once. Every
//! attempt also takes its room from the run's
//! [controller](super::controller) and tells it how the answer went, with
//! the rate-limit headers of that very answer. A graceful stop ends a wait
//! for a pause, a token of the rate or a backoff at once: the request is
//! not sent (again), and its row stays started for `--resume`.

use super::target::Connected;
// Re-exported: the set-up creates, which back off by hand, name it here.
use super::controller::outage;
use listpipe_client::backoff::delay;
use listpipe_client::{self as client, ClientError};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

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
            ticket = ctl.acquire_unless_stopped() => match ticket {
                Ok(t) => t,
                Err(ClientError::Interrupted) => return Err(ClientError::Interrupted),
                // Down longer than the run waits: the run stops (exit 3).
                Err(e) => return Err(breaker.gave_up(e, ctl.max_outage())),
            },
            _ = breaker.opened() => continue,
        };
        let token = conn.client.token();
        // A request in flight when the breaker opens is dropped: the journal
        // holds its row as started, and `--resume` checks it.
        let client::Answered {
            result: answer,
            rate,
        } = tokio::select! {
            answered = client::answered(call()) => answered,
            _ = breaker.opened() => {
                ctl.abandon(ticket);
                continue;
            }
        };
        ctl.finish(ticket, answer.as_ref().err(), rate);
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
                // The target is down as a whole: the request waits for the
                // outage's end in its place (`acquire`), its retries kept.
                e if outage::unavailable(&e) && ctl.target_down() && !breaker.is_open() => {
                    ctl.retrying(&e);
                }
                e if e.is_transient() && attempt < retries && !breaker.is_open() => {
                    ctl.retrying(&e);
                    // Asked to wait by a target that answers: the row
                    // leaves its place to another (flow.rs). A target that
                    // fails or is overloaded keeps its rows' places.
                    let _waiting = (e.status() == Some(429)).then(|| ctl.waits_out_a_429());
                    tokio::select! {
                        _ = tokio::time::sleep(delay(attempt, e.retry_after())) => {}
                        _ = breaker.opened() => continue,
                        // Stopping: the row keeps this answer's error.
                        _ = ctl.stopped() => return Err(e),
                    }
                    attempt += 1;
                }
                e => return Err(e),
            },
        }
        retried.fetch_add(1, Ordering::Relaxed);
    }
}
