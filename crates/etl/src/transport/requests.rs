//! What the run's requests did, for the report: the concurrency limit over
//! time, retries by cause, answer latency percentiles, pauses and the rate
//! limit in force. Filled by [`super::controller`]; read once at the end.

use listpipe_client::ClientError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The `requests` section of the run report.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct RequestsReport {
    /// Requests sent, retries included.
    pub sent: u64,
    /// Requests per second over the run (from the first request to the last answer).
    pub per_second: f64,
    pub concurrency: ConcurrencyReport,
    /// Retries by cause: `rate_limited` (429), `unavailable` (503),
    /// `server_error` (500, 502, 504), `timeout` (408, no answer in time),
    /// `connection` (refused, reset), `unauthorized` (401, after a refresh).
    pub retries: BTreeMap<&'static str, u64>,
    /// Round-trip time of answered requests, milliseconds.
    pub latency_ms: Percentiles,
    /// Times every request was held back by a `Retry-After` or an
    /// exhausted `X-RateLimit-Remaining`, and for how long in all.
    pub pauses: u64,
    pub paused_ms: u64,
    /// The client-side limit at the end (`max_requests_per_second`, or
    /// learned from 429s); absent when none was needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_second: Option<f64>,
    /// When and why the run was paced (a learned or configured rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paced: Option<Paced>,
    /// 429s too few among the answers to lower the rate: their requests
    /// waited their `Retry-After` alone and went again.
    pub sporadic_429: u64,
    /// The rate this run started at, when earlier runs remembered one
    /// ([`super::remembered`]); absent when it started from nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<super::remembered::StartRate>,
    /// Each time the target was down as a whole (502, 503, 504 across
    /// requests) and the run waited ([`super::controller::outage`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<super::controller::outage::OutageReport>,
    /// The run's pace over time: what its requests did in each interval
    /// of a second or more, at most [`super::controller::timeline::MAX_SAMPLES`]
    /// of them whatever the run's length (the intervals double as it goes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<PaceSample>,
}

/// What the run's requests did in one interval of the [timeline](RequestsReport::timeline).
/// (The rows written in it are not here: the controller sees requests, not
/// the rows they carry.)
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct PaceSample {
    /// The interval's start, milliseconds from the run's first request.
    pub at_ms: u64,
    /// Its length, milliseconds (the same for every sample of a timeline:
    /// a second, doubled each time the timeline was full).
    pub ms: u64,
    /// Requests sent in it, retries included.
    pub sent: u64,
    /// Requests answered in it (by the target, whatever the status).
    pub answered: u64,
    /// Answers that were 429 Too Many Requests.
    pub refused_429: u64,
    /// Retries decided in it (a request about to wait and go again).
    pub retries: u64,
    /// The most requests in flight at once in it.
    pub in_flight: usize,
    /// The client-side limit at its end, requests per second; absent when
    /// the run was not paced then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_second: Option<f64>,
}

impl PaceSample {
    /// Requests sent a second in this interval.
    pub fn sent_per_second(&self) -> f64 {
        self.sent as f64 * 1000.0 / self.ms.max(1) as f64
    }
}

/// When and why the run was paced.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Paced {
    /// Milliseconds from the run's first request.
    pub after_ms: u64,
    /// `the target answered 429 Too Many Requests to 14% of recent
    /// requests`, or `max_requests_per_second = 5 in the pipeline file`.
    pub why: String,
    /// The rate first learned from the target's 429s (the report's
    /// `rate_limit_per_second` is the one at the end, raised and lowered
    /// since by the answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_per_second: Option<f64>,
}

