//! How a column writes its dates, read from its values: ISO 8601 and Unix seconds need no
//! format (the run reads them as they are); a regional format is found among
//! [`FORMATS`] by trying it on every value, with the run's own parser. When day-first and
//! month-first both read every value, the column is ambiguous and both readings are kept
//! for the user to choose.

use crate::prepare::time::{parse_date, parse_timestamp};

/// Regional formats tried, dates and times alike; the pipeline's `format` spelling.
pub const FORMATS: &[&str] = &[
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%y",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %I:%M %p",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d-%m-%Y %H:%M",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M:%S",
    "%d/%m/%y",
    "%m/%d/%y",
];

/// How a column's values are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateFormat {
    /// ISO 8601 or Unix seconds: read without a `format`.
    Iso,
    /// Every value reads with this format.
    One(&'static str),
    /// Day-first and month-first both read every value: the user decides. `example` is a
    /// value the two read differently.
    Ambiguous {
        formats: Vec<&'static str>,
        example: String,
    },
}

impl DateFormat {
    /// The formats the pipeline lists, in order (none for ISO).
    pub fn formats(&self) -> Vec<&'static str> {
        match self {
            DateFormat::Iso => Vec::new(),
            DateFormat::One(f) => vec![f],
            DateFormat::Ambiguous { formats, .. } => formats.clone(),
        }
    }
}

fn reads(value: &str, format: Option<&str>) -> bool {
    parse_timestamp(value, format).is_ok() || parse_date(value, format).is_ok()
}

/// Whether these values are dates or times, and how they are written. `None`: not dates
/// (or no values). A value no candidate reads rules the candidate out, so one odd cell
/// keeps a column from being taken for dates.
pub fn detect(values: &[&str]) -> Option<DateFormat> {
    let values = values.iter().copied();
    let mut any = false;
    let mut plain_numbers = true;
    for v in values.clone() {
        any = true;
        plain_numbers &= v.chars().all(|c| c.is_ascii_digit());
    }
    // A column of bare numbers (ids, zip codes) would read as Unix seconds: not dates.
    if !any || plain_numbers {
        return None;
    }
    if values.clone().all(|v| reads(v, None)) {
        return Some(DateFormat::Iso);
    }
    let fitting: Vec<&'static str> = FORMATS
        .iter()
        .copied()
        .filter(|f| values.clone().all(|v| reads(v, Some(f))))
        .collect();
    match fitting.as_slice() {
        [] => None,
        [one] => Some(DateFormat::One(one)),
        several => {
            let example = values
                .clone()
                .find(|v| readings(v, several).len() > 1)
                .map(str::to_string);
            match example {
                Some(example) => Some(DateFormat::Ambiguous {
                    formats: several.to_vec(),
                    example,
                }),
                // Every value reads the same with each: the first is as good as any.
                None => Some(DateFormat::One(several[0])),
            }
        }
    }
}

/// The distinct dates `value` stands for under `formats`, each with its format.
pub fn readings(value: &str, formats: &[&'static str]) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for f in formats {
        let read = parse_date(value, Some(f))
            .ok()
            .or_else(|| parse_timestamp(value, Some(f)).ok().map(|t| t.to_string()));
        if let Some(r) = read
            && !out.iter().any(|(seen, _)| *seen == r)
        {
            out.push((r, f));
        }
    }
    out
}
