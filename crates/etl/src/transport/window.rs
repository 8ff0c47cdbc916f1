//! The adaptive concurrency window, in the spirit of Vector's ARC
//! ("adaptive request concurrency"): pure arithmetic on round-trip times
//! and back-pressure signals, with the clock passed in, so that its
//! behaviour is tested with synthetic RTTs. [`super::controller`] applies
//! the limit it computes to the run's requests.
//!
//! Decisions:
//! - The limit moves at most once per observation interval, one past mean
//!   RTT long: a change needs a round trip before its effect shows.
//! - Additive increase (+1) when the interval's mean RTT is not above the
//!   long-run mean and the limit was actually reached (otherwise more room
//!   would not have been used, and proves nothing). Until the first
//!   decrease the same condition doubles the limit instead (TCP's slow
//!   start): against a far target at 50 ms a request, +1 per round trip
//!   from 4 would take seconds to reach the hundred requests in flight the
//!   target takes, while the first rise of the RTT or the first 429 ends
//!   the doubling within a round trip of the overshoot. While doubling, a
//!   rise counts only past [`SLOW_START_RISE`]: twice the requests in
//!   flight answered in less than twice the time are more answers a second,
//!   so a target that queues them (one writer behind a 50 ms link) still
//!   gains from the next doubling. Slow start ends at the maximum.
//! - An interval where more than [`HOLD_SHARE`] of the answers were 429s
//!   (while doubling: any) does not raise the limit, although those 429s
//!   may be too few to lower anything: the target refuses what goes over
//!   its rate, and more room would only be refused faster. A doubling held
//!   is not ended: the next interval without a 429 doubles.
//! - Multiplicative decrease (x [`DECREASE`]) on back pressure (429, 503,
//!   timeouts, dropped connections) or when the interval's RTT rises above
//!   the long-run mean by more than [`DEVIATION_SCALE`] deviations (and by
//!   at least [`RISE_FLOOR`] of it).
//! - The long-run mean and deviation are moving averages (weight
//!   [`EWMA_ALPHA`]) of interval means, not of single requests: one slow
//!   request must not count as a rising RTT.

use std::time::{Duration, Instant};

/// Weight of the newest interval in the long-run RTT.
pub const EWMA_ALPHA: f64 = 0.4;
/// How many deviations above the long-run mean an interval's RTT must be
/// to count as rising.
pub const DEVIATION_SCALE: f64 = 2.5;
/// A rise smaller than this share of the mean is never "rising", however
/// flat the RTT was before (Netflix's Gradient2 limiter tolerates 1.5x in
/// the same way): measured against `serve --faults delay=50ms@1.0` on a
/// busy 2-core machine, interval means swing by 10-20%, and a tighter
/// floor ended the slow start at 30 requests in flight.
pub const RISE_FLOOR: f64 = 0.5;
/// [`RISE_FLOOR`] while the window doubles: a doubling that less than
/// doubles the RTT (here: below 1.9x) still bought about 5% more answers a
/// second. Measured against `serve --faults delay=50ms@1.0` with batch
/// writes: the RTT rises 1.6-1.8x a doubling from 4 to 16 in flight while
/// the requests answered a second still rise 10-20%; with [`RISE_FLOOR`]
/// the window stopped at 7-8, 5.7% slower than 16 pinned.
pub const SLOW_START_RISE: f64 = 0.9;
/// 429s past this share of an interval's answers hold the limit. A 429
/// comes back at once, so past a target's rate the interval's answers are
/// mostly 429s, and its short round trips looked like room: measured
/// against `serve --rate-limit 50` (200 rows), the window doubled to 64,
/// 128 and 256 in flight before the limit was told in one run of five to
/// ten, and 70 to 127 of the requests went over the limit, where 20 did
/// when it stayed under 16. A steady few percent of sporadic 429s holds
/// an interval now and then, at small limits only.
pub const HOLD_SHARE: f64 = 0.2;
/// The factor a decrease applies.
pub const DECREASE: f64 = 0.9;
/// No interval is shorter than this, however fast the target answers
/// (keeps loopback runs from adjusting per microsecond noise).
pub const MIN_INTERVAL: Duration = Duration::from_millis(5);