impl RequestsReport {
    /// The summary's line about the target's rate limit, when it had one.
    pub fn rate_summary(&self) -> Option<String> {
        let sporadic = match self.sporadic_429 {
            0 => String::new(),
            1 => "; 1 sporadic 429 retried without slowing the run".to_string(),
            n => format!("; {n} sporadic 429s retried without slowing the run"),
        };
        // Where the start came from, unless the reason says it already.
        let start = match &self.start {
            Some(s)
                if !self
                    .paced
                    .as_ref()
                    .is_some_and(|p| p.why.starts_with("started at")) =>
            {
                format!("; {}", s.describe())
            }
            _ => String::new(),
        };
        match (&self.paced, self.rate_limit_per_second) {
            (Some(p), Some(rate)) => Some(format!(
                "requests: paced at {rate} req/s from {:.1} s in: {}{start}{sporadic}",
                p.after_ms as f64 / 1000.0,
                p.why
            )),
            _ if self.sporadic_429 > 0 => Some(format!("requests: not paced{sporadic}")),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct ConcurrencyReport {
    /// `adaptive`, or `fixed` (pinned by the file or `--concurrency`).
    pub mode: &'static str,
    /// The limit sampled once per observation interval.
    pub min: usize,
    pub median: usize,
    pub max: usize,
    #[serde(rename = "final")]
    pub last: usize,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// The name a retry's cause is counted under.
pub fn cause(e: &ClientError) -> &'static str {
    match (e.status(), e) {
        (Some(429), _) => "rate_limited",
        (Some(503), _) => "unavailable",
        (Some(401), _) => "unauthorized",
        (Some(408), _) => "timeout",
        (Some(_), _) => "server_error",
        (None, ClientError::Transport { source, .. }) if source.is_timeout() => "timeout",
        (None, _) => "connection",
    }
}

/// Latencies in a log-linear histogram: 16 buckets per power of two of
/// microseconds, so a percentile is within 1/16 of the true value, in a
/// few kilobytes whatever the number of requests.
#[derive(Debug, Clone)]
pub struct Latencies {
    counts: Vec<u64>,
    total: u64,
}

const SUB: u32 = 16;

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            counts: vec![0; (64 * SUB) as usize],
            total: 0,
        }
    }
}

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        let i = bucket(us);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
            self.total += 1;
        }
    }

    /// The value below which `q` (0 to 1) of the samples lie, milliseconds
    /// (the bucket's upper edge).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(i) as f64 / 1000.0;
            }
        }
        0.0
    }

    pub fn percentiles(&self) -> Percentiles {
        let round = |v: f64| (v * 100.0).round() / 100.0;
        Percentiles {
            p50: round(self.quantile_ms(0.5)),
            p90: round(self.quantile_ms(0.9)),
            p99: round(self.quantile_ms(0.99)),
        }
    }
}

/// Values below 16 µs have a bucket each; above, 16 per power of two.
fn bucket(us: u64) -> usize {
    if us < u64::from(SUB) {
        return us as usize;
    }
    let power = 63 - us.leading_zeros(); // >= 4
    let shift = power - 4;
    let sub = (us >> shift) - u64::from(SUB); // 0..16
    ((power - 3) * SUB) as usize + sub as usize
}

/// The largest value of bucket `i`.
fn upper(i: usize) -> u64 {
    let i = i as u64;
    let sub = u64::from(SUB);
    if i < sub {
        return i;
    }
    let power = i / sub + 3;
    let offset = i % sub;
    ((sub + offset + 1) << (power - 4)) - 1
}

/// The median of samples (the limit over time).
pub fn median(samples: &[usize]) -> usize {
    let mut s = samples.to_vec();
    s.sort_unstable();
    s.get(s.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_whose_upper_edge_is_within_a_sixteenth() {
        for us in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            1000,
            50_000,
            1_234_567,
            10u64.pow(12),
        ] {
            let up = upper(bucket(us));
            assert!(up >= us, "{us} -> {up}");
            assert!(up - us <= us / 16 + 1, "{us} -> {up}");
        }
    }

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut l = Latencies::default();
        for ms in 1..=100u64 {
            l.record(Duration::from_millis(ms));
        }
        let p = l.percentiles();
        assert!((50.0..=53.5).contains(&p.p50), "{p:?}");
        assert!((90.0..=96.0).contains(&p.p90), "{p:?}");
        assert!((99.0..=106.0).contains(&p.p99), "{p:?}");
        assert_eq!(Latencies::default().percentiles(), Percentiles::default());
    }

    #[test]
    fn the_median_of_the_limit_over_time() {
        assert_eq!(median(&[4, 16, 5, 9, 12]), 9);
        assert_eq!(median(&[]), 0);
    }
}
