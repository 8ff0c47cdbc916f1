//! One mapped value: taken from its column or constant, cleaned (trim,
//! case, value map, default) and converted to its wire form, or an error
//! that becomes the row's reject reason.

use super::time::{Times, Unread};
use crate::pipeline::{Case, Mapping, ValueKind};
use listpipe_api::email;
use std::borrow::Cow;

/// Cleans a raw value as the mapping says; `None` when it ends up empty.
pub fn clean<'a>(m: &'a Mapping, raw: Option<&'a str>) -> Option<Cow<'a, str>> {
    clean_with(m, raw, str::trim)
}

/// [`clean`], with `trim` the mapping's trimming (an address is trimmed of
/// spaces and tabs only: [`email::trim_ends`]).
pub fn clean_with<'a>(
    m: &'a Mapping,
    raw: Option<&'a str>,
    trim: fn(&str) -> &str,
) -> Option<Cow<'a, str>> {
    // Borrowed all the way unless the case changes: no allocation per cell.
    let mut v = raw.unwrap_or("");
    if m.trim {
        v = trim(v);
    }
    if let Some(chars) = &m.trim_chars {
        v = v.trim_matches(|c| chars.contains(c));
    }
    if m.null_values
        .iter()
        .any(|n| n.eq_ignore_ascii_case(v.trim()))
    {
        v = "";
    }
    let v: Cow<'a, str> = match m.case {
        Case::Keep => Cow::Borrowed(v),
        Case::Lower if !v.chars().any(char::is_uppercase) => Cow::Borrowed(v),
        Case::Lower => Cow::Owned(v.to_lowercase()),
        Case::Upper => Cow::Owned(v.to_uppercase()),
        Case::Title => Cow::Owned(title_case(v)),
    };
    let v = match m.map.iter().find(|(from, _)| *from == v) {
        Some((_, to)) => Cow::Borrowed(to.as_str()),
        None => v,
    };
    if v.is_empty() {
        m.default
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(Cow::Borrowed)
    } else {
        Some(v)
    }
}

fn title_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if start {
            out.extend(c.to_uppercase());
        } else {
            out.extend(c.to_lowercase());
        }
        start = c.is_whitespace() || c == '-';
    }
    out
}

/// A valid address in its normalised form (see [`listpipe_api::email`]), or the
/// reject reason naming the value and why.
pub fn normalize_email(s: &str, rules: email::Rules) -> Result<String, String> {
    email::parse(s, rules).map_err(|why| {
        format!(
            "\"{}\" is not a valid email address: {why}",
            shown(email::trim_ends(s))
        )
    })
}

/// A value as a reason quotes it: ASCII control characters (a line break
/// in the cell) written as escapes, so the reason stays on one line and
/// shows what was refused.
fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_ascii_control()) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\r' => "\\r".to_string(),
                '\n' => "\\n".to_string(),
                '\t' => "\\t".to_string(),
                c if c.is_ascii_control() => format!("\\u{{{:x}}}", u32::from(c)),
                c => c.to_string(),
            })
            .collect(),
    )
}

/// The spellings a gender attribute takes (compared without case): short
/// codes, English and German words and salutations.
pub const GENDERS: &[&str] = &[
    "m", "f", "w", "d", "x", "u", "male", "female", "diverse", "man", "woman", "mann", "frau",
    "herr", "divers", "mr", "mr.", "mrs", "mrs.", "ms", "ms.", "miss", "mx", "mx.", "unknown",
];

/// Why a cleaned value is not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsent {
    /// Refused: the row's reject reason.
    Rejected(String),
    /// Left out (`ambiguous = "omit"`): the cell counts as empty; what the
    /// value reads as, for the note that counts them.
    LeftOut(String),
}

impl From<String> for Unsent {
    fn from(why: String) -> Unsent {
        Unsent::Rejected(why)
    }
}

impl From<Unread> for Unsent {
    fn from(u: Unread) -> Unsent {
        match u {
            Unread::Refused(why) => Unsent::Rejected(why),
            Unread::LeftOut(what) => Unsent::LeftOut(what),
        }
    }
}

