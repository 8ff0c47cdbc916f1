//! Forms (deprecated in the spec, still served), spec §2.10 and §4.5.

use super::Id;
use super::lenient as l;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Form {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    /// The group the form registers receivers in.
    #[serde(default)]
    pub customer_tables_id: Id,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FormTemplateInput {
    #[serde(default)]
    pub extradata: Option<FormExtraData>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FormExtraData {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub name: Option<String>,
    #[serde(deserialize_with = "l::opt_string", default)]
    pub title: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FormSendInput {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub email: Option<String>,
    #[serde(default)]
    pub doidata: Option<DoiData>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub groups_id: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DoiData {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub user_ip: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub referer: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub user_agent: String,
}
