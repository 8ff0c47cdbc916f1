//! Receivers (subscribers), spec §2.7, §3 and §4.8, in the shape of wire.md.

use super::Id;
use super::lenient as l;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A page of receivers when the request names no `pagesize`.
pub const DEFAULT_PAGESIZE: i64 = 50;
/// The largest `pagesize` the contract allows for receivers.
pub const MAX_PAGESIZE: i64 = 5000;

/// A receiver as read back. `tags`, `events` and `orders` are present only
/// when the `detail` bits of the request ask for them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Receiver {
    pub id: Id,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub email: String,
    #[serde(default)]
    pub group_id: Id,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub activated: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub registered: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub deactivated: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub imported: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub bounced: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub source: String,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub points: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stars: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub last_ip: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub last_location: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub last_client: String,
    /// Group-level attribute values (empty when no group was given).
    #[serde(deserialize_with = "l::string_map_or_empty", default)]
    pub attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "l::string_map_or_empty", default)]
    pub global_attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "l::bool_or_false", default)]
    pub active: bool,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub conversion_rate: f64,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub open_rate: f64,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub click_rate: f64,
    #[serde(
        deserialize_with = "l::opt_string_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tags: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::object_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub events: Option<Vec<Event>>,
    #[serde(
        deserialize_with = "l::object_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub orders: Option<Vec<Order>>,
}

/// A receiver of a page read in bulk (an export, a re-import's
/// comparison): the fields of [`Receiver`] those readers use, under the
/// same rules, their text borrowed from the answer's body
/// (the client's `Page`) instead of copied. Events, stars and
/// rates are skipped.
#[derive(Debug, Deserialize, PartialEq, Default)]
pub struct ReceiverRow<'a> {
    #[serde(default)]
    pub id: Id,
    #[serde(borrow, deserialize_with = "l::text_or_empty", default)]
    pub email: Cow<'a, str>,
    #[serde(default)]
    pub group_id: Id,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub activated: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub registered: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub deactivated: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub imported: i64,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub bounced: i64,
    #[serde(borrow, deserialize_with = "l::text_or_empty", default)]
    pub source: Cow<'a, str>,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub points: i64,
    #[serde(borrow, deserialize_with = "l::text_or_empty", default)]
    pub last_ip: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "l::text_or_empty", default)]
    pub last_location: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "l::text_or_empty", default)]
    pub last_client: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "l::text_map_or_empty", default)]
    pub attributes: l::TextMap<'a>,
    #[serde(borrow, deserialize_with = "l::text_map_or_empty", default)]
    pub global_attributes: l::TextMap<'a>,
    #[serde(deserialize_with = "l::bool_or_false", default)]
    pub active: bool,
    #[serde(borrow, deserialize_with = "l::opt_text_list", default)]
    pub tags: Option<Vec<Cow<'a, str>>>,
    #[serde(deserialize_with = "l::object_list", default)]
    pub orders: Option<Vec<Order>>,
}

impl<'a> From<&'a Receiver> for ReceiverRow<'a> {
    fn from(r: &'a Receiver) -> Self {
        let text = |s: &'a String| Cow::Borrowed(s.as_str());
        let map =
            |m: &'a BTreeMap<String, String>| m.iter().map(|(k, v)| (text(k), text(v))).collect();
        ReceiverRow {
            id: r.id,
            email: text(&r.email),
            group_id: r.group_id,
            activated: r.activated,
            registered: r.registered,
            deactivated: r.deactivated,
            imported: r.imported,
            bounced: r.bounced,
            source: text(&r.source),
            points: r.points,
            last_ip: text(&r.last_ip),
            last_location: text(&r.last_location),
            last_client: text(&r.last_client),
            attributes: map(&r.attributes),
            global_attributes: map(&r.global_attributes),
            active: r.active,
            tags: r.tags.as_ref().map(|t| t.iter().map(text).collect()),
            orders: r.orders.clone(),
        }
    }
}

/// The body of receiver create and update (the spec's `postdata`). Every
/// field is optional here; the server says which are required where.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ReceiverInput {
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
    pub registered: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub activated: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub deactivated: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub imported: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub bounced: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<String>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub points: Option<i64>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_ip: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_location: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_client: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string_map",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub attributes: Option<BTreeMap<String, String>>,
    #[serde(
        deserialize_with = "l::opt_string_map",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub global_attributes: Option<BTreeMap<String, String>>,
    /// Tags to add; a tag written `-name` removes that tag.
    #[serde(
        deserialize_with = "l::opt_string_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tags: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::object_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub orders: Option<Vec<Order>>,
}

impl ReceiverInput {
    pub fn email(email: impl Into<String>) -> Self {
        ReceiverInput {
            email: Some(email.into()),
            ..Default::default()
        }
    }
}

/// An order line attached to a receiver.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Order {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub order_id: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub product_id: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub product: String,
    #[serde(deserialize_with = "l::f64_or_zero", default)]
    pub price: f64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub currency: String,
    /// Some clients send `amount` for the quantity.
    #[serde(deserialize_with = "l::i64_or_zero", default, alias = "amount")]
    pub quantity: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub mailing_id: String,
    /// When the order was placed; the server sets the current time when 0.
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stamp: i64,
}

