//! The run's circuit breaker: when the target stops answering at the
//! transport level (connection refused or reset, timeouts), every worker
//! would otherwise spend each row's full retry budget against a dead host,
//! and the run would end minutes later with the ordinary exit 1. One
//! breaker is shared by every request of a run (it lives on the
//! connection); when it opens, no new request is sent, requests in flight
//! and retry waits end at once, and the run stops with exit 3 naming the
//! target and the cause. Rows not confirmed stay in the journal for
//! `--resume`.
//!
//! Decision: the breaker opens on [`OPEN_AFTER_FAILURES`] transport
//! failures in a row spread over at least [`OPEN_AFTER`], with no answer in
//! between. Any HTTP answer, even an error status, proves the target alive
//! and closes the count. Both thresholds are needed: a burst of failures
//! from many workers at once is one blip (a restarting proxy), and a
//! single slow failure is one row's bad luck.

use listpipe_client::ClientError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Transport failures in a row, with no answer between them, before the
/// breaker may open.
pub const OPEN_AFTER_FAILURES: u32 = 10;
/// How long the target must have been silent (since the first of those
/// failures) before the breaker opens.
pub const OPEN_AFTER: Duration = Duration::from_secs(5);

/// Shared by every worker of a run; cheap to consult.
pub struct Breaker {
    url: String,
    state: Mutex<State>,
    open: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    failures: u32,
    since: Option<Instant>,
    /// Set once, when the breaker opens: the failure that opened it.
    cause: Option<Arc<ClientError>>,
    /// What every request answers then, when not the cause's root (a
    /// target that stayed down: [`Breaker::gave_up`]).
    summary: Option<String>,
}

impl Breaker {
    pub fn new(url: &str) -> Self {
        Breaker {
            url: url.to_string(),
            state: Mutex::new(State::default()),
            open: watch::Sender::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The target answered (any HTTP status): it is alive.
    pub fn answered(&self) {
        let mut s = self.state();
        if s.cause.is_none() {
            s.failures = 0;
            s.since = None;
        }
    }

    /// A request failed. A transport failure is counted; the one that opens
    /// the breaker comes back as [`ClientError::Stopped`] wrapping it, any
    /// other comes back unchanged.
    pub fn failed(&self, e: ClientError) -> ClientError {
        if !e.is_transport() || matches!(e, ClientError::Stopped { .. }) {
            if !e.is_transport() {
                self.answered();
            }
            return e;
        }
        let mut s = self.state();
        if s.cause.is_some() {
            drop(s);
            return self.stopped().unwrap_or(e);
        }
        s.failures += 1;
        let since = *s.since.get_or_insert_with(Instant::now);
        if s.failures < OPEN_AFTER_FAILURES || since.elapsed() < OPEN_AFTER {
            return e;
        }
        tracing::warn!(target: log_target!(), url = %self.url, failures = s.failures, "the target stopped answering");
        let cause = Arc::new(e);
        s.cause = Some(cause.clone());
        drop(s);
        self.open.send_replace(true);
        self.stopped_by(cause)
    }

    /// The target has been down as a whole for `waited` (its last answer
    /// `e`, see [`super::controller::outage`]): the breaker opens, and every
    /// request answers the returned error (the run stops with exit 3).
    pub fn gave_up(&self, e: ClientError, waited: Duration) -> ClientError {
        let mut s = self.state();
        if s.cause.is_none() {
            tracing::warn!(target: log_target!(), url = %self.url, waited_secs = waited.as_secs(), "the target stayed down: the run gives up");
            s.summary = Some(format!(
                "down for {} s, longer than max_outage_secs: {}",
                waited.as_secs(),
                e.server_message()
            ));
            s.cause = Some(Arc::new(e));
            drop(s);
            self.open.send_replace(true);
        } else {
            drop(s);
        }
        self.stopped().unwrap_or(ClientError::Interrupted)
    }

    fn stopped_by(&self, cause: Arc<ClientError>) -> ClientError {
        let summary = self.state().summary.clone();
        ClientError::Stopped {
            url: self.url.clone(),
            summary: summary.unwrap_or_else(|| listpipe_base::cause::root(cause.as_ref())),
            cause,
        }
    }

    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// The error every request answers once the breaker is open.
    pub fn stopped(&self) -> Option<ClientError> {
        let cause = self.state().cause.clone()?;
        Some(self.stopped_by(cause))
    }

    /// Resolves when the breaker opens (never, while the target answers).
    pub async fn opened(&self) {
        let mut rx = self.open.subscribe();
        if rx.wait_for(|open| *open).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreachable() -> ClientError {
        let http = listpipe_client::http_client(Duration::from_secs(1));
        let source = match http.map(|c| c.get("http://[::1").build()) {
            Ok(Err(e)) => e,
            _ => panic!("the URL is invalid on purpose"),
        };
        ClientError::Transport {
            method: "GET".into(),
            path: "/x".into(),
            source,
        }
    }

    #[test]
    fn a_burst_of_transport_failures_alone_does_not_open_the_breaker() {
        let b = Breaker::new("http://127.0.0.1:1");
        for _ in 0..OPEN_AFTER_FAILURES * 3 {
            let _ = b.failed(unreachable());
        }
        assert!(!b.is_open(), "the failures came faster than OPEN_AFTER");
    }

    fn refused() -> ClientError {
        ClientError::Decode {
            method: "GET".into(),
            path: "/x".into(),
            detail: "not a transport failure".into(),
        }
    }

    #[test]
    fn errors_that_are_answers_never_open_the_breaker() {
        let b = Breaker::new("http://127.0.0.1:1");
        for _ in 0..100 {
            let _ = b.failed(refused());
        }
        assert!(!b.is_open());
        assert!(b.stopped().is_none());
    }
}
