//! What to try when a column's dates do not read: the reject reason of a value names the
//! setting that reads it. A placeholder for "no date" (Outlook's `0.0.00`) names
//! `null_values`; a value in a spelling of its own (`5/6/2012 15:53`) names a `format` read
//! from the column's own values, day first unless some value has no day-first reading
//! (`12/25/2012`), then month first. The hint is decided per column, not per value: one
//! value cannot tell `5/6/2012` the 5th of June from the 6th of May.

use super::Ambiguous;
use super::Times;

/// The tail the unambiguous spellings' reasons end with, replaced by a better hint.
pub(super) const GENERIC_TAIL: &str = "; set `format`, e.g. \"%d.%m.%Y\"";

/// The most placeholders `null_values` is suggested with.
const LISTED_PLACEHOLDERS: usize = 3;

/// The hints of one column, decided from its values.
#[derive(Debug, Default)]
pub struct ColumnHint {
    placeholders: Vec<String>,
    format: Option<Guess>,
    /// The mapping's own formats: a guess among them would not help.
    own: Vec<String>,
}

#[derive(Debug)]
struct Guess {
    format: String,
    /// `format` compiled once: every failed value of the column is tried with it.
    times: Times,
    /// Why this one: read from the values, and what tells day from month.
    why: String,
}

/// `0.0.00`, `00.00.0000`, `0000-00-00`: digits that are all zero, with separators.
pub fn is_placeholder(s: &str) -> bool {
    let s = s.trim();
    s.bytes().any(|b| b == b'0')
        && s.bytes().all(|b| b == b'0' || b".-/: ".contains(&b))
        && s.bytes().any(|b| !b.is_ascii_digit())
}

impl ColumnHint {
    /// The hints for a column whose values are `values` (cleaned, non-empty) and whose
    /// mapping lists `own` formats; `failed` are the values that did not read.
    pub fn new<'v>(
        values: impl IntoIterator<Item = &'v str>,
        failed: &[&str],
        own: &[String],
    ) -> ColumnHint {
        let mut placeholders: Vec<String> = Vec::new();
        for f in failed
            .iter()
            .map(|f| f.trim())
            .filter(|f| is_placeholder(f))
        {
            if !placeholders.iter().any(|p| p == f) && placeholders.len() < LISTED_PLACEHOLDERS {
                placeholders.push(f.to_string());
            }
        }
        let first = failed.iter().find(|f| !is_placeholder(f));
        let format = first.and_then(|f| guess(f, values));
        ColumnHint {
            placeholders,
            format,
            own: own.to_vec(),
        }
    }

    /// `reason` with what to set for `value` added (or the generic example replaced).
    pub fn decorate(&self, value: &str, reason: String) -> String {
        let value = value.trim();
        let base = reason.strip_suffix(GENERIC_TAIL).unwrap_or(&reason);
        if is_placeholder(value) && !self.placeholders.is_empty() {
            let listed: Vec<String> = self
                .placeholders
                .iter()
                .map(|p| format!("\"{p}\""))
                .collect();
            return format!(
                "{base}; if it means \"no date\", set null_values = [{}]",
                listed.join(", ")
            );
        }
        match &self.format {
            Some(g) if !self.own.contains(&g.format) && g.times.timestamp(value).is_ok() => {
                if self.own.is_empty() {
                    format!("{base}; set format = \"{}\" ({})", g.format, g.why)
                } else {
                    // The mapping reads other values with its own: keep them, add this one.
                    let listed: Vec<String> = self
                        .own
                        .iter()
                        .chain(std::iter::once(&g.format))
                        .map(|f| format!("\"{f}\""))
                        .collect();
                    format!(
                        "{base}; list it in format = [{}] ({})",
                        listed.join(", "),
                        g.why
                    )
                }
            }
            _ => reason,
        }
    }
}

/// `format` compiled, to read values with.
fn compiled(format: &str) -> Times {
    Times::new(&[format.to_string()], Ambiguous::First, None)
}

/// The parts of a value in a numeric date spelling: `5/6/2012 15:53`, `2024.03.05`,
/// `5-6-12 3:53 PM`.
#[derive(Debug, PartialEq)]
struct Shape {
    /// The date's three numbers, as written.
    parts: [u32; 3],
    /// The digits of each number.
    widths: [usize; 3],
    sep: char,
    /// Everything after the date (` 15:53`), as a format: ` %H:%M`.
    time: String,
}

fn shape(s: &str) -> Option<Shape> {
    let s = s.trim();
    let date_end = s.find([' ', 'T']).unwrap_or(s.len());
    let (date, rest) = s.split_at(date_end);
    let sep = date.chars().find(|c| !c.is_ascii_digit())?;
    if !"./-".contains(sep) {
        return None;
    }
    let numbers: Vec<&str> = date.split(sep).collect();
    let [a, b, c] = numbers.as_slice() else {
        return None;
    };
    let mut parts = [0u32; 3];
    let mut widths = [0usize; 3];
    for (i, n) in [a, b, c].into_iter().enumerate() {
        if n.is_empty() || n.len() > 4 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        parts[i] = n.parse().ok()?;
        widths[i] = n.len();
    }
    Some(Shape {
        parts,
        widths,
        sep,
        time: time_format(rest)?,
    })
}