/// A mailing event recorded for a receiver.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Event {
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub stamp: i64,
    #[serde(rename = "type", deserialize_with = "l::string_or_empty", default)]
    pub kind: String,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub type_id: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub value: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub mailing_id: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub groups_id: String,
}

/// The `type` filter of receiver lists (spec §3).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReceiverType {
    #[default]
    All,
    Active,
    Inactive,
    Bounce,
}

impl ReceiverType {
    pub const CHOICES: &'static str = "all, active, inactive, bounce";

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "all" => Some(Self::All),
            "active" => Some(Self::Active),
            "inactive" => Some(Self::Inactive),
            "bounce" | "bounced" => Some(Self::Bounce),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Active => "active",
            Self::Inactive => "inactive",
            Self::Bounce => "bounce",
        }
    }
}

/// The `detail` bits of receiver reads.
pub mod detail {
    pub const EVENTS: i64 = 1;
    pub const ORDERS: i64 = 2;
    pub const TAGS: i64 = 4;
    pub const ALL: i64 = EVENTS | ORDERS | TAGS;
}

/// The receiver list query (query string of `GET .../receivers`, body of
/// `POST .../get_receivers`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ReceiverQuery {
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
        skip_serializing_if = "Option::is_none"
    )]
    pub detail: Option<i64>,
    /// Comma-separated emails (a JSON array is accepted too).
    #[serde(
        deserialize_with = "l::opt_string_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub email_list: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::opt_string_list",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub id_list: Option<Vec<String>>,
    /// A field name, a space, `asc` or `desc`.
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub order_by: Option<String>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub group_id: Option<i64>,
}

impl ReceiverQuery {
    /// Query pairs for a URL (lists joined by commas, as the spec says).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(v) = self.pagesize {
            q.push(("pagesize", v.to_string()));
        }
        if let Some(v) = self.page {
            q.push(("page", v.to_string()));
        }
        if let Some(v) = &self.kind {
            q.push(("type", v.clone()));
        }
        if let Some(v) = self.detail {
            q.push(("detail", v.to_string()));
        }
        if let Some(v) = &self.email_list {
            q.push(("email_list", v.join(",")));
        }
        if let Some(v) = &self.id_list {
            q.push(("id_list", v.join(",")));
        }
        if let Some(v) = &self.order_by {
            q.push(("order_by", v.clone()));
        }
        if let Some(v) = self.group_id {
            q.push(("group_id", v.to_string()));
        }
        q
    }
}

/// `PUT /v3/receivers/{id}/email`, an extension of the live service: the
/// receiver's new address.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct EmailChange {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub email: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page in the spellings real services use: ids and numbers as
    /// strings or numbers, `null`s, PHP's `[]` for an empty map, escapes,
    /// tags as one string, orders keyed by index.
    const PAGE: &str = r#"[
        {"id": "7", "email": "anna@example.com", "group_id": 3, "registered": "1714521600",
         "activated": 1714521601, "deactivated": null, "points": "-3", "source": "shop \"west\"",
         "last_ip": 3232235777, "active": "1",
         "attributes": {"firstname": "Anna", "city": "K\u00f6ln", "zip": 50667, "empty": null},
         "global_attributes": [], "tags": ["vip", "newsletter"],
         "orders": {"1": {"order_id": "o2", "price": "4,50"}, "0": {"order_id": "o1", "amount": 2}},
         "events": [{"type": "open"}], "stars": 3},
        {"id": 8, "email": "ben@example.com", "attributes": "", "tags": "solo", "active": false},
        {"id": 9}
    ]"#;

    #[test]
    fn a_page_row_reads_what_a_receiver_reads() {
        let owned: Vec<Receiver> = serde_json::from_str(PAGE).unwrap();
        let rows: Vec<ReceiverRow> = serde_json::from_str(PAGE).unwrap();
        assert_eq!(rows.len(), 3);
        for (r, row) in owned.iter().zip(&rows) {
            assert_eq!(&ReceiverRow::from(r), row);
        }
        let first = &rows[0];
        assert_eq!(first.source, "shop \"west\"");
        assert_eq!(first.last_ip, "3232235777");
        assert_eq!(first.attributes["city"], "Köln");
        assert_eq!(first.attributes["zip"], "50667");
        assert_eq!(first.attributes["empty"], "");
        let orders = first.orders.as_deref().unwrap();
        assert_eq!((orders[0].quantity, orders[1].price), (2, 4.5));
        assert_eq!(rows[1].tags.as_deref(), Some(&["solo".into()][..]));
    }

    /// Text without escapes is the body's own bytes, not a copy.
    #[test]
    fn a_page_rows_text_is_borrowed_from_the_body() {
        let rows: Vec<ReceiverRow> = serde_json::from_str(PAGE).unwrap();
        let first = &rows[0];
        assert!(matches!(first.email, Cow::Borrowed(_)));
        assert!(matches!(first.attributes["firstname"], Cow::Borrowed(_)));
        assert!(
            first
                .tags
                .iter()
                .flatten()
                .all(|t| matches!(t, Cow::Borrowed(_)))
        );
        // Escaped text cannot be borrowed.
        assert!(matches!(first.source, Cow::Owned(_)));
    }
}
