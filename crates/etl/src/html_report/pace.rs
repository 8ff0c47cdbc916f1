//! The run's pace over time (issue 60): the report's `requests.timeline`
//! as an inline SVG chart, with what the learned rate was and why.
//!
//! Decisions:
//! - One chart, two scales: bars of requests sent a second (the 429s a
//!   second in red over them, a dot where retries were decided) and the
//!   client-side rate as a dashed step line, on the left scale; the most
//!   requests in flight as a step line on the right scale. Each bar's
//!   `<title>` has the interval's figures, for a hover or a screen reader.
//! - Text stays readable on a phone: a narrow `viewBox`, `width:100%`,
//!   few labels (about five times, three values a scale); the legend and
//!   the caption are HTML below it.
//! - The timeline is bounded ([`crate::transport::controller::timeline`]), so
//!   the chart is too: at most 120 bars. Nothing without a timeline.
//! - Only numbers come from the timeline; the reasons (`paced.why`, where
//!   the start came from) go through [`esc`].

use super::esc;
use crate::transport::requests::{PaceSample, RequestsReport};
use std::fmt::Write as _;

const W: f64 = 480.0;
const H: f64 = 220.0;
/// The plot inside the labels: left (the req/s scale), right (in flight),
/// top, bottom (the times).
const LEFT: f64 = 44.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;

const SENT: &str = "fill:var(--info)";
const REFUSED: &str = "fill:var(--bad)";
const RETRY: &str = "fill:var(--warn)";
const IN_FLIGHT: &str = "var(--dup)";
const RATE: &str = "var(--fg)";

