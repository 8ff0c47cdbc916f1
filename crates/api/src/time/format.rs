//! One entry of a `format` list, compiled once per column, and what it reads
//! from a cell before any zone is applied. Decision: formats are compiled
//! where the column is set up and handed to every cell, not memoised behind a
//! thread-local (a hidden parameter, issue 14); parsing a format string per
//! cell of a million rows was a tenth of a `check`.

use super::date_format::{FormatEntry, format_entry};
use super::names::{self, Names};
use chrono::format::{Item, Parsed};
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveDateTime, Utc};

/// The first and last spreadsheet serial day listpipe reads: 1899-12-31 and
/// 9999-12-31 (what a spreadsheet can show as a date).
pub const EXCEL_DAYS: std::ops::RangeInclusive<i64> = 1..=2_958_465;

/// A compiled `format` entry.
#[derive(Debug, Clone)]
pub(super) enum Format {
    /// A chrono format, with its spelling for messages; `names` when it reads
    /// month or weekday names (its weekday item is taken out of `items` then).
    Chrono {
        items: Vec<Item<'static>>,
        name: String,
        names: Option<Names>,
    },
    /// `unix`: whole Unix seconds.
    Unix,
    /// `excel`: a spreadsheet serial day (`45292`, `45292.75`).
    Excel,
}

/// What a format read from a cell, before a zone is applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Read {
    /// Unix seconds: a point in time already.
    Unix(i64),
    /// A time written with its offset (`+0100`, `Z`, ` UTC`): it keeps that offset.
    Offset(DateTime<FixedOffset>),
    /// A wall-clock time without an offset; a date alone is its midnight.
    Local { at: NaiveDateTime, has_time: bool },
}

impl Read {
    /// The reading as a person checks it, for the ambiguity message.
    pub(super) fn shown(&self) -> String {
        match self {
            Read::Unix(t) => DateTime::<Utc>::from_timestamp(*t, 0).map_or_else(
                || format!("{t} Unix seconds"),
                |d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            ),
            Read::Offset(d) => d.format("%Y-%m-%d %H:%M:%S %:z").to_string(),
            Read::Local { at, has_time: true } => at.format("%Y-%m-%d %H:%M:%S").to_string(),
            Read::Local { at, .. } => at.format("%Y-%m-%d").to_string(),
        }
    }
}

/// Compiles one `format` entry (what it may be is the pipeline's
/// [`format_entry`]); the error says what is wrong with it.
pub(super) fn compile(spelling: &str) -> Result<Format, String> {
    Ok(match format_entry(spelling)? {
        FormatEntry::Unix => Format::Unix,
        FormatEntry::Excel => Format::Excel,
        FormatEntry::Chrono(mut items) => Format::Chrono {
            names: names::compile(&mut items),
            items,
            name: spelling.to_string(),
        },
    })
}

/// What an entry that is not a format compiles to: it reads nothing, as
/// chrono's own parse would.
pub(super) fn unreadable(spelling: &str) -> Format {
    Format::Chrono {
        items: vec![Item::Error],
        name: spelling.to_string(),
        names: None,
    }
}

impl Format {
    /// How messages name it.
    pub(super) fn name(&self) -> &str {
        match self {
            Format::Chrono { name, .. } => name,
            Format::Unix => "unix",
            Format::Excel => "excel",
        }
    }

    /// What `s` (trimmed) holds in this format, if it is written so.
    pub(super) fn read(&self, s: &str) -> Option<Read> {
        match self {
            Format::Unix => s.parse::<i64>().ok().map(Read::Unix),
            Format::Excel => excel(s),
            Format::Chrono { items, names, .. } => {
                // Month and weekday names put as chrono reads them.
                let english;
                let s = match names {
                    Some(n) => {
                        english = n.english(s)?;
                        english.as_str()
                    }
                    None => s,
                };
                let mut p = Parsed::new();
                chrono::format::parse(&mut p, s, items.iter()).ok()?;
                from_parsed(&p)
            }
        }
    }
}

/// What chrono read: with its offset, a date and time, or a date alone.
pub(super) fn from_parsed(p: &Parsed) -> Option<Read> {
    if p.offset().is_some() {
        return p.to_datetime().ok().map(Read::Offset);
    }
    if let Ok(at) = p.to_naive_datetime_with_offset(0) {
        return Some(Read::Local { at, has_time: true });
    }
    p.to_naive_date()
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|at| Read::Local {
            at,
            has_time: false,
        })
}

