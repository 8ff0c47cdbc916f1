//! Debug operations, spec §4.1.

use super::lenient as l;
use serde::{Deserialize, Serialize};

/// `GET /v3/debug/ttl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Ttl {
    /// Seconds the calling token has left.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub ttl: i64,
    /// When it expires, RFC 3339.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub date: String,
}
