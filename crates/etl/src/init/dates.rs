//! How a column writes its dates, read from its values: ISO 8601 and Unix seconds need no
//! format (the run reads them as they are); a regional format is found among
//! [`FORMATS`] by trying it on every value, with the run's own parser. When day-first and
//! month-first both read every value, the column is ambiguous and both readings are kept
//! for the user to choose.

use crate::prepare::time::{parse_date, parse_timestamp};

/// Regional formats tried, dates and times alike; the pipeline's `format` spelling. A
/// column is read by those that read every value: one, or several that read each value
/// alike, is `One` (the first listed); several that read a value differently (day first
/// and month first) are `Ambiguous`, listed in this order. So each month-first format
/// follows its day-first twin, and an abbreviated month name (`%b`) comes before the full
/// one (`%B`, which reads abbreviations too): a column of `Sep 15, 2014` gets `%b`, one of
/// `September 15, 2014` (or both spellings) `%B`.
pub(super) const FORMATS: &[&str] = &[
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%y",
    "%d.%m.%y %H:%M",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %I:%M %p",
    "%m/%d/%Y %I:%M %p",
    "%d/%m/%Y %I:%M:%S %p",
    "%m/%d/%Y %I:%M:%S %p",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d-%m-%Y %H:%M",
    "%m-%d-%Y %H:%M",
    "%d-%m-%Y %H:%M:%S",
    "%m-%d-%Y %H:%M:%S",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%d/%m/%y",
    "%m/%d/%y",
    "%d/%m/%y %H:%M",
    "%m/%d/%y %H:%M",
    "%m/%d/%y %I:%M %p",
    // Month names (English, German, French, Spanish: `time` reads them all).
    "%b %d, %Y",
    "%B %d, %Y",
    "%b %d, %Y %I:%M %p",
    "%B %d, %Y %I:%M %p",
    "%b %d, %Y %I:%M:%S %p",
    "%B %d, %Y %I:%M:%S %p",
    "%b %d, %Y %H:%M:%S",
    "%B %d, %Y %H:%M:%S",
    "%b %d %Y",
    "%B %d %Y",
    "%d %b %Y",
    "%d %B %Y",
    "%d %b %Y %H:%M",
    "%d %B %Y %H:%M",
    "%d %b %Y %H:%M:%S",
    "%d %B %Y %H:%M:%S",
    "%d-%b-%Y",
    "%d-%b-%y",
    "%a, %d %b %Y %H:%M:%S",
    "%a, %d %b %Y %H:%M:%S %z",
    "%a %b %d %H:%M:%S %Y",
    "%d. %b %Y",
    "%d. %B %Y",
    "%d. %b %Y %H:%M",
    "%d. %B %Y %H:%M",
    "%d de %b de %Y",
    "%d de %B de %Y",
    // Times with the month named, as CRMs, shops and newsletter tools write them: `15 Jan
    // 2023 10:30 AM`, `Sep 15, 2014, 5:59 PM`, `September 15, 2014 at 5:59 PM`, `Monday,
    // September 15, 2014`, `15-JAN-2023 10:30:00`, `15 janvier 2023 à 10:30`.
    "%d %b %Y %I:%M %p",
    "%d %B %Y %I:%M %p",
    "%d %b %Y %I:%M:%S %p",
    "%b %d, %Y, %I:%M %p",
    "%B %d, %Y, %I:%M %p",
    "%b %d, %Y, %I:%M:%S %p",
    "%b %d, %Y %H:%M",
    "%B %d, %Y %H:%M",
    "%B %d, %Y at %I:%M %p",
    "%b %d, %Y at %I:%M %p",
    "%A, %B %d, %Y",
    "%a, %b %d, %Y",
    "%d-%b-%Y %H:%M:%S",
    "%d-%b-%Y %H:%M",
    "%d-%b-%Y %I:%M %p",
    "%Y-%b-%d",
    "%d %b %Y, %H:%M",
    "%d. %B %Y, %H:%M",
    "%d. %B %Y %H:%M:%S",
    "%d %B %Y à %H:%M",
    "%d de %B de %Y %H:%M",
    "%d de %B de %Y, %H:%M",
];

/// How a column's values are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DateFormat {
    /// ISO 8601 or Unix seconds: read without a `format`.
    Iso,
    /// Every value reads with this format.
    One(&'static str),
    /// Every value reads with one of these, and with one only (`May 11, 2019 11:21 AM`
    /// beside `September 15, 2014 5:59:48 PM`).
    List(Vec<&'static str>),
    /// Day-first and month-first both read every value: the user decides. `example` is a
    /// value the two read differently.
    Ambiguous {
        formats: Vec<&'static str>,
        example: String,
    },
}

impl DateFormat {
    /// The formats the pipeline lists, in order (none for ISO).
    pub(super) fn formats(&self) -> Vec<&'static str> {
        match self {
            DateFormat::Iso => Vec::new(),
            DateFormat::One(f) => vec![f],
            DateFormat::List(formats) | DateFormat::Ambiguous { formats, .. } => formats.clone(),
        }
    }
}

fn reads(value: &str, format: Option<&str>) -> bool {
    parse_timestamp(value, format).is_ok() || parse_date(value, format).is_ok()
}

/// Whether these values are dates or times, and how they are written. `None`: not dates
/// (or no values). A value no candidate reads rules the candidate out, so one odd cell
/// keeps a column from being taken for dates.
pub(super) fn detect(values: &[&str]) -> Option<DateFormat> {
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
        [] => covering(values.clone()),
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

/// When no one format reads every value: the fewest formats of [`FORMATS`] (taken in
/// order) that read each value one way, as people write a time with and without seconds
/// in one column. `None` when a value reads with none, or two of them read one value
/// differently.
fn covering<'a>(values: impl Iterator<Item = &'a str> + Clone) -> Option<DateFormat> {
    let mut chosen: Vec<&'static str> = Vec::new();
    for v in values.clone() {
        if chosen.iter().any(|f| reads(v, Some(f))) {
            continue;
        }
        chosen.push(FORMATS.iter().copied().find(|f| reads(v, Some(f)))?);
    }
    let one_way = values.into_iter().all(|v| readings(v, &chosen).len() == 1);
    (one_way && chosen.len() > 1).then_some(DateFormat::List(chosen))
}

/// The distinct dates `value` stands for under `formats`, each with its format.
pub(super) fn readings(value: &str, formats: &[&'static str]) -> Vec<(String, &'static str)> {
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
