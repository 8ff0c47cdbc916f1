//! The run's rate after a 429: a token bucket (`governor`) the controller
//! consults before each request, lowered when 429s show a limit and raised
//! again by the answers that come without one (additive increase,
//! multiplicative decrease, as the [window](super::super::window) does for
//! the requests in flight).
//!
//! Decisions:
//! - A 429 is *sporadic* when, among the recent answers (the last
//!   [`RECENT`], or the last [`RECENT_SPAN`]'s when more came in it, since
//!   the rate was last lowered) and the requests sent before it still in
//!   flight, at most [`SPORADIC_SHARE`] were 429s, or too few came to tell
//!   ([`Bucket::verdict`]): it
//!   lowers nothing and pauses nothing, and the refused request alone
//!   waits its `Retry-After` before it goes again. A target that
//!   refuses a steady few percent at any rate (a shared quota, a flaky
//!   proxy) then costs those retries, no more. Measured before: against a
//!   target answering 2% of requests with 429, every 429 lowered the rate
//!   and paused the run, and the rate fell 39 -> 2.5 req/s in a minute; at
//!   8% it sat at 0.95 req/s for 40 minutes. A real limit, once passed,
//!   refuses a growing share of what goes over it, and is *limiting*.
//! - The first limiting 429 teaches a rate ([`Bucket::learn`]): what the
//!   target let through before it, once the requests sent before it are
//!   answered ([`Bucket::settle`]). A limiting 429 after that lowers the
//!   rate to what was accepted meanwhile (the rate times the share not
//!   refused), by a tenth at least ([`DECREASE`]), never below
//!   [`RATE_FLOOR`].
//! - Every [`RAISE_EVERY`] in which the bucket held a request back, the
//!   requests sent came near the rate ([`REACHED`]), and at least
//!   [`RAISE_FROM`] answers came with the 429s sporadic among them, the
//!   rate rises by a step of [`RAISE_SHARE`] of
//!   the rate set at its last decrease (additive: the same step until the
//!   next decrease). A rate learned too low (from a stray 429 early in the
//!   run) is back to where the target's answers hold it within seconds; a
//!   real limit is passed by a step or two, then lowered again, so the run
//!   goes at the target's limit.
//! - `max_requests_per_second` is a ceiling no raise passes.
//!
//! How a rate is learned from the first limiting 429: [`super::learn`].

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::collections::{BTreeMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

mod recent;
use recent::Recent;

/// The shortest quota window a rate is learned over (a longer
/// `Retry-After` is the window).
pub(super) const LEARN_OVER: Duration = Duration::from_secs(1);
/// The longest window, and how long send times are kept for it.
pub(super) const LEARN_HORIZON: Duration = Duration::from_secs(60);
/// How many of the latest answers tell a sporadic 429 from a limit, at
/// least: the answers of the last [`RECENT_SPAN`] when there are more.
pub(super) const RECENT: usize = 100;
/// The span of the recent answers when more than [`RECENT`] came in it. A
/// 429 that the target answers at once comes back before the successes
/// sent with it, so a burst of sends puts its 429s first: at 10,000
/// requests a second, 100 answers are 10 ms, shorter than a write's round
/// trip, and against a steady 8% of sporadic 429s such windows held over a
/// fifth of them, so a 100,000-row run was paced at 950 to 1,600 requests
/// a second and took 8 to 16 times the fault-free run (issue 41, once rows
/// waiting out a 429 no longer held their places). Over a second the
/// answers hold each kind as sent.
pub(super) const RECENT_SPAN: Duration = Duration::from_secs(1);
/// 429s of at most this share of the recent answers are sporadic. Well
/// above a steady 8% (the fault campaign's worst sporadic case): at 8%,
/// 100 answers hold more than 20% 429s with a chance of a few in a
/// million, so a long run does not mistake them for a limit. Measured
/// before, with 50 answers and 15%: a 19,400-row run against 8% sporadic
/// 429s took such a window for a limit now and then, was paced at 208
/// requests a second and took 4.3 times the fault-free run. Against a real
/// limit the rate goes up to about 1.25 times it before it is lowered to
/// it: what went through is still the limit, and the 429s over it (about
/// one request in eight in the tests' model) are retried.
pub(super) const SPORADIC_SHARE: f64 = 0.2;
/// Before the first limit, this many 429s are enough to tell one, when
/// they are a share of the answers above [`SPORADIC_SHARE`] (a run that
/// starts against a spent quota). Before, any 429 among the first 25
/// answers was a limit: against a steady 8% of sporadic 429s, nine runs in
/// ten were paused a second at their start (a tenth of a 100,000-row
/// import), and some learned a rate from the few requests let through,
/// tens a second where the target took thousands. With three (and the
/// share), a draw of the first answers takes such a start for a limit in
/// one run of twelve to twenty at 8%, one of five hundred at 2%.
pub(super) const EARLY_REFUSED: usize = 3;
/// Past this share of 429s the learned rate is far off: every request
/// pauses for the `Retry-After` as well.
pub(super) const PAUSE_SHARE: f64 = 0.5;
/// A limiting 429 lowers the rate by this factor at least.
pub(super) const DECREASE: f64 = 0.9;
/// How often the rate may rise.
pub(super) const RAISE_EVERY: Duration = Duration::from_millis(500);
/// The fewest answers to a rate that can raise it.
pub(super) const RAISE_FROM: u32 = 5;
/// The step of a rise, as a share of the rate set at the last decrease.
pub(super) const RAISE_SHARE: f64 = 0.1;
/// Until a limiting 429 confirms a learned rate, it rises by this share of
/// itself instead (as the window doubles until its first decrease): a rate
/// learned from a handful of answers at the run's start, where one
/// sporadic 429 looks like a limit, is back at the target's pace within
/// seconds. Measured in the tests' model: from 7.3 to 40 requests a
/// second in 4 s, where the additive step took 22.
pub(super) const SLOW_RAISE: f64 = 0.25;
/// A rate rises only when the requests sent since it was set came to this
/// share of it at least: a bucket that holds back a request now and then
/// while something else (the window, the source) sets the pace proves
/// nothing. Measured against `serve --rate-limit 50`: without it the rate
/// rose to 109 a second while the run sent 63, and said so.
pub(super) const REACHED: f64 = 0.9;
/// A probe that found the limit goes back to what the target took over
/// this long, when lower than the rate it rose from.
pub(super) const TAKEN_OVER: Duration = Duration::from_secs(2);
/// A run started at a rate remembered within a day (the target's limit,
/// found by probes that failed) waits this long before its first probe
/// above it, as a run of its own does after three failed probes. A target
/// with a burst (a token bucket, as `serve --rate-limit`) lets a probe
/// above its rate hold until the burst is spent, so a probe that holds
/// soon after the start proves little, and the next one goes higher still.
/// Measured against `serve --rate-limit 5` (BENCHMARKS.md): with a first
/// probe at 2 s, a second 20,000-row run had 6 of its 55 requests refused
/// in one run of two.
pub(super) const TRUSTED_PROBE_WAIT: Duration = Duration::from_secs(4);
/// No learned rate is lower (requests per second), unless
/// `max_requests_per_second` is.
pub(super) const RATE_FLOOR: f64 = 1.0;

/// What a 429 says about the target's limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Verdict {
    /// Few of the recent answers were 429s: the refused request retries alone.
    Sporadic,
    /// A limit: the rate is lowered; `share` of the recent answers were 429s.
    Limiting { share: f64 },
}

