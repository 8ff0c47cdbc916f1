//! What the consent states make of the rows read: which rows a test holds on, and the
//! summary lines `init` prints per column and for the whole.

use super::super::sample::{self, Sample};
use super::Test;

/// Whether a test holds on row `r` of the sample (an empty or placeholder cell is `""`).
pub(super) fn holds(sample: &Sample, t: &Test, r: usize) -> bool {
    let Some(i) = sample.columns.iter().position(|c| *c == t.column) else {
        return false;
    };
    let cell = sample.cells[i]
        .get(r)
        .and_then(|c| c.as_deref())
        .map(str::trim)
        .filter(|v| !sample::is_placeholder(v))
        .unwrap_or("");
    t.values.iter().any(|v| v == cell) == t.equals
}

/// The rows of the sample on which some test holds.
pub(super) fn rows_where(sample: &Sample, tests: &[Test]) -> Vec<bool> {
    (0..sample.rows)
        .map(|r| tests.iter().any(|t| holds(sample, t, r)))
        .collect()
}

/// Per column used, what it was read as and what it makes of the rows read, and the
/// whole: `consent: "status" read as a subscription status: marks 5 row(s) subscribed and 3
/// opted out`.
pub(super) fn summary(
    sample: &Sample,
    reads: &[(String, String)],
    (yes, withdrawn): (&[Test], &[Test]),
    granted: &[bool],
    opted_out: &[bool],
) -> Vec<String> {
    let mut out = Vec::new();
    let marked = |tests: &[Test], column: &str| {
        let own: Vec<Test> = tests
            .iter()
            .filter(|t| t.column == column)
            .cloned()
            .collect();
        rows_where(sample, &own).iter().filter(|b| **b).count()
    };
    for (column, how) in reads {
        let (g, o) = (marked(yes, column), marked(withdrawn, column));
        let grants = yes.iter().any(|t| t.column == *column);
        let outs = withdrawn.iter().any(|t| t.column == *column);
        let marks = match (grants, outs) {
            (true, true) => format!("{g} row(s) subscribed and {o} opted out"),
            (true, false) => format!("{g} row(s) subscribed"),
            _ => format!("{o} row(s) opted out"),
        };
        out.push(format!(
            "consent: \"{column}\" read as {how}: marks {marks}"
        ));
    }
    let active = (0..sample.rows)
        .filter(|&r| granted[r] && !opted_out[r])
        .count();
    let deactivated = opted_out.iter().filter(|b| **b).count();
    out.push(format!(
        "consent of the {} rows read: {active} active, {deactivated} deactivated, {} registered",
        sample.rows,
        sample.rows - active - deactivated
    ));
    out
}
