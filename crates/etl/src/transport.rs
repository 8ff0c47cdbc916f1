//! The transport: how every request of a run reaches the target, whatever
//! stage sends it (load's writes, export's pages, the plan's reads). The
//! connection ([`target`]: connect, the built-in target, credentials), the
//! adaptive [`controller`] (the window, the rate learned from 429s, outages),
//! [`retry`] with the client's backoff, the circuit [`breaker`], the
//! [`requests`] report, the [`flow`] of rows through the requests, and the
//! rate [`remembered`] between runs. It knows nothing of rows or steps.

pub mod breaker;
pub mod controller;
pub(crate) mod flow;
pub mod identity;
pub mod remembered;
pub mod requests;
pub mod retry;
pub mod target;
pub mod window;

use listpipe_base::cause::Cause;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The target could not be reached or refused the credentials: the run
/// stops (exit code 3). A step's error ([`crate::load::LoadError::Target`]) when it
/// happens inside one.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct ConnectError {
    pub what: String,
    #[source]
    pub cause: Option<Cause>,
}

impl ConnectError {
    pub fn new(what: impl Into<String>, cause: impl Into<Option<Cause>>) -> Self {
        ConnectError {
            what: what.into(),
            cause: cause.into(),
        }
    }
}

/// A stop request shared between the signal handler and the write loops.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<StopState>);

#[derive(Debug, Default)]
struct StopState {
    set: AtomicBool,
    /// Wakes what waits for the stop ([`Stop::stopped`]).
    told: tokio::sync::Notify,
}

impl Stop {
    pub fn set(&self) {
        self.0.set.store(true, Ordering::SeqCst);
        self.0.told.notify_waiters();
    }
    pub fn is_set(&self) -> bool {
        self.0.set.load(Ordering::SeqCst)
    }
    /// Returns once the stop is set.
    pub async fn stopped(&self) {
        loop {
            let told = self.0.told.notified();
            let mut told = std::pin::pin!(told);
            // Registered before the flag is read: a `set` between the two
            // still wakes it.
            told.as_mut().enable();
            if self.is_set() {
                return;
            }
            told.await;
        }
    }
}
