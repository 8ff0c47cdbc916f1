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