/// What a 429 made the bucket decide.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Decision {
    /// A new event that showed a limit (the window shrinks too).
    pub(super) limiting: bool,
    /// Every request waits for the `Retry-After`.
    pub(super) pause: bool,
    /// The rate it was lowered to.
    pub(super) lowered: Option<f64>,
}

/// Why the run is paced, for the progress line and the report.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pacing {
    /// When the rate was first set.
    pub(super) since: Instant,
    /// `max_requests_per_second` set it, rather than the target's 429s.
    pub(super) configured: bool,
    /// The share of 429s among the recent answers that set it last.
    pub(super) share: f64,
    /// The rate first learned from the target (0 for a configured one).
    pub(super) learned: f64,
}

/// A first limit told, waiting for the answers to the requests sent before
/// it ([`Bucket::settle`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Learning {
    /// When the 429 that told it was answered (the pause's start).
    pub(super) told: Instant,
    /// Its `Retry-After`.
    pub(super) wait: Duration,
}

#[derive(Default)]
pub(super) struct Bucket {
    pub(super) limiter: Option<Arc<DefaultDirectRateLimiter>>,
    pub(super) rate: Option<f64>,
    /// `max_requests_per_second`: a learned rate never exceeds it.
    pub(super) configured: Option<f64>,
    /// When requests were sent, within [`LEARN_HORIZON`].
    pub(super) sent: VecDeque<Instant>,
    /// When the requests answered 429 were sent, within [`LEARN_HORIZON`].
    pub(super) refused: VecDeque<Instant>,
    /// When the requests not answered yet were sent (how many at each).
    pub(super) in_flight: BTreeMap<Instant, u32>,
    /// The latest answers since the rate was last lowered.
    recent: Recent,
    /// The step of a rise, set at each decrease.
    step: f64,
    /// When the rate last changed (or the run started to be paced).
    changed: Option<Instant>,
    /// The bucket held a request back since the rate last rose.
    pub(super) held: bool,
    /// Answers, and 429s among them, since the rate last rose or fell.
    answers_since_change: u32,
    refused_since_change: u32,
    /// A limiting 429 came after the rate was learned, or it was learned
    /// from many requests: rises are additive.
    pub(super) confirmed: bool,
    /// The first limit, until the requests sent before it are answered.
    pub(super) learning: Option<Learning>,
    pub(super) pacing: Option<Pacing>,
    /// 429s that lowered nothing, and ones that did.
    pub(super) sporadic: u64,
    pub(super) limiting: u64,
    /// The answers by the rate they answered: whether 429s follow it.
    pub(super) evidence: super::evidence::Evidence,
    /// Where the starting rate came from, in words, when an earlier run
    /// remembered it ([`Bucket::remembered`]).
    pub(super) remembered: Option<String>,
}

