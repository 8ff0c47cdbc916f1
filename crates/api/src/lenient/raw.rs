//! [`Raw`]: a field's value as `serde_json::Value` would hold it, with its
//! text borrowed from the body where the body allows it.

use serde::de::{Error, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::fmt;

/// A field's value as sent. Objects come whole as JSON values: the one
/// decoder that takes an object's text apart, [`super::opt_text_map`],
/// reads the entries itself.
#[derive(Debug)]
pub(super) enum Raw<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Text(Cow<'a, str>),
    List(Vec<Raw<'a>>),
    Object(serde_json::Map<String, Value>),
}

impl<'de> Deserialize<'de> for Raw<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

/// What `serde_json::Value` would make of each call, text borrowed.
pub(super) struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: Error>(self, v: bool) -> Result<Raw<'de>, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E: Error>(self, v: i64) -> Result<Raw<'de>, E> {
        Ok(Raw::Number(v.into()))
    }
    fn visit_u64<E: Error>(self, v: u64) -> Result<Raw<'de>, E> {
        Ok(Raw::Number(v.into()))
    }
    fn visit_f64<E: Error>(self, v: f64) -> Result<Raw<'de>, E> {
        // As `Value`: a float JSON cannot hold (NaN, infinities) is null.
        Ok(Number::from_f64(v).map_or(Raw::Null, Raw::Number))
    }
    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: Error>(self, v: String) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Owned(v)))
    }
    fn visit_unit<E: Error>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: Error>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw<'de>, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4_096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Raw<'de>, A::Error> {
        serde_json::Map::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            .map(Raw::Object)
    }
}

impl From<Value> for Raw<'_> {
    fn from(v: Value) -> Self {
        match v {
            Value::Null => Raw::Null,
            Value::Bool(b) => Raw::Bool(b),
            Value::Number(n) => Raw::Number(n),
            Value::String(s) => Raw::Text(Cow::Owned(s)),
            Value::Array(items) => Raw::List(items.into_iter().map(Raw::from).collect()),
            Value::Object(m) => Raw::Object(m),
        }
    }
}

impl From<Raw<'_>> for Value {
    fn from(v: Raw<'_>) -> Self {
        match v {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Number(n) => Value::Number(n),
            Raw::Text(s) => Value::String(s.into_owned()),
            Raw::List(items) => Value::Array(items.into_iter().map(Value::from).collect()),
            Raw::Object(m) => Value::Object(m),
        }
    }
}

/// As JSON, the way error messages show what was sent.
impl fmt::Display for Raw<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Raw::Null => f.write_str("null"),
            Raw::Bool(b) => write!(f, "{b}"),
            Raw::Number(n) => write!(f, "{n}"),
            Raw::Text(s) => write!(f, "{}", Value::String(s.to_string())),
            Raw::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Raw::Object(m) => write!(f, "{}", Value::Object(m.clone())),
        }
    }
}
