//! Lenient field decoders. The same request structs read JSON, XML and form
//! bodies; in the last two every scalar is text, and real clients send ids as
//! numbers or strings, booleans as `true`, `"true"` or `"1"`. Each decoder
//! reads the field as a [`Raw`] value, accepts the spellings in use and
//! rejects the rest with a message naming the expected type.
//!
//! [`Raw`] is `serde_json::Value` with its text borrowed from the body where
//! the body allows it (JSON without escapes): pages of receivers are mostly
//! text, and a page decoded into [`ReceiverRow`](super::ReceiverRow)s
//! copies none of it (issue 15: allocation was a quarter of an export's
//! client time).

mod raw;

use raw::{Raw, RawVisitor};
use serde::de::{Error, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// A scalar's text; anything else (null included) is given back. Text is
/// moved, not copied.
fn scalar_text(v: Raw<'_>) -> Result<Cow<'_, str>, Raw<'_>> {
    match v {
        Raw::Text(s) => Ok(s),
        Raw::Number(n) => Ok(Cow::Owned(n.to_string())),
        Raw::Bool(b) => Ok(Cow::Borrowed(if b { "true" } else { "false" })),
        other => Err(other),
    }
}

/// An optional integer: number, numeric string; null or `""` is absent.
pub fn i64_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Null => Ok(None),
        Raw::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                    .map(|f| f as i64)
            })
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("expected an integer, got {n}"))),
        Raw::Text(s) if s.trim().is_empty() => Ok(None),
        Raw::Text(s) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected an integer, got \"{s}\""))),
        Raw::Bool(b) => Ok(Some(b as i64)),
        other => Err(D::Error::custom(format!(
            "expected an integer, got {other}"
        ))),
    }
}

pub fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    i64_value(d)
}

pub fn i64_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(i64_value(d)?.unwrap_or(0))
}

/// An optional float: number or numeric string (`,` accepted as decimal mark).
pub fn opt_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Null => Ok(None),
        Raw::Number(n) => Ok(n.as_f64()),
        Raw::Text(s) if s.trim().is_empty() => Ok(None),
        Raw::Text(s) => s
            .trim()
            .replace(',', ".")
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("expected a number, got \"{s}\""))),
        other => Err(D::Error::custom(format!("expected a number, got {other}"))),
    }
}

pub fn f64_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(opt_f64(d)?.unwrap_or(0.0))
}

/// An optional boolean: `true`/`false`, `1`/`0`, `"true"`, `"yes"`, `"on"`...
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Null => Ok(None),
        Raw::Bool(b) => Ok(Some(b)),
        Raw::Number(n) => Ok(Some(n.as_f64().unwrap_or(0.0) != 0.0)),
        Raw::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "true" | "1" | "yes" | "on" => Ok(Some(true)),
            "false" | "0" | "no" | "off" => Ok(Some(false)),
            _ => Err(D::Error::custom(format!("expected a boolean, got \"{s}\""))),
        },
        other => Err(D::Error::custom(format!("expected a boolean, got {other}"))),
    }
}

pub fn bool_or_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(opt_bool(d)?.unwrap_or(false))
}

/// Optional text, borrowed from the body where it can be: numbers and
/// booleans are taken as their text.
pub fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Null => Ok(None),
        v => scalar_text(v)
            .map(Some)
            .map_err(|v| D::Error::custom(format!("expected a string, got {v}"))),
    }
}

pub fn text_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Cow<'de, str>, D::Error> {
    Ok(opt_text(d)?.unwrap_or_default())
}

/// An optional string: numbers and booleans are taken as their text.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(opt_text(d)?.map(Cow::into_owned))
}

pub fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(opt_string(d)?.unwrap_or_default())
}

/// The values of an index-keyed object in index order (`"10"` after `"9"`).
fn index_ordered(map: serde_json::Map<String, Value>) -> Vec<Value> {
    let mut items: Vec<(u64, String, Value)> = map
        .into_iter()
        .map(|(k, v)| (k.parse().unwrap_or(u64::MAX), k, v))
        .collect();
    items.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    items.into_iter().map(|(_, _, v)| v).collect()
}

fn text_list(v: Raw<'_>) -> Result<Vec<Cow<'_, str>>, String> {
    match v {
        Raw::Null => Ok(Vec::new()),
        Raw::Text(s) if s.is_empty() => Ok(Vec::new()),
        Raw::List(items) => items.into_iter().map(list_item).collect(),
        // XML and PHP forms give `{"0": .., "1": ..}` or `{"item": ..}` shapes.
        Raw::Object(map) => index_ordered(map)
            .into_iter()
            .map(|v| list_item(v.into()))
            .collect(),
        v => scalar_text(v)
            .map(|s| vec![s])
            .map_err(|_| "expected a list of strings".into()),
    }
}

fn list_item(i: Raw<'_>) -> Result<Cow<'_, str>, String> {
    scalar_text(i).map_err(|i| format!("expected a list of strings, got {i}"))
}

/// An optional list of texts, borrowed where they can be; a single text is
/// a list of one.
pub fn opt_text_list<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Cow<'de, str>>>, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Null => Ok(None),
        v => text_list(v).map(Some).map_err(D::Error::custom),
    }
}

/// An optional list of strings; a single string is a list of one.
pub fn opt_string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(opt_text_list(d)?.map(|l| l.into_iter().map(Cow::into_owned).collect()))
}

/// Attribute values by name, as sent.
pub type TextMap<'a> = BTreeMap<Cow<'a, str>, Cow<'a, str>>;

/// An optional map of name to text value (attribute values travel as
/// strings), its text borrowed where it can be: read entry by entry, not
/// through a JSON object of values.
pub fn opt_text_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TextMap<'de>>, D::Error> {
    d.deserialize_any(TextMapVisitor)
}

