//! [`object_list`]: a list of objects (a receiver's orders, events) in
//! every shape real clients send it; an array's objects are read as the
//! body streams by, the other shapes through a [`Raw`] value.

use super::index_ordered;
use super::raw::{Raw, RawVisitor};
use serde::de::{Error, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;

/// A list of objects that may arrive as an array, one object, or an
/// index-keyed object (`{"0": {...}}` from PHP forms and XML `<item>`s).
/// An array's objects are read straight into `T` (a re-import reads a
/// million order lines this way); the other shapes through [`Raw`].
pub fn object_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    d.deserialize_any(ObjectListVisitor(PhantomData))
}

struct ObjectListVisitor<T>(PhantomData<T>);

impl<T: serde::de::DeserializeOwned> ObjectListVisitor<T> {
    fn other<E: Error>(v: Raw<'_>) -> Result<Option<Vec<T>>, E> {
        let items: Vec<Raw> = match v {
            Raw::Null => return Ok(None),
            Raw::Text(s) if s.is_empty() => Vec::new(),
            Raw::List(a) => a,
            Raw::Object(m) if m.keys().all(|k| k.bytes().all(|b| b.is_ascii_digit())) => {
                index_ordered(m).into_iter().map(Raw::from).collect()
            }
            Raw::Object(m) => vec![Raw::Object(m)],
            other => return Err(E::custom(format!("expected a list, got {other}"))),
        };
        items
            .into_iter()
            .map(ObjectVisitor::other)
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Visitor<'de> for ObjectListVisitor<T> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }
    scalars_via_raw!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4_096));
        while let Some(Object(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Some(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Self::other(RawVisitor.visit_map(map)?)
    }
}

/// One item of an [`object_list`] array: an object is read into `T` as it
/// streams by; anything else is refused with `T`'s own message (an array
/// with ours: serde would fill a struct from it by position).
struct Object<T>(T);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectVisitor(PhantomData)).map(Object)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<T: serde::de::DeserializeOwned> ObjectVisitor<T> {
    fn other<E: Error>(v: Raw<'_>) -> Result<T, E> {
        match v {
            Raw::List(_) => Err(E::custom("expected an object in the list, got an array")),
            v => serde_json::from_value(Value::from(v)).map_err(E::custom),
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    scalars_via_raw!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        Self::other(RawVisitor.visit_seq(seq)?)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Line {
        #[serde(default, deserialize_with = "crate::lenient::opt_string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "crate::lenient::opt_f64")]
        price: Option<f64>,
    }

    #[derive(Debug, Deserialize)]
    struct Lines {
        #[serde(default, deserialize_with = "super::object_list")]
        lines: Option<Vec<Line>>,
    }

    fn lines(json: &str) -> Result<Option<Vec<Line>>, String> {
        serde_json::from_str::<Lines>(json)
            .map(|l| l.lines)
            .map_err(|e| e.to_string())
    }

    /// An array's objects are read as they stream by, the other shapes
    /// through a value: both read the same objects under the same rules.
    #[test]
    fn an_object_list_in_every_shape_reads_the_same_objects() {
        let line = |id: &str, price| Line {
            id: Some(id.into()),
            price,
        };
        let two = Some(vec![line("a", Some(2.5)), line("7", None)]);
        assert_eq!(
            lines(r#"{"lines": [{"id": "a", "price": "2,5"}, {"id": 7}]}"#),
            Ok(two)
        );
        let keyed = lines(r#"{"lines": {"1": {"id": 7}, "0": {"id": "a", "price": 2.5}}}"#);
        assert_eq!(keyed, Ok(Some(vec![line("a", Some(2.5)), line("7", None)])));
        let one = lines(r#"{"lines": {"id": "a", "price": "x", "price": 1}}"#);
        assert_eq!(one, Ok(Some(vec![line("a", Some(1.0))])));
        assert_eq!(lines(r#"{"lines": ""}"#), Ok(Some(vec![])));
        assert_eq!(lines(r#"{"lines": []}"#), Ok(Some(vec![])));
        assert_eq!(lines(r#"{"lines": null}"#), Ok(None));
        for (json, message) in [
            (
                r#"{"lines": [["a"]]}"#,
                "expected an object in the list, got an array",
            ),
            (
                r#"{"lines": [{"id": "a"}, null]}"#,
                "invalid type: null, expected struct Line",
            ),
            (
                r#"{"lines": ["a"]}"#,
                "invalid type: string \"a\", expected struct Line",
            ),
            (
                r#"{"lines": [{"price": "x"}]}"#,
                r#"expected a number, got "x""#,
            ),
            (r#"{"lines": 5}"#, "expected a list, got 5"),
            (r#"{"lines": "a"}"#, r#"expected a list, got "a""#),
        ] {
            let got = lines(json).unwrap_err();
            assert!(got.starts_with(message), "{json}: {got}");
        }
    }
}
