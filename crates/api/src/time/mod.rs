//! Dates and timestamps from the text users' files hold. Without an
//! explicit `format` only unambiguous spellings are accepted (ISO 8601 and
//! Unix seconds): `01.02.2024` could be either month, so it needs
//! `format = "%d.%m.%Y"`. A `format` list is tried in order, and a value two
//! formats read differently is refused as ambiguous unless the pipeline says
//! the first wins or that such values are left out (`ambiguous = "omit"`).
//! Month and weekday names are read in English, German, French and Spanish
//! (`names`). Times without an offset are read in the mapping's
//! `timezone` (UTC without one); a trailing offset (`2024-03-05 14:22:10
//! +0100`, as Shopify writes them) is applied. Dates are calendar dates and
//! take no zone.
//!
//! A column's formats are compiled once into [`Times`] and handed to each
//! cell; [`parse_timestamp`] and [`parse_date`] compile per call, for the
//! server's filter conditions and tests.

pub mod date_format;
mod format;
mod hint;
mod names;
mod zone;

pub use format::{EXCEL_DAYS, iso};
pub use hint::{ColumnHint, is_placeholder};

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use format::{Format, Read};
use zone::Gap;

const AUTO_DATETIME: &[&str] = &[
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
];

/// The unambiguous spellings' formats, compiled once for the process (they
/// are constants, not settings).
struct Auto {
    shopify: Format,
    datetimes: Vec<Format>,
}

static AUTO: std::sync::LazyLock<Auto> = std::sync::LazyLock::new(|| {
    let compiled = |f: &str| format::compile(f).unwrap_or(Format::Unix);
    Auto {
        shopify: compiled("%Y-%m-%d %H:%M:%S %z"),
        datetimes: AUTO_DATETIME.iter().map(|f| compiled(f)).collect(),
    }
});

fn strip_utc(s: &str) -> Option<&str> {
    s.strip_suffix(" UTC")
        .or_else(|| s.strip_suffix(" GMT"))
        .map(str::trim)
}

/// How one column's dates and times are read: its formats compiled, what an
/// ambiguous value becomes, and the zone of times without an offset.
#[derive(Debug, Clone, Default)]
pub struct Times {
    /// Empty: the unambiguous spellings only.
    formats: Vec<Format>,
    ambiguous: Ambiguous,
    zone: Option<Tz>,
}

/// What the value of a timestamp or a date comes to, for comparing readings.
trait Outcome: PartialEq + Copy {
    fn of(read: Read, zone: Option<Tz>) -> Result<Self, Gap>;
}

impl Outcome for i64 {
    fn of(read: Read, zone: Option<Tz>) -> Result<i64, Gap> {
        zone::seconds(read, zone)
    }
}

impl Outcome for NaiveDate {
    /// A calendar date as written; Unix seconds are a UTC date.
    fn of(read: Read, _: Option<Tz>) -> Result<NaiveDate, Gap> {
        Ok(match read {
            Read::Unix(t) => {
                DateTime::<Utc>::from_timestamp(t, 0).map_or(NaiveDate::MIN, |d| d.date_naive())
            }
            Read::Offset(d) => d.date_naive(),
            Read::Local { at, .. } => at.date(),
        })
    }
}

impl Times {
    /// A column's formats, compiled. An entry that is not a format (the
    /// parser refuses those) reads nothing, as chrono's own parse would.
    pub fn new(formats: &[String], ambiguous: Ambiguous, zone: Option<Tz>) -> Times {
        let formats = formats
            .iter()
            .map(|f| format::compile(f).unwrap_or_else(|_| format::unreadable(f)))
            .collect();
        Times {
            formats,
            ambiguous,
            zone,
        }
    }

    /// Unix seconds from text; the error is the reject reason (with
    /// `ambiguous = "omit"` too: a caller that can leave a value out reads it
    /// with [`Times::read_timestamp`]).
    pub fn timestamp(&self, s: &str) -> Result<i64, String> {
        self.timestamp_as(s, false).map_err(Unread::into_text)
    }

    /// Unix seconds from text, or why there are none: refused, or left out
    /// (`ambiguous = "omit"` and a value the formats read differently).
    pub fn read_timestamp(&self, s: &str) -> Result<i64, Unread> {
        self.timestamp_as(s, self.ambiguous == Ambiguous::Omit)
    }