/// The pace chart of `r`, with its legend and caption; nothing when the
/// run recorded no timeline.
pub fn pace_chart(out: &mut String, r: &RequestsReport) {
    let samples = &r.timeline;
    if samples.is_empty() {
        return;
    }
    let n = samples.len() as f64;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let bar_w = plot_w / n;
    let top_rate = samples
        .iter()
        .map(|s| finite(s.sent_per_second()).max(finite(s.rate_limit_per_second.unwrap_or(0.0))))
        .fold(0.0, f64::max);
    let y_max = nice_ceiling(top_rate);
    let flight_max = nice_even(samples.iter().map(|s| s.in_flight).max().unwrap_or(0) as f64);
    let y = |v: f64| TOP + plot_h - (finite(v) / y_max).clamp(0.0, 1.0) * plot_h;
    let y_flight = |v: f64| TOP + plot_h - (finite(v) / flight_max).clamp(0.0, 1.0) * plot_h;
    let x = |i: usize| LEFT + i as f64 * bar_w;
    let interval = samples.first().map_or(1000, |s| s.ms.max(1));
    let span_ms = samples.last().map_or(0, |s| s.at_ms + s.ms.max(1));

    out.push_str("<section class=\"pace\"><h2>pace over time</h2>");
    let _ = write!(
        out,
        "<svg class=\"pace\" viewBox=\"0 0 {W} {H}\" style=\"width:100%;height:auto\" role=\"img\" \
         aria-label=\"requests per second over time, with 429s, retries and requests in flight\">"
    );
    // The scales: three values each, with their grid lines.
    for k in 0..=2 {
        let f = f64::from(k) / 2.0;
        let gy = TOP + plot_h - f * plot_h;
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{gy:.1}\" y2=\"{gy:.1}\" style=\"stroke:var(--line)\"/>\
             <text x=\"{lx}\" y=\"{ty:.1}\" text-anchor=\"end\">{v}/s</text>\
             <text x=\"{rx}\" y=\"{ty:.1}\" style=\"fill:{IN_FLIGHT}\">{fv}</text>",
            x2 = W - RIGHT,
            lx = LEFT - 4.0,
            rx = W - RIGHT + 4.0,
            ty = gy + 4.0,
            v = num(y_max * f),
            fv = num(flight_max * f),
        );
    }
    // The times, about five of them.
    let step = time_step(span_ms);
    let mut t = 0;
    while t <= span_ms {
        let tx = LEFT + t as f64 / span_ms.max(1) as f64 * plot_w;
        let anchor = if t == 0 { "start" } else { "middle" };
        let _ = write!(
            out,
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{y1}\" y2=\"{y2}\" style=\"stroke:var(--muted)\"/>\
             <text x=\"{tx:.1}\" y=\"{ty}\" text-anchor=\"{anchor}\">{label}</text>",
            y1 = TOP + plot_h,
            y2 = TOP + plot_h + 4.0,
            ty = H - 8.0,
            label = clock(t),
        );
        t += step;
    }
    // The bars: sent, the 429s over them, a dot for retries.
    for (i, s) in samples.iter().enumerate() {
        let bx = x(i) + bar_w * 0.1;
        let w = (bar_w * 0.8).max(0.5);
        let per_s = |v: u64| v as f64 * 1000.0 / s.ms.max(1) as f64;
        let _ = write!(out, "<g><title>{}</title>", esc(&describe(s)));
        bar(out, bx, w, y(per_s(s.sent)), TOP + plot_h, s.sent, SENT);
        bar(
            out,
            bx,
            w,
            y(per_s(s.refused_429)),
            TOP + plot_h,
            s.refused_429,
            REFUSED,
        );
        if s.retries > 0 {
            let cy = (y(per_s(s.sent)) - 4.0).max(TOP + 2.0);
            let _ = write!(
                out,
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r:.1}\" style=\"{RETRY}\"/>",
                cx = bx + w / 2.0,
                r = (bar_w * 0.4).clamp(1.5, 3.0),
            );
        }
        out.push_str("</g>");
    }
    // The client-side rate: a dashed step line where there was one.
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        match s.rate_limit_per_second {
            Some(rate) => {
                let ry = y(rate);
                run.push((x(i), ry));
                run.push((x(i + 1), ry));
            }
            None => step_line(out, &mut run, RATE, true, "the client-side rate, req/s"),
        }
    }
    step_line(out, &mut run, RATE, true, "the client-side rate, req/s");
    // The most in flight, on the right scale.
    let mut flight: Vec<(f64, f64)> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let fy = y_flight(s.in_flight as f64);
        flight.push((x(i), fy));
        flight.push((x(i + 1), fy));
    }
    step_line(
        out,
        &mut flight,
        IN_FLIGHT,
        false,
        "requests in flight, the most in each interval",
    );
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{by}\" y2=\"{by}\" style=\"stroke:var(--muted)\"/></svg>",
        x2 = W - RIGHT,
        by = TOP + plot_h,
    );
    let _ = write!(
        out,
        "<p class=\"muted\"><span style=\"color:var(--info)\">■</span> requests sent a second \
         (retries included), <span style=\"color:var(--bad)\">■</span> 429s a second, \
         <span style=\"color:var(--warn)\">●</span> retries, \
         <span style=\"color:var(--fg)\">╌</span> the client-side rate (left scale), \
         <span style=\"color:var(--dup)\">━</span> requests in flight (right scale); \
         {} of {}.</p>",
        match samples.len() {
            1 => "1 interval".to_string(),
            n => format!("{n} intervals"),
        },
        clock(interval)
    );
    let _ = write!(out, "<p>{}</p></section>", caption(r));
}

/// A bar from `top` down to `base`, when `value` is more than none.
fn bar(out: &mut String, bx: f64, w: f64, top: f64, base: f64, value: u64, style: &str) {
    if value == 0 {
        return;
    }
    let h = (base - top).max(1.0);
    let _ = write!(
        out,
        "<rect x=\"{bx:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" style=\"{style}\"/>",
        y = base - h
    );
}

/// The points of `points` as one polyline (then cleared), if any.
fn step_line(
    out: &mut String,
    points: &mut Vec<(f64, f64)>,
    colour: &str,
    dashed: bool,
    what: &str,
) {
    if points.is_empty() {
        return;
    }
    let dash = if dashed { ";stroke-dasharray:4 3" } else { "" };
    out.push_str("<polyline points=\"");
    for (i, (px, py)) in points.iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        let _ = write!(out, "{sep}{px:.1},{py:.1}");
    }
    let _ = write!(
        out,
        "\" style=\"fill:none;stroke:{colour};stroke-width:2{dash}\"><title>{}</title></polyline>",
        esc(what)
    );
    points.clear();
}