/// What changed at the end of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Increased,
    Decreased,
}

/// The window: its limit and what it learned about the RTT.
#[derive(Debug, Clone)]
pub struct Window {
    limit: usize,
    min: usize,
    max: usize,
    /// Long-run RTT (seconds): moving mean and mean absolute deviation.
    mean: Option<f64>,
    deviation: f64,
    /// The current interval.
    sum: f64,
    samples: u32,
    /// 429s among the interval's answers.
    refused: u32,
    reached: bool,
    pressure: bool,
    next: Option<Instant>,
    /// Doubling until the first decrease.
    slow_start: bool,
}

impl Window {
    pub fn new(initial: usize, min: usize, max: usize) -> Self {
        let min = min.max(1);
        let max = max.max(min);
        Window {
            limit: initial.clamp(min, max),
            min,
            max,
            mean: None,
            deviation: 0.0,
            sum: 0.0,
            samples: 0,
            refused: 0,
            reached: false,
            pressure: false,
            next: None,
            slow_start: true,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The long-run mean RTT, once one interval has passed.
    pub fn mean_rtt(&self) -> Option<Duration> {
        self.mean.map(Duration::from_secs_f64)
    }

    /// The answer about to be observed is a 429, observed without its
    /// round trip: a target answers a 429 at once, so its round trip says
    /// nothing of the writes'. Measured at 8% of sporadic 429s (100,000
    /// rows): with them as samples, the intervals' mean fell to 4.4 ms
    /// against 5.8, the window fell on the writes' ordinary swings 129 times
    /// against 52 and sat at a median of 54 in flight against 88.
    pub fn refused(&mut self) {
        self.refused += 1;
    }

    /// The limit was reached when a request was sent: more room may help.
    pub fn reached(&mut self) {
        self.reached = true;
    }

    /// A request was answered after `rtt` (`None`: no answer, e.g. a
    /// timeout), with or without back pressure. Returns the change made
    /// when this answer closed an interval.
    pub fn observe(
        &mut self,
        now: Instant,
        rtt: Option<Duration>,
        back_pressure: bool,
    ) -> Option<Change> {
        if let Some(rtt) = rtt {
            self.sum += rtt.as_secs_f64();
            self.samples += 1;
        }
        self.pressure |= back_pressure;
        let next = *self.next.get_or_insert(now);
        if now < next || (self.samples == 0 && !self.pressure) {
            return None;
        }
        let current = (self.samples > 0).then(|| self.sum / f64::from(self.samples));
        let floor = if self.slow_start {
            SLOW_START_RISE
        } else {
            RISE_FLOOR
        };
        let answers = self.samples + self.refused;
        let held = if self.slow_start {
            self.refused > 0
        } else {
            f64::from(self.refused) > HOLD_SHARE * f64::from(answers.max(1))
        };
        let change = match (self.mean, current) {
            _ if self.pressure => self.decrease(),
            _ if held => None,
            (Some(mean), Some(current))
                if current > mean + (DEVIATION_SCALE * self.deviation).max(floor * mean) =>
            {
                self.decrease()
            }
            // Doubling: any RTT short of a rise.
            (Some(_), Some(_)) if self.slow_start && self.reached => self.increase(),
            // (A relative 1e-9: the moving mean of a flat RTT is not
            // always that RTT to the last bit.)
            (Some(mean), Some(current)) if current <= mean * (1.0 + 1e-9) && self.reached => {
                self.increase()
            }
            _ => None,
        };
        // Each interval, for tuning (`LISTPIPE_LOG=listpipe::load::window=trace`).
        tracing::trace!(target: log_target!(),
            limit = self.limit,
            rtt_ms = current.unwrap_or(0.0) * 1e3,
            mean_ms = self.mean.unwrap_or(0.0) * 1e3,
            deviation_ms = self.deviation * 1e3,
            samples = self.samples,
            refused = self.refused,
            reached = self.reached,
            pressure = self.pressure,
            held,
            ?change,
            "an interval of the window"
        );
        if let Some(current) = current {
            match self.mean {
                None => self.mean = Some(current),
                Some(mean) => {
                    let dev = (current - mean).abs();
                    self.deviation = EWMA_ALPHA * dev + (1.0 - EWMA_ALPHA) * self.deviation;
                    self.mean = Some(EWMA_ALPHA * current + (1.0 - EWMA_ALPHA) * mean);
                }
            }
        }
        let interval = self.mean_rtt().unwrap_or_default().max(MIN_INTERVAL);
        self.next = Some(now + interval);
        self.sum = 0.0;
        self.samples = 0;
        self.refused = 0;
        self.reached = false;
        self.pressure = false;
        change
    }

    fn increase(&mut self) -> Option<Change> {
        if self.limit >= self.max {
            self.slow_start = false;
        }
        (self.limit < self.max).then(|| {
            let step = if self.slow_start { self.limit } else { 1 };
            self.limit = (self.limit + step).min(self.max);
            Change::Increased
        })
    }

    fn decrease(&mut self) -> Option<Change> {
        self.slow_start = false;
        let lower = ((self.limit as f64 * DECREASE).floor() as usize).max(self.min);
        (lower < self.limit).then(|| {
            self.limit = lower;
            Change::Decreased
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds `rounds` intervals of `per` answers each taking `rtt(round)`,
    /// with the limit reached in each; returns the limit after each round.
    fn drive(w: &mut Window, rounds: u32, rtt: impl Fn(u32) -> Duration) -> Vec<usize> {
        let mut now = Instant::now();
        let mut limits = Vec::new();
        for round in 0..rounds {
            let rtt = rtt(round);
            for _ in 0..4 {
                w.reached();
                w.observe(now, Some(rtt), false);
                now += rtt / 4;
            }
            now += rtt;
            limits.push(w.limit());
        }
        limits
    }

    #[test]
    fn a_429_holds_a_doubling_and_more_than_a_fifth_hold_an_increase() {
        let mut w = Window::new(4, 1, 256);
        let mut now = Instant::now();
        // Rounds of 10 answers at a flat 10 ms, the last `refused` of them
        // 429s (answered at once, so without a round trip); each round's
        // first answer closes the interval of the round before. `pressure`:
        // the round's last answer is back pressure.
        let mut round = |w: &mut Window, (refused, pressure): (usize, bool)| {
            now += 100 * MS;
            for i in 0..10 {
                w.reached();
                let is_429 = i >= 10 - refused;
                if is_429 {
                    w.refused();
                }
                let rtt = (!is_429).then_some(10 * MS);
                w.observe(now + i as u32 * MS / 100, rtt, pressure && i == 9);
            }
            w.limit()
        };
        let rounds = [
            (0, false),
            (0, false),
            (1, false),
            (0, false),
            (0, true),
            (0, false),
            (2, false),
            (5, false),
            (0, false),
            (0, false),
        ];
        let limits: Vec<usize> = rounds.into_iter().map(|r| round(&mut w, r)).collect();
        // Doubling, held by one 429 in ten and not ended; a decrease ends
        // it; then +1 with one 429 in five, held by one in two.
        assert_eq!(limits, [4, 8, 16, 16, 32, 28, 29, 30, 30, 31]);
    }

    #[test]
    fn the_window_doubles_on_a_flat_rtt_until_the_first_decrease() {
        let mut w = Window::new(4, 1, 256);
        let limits = drive(&mut w, 5, |_| 50 * MS);
        assert_eq!(limits, [4, 8, 16, 32, 64]);
    }

    #[test]
    fn while_doubling_a_limit_that_less_than_doubles_the_rtt_doubles_again() {
        // A target that answers one request at a time behind a fixed delay:
        // the RTT grows with the requests in flight, the answers a second too.
        let mut w = Window::new(4, 1, 256);
        let mut limits = Vec::new();
        let mut now = Instant::now();
        for _ in 0..8 {
            let rtt = (50 + 26 * w.limit() as u32) * MS;
            for _ in 0..4 {
                w.reached();
                w.observe(now, Some(rtt), false);
                now += rtt / 4;
            }
            now += rtt;
            limits.push(w.limit());
        }
        // 4 -> 8 (the RTT 1.7x) -> 16 (1.8x) -> 32 (1.9x): a rise, the
        // window comes back under it and stays there, well past the 8 a
        // flat-RTT rule stops at.
        let last = limits[limits.len() - 1];
        assert!((16..32).contains(&last), "{limits:?}");
        assert!(limits.iter().all(|l| *l <= 32), "{limits:?}");
        assert!(
            limits.iter().rev().take(4).all(|l| *l == last),
            "{limits:?}"
        );
    }

    #[test]
    fn after_a_decrease_the_window_grows_one_at_a_time_while_the_rtt_stays_flat() {
        let mut w = Window::new(40, 1, 256);
        let now = Instant::now();
        w.observe(now, Some(50 * MS), false);
        w.observe(now + 60 * MS, Some(50 * MS), true);
        assert_eq!(w.limit(), 36);
        let limits = drive(&mut w, 30, |_| 50 * MS);
        assert!(limits.windows(2).all(|p| p[1] == p[0] || p[1] == p[0] + 1));
        assert!(w.limit() >= 36 + 25, "{limits:?}");
    }

    #[test]
    fn the_window_does_not_grow_when_the_limit_is_never_reached() {
        let mut w = Window::new(4, 1, 64);
        let mut now = Instant::now();
        for _ in 0..100 {
            w.observe(now, Some(50 * MS), false);
            now += 60 * MS;
        }
        assert_eq!(w.limit(), 4);
    }

    #[test]
    fn the_window_stops_at_its_maximum() {
        let mut w = Window::new(4, 1, 10);
        drive(&mut w, 100, |_| 20 * MS);
        assert_eq!(w.limit(), 10);
    }

    #[test]
    fn a_rising_rtt_shrinks_the_window() {
        let mut w = Window::new(4, 1, 256);
        drive(&mut w, 60, |_| 50 * MS);
        let grown = w.limit();
        // The target slows down: each interval takes longer than the last.
        let limits = drive(&mut w, 20, |round| (60 + 25 * round) * MS);
        assert!(w.limit() < grown, "{grown} -> {limits:?}");
        assert!(limits.windows(2).all(|p| p[1] <= p[0]), "{limits:?}");
    }

    #[test]
    fn back_pressure_shrinks_the_window_multiplicatively_down_to_the_minimum() {
        let mut w = Window::new(100, 1, 256);
        let mut now = Instant::now();
        w.observe(now, Some(50 * MS), false);
        let mut limits = Vec::new();
        for _ in 0..80 {
            now += 100 * MS;
            w.observe(now, Some(50 * MS), true);
            limits.push(w.limit());
        }
        assert_eq!(&limits[..3], &[90, 81, 72]);
        assert_eq!(w.limit(), 1);
    }

    #[test]
    fn a_timeout_without_an_answer_shrinks_the_window() {
        let mut w = Window::new(20, 1, 256);
        let now = Instant::now();
        w.observe(now, Some(50 * MS), false);
        assert_eq!(
            w.observe(now + 100 * MS, None, true),
            Some(Change::Decreased)
        );
        assert_eq!(w.limit(), 18);
    }

    #[test]
    fn a_pinned_range_never_moves() {
        let mut w = Window::new(8, 8, 8);
        drive(&mut w, 20, |_| 10 * MS);
        assert_eq!(w.limit(), 8);
        w.observe(Instant::now() + Duration::from_secs(9), None, true);
        assert_eq!(w.limit(), 8);
    }
}
