//! The account blacklist and group blocklists, spec §2.3, §2.4 and §4.3.

use super::lenient as l;
use serde::{Deserialize, Serialize};

/// Most entries one batch request may carry (spec §8).
pub const MAX_BATCH: usize = 1000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BlacklistEntry {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub email: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub comment: String,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stamp: i64,
}

/// Body of blacklist add/update and of one batch item.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BlacklistInput {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub email: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub comment: Option<String>,
}

impl BlacklistInput {
    pub fn new(email: impl Into<String>, comment: impl Into<String>) -> Self {
        BlacklistInput {
            email: Some(email.into()),
            comment: Some(comment.into()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BlacklistBatch {
    #[serde(deserialize_with = "l::object_list", default)]
    pub items: Option<Vec<BlacklistInput>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BlacklistValidate {
    #[serde(deserialize_with = "l::opt_string_list", default)]
    pub emails: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub group_id: Option<i64>,
    /// `true` answers the emails that ARE blocked instead of those that are not.
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub invert: Option<bool>,
}

/// Body of `POST /v3/groups/{id}/blacklist`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BlocklistInput {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub email: Option<String>,
}
