//! The page's sections about a step's people (consent, addresses, tags,
//! orders) and the charts of its dates and numbers, drawn from the bounded
//! [`StepProfile`] and the step's report.

use super::charts::{Bar, bar, bar_chart, histogram};
use super::{StepExtra, esc};
use crate::pipeline::{Condition, ImportStep, ReceiverField, ValueFrom};
use crate::profile::people::{DOMAINS_SHOWN, TAGS_SHOWN};
use crate::profile::sketch::Reservoir;
use crate::profile::{ColumnProfile, StepProfile};
use crate::report::StepReport;
use std::fmt::Write as _;

/// Where each state field of an import step comes from, as the page says it:
/// (`activated`, ``column `optin` where `status` is one of yes, 1``).
pub fn consent_sources(step: &ImportStep) -> Vec<(String, String)> {
    step.fields
        .iter()
        .filter(|(f, _)| {
            matches!(
                f,
                ReceiverField::Registered | ReceiverField::Activated | ReceiverField::Deactivated
            )
        })
        .map(|(f, m)| {
            let mut from = match &m.from {
                ValueFrom::Column(c) => format!("column `{c}`"),
                ValueFrom::FirstOf(cs) => format!("the first of `{}`", cs.join("`, `")),
                ValueFrom::Constant(v) if v.is_empty() => "nothing (empty)".to_string(),
                ValueFrom::Constant(v) => format!("always `{v}`"),
            };
            if !m.map.is_empty() {
                let pairs: Vec<String> = m.map.iter().map(|(a, b)| format!("{a} → {b}")).collect();
                let _ = write!(from, ", mapped {}", pairs.join(", "));
            }
            if let Some(c) = &m.only_if {
                let _ = write!(from, ", only where {}", condition(c));
            }
            (f.as_str().to_string(), from)
        })
        .collect()
}

fn condition(c: &Condition) -> String {
    match c {
        Condition::Equals { column, values } => {
            format!("`{column}` is one of {}", values.join(", "))
        }
        Condition::NotEquals { column, values } => {
            format!("`{column}` is none of {}", values.join(", "))
        }
        Condition::InFile { column, present } => format!(
            "the file {} a column `{column}`",
            if *present { "has" } else { "lacks" }
        ),
        Condition::All(cs) => cs.iter().map(condition).collect::<Vec<_>>().join(" and "),
        Condition::Any(cs) => cs.iter().map(condition).collect::<Vec<_>>().join(" or "),
    }
}

/// Consent: how many rows the mapping makes active, registered,
/// deactivated, and from which columns and values.
pub(super) fn consent(out: &mut String, p: &StepProfile, extra: Option<&StepExtra>) {
    let c = &p.consent;
    if p.addresses.total == 0 {
        return;
    }
    out.push_str("<h3>consent</h3>");
    bar_chart(
        out,
        "the state the rows give their receivers",
        &[
            bar("active (activated)", c.active, "b-ok"),
            bar("registered", c.registered, "b-read"),
            bar("deactivated", c.deactivated, "b-warn"),
            bar("no state of their own", c.no_state, "b-muted"),
        ],
    );
    let sources = extra.map(|e| e.consent.as_slice()).unwrap_or_default();
    out.push_str("<ul>");
    if sources.is_empty() {
        out.push_str("<li>the step maps none of <code>registered</code>, <code>activated</code>, <code>deactivated</code></li>");
    }
    for (field, from) in sources {
        let _ = write!(
            out,
            "<li><code>{}</code> from {}</li>",
            esc(field),
            esc(from)
        );
    }
    if c.no_state > 0 {
        let _ = write!(
            out,
            "<li>{} rows with no state of their own: a new receiver is created registered \
             (awaiting activation, never active on a guess); an existing one keeps its state</li>",
            c.no_state
        );
    }
    out.push_str("</ul>");
}

