//! The run's pace over time, for the report's `requests.timeline`: what
//! the requests did in each interval (sent, answered, 429s, retries, the
//! most in flight, the client-side rate at its end).
//!
//! Decisions:
//! - Driven by the requests themselves: the controller records each send,
//!   answer and retry into the interval its time falls in, with the times
//!   it uses for everything else (the tests' synthetic ones too). No
//!   sampler task, nothing to stop; an interval in which nothing happened
//!   is still there, with the requests in flight and the rate carried
//!   over from the one before (a pause, a slow answer).
//! - Bounded: intervals start at [`INTERVAL`]; when [`MAX_SAMPLES`] are
//!   full, adjacent pairs merge (counts add, the most in flight is the
//!   larger, the rate is the later one's) and the interval doubles. A
//!   10-hour run has at most 120 samples of about 5 minutes, a 2-minute
//!   run 120 of a second.
//! - The rows a request carried are not here: the controller sees
//!   requests, not rows (the steps' figures have the rows).

use super::super::requests::PaceSample;
use tokio::time::Instant;

/// The most samples a timeline holds.
pub const MAX_SAMPLES: usize = 120;
/// The first interval, milliseconds.
pub const INTERVAL: u64 = 1000;

/// What happened to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    Sent,
    /// Answered by the target; `refused`: with a 429.
    Answered {
        refused: bool,
    },
    /// Ended without an answer (a connection error, a timeout, the breaker).
    Ended,
    /// About to wait and go again.
    Retry,
}

#[derive(Debug, Clone)]
pub(super) struct Timeline {
    /// The first request's time: the samples count from it.
    origin: Option<Instant>,
    interval_ms: u64,
    max: usize,
    samples: Vec<PaceSample>,
    /// The latest in flight and rate, for intervals still to come.
    in_flight: usize,
    rate: Option<f64>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::bounded(MAX_SAMPLES, INTERVAL)
    }
}

impl Timeline {
    /// At most `max` samples (at least 2), of `interval_ms` to start.
    fn bounded(max: usize, interval_ms: u64) -> Self {
        Timeline {
            origin: None,
            interval_ms: interval_ms.max(1),
            max: max.max(2),
            samples: Vec::new(),
            in_flight: 0,
            rate: None,
        }
    }

    /// `event` at `now`, with `in_flight` requests in flight after it and
    /// the client-side rate `rate` (requests per second) in force.
    pub(super) fn record(
        &mut self,
        now: Instant,
        event: Event,
        in_flight: usize,
        rate: Option<f64>,
    ) {
        let origin = *self.origin.get_or_insert(now);
        let ms =
            u64::try_from(now.saturating_duration_since(origin).as_millis()).unwrap_or(u64::MAX);
        while ms / self.interval_ms >= self.max as u64 {
            self.merge();
        }
        let i = (ms / self.interval_ms) as usize;
        while self.samples.len() <= i {
            let at_ms = self.samples.len() as u64 * self.interval_ms;
            self.samples.push(PaceSample {
                at_ms,
                ms: self.interval_ms,
                in_flight: self.in_flight,
                rate_limit_per_second: self.rate,
                ..PaceSample::default()
            });
        }
        let rate = rate.map(|r| (r * 100.0).round() / 100.0);
        // An event of an interval already left behind (times taken on
        // other threads come a little out of order) updates that one; the
        // carried values stay the latest's.
        if i + 1 == self.samples.len() {
            self.in_flight = in_flight;
            self.rate = rate;
        }
        let Some(s) = self.samples.get_mut(i) else {
            return;
        };
        match event {
            Event::Sent => s.sent += 1,
            Event::Answered { refused } => {
                s.answered += 1;
                s.refused_429 += u64::from(refused);
            }
            Event::Ended => {}
            Event::Retry => s.retries += 1,
        }
        s.in_flight = s.in_flight.max(in_flight);
        s.rate_limit_per_second = rate;
    }

    /// Adjacent pairs merge into one sample of twice the interval.
    fn merge(&mut self) {
        let interval = self.interval_ms.saturating_mul(2);
        self.samples = self
            .samples
            .chunks(2)
            .map(|pair| match pair {
                [a, b] => PaceSample {
                    at_ms: a.at_ms,
                    ms: interval,
                    sent: a.sent + b.sent,
                    answered: a.answered + b.answered,
                    refused_429: a.refused_429 + b.refused_429,
                    retries: a.retries + b.retries,
                    in_flight: a.in_flight.max(b.in_flight),
                    rate_limit_per_second: b.rate_limit_per_second,
                },
                // The last one, alone (chunks are never empty).
                _ => PaceSample {
                    ms: interval,
                    ..pair.first().cloned().unwrap_or_default()
                },
            })
            .collect();
        self.interval_ms = interval;
    }

