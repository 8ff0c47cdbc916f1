//! Client (account) records, spec §2.2 and §4.2. Served in full by the
//! server issue; the types live here so client and server share them.

use super::Id;
use super::lenient as l;
use serde::{Deserialize, Serialize};

/// `GET /v3/debug/whoami` and `GET /v3/clients/{id}`; clients require `id`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ClientInfo {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub firstname: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub company: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub email: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub login_domain: String,
}

/// `GET /v3/clients/{id}/plan`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Plan {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::bool_or_false", default)]
    pub flatrate: bool,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub emails: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub receiver_cap: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub runtime: String,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub price: f64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub currency: String,
}
