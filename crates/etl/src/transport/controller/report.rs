//! The controller's figures: the report's `requests` section and the
//! progress line, with why the run is paced in words.

use super::rate::Bucket;
use super::requests::{ConcurrencyReport, RequestsReport};
use super::{Controller, lock, requests};
use tokio::time::Instant;

impl Controller {
    /// The report's `requests` section.
    pub fn report(&self) -> RequestsReport {
        let s = lock(&self.stats);
        let p = lock(&self.pause);
        let b = lock(&self.bucket);
        let (rate, sporadic) = (b.rate, b.sporadic);
        let paced = b.pacing.as_ref().map(|pacing| requests::Paced {
            after_ms: s.first.map_or(0, |first| {
                pacing.since.saturating_duration_since(first).as_millis() as u64
            }),
            why: why_paced(&b),
            first_per_second: (pacing.learned > 0.0)
                .then(|| (pacing.learned * 100.0).round() / 100.0),
        });
        drop(b);
        let span = match (s.first, s.last) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let total: u64 = s.at_limit.values().sum();
        let median = s
            .at_limit
            .iter()
            .scan(0, |acc, (l, ms)| {
                *acc += ms;
                Some((*l, *acc))
            })
            .find(|(_, acc)| *acc * 2 >= total)
            .map_or(self.limit(), |(l, _)| l);
        let spent = || {
            s.at_limit
                .iter()
                .filter(|(_, ms)| **ms > 0)
                .map(|(l, _)| *l)
        };
        RequestsReport {
            sent: s.sent,
            per_second: if span > 0.0 {
                (s.sent as f64 / span * 10.0).round() / 10.0
            } else {
                0.0
            },
            concurrency: ConcurrencyReport {
                mode: self.mode,
                min: spent().min().unwrap_or(self.limit()),
                median,
                max: spent().max().unwrap_or(self.limit()),
                last: self.limit(),
            },
            retries: s.retries.clone(),
            latency_ms: s.latencies.percentiles(),
            pauses: p.count,
            paused_ms: p.total.as_millis() as u64,
            rate_limit_per_second: rate.map(|r| (r * 100.0).round() / 100.0),
            paced,
            sporadic_429: sporadic,
            start: lock(&self.start).clone(),
            outages: self.outage.report(Instant::now(), s.first),
            timeline: lock(&self.timeline).samples(),
        }
    }

    /// For the progress line: the limit and requests per second so far.
    pub fn progress(&self) -> String {
        let s = lock(&self.stats);
        let rate = match s.first {
            Some(first) => s.sent as f64 / first.elapsed().as_secs_f64().max(0.001),
            None => 0.0,
        };
        drop(s);
        if let Some(down) = self.outage.down_for(Instant::now()) {
            return format!(
                "the target is down ({} s): every request waits, one probes it",
                down.as_secs()
            );
        }
        let line = format!("{} in flight max, {rate:.0} req/s", self.limit());
        let b = lock(&self.bucket);
        match (b.rate, &b.pacing) {
            (Some(r), Some(_)) => format!("{line}, paced at {r:.1} req/s: {}", why_paced(&b)),
            _ => line,
        }
    }
}
/// Why the run is paced, in words (the progress line, the summary, the report).
pub(super) fn why_paced(b: &Bucket) -> String {
    let Some(p) = &b.pacing else {
        return String::new();
    };
    match (p.configured, b.configured, &b.remembered) {
        (true, Some(c), _) => format!("max_requests_per_second = {c} in the pipeline file"),
        // No limit met in this run: the remembered rate still paces it.
        (false, _, Some(why)) if b.limiting == 0 => why.clone(),
        _ => format!(
            "the target answered 429 Too Many Requests to {:.0}% of recent requests",
            p.share * 100.0
        ),
    }
}
