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
//!
//! Slow bodies (issue 56): a request's body is read whole *before* it takes
//! its slot, so a client sending its body a byte now and then holds no slot
//! and starves no one (600 such uploads had kept every other client at 503
//! for the whole `--request-timeout`). The body is read
//! ([`wire::read_body`]) with no wait between two reads longer than
//! `--body-timeout-secs` (nginx's `client_body_timeout`), all of it within
//! `--request-timeout`, at most [`wire::MAX_BODY_BYTES`]; a slower one is
//! answered 408 and its connection closed. The slot is tried once before
//! the body too, so that a full server still refuses at once without
//! reading anything, and then taken after it; `--request-timeout` counts
//! from the slot, for the handler alone. Chosen over releasing a slot while
//! its body waits: that needs a body wrapper that gives the permit back and
//! takes it again mid-handler, and a handler that cannot get it back would
//! have to fail half-way; here a request has its slot for the whole of its
//! handler or never. The price: bodies being read are bounded by the
//! connections (`--max-connections`, each at most 8 MiB) rather than by
//! `--max-in-flight`.

use super::error::ApiError;
use super::store::RETRY_AFTER_SECS;
use super::wire;
use axum::body::Body;
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
/// Seconds a request's body may go without a byte unless
/// `serve --body-timeout-secs` says otherwise (nginx's default is 60 s;
/// a client that has begun a body sends the rest at once).
pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 10;

/// The bounds of one server.
#[derive(Clone)]
pub struct Bounds {
    permits: Arc<Semaphore>,
    max: usize,
    timeout: Duration,
    body_timeout: Duration,
}

impl Bounds {
    /// At most `max_in_flight` handlers at once, each within `timeout`; a
    /// body with no byte for `body_timeout` is answered 408.
    pub fn new(max_in_flight: usize, timeout: Duration, body_timeout: Duration) -> Bounds {
        let max = max_in_flight.max(1);
        Bounds {
            permits: Arc::new(Semaphore::new(max)),
            max,
            timeout,
            body_timeout,
        }
    }

    fn full(&self) -> Response {
        busy(format!(
            "Service Unavailable: the server is handling {} requests; retry after {RETRY_AFTER_SECS} s",
            self.max
        ))
    }
}

/// The 503 of a busy server: the API's error body and `Retry-After`.
pub fn busy(message: impl Into<String>) -> Response {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message).into_response()
}

/// The middleware: a 503 at once when no slot is free; the body, whole
/// (or a 408); then a slot (or a 503) and the handler, within the timeout.
pub async fn bound(State(b): State<Bounds>, req: Request, next: Next) -> Response {
    if b.permits.available_permits() == 0 {
        return b.full();
    }
    let (parts, body) = req.into_parts();
    let body = match wire::read_body(&parts.headers, body, b.body_timeout, b.timeout).await {
        Ok(bytes) => bytes,
        Err(answer) => return answer,
    };
    let Ok(_permit) = b.permits.clone().try_acquire_owned() else {
        return b.full();
    };
    let req = Request::from_parts(parts, Body::from(body));
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