pub fn text_map_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<TextMap<'de>, D::Error> {
    Ok(opt_text_map(d)?.unwrap_or_default())
}

/// An optional map of name to text value, owned.
pub fn opt_string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    Ok(opt_text_map(d)?.map(|m| {
        m.into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }))
}

pub fn string_map_or_empty<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(opt_string_map(d)?.unwrap_or_default())
}

/// The visit methods of a scalar, text and null, each reading the value
/// as a [`Raw`] and handing it to the visitor's own `other`; an option's
/// `Some` is visited as what it holds.
macro_rules! scalars_via_raw {
    () => {
        fn visit_bool<E: Error>(self, v: bool) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_bool(v)?)
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_i64(v)?)
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_u64(v)?)
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_f64(v)?)
        }
        fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_borrowed_str(v)?)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_str(v)?)
        }
        fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
            Self::other(RawVisitor.visit_string(v)?)
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Self::other(Raw::Null)
        }
        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Self::other(Raw::Null)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}

mod objects;
pub use objects::object_list;

/// An object's entries as text; `null`, `""` and `[]` are an empty map
/// (PHP's encoding of an empty array), null values empty text.
struct TextMapVisitor;

impl TextMapVisitor {
    fn other<'de, E: Error>(v: Raw<'de>) -> Result<Option<TextMap<'de>>, E> {
        match v {
            Raw::Null => Ok(None),
            Raw::Text(s) if s.is_empty() => Ok(Some(TextMap::new())),
            Raw::List(a) if a.is_empty() => Ok(Some(TextMap::new())),
            other => Err(E::custom(format!(
                "expected an object of name: value, got {other}"
            ))),
        }
    }
}

impl<'de> Visitor<'de> for TextMapVisitor {
    type Value = Option<TextMap<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of name: value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = TextMap::new();
        while let Some(k) = map.next_key::<Raw<'de>>()? {
            let k = scalar_text(k)
                .map_err(|k| A::Error::custom(format!("expected a name, got {k}")))?;
            let v = match map.next_value::<Raw<'de>>()? {
                Raw::Null => Cow::Borrowed(""),
                v => scalar_text(v).map_err(|_| {
                    A::Error::custom(format!("attribute \"{k}\": expected a text value"))
                })?,
            };
            out.insert(k, v);
        }
        Ok(Some(out))
    }
    scalars_via_raw!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Self::other(RawVisitor.visit_seq(seq)?)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Fields {
        #[serde(default, deserialize_with = "super::opt_i64")]
        n: Option<i64>,
        #[serde(default, deserialize_with = "super::opt_bool")]
        b: Option<bool>,
        #[serde(default, deserialize_with = "super::opt_f64")]
        f: Option<f64>,
        #[serde(default, deserialize_with = "super::opt_string")]
        s: Option<String>,
        #[serde(default, deserialize_with = "super::opt_string_list")]
        l: Option<Vec<String>>,
        #[serde(default, deserialize_with = "super::opt_string_map")]
        m: Option<BTreeMap<String, String>>,
    }

    fn read(json: &str) -> Result<Fields, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    fn refused(json: &str) -> String {
        read(json).unwrap_err()
    }

    #[test]
    fn scalars_in_every_spelling_in_use() {
        let f =
            read(r#"{"n": "42", "b": "yes", "f": "2,5", "s": 12, "l": "one", "m": []}"#).unwrap();
        assert_eq!((f.n, f.b, f.f), (Some(42), Some(true), Some(2.5)));
        assert_eq!(f.s.as_deref(), Some("12"));
        assert_eq!(f.l, Some(vec!["one".to_string()]));
        assert_eq!(f.m, Some(BTreeMap::new()));
        let f = read(r#"{"n": 3.0, "b": 0, "s": true, "l": {"1": "b", "0": "a"}}"#).unwrap();
        assert_eq!(
            (f.n, f.b, f.s.as_deref()),
            (Some(3), Some(false), Some("true"))
        );
        assert_eq!(f.l, Some(vec!["a".to_string(), "b".to_string()]));
        let f = read(r#"{"n": "", "b": null, "s": null, "m": {"a": null, "b": 1}}"#).unwrap();
        assert_eq!((f.n, f.b, f.s), (None, None, None));
        assert_eq!(f.m.unwrap()["b"], "1");
    }

    /// What a wrong value is refused with, as the JSON it was.
    #[test]
    fn refusals_name_the_expected_type_and_show_the_value() {
        for (json, message) in [
            (r#"{"n": [1, "x"]}"#, r#"expected an integer, got [1,"x"]"#),
            (r#"{"n": "4x"}"#, r#"expected an integer, got "4x""#),
            (r#"{"n": 1.5}"#, "expected an integer, got 1.5"),
            (r#"{"b": "maybe"}"#, r#"expected a boolean, got "maybe""#),
            (r#"{"f": {"a": 1}}"#, r#"expected a number, got {"a":1}"#),
            (r#"{"s": ["a"]}"#, r#"expected a string, got ["a"]"#),
            (
                r#"{"l": [["a"]]}"#,
                r#"expected a list of strings, got ["a"]"#,
            ),
            (r#"{"l": [null]}"#, "expected a list of strings, got null"),
            (
                r#"{"m": {"city": ["x"]}}"#,
                r#"attribute "city": expected a text value"#,
            ),
            (
                r#"{"m": "Berlin"}"#,
                r#"expected an object of name: value, got "Berlin""#,
            ),
            (
                r#"{"m": [1]}"#,
                "expected an object of name: value, got [1]",
            ),
        ] {
            let got = refused(json);
            assert!(got.starts_with(message), "{json}: {got}");
        }
    }
}