    fn timestamp_as(&self, s: &str, omit: bool) -> Result<i64, Unread> {
        let s = s.trim();
        if self.formats.is_empty() {
            return auto_timestamp(s, self.zone).map_err(Unread::Refused);
        }
        let miss = |gap: Option<Gap>| match (gap, self.formats.as_slice()) {
            (Some(Gap(tz)), _) => format!(
                "\"{s}\" is a local time that does not exist in {tz} (the clocks skip it when they move forward)"
            ),
            (None, [Format::Unix]) => format!("\"{s}\" is not Unix seconds"),
            (None, [Format::Excel]) => excel_miss(s),
            (None, [f]) => format!("\"{s}\" does not match the format {}", f.name()),
            (None, _) => self.no_match(s),
        };
        self.read(s).map_err(|e| match e {
            ReadErr::Ambiguous(readings) => ambiguity(s, &readings, omit),
            ReadErr::Miss(gap) => Unread::Refused(miss(gap)),
        })
    }

    /// A calendar date as `YYYY-MM-DD` (the wire form of date attributes);
    /// the error is the reject reason, as [`Times::timestamp`]'s.
    pub fn date(&self, s: &str) -> Result<String, String> {
        self.date_as(s, false).map_err(Unread::into_text)
    }

    /// A calendar date as `YYYY-MM-DD`, or why there is none, as
    /// [`Times::read_timestamp`] says it.
    pub fn read_date(&self, s: &str) -> Result<String, Unread> {
        self.date_as(s, self.ambiguous == Ambiguous::Omit)
    }

    fn date_as(&self, s: &str, omit: bool) -> Result<String, Unread> {
        let s = s.trim();
        if self.formats.is_empty() {
            return auto_date(s).map_err(Unread::Refused);
        }
        let date: Result<NaiveDate, Unread> = self.read(s).map_err(|e| match e {
            ReadErr::Ambiguous(readings) => ambiguity(s, &readings, omit),
            ReadErr::Miss(_) => Unread::Refused(match self.formats.as_slice() {
                [Format::Excel] => excel_miss(s),
                [f] => format!("\"{s}\" is not a date in the format {}", f.name()),
                _ => self.no_match(s),
            }),
        });
        date.map(|d| d.format("%Y-%m-%d").to_string())
    }

    fn no_match(&self, s: &str) -> String {
        let names: Vec<&str> = self.formats.iter().map(Format::name).collect();
        format!(
            "\"{s}\" does not match any of the formats {}",
            names.join(", ")
        )
    }

    /// What the formats read: the first reading, or with `ambiguous =
    /// "reject"` (or `"omit"`) the one reading all formats that read it
    /// agree on. `Err` holds the readings of an ambiguous value, or the gap
    /// one format fell into when no format read it (`None`: no format read
    /// it).
    fn read<T: Outcome>(&self, s: &str) -> Result<T, ReadErr> {
        let mut readings: Vec<(&Format, Read, T)> = Vec::new();
        let mut gap = None;
        for f in &self.formats {
            let Some(read) = f.read(s) else { continue };
            match T::of(read, self.zone) {
                Ok(v) if self.ambiguous == Ambiguous::First => return Ok(v),
                Ok(v) => readings.push((f, read, v)),
                Err(g) => gap = gap.or(Some(g)),
            }
        }
        let Some(&(_, _, first)) = readings.first() else {
            return Err(ReadErr::Miss(gap));
        };
        if readings.iter().all(|(_, _, v)| *v == first) {
            return Ok(first);
        }
        Err(ReadErr::Ambiguous(
            readings
                .iter()
                .map(|(f, r, _)| (r.shown(), f.name().to_string()))
                .collect(),
        ))
    }
}

/// Why a value gave no date or time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Not read: the reject reason.
    Refused(String),
    /// `ambiguous = "omit"`: the listed formats read it differently, so it is
    /// left out, as an empty cell is. What it reads as, for the note that
    /// counts such values (`"5/6/2012 15:53" is 2012-06-05 or 2012-05-06`).
    LeftOut(String),
}

impl Unread {
    /// The reject reason, or what a value left out reads as.
    pub fn into_text(self) -> String {
        match self {
            Unread::Refused(why) | Unread::LeftOut(why) => why,
        }
    }
}

/// What an ambiguous value comes to: its reject reason naming every reading
/// with its format, or (left out) its distinct readings, as dates alone when
/// they agree on the time of day.
fn ambiguity(s: &str, readings: &[(String, String)], omit: bool) -> Unread {
    if !omit {
        let shown: Vec<String> = readings
            .iter()
            .map(|(r, f)| format!("{r} with {f}"))
            .collect();
        return Unread::Refused(format!(
            "\"{s}\" is ambiguous: {}; list the format that wins first and set ambiguous = \"first\"",
            shown.join(", ")
        ));
    }
    let mut distinct: Vec<&str> = Vec::new();
    for (r, _) in readings {
        if !distinct.contains(&r.as_str()) {
            distinct.push(r);
        }
    }
    let time_of = |r: &str| r.split_once(' ').map(|(_, t)| t.to_string());
    let first_time = distinct.first().and_then(|f| time_of(f));
    let same_time = distinct.iter().all(|r| time_of(r) == first_time);
    let shown: Vec<&str> = distinct
        .iter()
        .map(|r| match r.split_once(' ') {
            Some((day, _)) if same_time => day,
            _ => r,
        })
        .collect();
    let listed = match shown.as_slice() {
        [init @ .., last] if !init.is_empty() => format!("{} or {last}", init.join(", ")),
        _ => shown.join(""),
    };
    Unread::LeftOut(format!("\"{s}\" is {listed}"))
}