    /// The samples so far, for the report.
    pub(super) fn samples(&self) -> Vec<PaceSample> {
        self.samples.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(origin: Instant, ms: u64) -> Instant {
        origin + Duration::from_millis(ms)
    }

    /// A request a `every` ms for `span` ms: sent, answered (every tenth a
    /// 429 and retried) half an interval later.
    fn steady(t: &mut Timeline, origin: Instant, every: u64, span: u64) -> u64 {
        let mut n = 0;
        let mut ms = 0;
        while ms < span {
            t.record(at(origin, ms), Event::Sent, 1, Some(5.0));
            let refused = n % 10 == 9;
            t.record(
                at(origin, ms + every / 2),
                Event::Answered { refused },
                0,
                Some(5.0),
            );
            if refused {
                t.record(at(origin, ms + every / 2), Event::Retry, 0, Some(5.0));
            }
            n += 1;
            ms += every;
        }
        n
    }

    fn totals(s: &[PaceSample]) -> (u64, u64, u64, u64) {
        s.iter().fold((0, 0, 0, 0), |(a, b, c, d), x| {
            (a + x.sent, b + x.answered, c + x.refused_429, d + x.retries)
        })
    }

    #[test]
    fn a_sample_a_second_with_what_happened_in_it() {
        let origin = Instant::now();
        let mut t = Timeline::default();
        t.record(origin, Event::Sent, 1, None);
        t.record(at(origin, 10), Event::Sent, 2, None);
        t.record(at(origin, 900), Event::Answered { refused: true }, 1, None);
        t.record(at(origin, 950), Event::Retry, 1, Some(4.0));
        t.record(
            at(origin, 1200),
            Event::Answered { refused: false },
            0,
            Some(4.0),
        );
        t.record(at(origin, 3500), Event::Sent, 1, Some(4.333));
        let s = t.samples();
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(
            s[0],
            PaceSample {
                at_ms: 0,
                ms: 1000,
                sent: 2,
                answered: 1,
                refused_429: 1,
                retries: 1,
                in_flight: 2,
                rate_limit_per_second: Some(4.0),
            }
        );
        assert_eq!((s[1].at_ms, s[1].answered, s[1].in_flight), (1000, 1, 1));
        // Nothing happened in the third second: nothing in flight, the rate as it was.
        assert_eq!(
            (
                s[2].at_ms,
                s[2].sent,
                s[2].in_flight,
                s[2].rate_limit_per_second
            ),
            (2000, 0, 0, Some(4.0))
        );
        assert_eq!((s[3].sent, s[3].rate_limit_per_second), (1, Some(4.33)));
        assert_eq!(s[0].sent_per_second(), 2.0);
    }

    #[test]
    fn an_interval_without_events_carries_the_requests_in_flight() {
        let origin = Instant::now();
        let mut t = Timeline::default();
        t.record(origin, Event::Sent, 3, None);
        t.record(
            at(origin, 5400),
            Event::Answered { refused: false },
            2,
            None,
        );
        let s = t.samples();
        assert_eq!(s.len(), 6);
        assert!(
            s[1..5].iter().all(|x| x.in_flight == 3 && x.sent == 0),
            "{s:?}"
        );
        assert_eq!(s[5].in_flight, 3, "the most in flight in it");
    }

    #[test]
    fn a_full_timeline_merges_pairs_and_doubles_its_interval() {
        let origin = Instant::now();
        let mut t = Timeline::bounded(8, 1000);
        for i in 0..8 {
            t.record(at(origin, i * 1000), Event::Sent, i as usize, None);
        }
        assert_eq!(t.samples().len(), 8);
        assert_eq!(t.interval_ms, 1000);
        t.record(at(origin, 8000), Event::Sent, 1, Some(2.0));
        let s = t.samples();
        assert_eq!(t.interval_ms, 2000);
        assert_eq!(s.len(), 5, "{s:?}");
        assert_eq!(
            s.iter().map(|x| x.at_ms).collect::<Vec<_>>(),
            [0, 2000, 4000, 6000, 8000]
        );
        assert!(s.iter().all(|x| x.ms == 2000));
        assert_eq!(
            s.iter().map(|x| x.sent).collect::<Vec<_>>(),
            [2, 2, 2, 2, 1]
        );
        // The most in flight of each pair (the last one started with the
        // 7 in flight at the end of the one before).
        assert_eq!(
            s.iter().map(|x| x.in_flight).collect::<Vec<_>>(),
            [1, 3, 5, 7, 7]
        );
        // A jump far ahead merges as often as it takes.
        t.record(at(origin, 60_000), Event::Sent, 1, None);
        assert_eq!(t.interval_ms, 8000);
        let s = t.samples();
        assert!(s.len() <= 8, "{s:?}");
        assert_eq!(totals(&s).0, 10);
        assert_eq!(s.last().map(|x| x.at_ms), Some(56_000));
    }

    #[test]
    fn a_ten_hour_run_stays_bounded_and_keeps_its_totals() {
        let origin = Instant::now();
        let mut t = Timeline::default();
        let hours = 10 * 3600 * 1000;
        let n = steady(&mut t, origin, 250, hours);
        let s = t.samples();
        assert!(s.len() <= MAX_SAMPLES, "{}", s.len());
        assert!(s.len() > MAX_SAMPLES / 2, "{}", s.len());
        assert_eq!(totals(&s), (n, n, n / 10, n / 10));
        // A second doubled until 120 of them cover ten hours: 512 s.
        assert_eq!(t.interval_ms, 512_000);
        assert!(s.iter().all(|x| x.ms == t.interval_ms));
        assert!(
            s.windows(2)
                .all(|w| w[1].at_ms == w[0].at_ms + t.interval_ms)
        );
        // Four a second, whatever the interval.
        let mid = &s[s.len() / 2];
        assert_eq!(mid.sent_per_second(), 4.0, "{mid:?}");
        assert_eq!(mid.rate_limit_per_second, Some(5.0));
    }

    #[tokio::test]
    async fn the_controller_records_its_requests_in_the_report() {
        use super::super::Controller;
        use crate::pipeline::Concurrency;
        use listpipe_client::ClientError;
        // Pinned: two requests always find their places.
        let c = Controller::new(Concurrency::Fixed(4), None);
        let too_many = ClientError::Api {
            method: "POST".into(),
            path: "/v3/groups/1/receivers".into(),
            status: 429,
            message: "Too Many Requests".into(),
            retry_after: Some(1),
        };
        let mut now = Instant::now();
        for i in 0..30u32 {
            let (a, b) = (c.acquire().await, c.acquire().await);
            now += Duration::from_millis(400);
            c.finish_at(now, a, None, None);
            if i % 5 == 4 {
                c.finish_at(now, b, Some(&too_many), None);
                c.retrying(&too_many);
            } else {
                c.finish_at(now, b, None, None);
            }
        }
        let r = c.report();
        assert!(!r.timeline.is_empty());
        assert!(r.timeline.len() <= MAX_SAMPLES);
        let (sent, answered, refused, retries) = totals(&r.timeline);
        assert_eq!(sent, r.sent);
        assert_eq!((sent, answered, refused, retries), (60, 60, 6, 6));
        assert_eq!(r.retries.get("rate_limited"), Some(&6));
        assert!(
            r.timeline.iter().any(|s| s.in_flight == 2),
            "{:?}",
            r.timeline
        );
        let json = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(json["timeline"][0]["at_ms"], 0, "{json}");
        // Not paced: no rate in the samples.
        assert!(json["timeline"][0].get("rate_limit_per_second").is_none());
        let quiet = Controller::new(Concurrency::Adaptive, None).report();
        let json = serde_json::to_value(&quiet).unwrap_or_default();
        assert!(json.get("timeline").is_none(), "{json}");
    }

    #[test]
    fn an_event_of_an_interval_left_behind_lands_in_it() {
        let origin = Instant::now();
        let mut t = Timeline::default();
        t.record(at(origin, 2500), Event::Sent, 1, None);
        // (The origin is the first event's time.)
        t.record(at(origin, 4600), Event::Sent, 2, None);
        t.record(
            at(origin, 3100),
            Event::Answered { refused: false },
            1,
            None,
        );
        let s = t.samples();
        assert_eq!(
            s.iter().map(|x| (x.sent, x.answered)).collect::<Vec<_>>(),
            [(1, 1), (0, 0), (1, 0)]
        );
        // The carried value stays the latest interval's.
        assert_eq!(t.in_flight, 2);
        // Before the origin: the first interval.
        t.record(origin, Event::Retry, 1, None);
        assert_eq!(t.samples()[0].retries, 1);
    }
}
