//! Dates and timestamps from the text users' files hold. Without an
//! explicit `format` only unambiguous spellings are accepted (ISO 8601 and
//! Unix seconds): `01.02.2024` could be either month, so it needs
//! `format = "%d.%m.%Y"`. Times without a zone are taken as UTC; a trailing offset
//! (`2024-03-05 14:22:10 +0100`, as Shopify writes them) is applied.

use chrono::format::{Item, Parsed, StrftimeItems};
use chrono::{DateTime, NaiveDate, Utc};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

const AUTO_DATETIME: &[&str] = &[
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
];

fn strip_utc(s: &str) -> &str {
    s.strip_suffix(" UTC")
        .or_else(|| s.strip_suffix(" GMT"))
        .unwrap_or(s)
        .trim()
}

thread_local! {
    /// Chrono formats compiled once per thread: parsing a format string for
    /// every cell of a million rows was a tenth of a `check`.
    static FORMATS: RefCell<HashMap<String, Rc<[Item<'static>]>>> = RefCell::default();
}

/// `s` read with the chrono format `fmt` (what it holds: date, time, offset).
fn parsed(s: &str, fmt: &str) -> Option<Parsed> {
    let items = FORMATS.with(|f| {
        f.borrow_mut()
            .entry(fmt.to_string())
            .or_insert_with(|| {
                // A bad format matches nothing, as chrono's own parse would.
                StrftimeItems::new(fmt)
                    .parse_to_owned()
                    .map_or_else(|_| Rc::from(vec![Item::Error]), Rc::from)
            })
            .clone()
    });
    let mut p = Parsed::new();
    chrono::format::parse(&mut p, s, items.iter()).ok()?;
    Some(p)
}

/// Unix seconds of what [`parsed`] read: with its offset, else as UTC, else
/// a date at midnight UTC.
fn seconds(p: &Parsed) -> Option<i64> {
    if p.offset().is_some() {
        return p.to_datetime().ok().map(|d| d.timestamp());
    }
    if let Ok(dt) = p.to_naive_datetime_with_offset(0) {
        return Some(dt.and_utc().timestamp());
    }
    p.to_naive_date()
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|dt| dt.and_utc().timestamp())
}

/// Unix seconds from text, with an explicit chrono format, `unix`, or the
/// unambiguous spellings. The error says what was expected.
pub fn parse_timestamp(s: &str, format: Option<&str>) -> Result<i64, String> {
    let s = s.trim();
    match format {
        Some("unix") => s
            .parse::<i64>()
            .map_err(|_| format!("\"{s}\" is not Unix seconds")),
        Some(fmt) => parsed(s, fmt)
            .as_ref()
            .and_then(seconds)
            .ok_or_else(|| format!("\"{s}\" does not match the format {fmt}")),
        None => {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                return s
                    .parse::<i64>()
                    .map_err(|_| format!("\"{s}\" is too large for a timestamp"));
            }
            if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
                return Ok(dt.timestamp());
            }
            // Shopify's exports: `2024-03-05 14:22:10 +0100`.
            if let Ok(dt) = DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S %z") {
                return Ok(dt.timestamp());
            }
            let plain = strip_utc(s);
            for fmt in AUTO_DATETIME {
                if let Some(t) =
                    parsed(plain, fmt).and_then(|p| p.to_naive_datetime_with_offset(0).ok())
                {
                    return Ok(t.and_utc().timestamp());
                }
            }
            if let Ok(d) = NaiveDate::parse_from_str(plain, "%Y-%m-%d") {
                return Ok(d
                    .and_hms_opt(0, 0, 0)
                    .map_or(0, |dt| dt.and_utc().timestamp()));
            }
            Err(format!(
                "\"{s}\" is not a date or time listpipe can read by itself (ISO 8601 or Unix seconds); set `format`, e.g. \"%d.%m.%Y\""
            ))
        }
    }
}