/// Why no single reading came out of a value.
enum ReadErr {
    /// The readings, each as a person checks it, with its format's name.
    Ambiguous(Vec<(String, String)>),
    /// No format read it; `Some` when one read a time the zone skips.
    Miss(Option<Gap>),
}

fn excel_miss(s: &str) -> String {
    format!(
        "\"{s}\" is not a spreadsheet serial day (a number from {} to {})",
        EXCEL_DAYS.start(),
        EXCEL_DAYS.end()
    )
}

/// The unambiguous spellings: Unix seconds, RFC 3339, Shopify's trailing
/// offset, a trailing ` UTC`, and ISO dates and times without an offset.
fn auto_read(s: &str) -> Result<Option<Read>, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .map(|t| Some(Read::Unix(t)))
            .map_err(|_| format!("\"{s}\" is too large for a timestamp"));
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(Read::Offset(d)));
    }
    let auto = &*AUTO;
    // Shopify's exports: `2024-03-05 14:22:10 +0100`.
    if let Some(read @ Read::Offset(_)) = auto.shopify.read(s) {
        return Ok(Some(read));
    }
    let (plain, utc) = match strip_utc(s) {
        Some(plain) => (plain, true),
        None => (s, false),
    };
    // A date alone is the common case (birthdays): tried first, it reads
    // the same as after the date-and-time spellings, which need a time.
    let local = plain
        .parse::<NaiveDate>()
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|at| Read::Local {
            at,
            has_time: false,
        })
        .or_else(|| auto.datetimes.iter().find_map(|f| f.read(plain)));
    // ` UTC` written after the time is its offset, whatever the zone.
    Ok(match local {
        Some(Read::Local { at, .. }) if utc => Some(Read::Offset(at.and_utc().fixed_offset())),
        other => other,
    })
}

fn auto_timestamp(s: &str, zone: Option<Tz>) -> Result<i64, String> {
    match auto_read(s)? {
        Some(read) => zone::seconds(read, zone).map_err(|Gap(tz)| {
            format!("\"{s}\" is a local time that does not exist in {tz} (the clocks skip it when they move forward)")
        }),
        None => Err(format!(
            "\"{s}\" is not a date or time listpipe can read by itself (ISO 8601 or Unix seconds){}",
            hint::GENERIC_TAIL
        )),
    }
}

/// Decision: without `format`, a time with an offset is a UTC date (as
/// before lists came), while a listed format's offset keeps the written date.
fn auto_date(s: &str) -> Result<String, String> {
    let date = match auto_read(s) {
        Ok(Some(Read::Local { at, .. })) => Some(at.date()),
        Ok(Some(Read::Offset(d))) => Some(d.naive_utc().date()),
        Ok(Some(Read::Unix(t))) => DateTime::<Utc>::from_timestamp(t, 0).map(|d| d.date_naive()),
        Ok(None) | Err(_) => None,
    };
    date.map(|d| d.format("%Y-%m-%d").to_string())
        .ok_or_else(|| {
            format!(
                "\"{s}\" is not a date listpipe can read by itself (YYYY-MM-DD){}",
                hint::GENERIC_TAIL
            )
        })
}

/// Unix seconds from text, with one format (a chrono format, `unix` or
/// `excel`) or the unambiguous spellings, read as UTC. Compiles the format
/// per call: a column's cells go through [`Times`].
pub fn parse_timestamp(s: &str, format: Option<&str>) -> Result<i64, String> {
    let formats: Vec<String> = format.map(str::to_string).into_iter().collect();
    Times::new(&formats, Ambiguous::Reject, None).timestamp(s)
}

/// A calendar date as `YYYY-MM-DD`, as [`parse_timestamp`] reads it.
pub fn parse_date(s: &str, format: Option<&str>) -> Result<String, String> {
    let formats: Vec<String> = format.map(str::to_string).into_iter().collect();
    Times::new(&formats, Ambiguous::Reject, None).date(s)
}
#[cfg(test)]
mod tests;

/// `ambiguous`: what a value becomes that two listed formats read differently
/// (`03/04/2025` as `%m/%d/%Y` and as `%d/%m/%Y`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ambiguous {
    /// A reject naming every reading.
    #[default]
    Reject,
    /// The first listed format that reads it wins.
    First,
    /// Left out: the cell counts as empty, and the run counts and says it.
    Omit,
}
