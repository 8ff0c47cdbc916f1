//! The server's clock, and the time store functions read ([`now`]).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The current time in Unix seconds on the clock of the store this thread
/// runs a function of ([`Clock::enter`]); elsewhere, the real time.
pub fn now() -> i64 {
    CURRENT.with(|c| c.borrow().now())
}

/// The server's clock, in Unix seconds: the real time, or for tests the real
/// time plus an offset a test moves forward ([`Clock::advance`]), so that
/// tokens, codes and rate-limit windows run out without waiting. Clones
/// share the offset. Set with `ServeOptions::clock`; real by default.
///
/// Decision: store functions read it through [`now`], which the store sets
/// for the thread that runs them ([`Clock::enter`]: in
/// [`Store::read`](super::Store::read), [`Store::call`](super::Store::call),
/// [`Store::write`](super::Store::write) and for its writer thread), rather than
/// from an argument: some fifty reads of the time across the store's
/// modules stay as they are, and each store, with its own clock, still
/// answers to it alone (servers of tests running side by side in one
/// process do not share a clock). Code outside a store function (the
/// routes, the token cache, the rate limit) asks the clock itself
/// ([`Store::clock`](super::Store::clock)).
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Seconds ahead of the real time; `None` on the real clock.
    ahead: Option<Arc<AtomicI64>>,
}

thread_local! {
    /// The clock [`now`] reads on this thread (see [`Clock::enter`]).
    static CURRENT: RefCell<Clock> = const { RefCell::new(Clock { ahead: None }) };
}

impl Clock {
    /// The real time.
    pub fn real() -> Clock {
        Clock::default()
    }

    /// FOR TESTS: a clock at the real time until [`Clock::advance`] moves it
    /// on (it keeps flowing with the real time after).
    pub fn test() -> Clock {
        Clock {
            ahead: Some(Arc::default()),
        }
    }

    /// The current time in Unix seconds.
    pub fn now(&self) -> i64 {
        chrono::Utc::now().timestamp() + self.ahead_secs()
    }

    /// How many seconds this clock is ahead of the real time (0 on the real
    /// clock).
    pub fn ahead_secs(&self) -> i64 {
        self.ahead.as_ref().map_or(0, |a| a.load(Ordering::SeqCst))
    }

    /// Moves a test clock `secs` seconds on, for every holder of a clone.
    ///
    /// # Panics
    ///
    /// On the real clock, which no one moves.
    #[allow(clippy::expect_used, reason = "documented: only tests move a clock")]
    pub fn advance(&self, secs: u64) {
        let ahead = self
            .ahead
            .as_ref()
            .expect("only a test clock (`Clock::test`) can be advanced");
        ahead.fetch_add(i64::try_from(secs).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Runs `f` with this clock as the one [`now`] reads on this thread,
    /// and puts the one before back after (also when `f` panics).
    pub(super) fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Clock>);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Some(before) = self.0.take() {
                    CURRENT.with(|c| *c.borrow_mut() = before);
                }
            }
        }
        let before = CURRENT.with(|c| c.replace(self.clone()));
        let _restore = Restore(Some(before));
        f()
    }
}