/// A spreadsheet serial day: whole days since 1899-12-30 and the fraction of
/// the day. Decision: the 1900 leap-year bug of spreadsheets is not copied,
/// so serials below 61 (before March 1900) read one day earlier than a
/// spreadsheet shows them; exports hold no such dates in practice.
fn excel(s: &str) -> Option<Read> {
    let (whole, frac) = match s.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (s, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 7 || !digits(whole) || !digits(frac) {
        return None;
    }
    let day: i64 = whole.parse().ok()?;
    if !EXCEL_DAYS.contains(&day) {
        return None;
    }
    // The fraction to the nearest second; 18 digits are more than any sheet writes.
    let frac: f64 = format!("0.{}", &frac[..frac.len().min(18)]).parse().ok()?;
    let secs = (frac * 86_400.0).round() as i64;
    let at = NaiveDate::from_ymd_opt(1899, 12, 30)?.and_hms_opt(0, 0, 0)?
        + Duration::days(day)
        + Duration::seconds(secs);
    Some(Read::Local {
        at,
        has_time: secs != 0,
    })
}

/// An ISO 8601 UTC timestamp (`2024-02-01T14:22:00Z`), as imports read it.
///
/// Written digit by digit from the date's parts: `format`'s pattern, parsed
/// on every call, was a tenth of an export's client time, and `format!`
/// with padded numbers a twentieth. Years past 9999 (and before 0) keep
/// `format`'s own spelling.
pub fn iso(secs: i64) -> String {
    use chrono::{Datelike, Timelike};
    match chrono::DateTime::from_timestamp(secs, 0) {
        Some(t) if (0..=9999).contains(&t.year()) => {
            let mut out = *b"0000-00-00T00:00:00Z";
            let parts = [
                (0, 4, t.year() as u32),
                (5, 2, t.month()),
                (8, 2, t.day()),
                (11, 2, t.hour()),
                (14, 2, t.minute()),
                (17, 2, t.second()),
            ];
            for (at, width, mut n) in parts {
                for digit in out[at..at + width].iter_mut().rev() {
                    *digit = b'0' + (n % 10) as u8;
                    n /= 10;
                }
            }
            out.iter().map(|&b| b as char).collect()
        }
        Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => secs.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> Read {
        let at = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap();
        Read::Local { at, has_time: true }
    }

    #[test]
    fn excel_serials_are_days_since_1899_12_30_with_the_time_as_fraction() {
        assert_eq!(
            excel("45292"),
            Some(Read::Local {
                at: NaiveDate::from_ymd_opt(2024, 1, 1)
                    .unwrap()
                    .and_hms_opt(0, 0, 0)
                    .unwrap(),
                has_time: false
            })
        );
        assert_eq!(excel("45292.75"), Some(local("2024-01-01 18:00:00")));
        assert_eq!(
            excel("45292.5000057870"),
            Some(local("2024-01-01 12:00:00"))
        );
        // A fraction a hair below midnight rounds into the next day.
        assert_eq!(excel("45292.9999999"), Some(local("2024-01-02 00:00:00")));
        assert_eq!(
            excel("2958465"),
            Some(Read::Local {
                at: NaiveDate::from_ymd_opt(9999, 12, 31)
                    .unwrap()
                    .and_hms_opt(0, 0, 0)
                    .unwrap(),
                has_time: false
            })
        );
    }

    #[test]
    fn excel_serials_outside_1_to_2958465_and_other_text_are_not_read() {
        for s in [
            "0",
            "0.5",
            "2958466",
            "-1",
            "1e5",
            "45292,75",
            ".5",
            "45292.",
            "x",
            "",
            "99999999999",
        ] {
            assert_eq!(excel(s), None, "{s:?}");
        }
        assert!(excel("1").is_some());
    }

    #[test]
    fn a_format_chrono_cannot_read_is_an_error_naming_it() {
        assert_eq!(
            compile("%d.%m.%Y %Q").map(|_| ()),
            Err("\"%d.%m.%Y %Q\" is not a chrono format (such as \"%d.%m.%Y %H:%M\"), \"unix\" or \"excel\"".into())
        );
        assert!(compile("%d.%m.%Y").is_ok());
        assert!(matches!(compile("excel"), Ok(Format::Excel)));
    }
}
