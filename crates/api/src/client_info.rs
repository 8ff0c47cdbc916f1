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

/// `GET /v3/clients`: a single client comes as an object, several (or none,
/// on a page past the end) as an array (spec §4.2). Reads either.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ClientList {
    Many(Vec<ClientInfo>),
    One(ClientInfo),
}

impl ClientList {
    pub fn into_vec(self) -> Vec<ClientInfo> {
        match self {
            ClientList::Many(v) => v,
            ClientList::One(c) => vec![c],
        }
    }
}

/// One entry of `GET /v3/clients/{id}/limits`. `value` is the limit, `used`
/// how much of it the account uses; `null` where there is no limit, or where
/// usage is not counted (a per-request limit).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ClientLimit {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::opt_i64", default)]
    pub value: Option<i64>,
    #[serde(deserialize_with = "l::opt_i64", default)]
    pub used: Option<i64>,
}

/// `GET /v3/clients/{id}/invoiceaddress`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct InvoiceAddress {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub company: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub street: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub zip: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub city: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub country: String,
}

/// One entry of `GET /v3/clients/{id}/users`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ClientUser {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub email: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub name: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub role: String,
}