/// A calendar date as `YYYY-MM-DD` (the wire form of date attributes).
pub fn parse_date(s: &str, format: Option<&str>) -> Result<String, String> {
    let s = s.trim();
    let date = match format {
        Some("unix") | None if s.bytes().all(|b| b.is_ascii_digit()) && s.len() > 8 => {
            parse_timestamp(s, Some("unix"))
                .ok()
                .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0))
                .map(|d| d.date_naive())
        }
        Some(fmt) => parsed(s, fmt).and_then(|p| {
            p.to_naive_date()
                .ok()
                .or_else(|| p.to_naive_datetime_with_offset(0).ok().map(|dt| dt.date()))
        }),
        None => NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().or_else(|| {
            parse_timestamp(s, None)
                .ok()
                .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0))
                .map(|d| d.date_naive())
        }),
    };
    match (date, format) {
        (Some(d), _) => Ok(d.format("%Y-%m-%d").to_string()),
        (None, Some(fmt)) => Err(format!("\"{s}\" is not a date in the format {fmt}")),
        (None, None) => Err(format!(
            "\"{s}\" is not a date listpipe can read by itself (YYYY-MM-DD); set `format`, e.g. \"%d.%m.%Y\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_formats_parse_german_dates() {
        assert_eq!(
            parse_timestamp("01.02.2024", Some("%d.%m.%Y")),
            Ok(1_706_745_600)
        );
        assert_eq!(
            parse_date("11.02.1993", Some("%d.%m.%Y")).as_deref(),
            Ok("1993-02-11")
        );
    }

    #[test]
    fn impossible_dates_are_errors_naming_the_format() {
        assert_eq!(
            parse_date("31.02.1990", Some("%d.%m.%Y")),
            Err("\"31.02.1990\" is not a date in the format %d.%m.%Y".into())
        );
    }

    #[test]
    fn iso_spellings_and_unix_seconds_need_no_format() {
        assert_eq!(parse_timestamp("2024-02-01", None), Ok(1_706_745_600));
        assert_eq!(
            parse_timestamp("2024-02-01 00:00:00 UTC", None),
            Ok(1_706_745_600)
        );
        assert_eq!(
            parse_timestamp("2024-02-01T01:00:00+01:00", None),
            Ok(1_706_745_600)
        );
        assert_eq!(parse_timestamp("1706745600", None), Ok(1_706_745_600));
        assert_eq!(
            parse_timestamp("2024-02-01 02:00:00 +0200", None),
            Ok(1_706_745_600)
        );
        assert!(
            parse_timestamp("01.02.2024", None)
                .unwrap_err()
                .contains("set `format`")
        );
    }

    mod properties {
        use super::super::*;
        use chrono::{NaiveDate, TimeZone};
        use proptest::prelude::*;

        /// A UTC second from year 1 to 9999 (what `%Y` writes as four digits).
        fn utc() -> impl Strategy<Value = DateTime<Utc>> {
            let lo = NaiveDate::from_ymd_opt(1, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap();
            let hi = NaiveDate::from_ymd_opt(9999, 12, 31)
                .unwrap()
                .and_hms_opt(23, 59, 59)
                .unwrap();
            (lo.and_utc().timestamp()..=hi.and_utc().timestamp())
                .prop_map(|t| Utc.timestamp_opt(t, 0).unwrap())
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            #[test]
            fn every_supported_spelling_parses_back_to_the_same_second(dt in utc()) {
                let t = dt.timestamp();
                let minute = t - t.rem_euclid(60);
                let day = t - t.rem_euclid(86_400);
                let cases: Vec<(String, Option<&str>, i64)> = vec![
                    (dt.format("%Y-%m-%d %H:%M:%S").to_string(), None, t),
                    (dt.format("%Y-%m-%dT%H:%M:%S").to_string(), None, t),
                    (dt.format("%Y-%m-%d %H:%M:%S UTC").to_string(), None, t),
                    (dt.format("%Y-%m-%d %H:%M:%S GMT").to_string(), None, t),
                    (dt.format("%Y-%m-%dT%H:%M:%SZ").to_string(), None, t),
                    (dt.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(), None, t),
                    (dt.format("%Y-%m-%d %H:%M").to_string(), None, minute),
                    (dt.format("%Y-%m-%dT%H:%M").to_string(), None, minute),
                    (dt.format("%Y-%m-%d").to_string(), None, day),
                    (format!("  {}  ", dt.format("%Y-%m-%d %H:%M:%S")), None, t),
                    (dt.format("%d.%m.%Y %H:%M:%S").to_string(), Some("%d.%m.%Y %H:%M:%S"), t),
                    (dt.format("%d.%m.%Y").to_string(), Some("%d.%m.%Y"), day),
                    (t.to_string(), Some("unix"), t),
                ];
                for (text, format, want) in cases {
                    prop_assert_eq!(parse_timestamp(&text, format), Ok(want), "{:?} {:?}", text, format);
                }
                if t >= 0 {
                    prop_assert_eq!(parse_timestamp(&t.to_string(), None), Ok(t));
                }
                prop_assert_eq!(
                    parse_date(&dt.format("%Y-%m-%d").to_string(), None),
                    Ok(dt.format("%Y-%m-%d").to_string())
                );
            }

            #[test]
            fn arbitrary_text_and_formats_never_panic(
                s in "\\PC{0,40}",
                noise in "[0-9:T .+Z%a-zA-Z-]{0,30}",
                fmt in prop::option::of("[%a-zA-Z:. -]{0,12}"),
            ) {
                for text in [&s, &noise] {
                    let _ = parse_timestamp(text, None);
                    let _ = parse_timestamp(text, Some("unix"));
                    let _ = parse_timestamp(text, fmt.as_deref());
                    let _ = parse_date(text, None);
                    let _ = parse_date(text, fmt.as_deref());
                }
            }
        }
    }
}
