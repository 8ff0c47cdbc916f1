//! Filters (segments), spec §2.9 and §4.7. Served in full by the server
//! issue; the types live here so client and server share them.

use super::Id;
use super::lenient as l;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Rule {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub field: String,
    /// eq, neq, sm, bg, isnull, notisnull, contains, begins, ends, ismale,
    /// isfemale; clients send either case.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub logic: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub condition: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Filter {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub operator: String,
    #[serde(deserialize_with = "l::object_list", default)]
    pub rules: Option<Vec<Rule>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FilterInput {
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    #[serde(
        deserialize_with = "l::object_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub rules: Option<Vec<Rule>>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub operator: Option<String>,
}

/// `POST /v3/receivers/filter`: rules evaluated on the fly over some groups.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RuntimeFilter {
    #[serde(
        deserialize_with = "l::object_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub rules: Option<Vec<Rule>>,
    /// Group ids to search; empty or absent: every group of the account.
    #[serde(
        deserialize_with = "l::opt_string_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub groups: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub operator: Option<String>,
    /// A field name, a space, `asc` or `desc`.
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub orderby: Option<String>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub detail: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub pagesize: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub page: Option<i64>,
    /// Only active receivers.
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub activeonly: Option<bool>,
}

/// `GET .../filters/{id}/stats`: the state counts of the receivers a filter selects.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FilterStats {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub total_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub active_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub inactive_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub bounce_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub time: i64,
}