/// Converts a cleaned value to what the API takes for `kind`; `times` is the
/// column's date and time reading, compiled once (see [`Times::new`]). A
/// date or time its formats read two ways is left out with `ambiguous =
/// "omit"`.
pub fn convert<'a>(
    kind: ValueKind,
    m: &Mapping,
    times: &Times,
    v: Cow<'a, str>,
) -> Result<Cow<'a, str>, Unsent> {
    let owned = |r: Result<String, String>| r.map(Cow::Owned).map_err(Unsent::from);
    match kind {
        ValueKind::Text => Ok(v),
        ValueKind::Gender if GENDERS.contains(&v.to_lowercase().as_str()) => Ok(v),
        ValueKind::Gender => Err(Unsent::Rejected(format!(
            "\"{v}\" is not a gender spelling listpipe knows (m, f, d, male, female, Herr, Frau, Mr, Mrs...); give it a `map` entry"
        ))),
        ValueKind::Email => owned(normalize_email(&v, m.email_rules)),
        ValueKind::Timestamp if v.eq_ignore_ascii_case("now") => {
            Ok(Cow::Owned(chrono::Utc::now().timestamp().to_string()))
        }
        ValueKind::Timestamp => Ok(Cow::Owned(times.read_timestamp(&v)?.to_string())),
        ValueKind::Date => Ok(Cow::Owned(times.read_date(&v)?)),
        ValueKind::Integer => owned(
            v.trim()
                .parse::<i64>()
                .map(|n| n.to_string())
                .map_err(|_| format!("\"{v}\" is not a whole number")),
        ),
        ValueKind::Number => {
            let t = v.trim();
            let t = if m.decimal == ',' {
                t.replace('.', "").replace(',', ".")
            } else {
                t.replace(',', "")
            };
            match t.parse::<f64>() {
                Ok(n) if n.is_finite() => Ok(Cow::Owned(t)),
                _ => Err(Unsent::Rejected(format!(
                    "\"{v}\" is not a number{}",
                    if m.decimal == '.' && v.contains(',') {
                        " (set decimal = \",\")"
                    } else {
                        ""
                    }
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::ValueFrom;

    fn m() -> Mapping {
        Mapping {
            from: ValueFrom::Column("x".into()),
            trim: true,
            decimal: '.',
            ..Default::default()
        }
    }

    #[test]
    fn values_are_trimmed_cased_mapped_and_defaulted() {
        let mapping = Mapping {
            case: Case::Lower,
            map: vec![("herr".into(), "m".into())],
            default: Some("u".into()),
            ..m()
        };
        assert_eq!(clean(&mapping, Some("  Herr ")).as_deref(), Some("m"));
        assert_eq!(clean(&mapping, Some("   ")).as_deref(), Some("u"));
        assert_eq!(
            clean(
                &Mapping {
                    case: Case::Title,
                    ..m()
                },
                Some("anna-lena MÜLLER")
            )
            .as_deref(),
            Some("Anna-Lena Müller")
        );
    }

    #[test]
    fn numbers_follow_the_decimal_mark() {
        assert_eq!(
            convert(
                ValueKind::Number,
                &Mapping {
                    decimal: ',',
                    ..m()
                },
                &Times::default(),
                "1.049,90".into()
            ),
            Ok("1049.90".into())
        );
        assert_eq!(
            convert(ValueKind::Number, &m(), &Times::default(), "49.90".into()),
            Ok("49.90".into())
        );
        assert!(convert(ValueKind::Number, &m(), &Times::default(), "abc".into()).is_err());
    }

    #[test]
    fn emails_are_lower_cased_and_checked() {
        assert_eq!(
            normalize_email("  Juergen.Schulz@Example.com ", email::Rules::STRICT),
            Ok("juergen.schulz@example.com".into())
        );
        assert_eq!(
            normalize_email("anna @example.com", email::Rules::STRICT),
            Err("\"anna @example.com\" is not a valid email address: a space".into())
        );
    }
}