/// Addresses: top domains, suspected typos with the suggested domain, role
/// addresses, non-ASCII and international domains, blacklist hits.
pub(super) fn addresses(out: &mut String, step: &StepReport, p: &StepProfile) {
    let a = &p.addresses;
    if a.total == 0 {
        return;
    }
    out.push_str("<h3>addresses</h3>");
    let domains: Vec<Bar> = a
        .domains
        .top(DOMAINS_SHOWN)
        .into_iter()
        .map(|(d, n, _)| bar(d, n, "b-read"))
        .collect();
    bar_chart(out, "the most frequent domains", &domains);
    out.push_str("<ul>");
    let _ = write!(out, "<li>{} addresses to send</li>", a.total);
    let roles: Vec<String> = a
        .roles
        .top(5)
        .into_iter()
        .map(|(r, n, _)| format!("{r}@ {n}"))
        .collect();
    let _ = write!(
        out,
        "<li>role addresses: {}{}</li>",
        a.role,
        if roles.is_empty() {
            String::new()
        } else {
            format!(" ({})", esc(&roles.join(", ")))
        }
    );
    let _ = write!(
        out,
        "<li>local part outside ASCII: {}; international domains: {}</li>",
        a.non_ascii, a.international
    );
    match &step.import {
        Some(i) => {
            let _ = write!(out, "<li>on the blacklist (not sent): {}</li>", i.blocked);
        }
        None => out.push_str(
            "<li class=\"muted\">blacklist hits: check does not read the target's blacklist; <code>run --dry-run</code> counts them</li>",
        ),
    }
    out.push_str("</ul>");
    let typos = &step.prepare.domain_typos;
    if !typos.is_empty() {
        out.push_str(
            "<div class=\"wrap\"><table><tr><th>domain</th><th>probably</th><th class=\"n\">addresses</th><th>first rows</th></tr>",
        );
        for t in typos {
            let rows: Vec<String> = t.rows.iter().map(u64::to_string).collect();
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&t.domain),
                esc(&t.suggestion),
                t.count,
                esc(&rows.join(", "))
            );
        }
        out.push_str("</table></div><p class=\"muted\">suspected typos are sent as written; correct them in the source</p>");
    }
}

/// Tags with their counts.
pub(super) fn tags(out: &mut String, p: &StepProfile) {
    let Some(t) = &p.tags else { return };
    out.push_str("<h3>tags</h3>");
    let _ = write!(
        out,
        "<p>{} rows with tags, {} tags in all, {} different{}</p>",
        t.rows,
        t.total,
        t.top.len(),
        if t.top.len() >= 64 { " or more" } else { "" }
    );
    let bars: Vec<Bar> = t
        .top
        .top(TAGS_SHOWN)
        .into_iter()
        .map(|(tag, n, _)| bar(tag, n, "b-read"))
        .collect();
    if !bars.is_empty() {
        bar_chart(out, "the most frequent tags", &bars);
    }
}

/// Orders: lines and totals per currency.
pub(super) fn orders(out: &mut String, p: &StepProfile) {
    let Some(o) = &p.orders else { return };
    out.push_str("<h3>orders</h3>");
    let _ = write!(
        out,
        "<p>{} order lines for {} receivers</p>",
        o.lines, o.receivers
    );
    out.push_str("<div class=\"wrap\"><table><tr><th>currency</th><th class=\"n\">lines</th><th class=\"n\">total (price × quantity)</th></tr>");
    for (currency, t) in &o.currencies {
        let name = if currency.is_empty() {
            "(none given)"
        } else {
            currency
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}</td></tr>",
            esc(name),
            t.lines,
            t.total
        );
    }
    out.push_str("</table></div>");
    if o.lines_left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"muted\">{} lines in further currencies not totalled</p>",
            o.lines_left_out
        );
    }
}

/// For each date column a histogram over time, for each number column its
/// distribution.
pub(super) fn column_charts(out: &mut String, p: &StepProfile) {
    for c in &p.columns {
        if c.temporal && !c.months.is_empty() {
            date_histogram(out, c);
        } else if let Some(n) = c.numbers() {
            number_histogram(out, c, n);
        }
    }
}

/// Months as (year, month).
fn month(key: &str) -> Option<(i32, u32)> {
    let (y, m) = key.split_once('-')?;
    Some((y.parse().ok()?, m.parse().ok()?))
}

