//! How a rate is learned from the first limiting 429 ([`super::rate`]
//! decides which 429 that is): [`LEARN_SHARE`] of
//! the lowest rate a token bucket holding one `Retry-After` of it would
//! need to let through what the target did let through, counted from when
//! it last had its whole quota (the run's start, or the end of an idle
//! `Retry-After` such as a pause): a burst of five before a 429 with
//! `Retry-After: 1` is five per second however fast it went, a steady
//! stream is its own rate. Requests are counted when *sent*, as the target
//! counts them. Measured against `serve --rate-limit 5` (20,000 rows, 71
//! requests): counting *answers* accepted over the last second learned
//! 0.8/s, because the answers came after the 429 or fell in the pause, and
//! the run took 2.5 times the ideal.

use super::rate::{Bucket, LEARN_HORIZON, LEARN_OVER, SPORADIC_SHARE};
use std::time::Duration;
use tokio::time::Instant;

/// The fewest requests let through that a rate is learned from.
pub(super) const LEARN_FROM: usize = 3;
/// The share of the rate let through that the bucket is set to.
pub(super) const LEARN_SHARE: f64 = 0.9;
/// A rate learned from at least this many requests let through is the
/// target's own: it rises by additive steps at once, as after a later
/// limit. One learned from fewer (a handful at the start, where a draw of
/// sporadic 429s looks like a limit) rises by [`super::rate::SLOW_RAISE`]
/// until a later limit confirms it. Measured against `serve --rate-limit
/// 50` (200 rows, one run in thirty): a rate learned from 51 rose by
/// quarters, 42.75 -> 53.4 -> 66.8 a second in half a second, and the
/// target's burst of 50 hid the overshoot until the run ended.
pub(super) const SURE_FROM: usize = 25;

impl Bucket {
    /// Learns the first rate once no request sent before the limit was
    /// told is still in flight, or once `pause_over` (those still in flight
    /// then count as neither let through nor refused): the first answers
    /// to a burst are its 429s, which a target answers at once, so which of
    /// the requests sent with them were let through is known only then.
    /// If the 429s are a sporadic share of the answers after all, nothing
    /// is learned (counted as a sporadic 429). The rate learned, if any.
    pub(super) fn settle(&mut self, pause_over: bool) -> Option<f64> {
        let l = self.learning?;
        if !pause_over && self.in_flight.range(..l.told).next().is_some() {
            return None;
        }
        self.learning = None;
        let share = self.share();
        if share <= SPORADIC_SHARE {
            tracing::debug!(target: log_target!(), share, "a limit told early was sporadic 429s: no rate learned");
            self.sporadic += 1;
            return None;
        }
        self.limiting += 1;
        self.evidence.settled();
        let rate = self.learn(l.told, l.wait)?;
        self.lowered_to(rate, l.told, share);
        Some(rate)
    }

    /// Learns a rate from the first limiting 429, answered at `told`, whose
    /// `Retry-After` is `wait`: [`LEARN_SHARE`] of [`lowest_rate`] over the
    /// requests sent before `told` and let through, since the target last
    /// had its whole quota: since the run's first request or the first one
    /// after an idle `wait` (a pause). The new rate, if lowered.
    pub(super) fn learn(&mut self, told: Instant, wait: Duration) -> Option<f64> {
        let (guess, through) = self.shown_from(told, wait)?;
        if self.rate.is_some_and(|r| r <= guess) {
            return None;
        }
        self.confirmed = through >= SURE_FROM;
        self.set(guess, told);
        self.rate
    }

    /// [`LEARN_SHARE`] of the lowest rate that lets through what went
    /// through before `told` (see [`Bucket::learn`]), if enough did; a
    /// later limit lowers the rate to it, so that a probe above a target
    /// with a burst goes back to the target's rate, not to a share of the
    /// probe's.
    pub(super) fn shown(&self, told: Instant, wait: Duration) -> Option<f64> {
        self.shown_from(told, wait).map(|(rate, _)| rate)
    }

    /// [`Bucket::shown`] and how many requests it was told from.
    fn shown_from(&self, told: Instant, wait: Duration) -> Option<(f64, usize)> {
        let window = wait.clamp(LEARN_OVER, LEARN_HORIZON);
        let sent: Vec<Instant> = self.sent.iter().copied().filter(|t| *t < told).collect();
        let full = sent
            .windows(2)
            .rposition(|w| w[1].saturating_duration_since(w[0]) >= window)
            .map_or(0, |i| i + 1);
        // The send times of the refused requests (recorded as answers came,
        // so sorted here) and of those still in flight (unknown) are taken
        // out of the sends, both in time order.
        let in_flight = self.in_flight.range(..told);
        let mut out: Vec<Instant> = self.refused.iter().copied().collect();
        out.extend(in_flight.flat_map(|(t, n)| std::iter::repeat_n(*t, *n as usize)));
        out.sort_unstable();
        let mut out = out.into_iter().peekable();
        let through: Vec<Instant> = sent[full..]
            .iter()
            .copied()
            .filter(|t| {
                while out.next_if(|r| r < t).is_some() {}
                out.next_if_eq(t).is_none()
            })
            .collect();
        // Too few let through to tell a rate: the pause alone speaks (the
        // quota was spent before this run or by another client, or the 429
        // was a stray one). Measured: a stray 429 after the first request
        // taught 0.9 requests per second to a run that could send hundreds.
        if through.len() < LEARN_FROM {
            return None;
        }
        let lowest = lowest_rate(&through, window);
        tracing::debug!(target: log_target!(),
            through = through.len(),
            lowest,
            window = window.as_secs_f64(),
            "learning a rate from a 429"
        );
        Some(((lowest * LEARN_SHARE).max(self.floor()), through.len()))
    }
}

/// The lowest rate at which a token bucket holding one `window` of it,
/// full at the first request, lets every request of `through` (send times,
/// in order) through: what the target has shown it allows, whether the
/// requests came in a burst from an idle start (the bucket's worth, less
/// its refill meanwhile) or in a steady stream (the stream's rate). A
/// limiter of N per second with a burst of N (or N per window of the
/// `Retry-After`) is such a bucket. Found by bisection: letting through
/// only gets easier as the rate grows.
pub(super) fn lowest_rate(through: &[Instant], window: Duration) -> f64 {
    let lets_through = |rate: f64| {
        let full = rate * window.as_secs_f64();
        let mut tokens = full;
        let mut last = through.first().copied();
        for t in through {
            if let Some(l) = last {
                tokens = (tokens + rate * t.saturating_duration_since(l).as_secs_f64()).min(full);
            }
            last = Some(*t);
            if tokens < 1.0 - 1e-9 {
                return false;
            }
            tokens -= 1.0;
        }
        true
    };
    let (mut low, mut high) = (0.0, through.len() as f64 / window.as_secs_f64());
    for _ in 0..40 {
        let mid = (low + high) / 2.0;
        if lets_through(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}
