//! Groups (receiver lists), spec §2.5 and §4.4.

use super::Id;
use super::lenient as l;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Group {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::bool_or_false", default)]
    pub locked: bool,
    #[serde(deserialize_with = "l::bool_or_false", default)]
    pub backup: bool,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub receiver_info: String,
    /// Creation time.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stamp: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub last_mailing: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub last_changed: i64,
}

/// Body of create (name required) and update (all optional).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GroupInput {
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub receiver_info: Option<String>,
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub locked: Option<bool>,
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub backup: Option<bool>,
}

impl GroupInput {
    pub fn named(name: impl Into<String>) -> Self {
        GroupInput {
            name: Some(name.into()),
            ..Default::default()
        }
    }
}

/// `GET /v3/groups/{id}/stats`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GroupStats {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub total_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub inactive_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub active_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub bounce_count: i64,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub avg_points: f64,
    /// 0 (empty) to 5, from the share of active receivers.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub quality: i64,
    /// When the figures were taken.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub time: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub order_count: i64,
}

/// `GET /v3/groups/{id}/advancedstats`: the stats plus what the group holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GroupAdvancedStats {
    #[serde(flatten)]
    pub stats: GroupStats,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub awaiting_activation_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub attribute_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub filter_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub form_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub blocklist_count: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub tagged_count: i64,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub order_revenue: f64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub last_changed: i64,
}