/// By month when the dates span at most four years, else by year.
fn date_histogram(out: &mut String, c: &ColumnProfile) {
    let (Some(first), Some(last)) = (
        c.months.keys().next().and_then(|k| month(k)),
        c.months.keys().next_back().and_then(|k| month(k)),
    ) else {
        return;
    };
    let span = (last.0 - first.0) * 12 + last.1 as i32 - first.1 as i32 + 1;
    let bins: Vec<(String, u64)> = if span <= 48 {
        (0..span)
            .map(|i| {
                let (y, m) = (
                    first.0 + (first.1 as i32 - 1 + i) / 12,
                    (first.1 as i32 - 1 + i) % 12 + 1,
                );
                let key = format!("{y:04}-{m:02}");
                let n = c.months.get(&key).copied().unwrap_or(0);
                (key, n)
            })
            .collect()
    } else {
        (first.0..=last.0)
            .map(|y| {
                let prefix = format!("{y:04}-");
                let n = c
                    .months
                    .range(prefix.clone()..format!("{y:04}."))
                    .map(|(_, n)| n)
                    .sum();
                (format!("{y:04}"), n)
            })
            .collect()
    };
    let _ = write!(out, "<h4><code>{}</code> over time</h4>", esc(&c.name));
    histogram(
        out,
        &format!(
            "{} by {}",
            c.name,
            if span <= 48 { "month" } else { "year" }
        ),
        &bins,
    );
    if c.months_left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"muted\">{} dates in further months not drawn</p>",
            c.months_left_out
        );
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn number_histogram(out: &mut String, c: &ColumnProfile, n: &Reservoir) {
    const BINS: usize = 12;
    let counts = n.histogram(BINS);
    let width = (n.max - n.min) / BINS as f64;
    let bins: Vec<(String, u64)> = counts
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let from = n.min + width * i as f64;
            let label = if counts.len() == 1 {
                number(n.min)
            } else {
                format!("{} – {}", number(from), number(from + width))
            };
            (label, *k)
        })
        .collect();
    let _ = write!(
        out,
        "<h4><code>{}</code>: min {}, median {}, max {}</h4>",
        esc(&c.name),
        number(n.min),
        n.quantile(0.5).map(number).unwrap_or_default(),
        number(n.max)
    );
    histogram(out, &format!("the distribution of {}", c.name), &bins);
    if !n.exact() {
        let _ = write!(
            out,
            "<p class=\"muted\">the distribution and median from a sample of {} of {} values; min and max exact</p>",
            Reservoir::SIZE,
            n.seen
        );
    }
}

pub(super) fn profile_table(out: &mut String, p: &StepProfile) {
    if p.columns.is_empty() {
        return;
    }
    out.push_str(
        "<h3>columns as sent</h3><div class=\"wrap\"><table><tr><th>column</th><th class=\"n\">filled</th>\
         <th class=\"n\">distinct</th><th>most frequent</th><th>range</th></tr>",
    );
    for c in &p.columns {
        let fill = if c.rows == 0 {
            0.0
        } else {
            c.filled as f64 * 100.0 / c.rows as f64
        };
        let top: Vec<String> = c
            .top()
            .iter()
            .map(|(v, n, exact)| {
                format!(
                    "<code>{}</code> {}{n}",
                    // A row's tags are joined by a control character.
                    esc(&v.replace(crate::prepare::tags::JOIN, " | ")),
                    if *exact { "" } else { "≤" }
                )
            })
            .collect();
        let range = match (&c.min, &c.max, c.numbers()) {
            (Some(a), Some(b), _) if c.temporal => format!("{} – {}", esc(a), esc(b)),
            (_, _, Some(n)) => format!("{} – {}", n.min, n.max),
            _ => String::new(),
        };
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{fill:.1}% <span class=\"muted\">({} of {})</span></td>\
             <td class=\"n\">{}</td><td>{}</td><td>{range}</td></tr>",
            esc(&c.name),
            c.filled,
            c.rows,
            c.distinct(),
            top.join(", ")
        );
    }
    out.push_str(
        "</table></div><p class=\"muted\">distinct values are estimated (within a few percent); \
         a count marked ≤ is an upper bound</p>",
    );
    if p.columns_left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"muted\">{} more columns not profiled</p>",
            p.columns_left_out
        );
    }
}
