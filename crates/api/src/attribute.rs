//! Attributes, spec §2.6 and §4.6: global (`group_id` 0) or group-local.

use super::lenient as l;
use serde::{Deserialize, Serialize};

/// An attribute definition. Attribute ids are JSON numbers (wire.md). Older
/// clients read `groups_id` and `value`, so both spellings are written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Attribute {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub id: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    /// 0 for a global attribute.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub group_id: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub description: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub preview_value: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub default_value: String,
    #[serde(rename = "type", deserialize_with = "l::string_or_empty", default)]
    pub kind: String,
    /// The placeholder, `{NAME}`.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub tag: String,
}

impl Attribute {
    /// The same record with the old spellings added, as it goes on the wire.
    pub fn to_wire(&self) -> serde_json::Value {
        // Cannot fail: a struct of strings, numbers and a string-keyed map.
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("groups_id".into(), self.group_id.into());
            o.insert("value".into(), self.default_value.clone().into());
        }
        v
    }
}

/// Body of attribute create and update.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributeInput {
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    #[serde(
        rename = "type",
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<String>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none",
        alias = "groups_id"
    )]
    pub group_id: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub preview_value: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_value: Option<String>,
}

impl AttributeInput {
    pub fn new(name: impl Into<String>, kind: AttributeType) -> Self {
        AttributeInput {
            name: Some(name.into()),
            kind: Some(kind.as_str().into()),
            ..Default::default()
        }
    }
}

/// The attribute types in use (wire.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttributeType {
    Text,
    Number,
    Gender,
    Date,
}

impl AttributeType {
    pub const CHOICES: &'static str = "text, number, gender, date";

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Some(Self::Text),
            "number" => Some(Self::Number),
            "gender" => Some(Self::Gender),
            "date" => Some(Self::Date),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Number => "number",
            Self::Gender => "gender",
            Self::Date => "date",
        }
    }
}

/// Body of the two "set a receiver's attribute value" operations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributeValueInput {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub value: Option<String>,
}

/// One entry of `GET /v3/receivers/{id}/attributes`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributeValue {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub id: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub group_id: i64,
    #[serde(rename = "type", deserialize_with = "l::string_or_empty", default)]
    pub kind: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub value: String,
}

/// `GET /v3/attributes/limits`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributeLimits {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub max_global: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub used_global: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub max_per_group: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub max_name_length: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub max_value_length: i64,
}
