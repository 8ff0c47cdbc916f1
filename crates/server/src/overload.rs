//! Bounds on what the server takes on at once (issue 15, "found in
//! review"): at most `--max-in-flight` requests are handled at a time and
//! each has `--request-timeout` to answer. A request over the bound is
//! answered at once with 503, `Retry-After` and the API's error body, before
//! any handler runs, so it wrote nothing; the writer's queue is bounded
//! the same way (`store::writer`). Under a flood the server therefore
//! answers "later" instead of growing its queues and memory without bound.
//!
//! Decision: a semaphore that is tried, not waited for (tower's
//! `ConcurrencyLimit` queues the excess, which is the unbounded growth this
//! removes), and `tokio::time::timeout` rather than tower-http's timeout
//! layer, whose 408 has an empty body instead of the API's error body.

use super::error::ApiError;
use super::store::RETRY_AFTER_SECS;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Requests handled at once unless `serve --max-in-flight` says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 512;
/// Seconds a request may take unless `serve --request-timeout` says otherwise.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 60;

/// The bounds of one server.
#[derive(Clone)]
pub struct Bounds {
    permits: Arc<Semaphore>,
    max: usize,
    timeout: Duration,
}

impl Bounds {
    pub fn new(max_in_flight: usize, timeout: Duration) -> Bounds {
        let max = max_in_flight.max(1);
        Bounds {
            permits: Arc::new(Semaphore::new(max)),
            max,
            timeout,
        }
    }
}

/// The 503 of a busy server: the API's error body and `Retry-After`.
pub fn busy(message: impl Into<String>) -> Response {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message).into_response()
}

/// The middleware: a permit or a 503 at once; then the handler, within the
/// timeout.
pub async fn bound(State(b): State<Bounds>, req: Request, next: Next) -> Response {
    let Ok(_permit) = b.permits.clone().try_acquire_owned() else {
        return busy(format!(
            "Service Unavailable: the server is handling {} requests; retry after {RETRY_AFTER_SECS} s",
            b.max
        ));
    };
    match tokio::time::timeout(b.timeout, next.run(req)).await {
        Ok(res) => res,
        // A write already handed to the writer still commits or not as a
        // whole; the client, as after any lost answer, retries (the batch
        // writes are idempotent upserts).
        Err(_) => busy(format!(
            "Service Unavailable: the request took longer than {} s; retry after {RETRY_AFTER_SECS} s",
            b.timeout.as_secs_f64()
        )),
    }
}
