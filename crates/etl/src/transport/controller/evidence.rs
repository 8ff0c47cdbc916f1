//! Telling a limit from sporadic 429s quickly once a rate is known (issue
//! 57): a real limit refuses what goes over it, so its 429s *follow the
//! rate*: none at a rate that holds, some as soon as the rate rises above
//! it. Sporadic 429s come at the same share whatever the rate. So the
//! answers are kept apart by the rate they answered:
//!
//! - the **base**: the answers of the periods that held (each period runs
//!   from one change of the rate to the next, and holds when it ends in a
//!   rise), whose 429s are the share the target refuses at a rate it takes;
//! - the **probe**: the answers since the rate last rose above a rate that
//!   held.
//!
//! A 429 during a probe shows the limit when the probe's 429s are more than
//! the base's share makes likely ([`PROBE_ALPHA`], a binomial tail): against
//! a target that refused nothing at the rate that held, two or three 429s
//! are enough; against one that refuses 8% of everything, a probe at 8% is
//! no limit. A 429 at a rate that held (a limit that fell mid-run) shows the
//! limit when the last [`SHORT`] answers hold far more 429s than the base's
//! share makes likely ([`HELD_ALPHA`]: tested at every 429 of a long run, it
//! must almost never fire on sporadic ones). The base starts from a prior
//! of [`PRIOR_SHARE`] worth [`PRIOR_WEIGHT`] answers, so that a handful of
//! clean answers are not taken for a target that never refuses.
//!
//! Measured before, against `serve --rate-limit 5`: a rate once learned
//! rose by steps until the 429s were a fifth of 50 answers, so with single
//! writes a quarter of all requests were refused for the whole run, and a
//! 20,000-row batch run (24 writes) never had the 50 answers and had a
//! third to a half of its writes refused.

use std::collections::VecDeque;
use std::time::Duration;

/// The sporadic share assumed before the target has shown its own.
pub(super) const PRIOR_SHARE: f64 = 0.02;
/// How many answers the prior is worth.
pub(super) const PRIOR_WEIGHT: f64 = 25.0;
/// A probe's 429s show a limit when sporadic ones would be this unlikely.
/// A probe taken for a limit by mistake costs little: the rate goes back
/// to what held, and the next probe waits longer.
pub(super) const PROBE_ALPHA: f64 = 0.01;
/// The fewest 429s a probe fails on: one is not yet a pattern.
pub(super) const PROBE_FROM: u32 = 2;
/// At a rate that held, the last [`SHORT`] answers show a limit when
/// sporadic 429s would be this unlikely: against a base of 8% that is 9 of
/// 20; against a base of none, 4 of 20.
pub(super) const HELD_ALPHA: f64 = 1e-5;
/// The latest answers a limit at a rate that held is told from.
pub(super) const SHORT: usize = 20;
/// The longest wait between probes: each probe that finds the limit
/// doubles the wait before the next (from [`super::rate::RAISE_EVERY`]),
/// so that probing costs a few 429s a minute at most, and a limit raised
/// mid-run is still found within minutes.
pub(super) const PROBE_WAIT_MAX: Duration = Duration::from_secs(16);

/// P(X >= k) for X ~ Binomial(n, p): summed in logs, so that long runs
/// (tens of thousands of answers) neither underflow nor lose the tail.
pub(super) fn tail(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // P(X < k), term by term from P(X = 0).
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_term = n as f64 * ln_q;
    let mut below = 0.0;
    for i in 0..k {
        below += ln_term.exp();
        ln_term += ((n - i) as f64 / (i + 1) as f64).ln() + ln_p - ln_q;
    }
    (1.0 - below).max(0.0)
}

/// The answers kept apart by the rate they answered (see the module).
#[derive(Debug)]
pub(super) struct Evidence {
    /// Answers and 429s of the periods that held.
    base: (u64, u64),
    /// The latest [`SHORT`] answers (true: a 429).
    short: VecDeque<bool>,
    /// When the rate rose above one that held, and that rate; `None` at a
    /// rate that held.
    pub(super) probe: Option<(tokio::time::Instant, f64)>,
    /// The least time between a change of the rate and the next rise.
    pub(super) probe_wait: Duration,
}

impl Default for Evidence {
    fn default() -> Self {
        Evidence {
            base: (0, 0),
            short: VecDeque::with_capacity(SHORT + 1),
            probe: None,
            probe_wait: super::rate::RAISE_EVERY,
        }
    }
}

