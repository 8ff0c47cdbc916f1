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
    /// The heading the form shows (the template's `extradata.title`).
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub title: String,
    /// The template it was made from (`default`).
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub template: String,
    /// When it was made, Unix seconds.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stamp: i64,
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

/// The query of `GET /v3/forms/{id}/code`; absent flags take the spec's
/// defaults (badget false, embedded false, js true, css true).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FormCodeQuery {
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub badget: Option<bool>,
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub embedded: Option<bool>,
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub js: Option<bool>,
    #[serde(
        deserialize_with = "l::opt_bool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub css: Option<bool>,
}

impl FormCodeQuery {
    /// Query pairs for a URL.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        [
            ("badget", self.badget),
            ("embedded", self.embedded),
            ("js", self.js),
            ("css", self.css),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v.to_string())))
        .collect()
    }
}

/// A double-opt-in mail as the built-in server writes it to its outbox
/// (`GET /v3/outbox`, a listpipe extension; `listpipe outbox`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct OutboxMail {
    pub id: Id,
    /// `activate` or `deactivate`.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub kind: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub to: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub subject: String,
    /// The plain-text body, with the confirmation link.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub text: String,
    /// The confirmation link (also in `text`), one-time.
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub link: String,
    #[serde(default)]
    pub form_id: Id,
    #[serde(default)]
    pub group_id: Id,
    #[serde(default)]
    pub receiver_id: Id,
    #[serde(default)]
    pub doidata: DoiData,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub created: i64,
}

/// The query of `GET /v3/outbox`: newest first, paged like receiver lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct OutboxQuery {
    /// Only mails to this address.
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub email: Option<String>,
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
}

impl OutboxQuery {
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(v) = &self.email {
            q.push(("email", v.clone()));
        }
        if let Some(v) = self.pagesize {
            q.push(("pagesize", v.to_string()));
        }
        if let Some(v) = self.page {
            q.push(("page", v.to_string()));
        }
        q
    }
}