/// ` 15:53` → ` %H:%M`, `T15:53:10` → `T%H:%M:%S`, ` 3:53 PM` → ` %I:%M %p`.
fn time_format(rest: &str) -> Option<String> {
    if rest.is_empty() {
        return Some(String::new());
    }
    let (lead, clock) = rest.split_at(1);
    let upper = clock.to_ascii_uppercase();
    let (clock, meridiem) = match upper
        .strip_suffix("AM")
        .or_else(|| upper.strip_suffix("PM"))
    {
        Some(c) => (c, Some(if c.ends_with(' ') { " %p" } else { "%p" })),
        None => (upper.as_str(), None),
    };
    let fields: Vec<&str> = clock.trim_end().split(':').collect();
    if !(2..=3).contains(&fields.len())
        || fields
            .iter()
            .any(|f| f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let hour = if meridiem.is_some() { "%I" } else { "%H" };
    let seconds = if fields.len() == 3 { ":%S" } else { "" };
    Some(format!(
        "{lead}{hour}:%M{seconds}{}",
        meridiem.unwrap_or("")
    ))
}

/// A format for `first` (a value that did not read), checked against every value of the
/// column with the same spelling.
fn guess<'v>(first: &str, values: impl IntoIterator<Item = &'v str>) -> Option<Guess> {
    let s = shape(first)?;
    let sep = s.sep;
    if s.widths[0] == 4 {
        let format = format!("%Y{sep}%m{sep}%d{}", s.time);
        return Guess::checked(format, "read from the column's values".into(), first);
    }
    let year = match s.widths[2] {
        4 => "%Y",
        2 => "%y",
        _ => return None,
    };
    let day_first = format!("%d{sep}%m{sep}{year}{}", s.time);
    let month_first = format!("%m{sep}%d{sep}{year}{}", s.time);
    // The column's values of the same spelling: is there a day-first or a month-first
    // reading for every one of them?
    let (mut day_fits, mut month_fits) = (true, true);
    let mut tells: Option<String> = None;
    for v in values {
        let Some(other) = shape(v) else { continue };
        if other.sep != sep || other.widths[2] != s.widths[2] || other.time != s.time {
            continue;
        }
        let [a, b, _] = other.parts;
        if a > 12 && b > 12 {
            continue;
        }
        if a > 12 && month_fits {
            month_fits = false;
        }
        if b > 12 && day_fits {
            day_fits = false;
            tells.get_or_insert_with(|| v.trim().to_string());
        }
    }
    let (format, why) = match (day_fits, month_fits) {
        (true, true) => (
            day_first.clone(),
            format!(
                "day first; if the month comes first, format = \"{month_first}\": no value of the column tells them apart"
            ),
        ),
        (true, false) => (day_first, "read from the column's values".to_string()),
        (false, true) => (
            month_first,
            format!(
                "read from the column's values: month first, as \"{}\" has no day-first reading",
                tells.unwrap_or_default()
            ),
        ),
        (false, false) => return None,
    };
    Guess::checked(format, why, first)
}

impl Guess {
    /// The guess, if its format reads the value it was made for.
    fn checked(format: String, why: String, value: &str) -> Option<Guess> {
        let times = compiled(&format);
        times
            .timestamp(value)
            .is_ok()
            .then_some(Guess { format, times, why })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(values: &[&str], failed: &str) -> String {
        ColumnHint::new(values.iter().copied(), &[failed], &[]).decorate(failed, "why".into())
    }

    #[test]
    fn a_us_time_column_is_read_month_first_when_a_value_has_no_day_first_reading() {
        assert_eq!(
            hint(&["5/6/2012 15:53", "12/25/2012 10:00"], "5/6/2012 15:53"),
            "why; set format = \"%m/%d/%Y %H:%M\" (read from the column's values: month first, as \"12/25/2012 10:00\" has no day-first reading)"
        );
    }

    #[test]
    fn a_day_first_column_is_read_day_first_and_an_undecided_one_says_so() {
        assert_eq!(
            hint(&["5.6.2012", "25.12.2012"], "5.6.2012"),
            "why; set format = \"%d.%m.%Y\" (read from the column's values)"
        );
        assert_eq!(
            hint(&["5/6/12 3:53 PM"], "5/6/12 3:53 PM"),
            "why; set format = \"%d/%m/%y %I:%M %p\" (day first; if the month comes first, format = \"%m/%d/%y %I:%M %p\": no value of the column tells them apart)"
        );
        assert_eq!(
            hint(&["2012/06/05"], "2012/06/05"),
            "why; set format = \"%Y/%m/%d\" (read from the column's values)"
        );
    }

    #[test]
    fn a_placeholder_names_null_values_and_text_gets_no_format() {
        assert_eq!(
            hint(&["0.0.00", "1.2.1990"], "0.0.00"),
            "why; if it means \"no date\", set null_values = [\"0.0.00\"]"
        );
        assert_eq!(hint(&["soon"], "soon"), "why");
        assert!(is_placeholder("0000-00-00") && !is_placeholder("0") && !is_placeholder("10.0.00"));
    }

    #[test]
    fn a_mapping_with_formats_of_its_own_is_told_to_list_the_one_read() {
        let h = ColumnHint::new(["2024/03/05"], &["2024/03/05"], &["%d.%m.%Y".to_string()]);
        assert_eq!(
            h.decorate("2024/03/05", "bad".into()),
            "bad; list it in format = [\"%d.%m.%Y\", \"%Y/%m/%d\"] (read from the column's values)"
        );
    }

    #[test]
    fn the_generic_example_is_replaced_by_the_format_read() {
        let h = ColumnHint::new(["5/6/2012"], &["5/6/2012"], &[]);
        assert_eq!(
            h.decorate("5/6/2012", format!("bad{GENERIC_TAIL}")),
            "bad; set format = \"%d/%m/%Y\" (day first; if the month comes first, format = \"%m/%d/%Y\": no value of the column tells them apart)"
        );
    }
}