impl Bucket {
    /// The bucket from the start: `max_requests_per_second`, if set.
    pub(super) fn new(configured: Option<f64>, now: Instant) -> Self {
        let mut b = Bucket {
            configured,
            ..Default::default()
        };
        if let Some(rate) = configured {
            b.set(rate, now);
            b.pacing = Some(Pacing {
                since: now,
                configured: true,
                share: 0.0,
                learned: 0.0,
            });
        }
        b
    }

    /// Starts paced at `rate`, remembered from earlier runs (`why`, in
    /// words): `trusted`, as a limit learned just now (rises probe slowly
    /// from it); else a hint that rises quickly until a limit confirms it.
    pub(super) fn remembered(&mut self, rate: f64, trusted: bool, now: Instant, why: String) {
        self.set(rate, now);
        let rate = self.rate.unwrap_or(rate);
        self.pacing = Some(Pacing {
            since: now,
            configured: false,
            share: 0.0,
            learned: rate,
        });
        self.step = (rate * RAISE_SHARE).max(0.1);
        self.confirmed = trusted;
        if trusted {
            // Known to be the limit: the first probe waits as a run's
            // would after a few probes that found it.
            self.evidence.probe_wait = TRUSTED_PROBE_WAIT;
        }
        self.remembered = Some(why);
    }

    /// The rate to remember at `now`, the run's end: the one that held
    /// (not a probe above it still being tried), when the target paced the
    /// run, and no more than the target has shown it lets through (90% of
    /// it, [`Bucket::shown`]): a target with a burst lets a rate or two
    /// above its own hold for a while. Measured against `serve --rate-limit
    /// 5`: a 10-second batch run ended at 5.5 held, and the next run,
    /// started there, had 5 of its 54 requests refused.
    pub(super) fn holding(&self, now: Instant) -> Option<f64> {
        let learned = self.pacing.as_ref().is_some_and(|p| !p.configured);
        let rate = self.rate.filter(|_| learned)?;
        let held = self.evidence.probe.map_or(rate, |(_, from)| from.min(rate));
        Some(
            self.shown(now, LEARN_OVER)
                .map_or(held, |shown| held.min(shown)),
        )
    }

    /// The lowest rate allowed: [`RATE_FLOOR`], or the configured one below it.
    pub(super) fn floor(&self) -> f64 {
        self.configured.map_or(RATE_FLOOR, |c| c.min(RATE_FLOOR))
    }

    pub(super) fn set(&mut self, rate: f64, now: Instant) {
        let rate = rate.max(self.floor());
        let rate = self.configured.map_or(rate, |c| rate.min(c));
        let quota = Quota::with_period(Duration::from_secs_f64(1.0 / rate))
            .map(|q| q.allow_burst(NonZeroU32::MIN));
        self.limiter = quota.map(|q| Arc::new(RateLimiter::direct(q)));
        self.rate = Some(rate);
        self.changed = Some(now);
        self.held = false;
        self.answers_since_change = 0;
        self.refused_since_change = 0;
    }

    /// The limiter requests wait on, if the run is paced.
    pub(super) fn limiter(&self) -> Option<Arc<DefaultDirectRateLimiter>> {
        self.limiter.clone()
    }

