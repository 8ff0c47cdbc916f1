//! The page's requests section after `run`: the pace over time
//! ([`super::pace`]), what was sent, the concurrency, latencies, pauses,
//! the rate learned and why, retries by cause and outages.

use super::charts::{Bar, bar, bar_chart};
use super::{esc, pace};
use crate::transport::requests::RequestsReport;
use std::fmt::Write as _;

pub(super) fn section(out: &mut String, r: &RequestsReport) {
    pace::pace_chart(out, r);
    out.push_str("<section><h2>requests</h2><dl>");
    let _ = write!(
        out,
        "<dt>sent</dt><dd>{} ({:.1} per second)</dd>\
         <dt>concurrency</dt><dd>{}: min {}, median {}, max {}, final {}</dd>\
         <dt>latency</dt><dd>p50 {} ms, p90 {} ms, p99 {} ms</dd>\
         <dt>pauses</dt><dd>{} ({} ms in all)</dd>",
        r.sent,
        r.per_second,
        esc(r.concurrency.mode),
        r.concurrency.min,
        r.concurrency.median,
        r.concurrency.max,
        r.concurrency.last,
        r.latency_ms.p50,
        r.latency_ms.p90,
        r.latency_ms.p99,
        r.pauses,
        r.paused_ms
    );
    match (&r.paced, r.rate_limit_per_second) {
        (Some(p), rate) => {
            let _ = write!(
                out,
                "<dt>rate</dt><dd>{}paced from {:.1} s in: {}{}</dd>",
                rate.map(|r| format!("{r} req/s, ")).unwrap_or_default(),
                p.after_ms as f64 / 1000.0,
                esc(&p.why),
                p.first_per_second
                    .map(|f| format!(" (first learned: {f} req/s)"))
                    .unwrap_or_default()
            );
        }
        (None, Some(rate)) => {
            let _ = write!(out, "<dt>rate</dt><dd>{rate} req/s</dd>");
        }
        (None, None) => out.push_str("<dt>rate</dt><dd>not paced</dd>"),
    }
    if let Some(s) = &r.start {
        let _ = write!(out, "<dt>start</dt><dd>{}</dd>", esc(&s.describe()));
    }
    if r.sporadic_429 > 0 {
        let _ = write!(
            out,
            "<dt>sporadic 429s</dt><dd>{} (retried without slowing the run)</dd>",
            r.sporadic_429
        );
    }
    out.push_str("</dl>");
    let retries: Vec<Bar> = r
        .retries
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(cause, n)| bar(*cause, *n, "b-warn"))
        .collect();
    if !retries.is_empty() {
        out.push_str("<h3>retries by cause</h3>");
        bar_chart(out, "retries by cause", &retries);
    }
    if !r.outages.is_empty() {
        out.push_str("<h3>outages</h3><div class=\"wrap\"><table><tr><th class=\"n\">after</th><th class=\"n\">lasted</th><th>cause</th><th>gave up</th></tr>");
        for o in &r.outages {
            let _ = write!(
                out,
                "<tr><td class=\"n\">{:.1} s</td><td class=\"n\">{:.1} s</td><td>{}</td><td>{}</td></tr>",
                o.after_ms as f64 / 1000.0,
                o.lasted_ms as f64 / 1000.0,
                esc(&o.cause),
                if o.gave_up { "yes" } else { "no" }
            );
        }
        out.push_str("</table></div>");
    }
    out.push_str("</section>");
}