/// An interval's figures, for its `<title>`.
fn describe(s: &PaceSample) -> String {
    let mut t = format!(
        "{} – {}: {} sent ({}/s), {} answered, {} × 429, {} retries, {} in flight at most",
        clock(s.at_ms),
        clock(s.at_ms + s.ms),
        s.sent,
        num(s.sent_per_second()),
        s.answered,
        s.refused_429,
        s.retries,
        s.in_flight
    );
    if let Some(rate) = s.rate_limit_per_second {
        let _ = write!(t, ", paced at {} req/s", num(rate));
    }
    t
}

/// What the learned rate was and why, escaped.
fn caption(r: &RequestsReport) -> String {
    let mut c = match (&r.paced, r.rate_limit_per_second) {
        (Some(p), rate) => {
            let mut c = match rate {
                Some(rate) => format!("The run was paced at {} req/s at its end", num(rate)),
                None => "The run was paced".to_string(),
            };
            let _ = write!(c, ", from {} in: {}", clock(p.after_ms), esc(&p.why));
            if let Some(first) = p.first_per_second {
                let _ = write!(c, " (first learned: {} req/s)", num(first));
            }
            c
        }
        (None, Some(rate)) => format!("The run was limited to {} req/s", num(rate)),
        (None, None) => {
            "The run was not paced: no 429 showed a limit, the requests in flight set its pace"
                .to_string()
        }
    };
    if let Some(start) = &r.start {
        let said = r
            .paced
            .as_ref()
            .is_some_and(|p| p.why.starts_with("started at"));
        if !said {
            let _ = write!(c, "; {}", esc(&start.describe()));
        }
    }
    match r.sporadic_429 {
        0 => {}
        1 => c.push_str("; 1 sporadic 429 retried without slowing the run"),
        n => {
            let _ = write!(c, "; {n} sporadic 429s retried without slowing the run");
        }
    }
    c.push('.');
    c
}

/// `v`, or 0 when it is not a number.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v.max(0.0) } else { 0.0 }
}

/// The smallest of 1, 2, 5 times a power of ten at least `v` (1 at least).
fn nice_ceiling(v: f64) -> f64 {
    let v = finite(v);
    if v <= 1.0 {
        return 1.0;
    }
    let mut p = 10f64.powf(v.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * p >= v {
                return m * p;
            }
        }
        p *= 10.0;
    }
}

/// The smallest of 2, 4, 10 times a power of ten at least `v` (2 at
/// least): its half is a whole number too (requests in flight).
fn nice_even(v: f64) -> f64 {
    let v = finite(v);
    if v <= 2.0 {
        return 2.0;
    }
    let mut p = 10f64.powf(v.log10().floor());
    loop {
        for m in [2.0, 4.0, 10.0] {
            if m * p >= v {
                return m * p;
            }
        }
        p *= 10.0;
    }
}

/// A number as a label: whole, or with one decimal.
fn num(v: f64) -> String {
    let v = finite(v);
    if (v - v.round()).abs() < 0.05 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A time from the run's first request: `45 s`, `2 min 30 s`, `1 h 5 min`.
fn clock(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => match s % 60 {
            0 => format!("{} min", s / 60),
            r => format!("{} min {r} s", s / 60),
        },
        s => match (s % 3600) / 60 {
            0 => format!("{} h", s / 3600),
            m => format!("{} h {m} min", s / 3600),
        },
    }
}

