//! The page's charts, as inline SVG: horizontal bars (counts by label) and
//! a histogram (counts by bin, left to right). Readable without colour and
//! in print: every bar's number is text beside it, its `<title>` says all.

use super::esc;
use std::fmt::Write as _;

/// One bar of a chart: its label, value and colour class (`b-…` of [`STYLE`]).
pub(super) struct Bar {
    label: String,
    value: u64,
    class: &'static str,
}

pub(super) fn bar(label: impl Into<String>, value: u64, class: &'static str) -> Bar {
    Bar {
        label: label.into(),
        value,
        class,
    }
}

/// A horizontal bar chart: the label left, the bar scaled to the largest
/// value, the number as text after it (readable without colour and in print).
/// A label too long for its column is cut; the whole is its `<title>`.
pub(super) fn bar_chart(out: &mut String, caption: &str, bars: &[Bar]) {
    const ROW: u32 = 26;
    // Narrow on purpose: on a phone the chart scales down less, its text stays readable.
    const LABEL_W: u32 = 170;
    const BAR_W: f64 = 250.0;
    let height = ROW * bars.len() as u32 + 4;
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0).max(1) as f64;
    let _ = write!(
        out,
        "<svg viewBox=\"0 0 480 {height}\" role=\"img\" aria-label=\"{}\">",
        esc(caption)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = i as u32 * ROW + 2;
        let w = if b.value == 0 {
            0.0
        } else {
            (b.value as f64 / max * BAR_W).max(2.0)
        };
        let shown: String = if b.label.chars().count() > 25 {
            format!("{}…", b.label.chars().take(24).collect::<String>())
        } else {
            b.label.clone()
        };
        let _ = write!(
            out,
            "<g><title>{label}: {v}</title><text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{shown}</text>\
             <rect class=\"{class}\" x=\"{bx}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\" rx=\"2\"/>\
             <text x=\"{nx:.1}\" y=\"{ty}\">{v}</text></g>",
            label = esc(&b.label),
            v = b.value,
            lx = LABEL_W - 6,
            ty = y + 16,
            shown = esc(&shown),
            class = b.class,
            bx = LABEL_W,
            h = ROW - 6,
            nx = f64::from(LABEL_W) + w + 6.0,
        );
    }
    out.push_str("</svg>");
}

/// A vertical bar chart: the bins left to right, the first and last label
/// under the axis, the largest count above it; each bar's `<title>` says
/// its label and count.
pub(super) fn histogram(out: &mut String, caption: &str, bins: &[(String, u64)]) {
    const W: f64 = 480.0;
    const H: f64 = 120.0;
    const TOP: f64 = 18.0;
    if bins.is_empty() {
        return;
    }
    let max = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1) as f64;
    // A few bins stay bars, not a wall.
    let step = (W / bins.len() as f64).min(48.0);
    let _ = write!(
        out,
        "<svg class=\"histogram\" viewBox=\"0 0 {W} {}\" role=\"img\" aria-label=\"{}\">",
        H + TOP + 20.0,
        esc(caption)
    );
    let _ = write!(out, "<text x=\"0\" y=\"12\">{}</text>", max as u64);
    for (i, (label, n)) in bins.iter().enumerate() {
        let h = *n as f64 / max * H;
        let _ = write!(
            out,
            "<g><title>{}: {n}</title><rect class=\"b-read\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/></g>",
            esc(label),
            i as f64 * step + 0.5,
            TOP + H - h,
            (step - 1.0).max(0.5),
            h
        );
    }
    let (first, last) = (&bins[0].0, &bins[bins.len() - 1].0);
    let y = TOP + H;
    let ty = y + 16.0;
    let _ = write!(
        out,
        "<line x1=\"0\" y1=\"{y}\" x2=\"{W}\" y2=\"{y}\" stroke=\"currentColor\" stroke-width=\"0.5\"/>\
         <text x=\"0\" y=\"{ty}\">{}</text>",
        esc(first)
    );
    if bins.len() > 1 {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{ty}\" text-anchor=\"end\">{}</text>",
            (step * bins.len() as f64).max(120.0),
            esc(last)
        );
    }
    out.push_str("</svg>");
}