impl Evidence {
    /// An answer came (`refused`: a 429).
    pub(super) fn push(&mut self, refused: bool) {
        self.short.push_back(refused);
        if self.short.len() > SHORT {
            self.short.pop_front();
        }
    }

    /// A period of `answers` with `refused` 429s held at `rate`: the rate
    /// rises at `now`, and the answers join the base.
    pub(super) fn held(
        &mut self,
        answers: u32,
        refused: u32,
        rate: f64,
        now: tokio::time::Instant,
    ) {
        self.base.0 += u64::from(answers);
        self.base.1 += u64::from(refused);
        self.probe = Some((now, rate));
    }

    /// The share of 429s the target shows at rates that hold.
    pub(super) fn sporadic_share(&self) -> f64 {
        (self.base.1 as f64 + PRIOR_SHARE * PRIOR_WEIGHT) / (self.base.0 as f64 + PRIOR_WEIGHT)
    }

    /// Whether the 429s follow the rate: during a probe, the period's
    /// `answers` and `refused` (and `before`, requests sent before the 429
    /// still in flight, counted as let through: a 429 comes back ahead of
    /// the writes sent with it); at a rate that held, the latest answers.
    pub(super) fn follows_the_rate(&self, answers: u32, refused: u32, before: u32) -> bool {
        let p = self.sporadic_share();
        match self.probe {
            Some(_) => {
                let n = u64::from(answers) + u64::from(before);
                refused >= PROBE_FROM && tail(u64::from(refused), n, p) < PROBE_ALPHA
            }
            None => {
                let k = self.short.iter().filter(|r| **r).count() as u64;
                let n = self.short.len() as u64 + u64::from(before);
                tail(k, n, p) < HELD_ALPHA
            }
        }
    }

    /// A limit was found: at a probe, the next one waits twice as long, and
    /// the rate it rose from (which held) is the rate to go back to.
    pub(super) fn limit_found(&mut self) -> Option<f64> {
        self.short.clear();
        let (_, from) = self.probe.take()?;
        self.probe_wait = (self.probe_wait * 2).min(PROBE_WAIT_MAX);
        Some(from)
    }

    /// The rate was set from elsewhere (learned, remembered): no probe.
    pub(super) fn settled(&mut self) {
        self.probe = None;
        self.short.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binomial_tail_is_right_at_both_ends() {
        assert_eq!(tail(0, 10, 0.1), 1.0);
        assert!((tail(1, 10, 0.1) - (1.0 - 0.9f64.powi(10))).abs() < 1e-12);
        // P(X >= 2) for n = 4, p = 0.5: 11/16.
        assert!((tail(2, 4, 0.5) - 11.0 / 16.0).abs() < 1e-12);
        assert_eq!(tail(5, 4, 0.5), 0.0);
        // Long runs: no underflow, a tail far out is tiny, one near the mean is not.
        assert!(tail(2_000, 100_000, 0.02) > 0.4);
        assert!(tail(3_000, 100_000, 0.02) < 1e-9);
    }

    #[test]
    fn a_probe_fails_on_a_few_429s_unless_the_target_refuses_as_many_anyway() {
        let mut clean = Evidence::default();
        clean.held(60, 0, 10.0, tokio::time::Instant::now());
        // Three 429s in 40 answers, against a base that refused none of 60.
        assert!(clean.follows_the_rate(40, 3, 0));
        assert!(!clean.follows_the_rate(40, 1, 0));
        let mut noisy = Evidence::default();
        noisy.held(2_000, 160, 10.0, tokio::time::Instant::now());
        // 8% refused at the rate that held: 8% of a probe is no limit.
        assert!(!noisy.follows_the_rate(100, 8, 0));
        assert!(noisy.follows_the_rate(100, 25, 0));
    }

    #[test]
    fn at_a_rate_that_held_only_a_run_of_429s_is_a_limit() {
        let mut e = Evidence::default();
        e.held(2_000, 160, 10.0, tokio::time::Instant::now());
        e.probe = None;
        for i in 0..SHORT {
            e.push(i % 4 == 0);
        }
        assert!(!e.follows_the_rate(0, 0, 0), "a quarter against 8%");
        for _ in 0..12 {
            e.push(true);
        }
        assert!(e.follows_the_rate(0, 0, 0));
    }
}
