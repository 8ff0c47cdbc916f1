//! Lenient field decoders. The same request structs read JSON, XML and form
//! bodies; in the last two every scalar is text, and real clients send ids as
//! numbers or strings, booleans as `true`, `"true"` or `"1"`. Each decoder
//! goes through `serde_json::Value`, accepts the spellings in use and rejects
//! the rest with a message naming the expected type.

use serde::de::Error;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// A scalar's text; anything else is given back. Takes the value, so a
/// string is moved, not copied: pages of receivers are mostly strings.
fn scalar_text(v: Value) -> Result<String, Value> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(other),
    }
}

/// An optional integer: number, numeric string; null or `""` is absent.
pub fn i64_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                    .map(|f| f as i64)
            })
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("expected an integer, got {n}"))),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected an integer, got \"{s}\""))),
        Value::Bool(b) => Ok(Some(b as i64)),
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
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => s
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
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        Value::Number(n) => Ok(Some(n.as_f64().unwrap_or(0.0) != 0.0)),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
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

/// An optional string: numbers and booleans are taken as their text.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => scalar_text(v)
            .map(Some)
            .map_err(|v| D::Error::custom(format!("expected a string, got {v}"))),
    }
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

fn string_list(v: Value) -> Result<Vec<String>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::Array(items) => items.into_iter().map(list_item).collect(),
        // XML and PHP forms give `{"0": .., "1": ..}` or `{"item": ..}` shapes.
        Value::Object(map) => index_ordered(map).into_iter().map(list_item).collect(),
        v => scalar_text(v)
            .map(|s| vec![s])
            .map_err(|_| "expected a list of strings".into()),
    }
}

fn list_item(i: Value) -> Result<String, String> {
    scalar_text(i).map_err(|i| format!("expected a list of strings, got {i}"))
}

/// An optional list of strings; a single string is a list of one.
pub fn opt_string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => string_list(v).map(Some).map_err(D::Error::custom),
    }
}

pub fn string_list_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    string_list(Value::deserialize(d)?).map_err(D::Error::custom)
}

/// An optional map of name to text value (attribute values travel as strings).
pub fn opt_string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(Some(BTreeMap::new())),
        Value::Array(a) if a.is_empty() => Ok(Some(BTreeMap::new())),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::Null => Ok((k, String::new())),
                v => match scalar_text(v) {
                    Ok(s) => Ok((k, s)),
                    Err(_) => Err(D::Error::custom(format!(
                        "attribute \"{k}\": expected a text value"
                    ))),
                },
            })
            .collect::<Result<_, _>>()
            .map(Some),
        other => Err(D::Error::custom(format!(
            "expected an object of name: value, got {other}"
        ))),
    }
}

pub fn string_map_or_empty<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(opt_string_map(d)?.unwrap_or_default())
}

/// A list of objects that may arrive as an array, one object, or an
/// index-keyed object (`{"0": {...}}` from PHP forms and XML `<item>`s).
pub fn object_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let items = match Value::deserialize(d)? {
        Value::Null => return Ok(None),
        Value::String(s) if s.is_empty() => Vec::new(),
        Value::Array(a) => a,
        Value::Object(m) if m.keys().all(|k| k.bytes().all(|b| b.is_ascii_digit())) => {
            index_ordered(m)
        }
        v @ Value::Object(_) => vec![v],
        other => return Err(D::Error::custom(format!("expected a list, got {other}"))),
    };
    items
        .into_iter()
        .map(|v| match v {
            // serde fills a struct from an array by position: refuse it.
            Value::Array(_) => Err(D::Error::custom(
                "expected an object in the list, got an array",
            )),
            v => serde_json::from_value(v).map_err(D::Error::custom),
        })
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}
