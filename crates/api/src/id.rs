//! Resource identifiers. Ids of groups, receivers, filters, forms and clients
//! travel as JSON strings of digits (`"240803"`); clients send them as either.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A numeric id written as a JSON string and read from a string or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Id(pub i64);

impl Id {
    /// Parses a path segment; `None` for anything but a non-negative integer.
    pub fn parse(s: &str) -> Option<Id> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok().map(Id)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<i64> for Id {
    fn from(v: i64) -> Self {
        Id(v)
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = crate::lenient::i64_value(d)?;
        Ok(Id(v.unwrap_or(0)))
    }
}