/// The step between time labels: a round one giving at most five.
fn time_step(span_ms: u64) -> u64 {
    const STEPS_S: [u64; 16] = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
    ];
    STEPS_S
        .iter()
        .map(|s| s * 1000)
        .find(|step| span_ms / step <= 5)
        .unwrap_or_else(|| span_ms.div_ceil(5).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::requests::Paced;

    fn sample(at_s: u64, sent: u64, refused: u64, retries: u64, in_flight: usize) -> PaceSample {
        PaceSample {
            at_ms: at_s * 1000,
            ms: 1000,
            sent,
            answered: sent,
            refused_429: refused,
            retries,
            in_flight,
            rate_limit_per_second: (at_s >= 3).then_some(12.5),
        }
    }

    fn report() -> RequestsReport {
        RequestsReport {
            sent: 100,
            timeline: vec![
                sample(0, 8, 0, 0, 4),
                sample(1, 30, 6, 6, 16),
                sample(2, 25, 3, 3, 8),
                sample(3, 13, 0, 0, 6),
                sample(4, 12, 0, 0, 6),
                sample(5, 12, 1, 1, 5),
            ],
            rate_limit_per_second: Some(12.5),
            paced: Some(Paced {
                after_ms: 2100,
                why: "the target said <script>alert(1)</script> & \"more\"".to_string(),
                first_per_second: Some(10.0),
            }),
            sporadic_429: 2,
            ..Default::default()
        }
    }

    #[test]
    fn a_timeline_is_drawn_with_its_marks_and_its_reasons_escaped() {
        let mut out = String::new();
        pace_chart(&mut out, &report());
        assert!(out.starts_with("<section class=\"pace\">"), "{out}");
        assert!(out.ends_with("</section>"), "{out}");
        assert!(
            out.contains("<svg class=\"pace\" viewBox=\"0 0 480 220\""),
            "{out}"
        );
        assert!(out.contains("width:100%"));
        assert_eq!(out.matches("<svg").count(), 1);
        assert_eq!(out.matches("</svg>").count(), 1);
        // A group with its title a sample; the sent bars, the 429s over
        // three of them, a dot where retries were.
        assert_eq!(out.matches("<g><title>").count(), 6, "{out}");
        assert_eq!(out.matches(SENT).count(), 6);
        assert_eq!(out.matches(REFUSED).count(), 3);
        assert_eq!(out.matches("<circle").count(), 3);
        assert!(
            out.contains("1 s – 2 s: 30 sent (30/s), 30 answered, 6 × 429, 6 retries, 16 in flight at most</title>"),
            "{out}"
        );
        assert!(out.contains("paced at 12.5 req/s</title>"));
        // The rate's line (from the fourth second), the in-flight one.
        assert_eq!(out.matches("<polyline").count(), 2);
        assert!(out.contains("stroke-dasharray"));
        // The scales: 30/s rounds up to 50/s, 16 in flight to 20.
        assert!(out.contains(">50/s</text>"), "{out}");
        assert!(out.contains(">25/s</text>"));
        assert!(out.contains(">20</text>"));
        assert!(out.contains(">0 s</text>") && out.contains(">6 s</text>"));
        // The caption: the learned rate and why, escaped.
        assert!(!out.contains("<script"), "{out}");
        assert!(
            out.contains("paced at 12.5 req/s at its end, from 2 s in: the target said &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;more&quot; (first learned: 10 req/s); 2 sporadic 429s"),
            "{out}"
        );
        // Every coordinate a number inside the view.
        no_number_from_nothing(&out);
    }

    /// No `NaN`, no infinity, no negative coordinate.
    fn no_number_from_nothing(out: &str) {
        for bad in [
            "NaN", "\"inf", ",inf", "inf\"", "inf,", ">inf", "=\"-", ",-", " -",
        ] {
            assert!(!out.contains(bad), "{bad} in {out}");
        }
    }

    #[test]
    fn nothing_without_a_timeline_and_no_number_from_nothing() {
        let mut out = String::new();
        pace_chart(&mut out, &RequestsReport::default());
        assert_eq!(out, "");
        // One empty interval, not paced: still a sane chart.
        let r = RequestsReport {
            timeline: vec![PaceSample {
                ms: 0,
                ..Default::default()
            }],
            ..Default::default()
        };
        pace_chart(&mut out, &r);
        assert!(out.contains("<svg class=\"pace\""));
        no_number_from_nothing(&out);
        assert!(out.contains("The run was not paced"), "{out}");
    }

    #[test]
    fn labels_of_times_and_values() {
        assert_eq!(clock(0), "0 s");
        assert_eq!(clock(59_999), "59 s");
        assert_eq!(clock(150_000), "2 min 30 s");
        assert_eq!(clock(3_600_000), "1 h");
        assert_eq!(clock(36_300_000), "10 h 5 min");
        assert_eq!(time_step(6_000), 2000);
        assert_eq!(time_step(120_000), 30_000);
        assert_eq!(time_step(36_000_000), 7_200_000);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(30.0), 50.0);
        assert_eq!(nice_ceiling(100.0), 100.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(nice_even(0.0), 2.0);
        assert_eq!(nice_even(3.0), 4.0);
        assert_eq!(nice_even(5.0), 10.0);
        assert_eq!(nice_even(16.0), 20.0);
        assert_eq!(nice_even(256.0), 400.0);
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(f64::INFINITY), "0");
    }
}