    pub(super) fn sent(&mut self, now: Instant) {
        self.sent.push_back(now);
        *self.in_flight.entry(now).or_default() += 1;
        for times in [&mut self.sent, &mut self.refused] {
            while times
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) > LEARN_HORIZON)
            {
                times.pop_front();
            }
        }
    }

    /// The request sent at `sent` ended (answered, or without an answer).
    pub(super) fn ended(&mut self, sent: Instant) {
        if let Some(n) = self.in_flight.get_mut(&sent) {
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(&sent);
            }
        }
        if self.learning.is_some() {
            self.settle(false);
        }
    }

    /// The request sent at `sent` was answered at `now`: `refused` for a
    /// 429. Raises the rate when it held requests back for [`RAISE_EVERY`]
    /// without a limiting 429. The new rate, if raised.
    pub(super) fn answered(&mut self, now: Instant, sent: Instant, refused: bool) -> Option<f64> {
        self.recent.push(now, refused);
        self.evidence.push(refused);
        self.ended(sent);
        self.answers_since_change += 1;
        self.refused_since_change += u32::from(refused);
        let (rate, changed) = (self.rate?, self.changed?);
        let ceiling = self.configured.unwrap_or(f64::INFINITY);
        // The answers to the rate as it is say it holds: a few of them,
        // few refused.
        let answers = self.answers_since_change;
        let refused_share = f64::from(self.refused_since_change) / f64::from(answers);
        if refused
            || !self.held
            || rate >= ceiling
            || now.saturating_duration_since(changed) < self.evidence.probe_wait.max(RAISE_EVERY)
            || answers < RAISE_FROM
            || refused_share > SPORADIC_SHARE
            || self.share() > SPORADIC_SHARE
            || self.sent_since(changed, now) < rate * REACHED
        {
            return None;
        }
        let step = if self.confirmed {
            self.step
        } else {
            rate * SLOW_RAISE
        };
        // The rate held: its answers are the base a probe is judged by.
        self.evidence
            .held(answers, self.refused_since_change, rate, now);
        self.set(rate + step, now);
        Some(self.rate.unwrap_or(rate))
    }

    /// The share of 429s among the recent answers.
    pub(super) fn share(&self) -> f64 {
        self.recent.share()
    }

    /// A 429 answered at `now` the request sent at `sent`, asking to wait
    /// `wait`; `paused`: the run is still paused by an earlier one (this
    /// request went before the pause: the same event). What to do.
    #[cfg(test)]
    pub(super) fn refused_answer(
        &mut self,
        now: Instant,
        sent: Instant,
        wait: Duration,
        paused: bool,
    ) -> Decision {
        self.refused_answer_explained(now, sent, wait, paused, false)
    }

    /// [`Bucket::refused_answer`]; `explained`: the answer itself says the
    /// quota is spent (`X-RateLimit-Remaining: 0`), a limit whatever the
    /// other answers say.
    pub(super) fn refused_answer_explained(
        &mut self,
        now: Instant,
        sent: Instant,
        wait: Duration,
        paused: bool,
        explained: bool,
    ) -> Decision {
        self.refused.push_back(sent);
        self.answered(now, sent, true);
        let none = Decision {
            limiting: false,
            pause: paused,
            lowered: None,
        };
        if paused {
            return none;
        }
        let Verdict::Limiting { share } = self.verdict(sent, explained) else {
            self.sporadic += 1;
            return none;
        };
        let learned = self.pacing.as_ref().is_some_and(|p| !p.configured);
        Decision {
            limiting: true,
            // No rate learned yet, or one far off: every request waits.
            pause: !learned || share > PAUSE_SHARE,
            lowered: self.limited(now, wait, share),
        }
    }

    /// What the 429 just [`answered`](Bucket::answered), of the request
    /// sent at `sent`, says: a limit when 429s are more than
    /// [`SPORADIC_SHARE`] of the recent answers and of the requests sent
    /// before it still in flight. Those count as let through: a 429 comes
    /// back at once, ahead of the writes sent with it, so a burst's first
    /// answers are its 429s (measured: 256 requests sent at once against
    /// a steady 8% of sporadic 429s, and the first answers held a fifth and
    /// more of them). How many answers are enough: [`EARLY_REFUSED`] 429s
    /// before the first limit, [`RECENT`]` / 2` answers after.
    pub(super) fn verdict(&self, sent: Instant, explained: bool) -> Verdict {
        let refused = self.recent.refused;
        let before: u32 = self.in_flight.range(..=sent).map(|(_, n)| *n).sum();
        let share = refused as f64 / (self.recent.len() + before as usize).max(1) as f64;
        let learned = self.pacing.as_ref().is_some_and(|p| !p.configured);
        // Once a rate is known, 429s that follow it are a limit from the
        // first few (`super::evidence`), as is one the answer explains.
        let follows = learned
            && self.evidence.follows_the_rate(
                self.answers_since_change,
                self.refused_since_change,
                before,
            );
        if explained || follows {
            return Verdict::Limiting { share };
        }
        // A run that starts against a spent quota: a few 429s that are
        // most of its first answers. A share of a few answers says little
        // otherwise: two 429s in the first four answers after a change are
        // not a limit yet.
        let first = !learned && self.limiting == 0 && refused >= EARLY_REFUSED;
        let enough = first || (self.recent.len() >= RECENT / 2 && refused >= 2);
        if enough && share > SPORADIC_SHARE {
            Verdict::Limiting { share }
        } else {
            Verdict::Sporadic
        }
    }

    /// Lowers the rate after a limiting 429 (answered at `now`, with
    /// `Retry-After` `wait`): learned the first time, once the requests sent
    /// before it are answered ([`Bucket::settle`]), lowered to what was
    /// accepted after. The new rate, if lowered now.
    pub(super) fn limited(&mut self, now: Instant, wait: Duration, share: f64) -> Option<f64> {
        let learned_before = self.pacing.as_ref().is_some_and(|p| !p.configured);
        if !learned_before {
            // A later limit told before the first one is learned is the
            // same event.
            self.learning.get_or_insert(Learning { told: now, wait });
            return self.settle(false);
        }
        self.limiting += 1;
        let probed_from = self.evidence.limit_found();
        // What the bucket let go since the last change, if it went slower.
        let rate = self.rate?.min(self.send_rate(now));
        // A probe that found the limit goes back to the rate it rose from,
        // which held. Otherwise: what the target has shown it lets through
        // (a bucket with its burst), when enough went through to tell, or
        // what was accepted.
        let lower = match probed_from {
            // (A target with a burst lets a probe or two above its rate
            // hold for a while, until the burst is spent: then what it
            // takes now is its rate.)
            Some(from) if from < rate => from.min(self.taken(now, TAKEN_OVER).max(from * DECREASE)),
            _ => self
                .shown(now, wait)
                .unwrap_or(rate * (1.0 - share))
                .min(rate * DECREASE),
        }
        .max(self.floor());
        self.confirmed = true;
        let current = self.rate?;
        // On the floor already: the evidence is spent all the same,
        // and the answers after it decide the next rise or fall.
        self.recent.clear();
        self.answers_since_change = 0;
        self.refused_since_change = 0;
        if lower >= current {
            return None;
        }
        self.set(lower, now);
        let rate = self.rate?;
        self.lowered_to(rate, now, share);
        Some(rate)
    }

    /// The rate was learned or lowered to `rate` at `now`, where `share`
    /// of the recent answers were 429s: the step of later rises, the
    /// evidence spent, what the report and the log say.
    pub(super) fn lowered_to(&mut self, rate: f64, now: Instant, share: f64) {
        self.step = (rate * RAISE_SHARE).max(0.1);
        self.recent.clear();
        let (since, learned) = match &self.pacing {
            Some(p) if !p.configured => (p.since, p.learned),
            Some(p) => (p.since, rate),
            None => (now, rate),
        };
        self.pacing = Some(Pacing {
            since,
            configured: false,
            share,
            learned,
        });
        tracing::info!(target: log_target!(),
            rate = (rate * 100.0).round() / 100.0,
            refused_share = (share * 100.0).round() / 100.0,
            "requests per second lowered: the target answers 429 Too Many Requests"
        );
    }

    /// Requests sent a second over the last [`LEARN_OVER`] or since the
    /// rate last changed, whichever is longer (infinite over no time).
    fn send_rate(&self, now: Instant) -> f64 {
        let from = self
            .changed
            .map_or(now, |c| c.min(now.checked_sub(LEARN_OVER).unwrap_or(c)));
        self.sent_since(from, now)
    }

    /// Requests sent a second over the last `span` and not refused (those
    /// still in flight included): what the target takes now.
    fn taken(&self, now: Instant, span: Duration) -> f64 {
        let from = now.checked_sub(span).unwrap_or(now);
        let sent = self.sent.iter().rev().take_while(|t| **t >= from).count();
        let refused = self
            .refused
            .iter()
            .rev()
            .take_while(|t| **t >= from)
            .count();
        sent.saturating_sub(refused) as f64 / span.as_secs_f64()
    }

    /// Requests sent a second from `from` to `now` (infinite over no time).
    fn sent_since(&self, from: Instant, now: Instant) -> f64 {
        let span = now.saturating_duration_since(from).as_secs_f64();
        if span <= 0.0 {
            return f64::INFINITY;
        }
        let n = self.sent.iter().rev().take_while(|t| **t >= from).count();
        n as f64 / span
    }
}
