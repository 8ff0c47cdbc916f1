//! Every key the pipeline parser accepts, by where it is written. A test
//! (`tests/it/pipeline_keys.rs`) walks each one and asserts its effect, and
//! fails when a key is added here without a row of its own: no key is
//! accepted and then ignored.

use super::conditions::CONDITION_KEYS;
use super::export::{EXPORT_KEYS, RULE_KEYS};
use super::parse::{
    ATTRIBUTE_KEYS, BLACKLIST_KEYS, EMAIL_KEYS, IMPORT_KEYS, MAPPING_KEYS, TAGS_KEYS, TARGET_KEYS,
    TOP_KEYS,
};
use super::source_key::SOURCE_KEYS;
use super::step_columns::FILL_DOWN_KEYS;

/// `[import.receiver]`: one key per receiver field ([`ReceiverField::ALL`](super::ReceiverField::ALL)).
pub const RECEIVER_KEYS: &[&str] = &[
    "email",
    "registered",
    "activated",
    "deactivated",
    "imported",
    "bounced",
    "source",
    "points",
    "last_ip",
    "last_location",
    "last_client",
];

/// `[import.orders]`: one key per order field, and where the orders come from.
pub const ORDERS_KEYS: &[&str] = &[
    "order_id",
    "product_id",
    "product",
    "price",
    "currency",
    "quantity",
    "mailing_id",
    "stamp",
    "source",
    "email",
    "rejects",
];

/// Every accepted key, by position.
pub const ACCEPTED_KEYS: &[(&str, &[&str])] = &[
    ("pipeline", TOP_KEYS),
    ("target", TARGET_KEYS),
    ("import", IMPORT_KEYS),
    ("import.receiver", RECEIVER_KEYS),
    ("receiver email", EMAIL_KEYS),
    ("receiver field", MAPPING_KEYS),
    ("attribute", ATTRIBUTE_KEYS),
    ("tags", TAGS_KEYS),
    ("orders", ORDERS_KEYS),
    ("fill_down", FILL_DOWN_KEYS),
    ("source", SOURCE_KEYS),
    ("only_if", CONDITION_KEYS),
    ("blacklist", BLACKLIST_KEYS),
    ("export", EXPORT_KEYS),
    ("export rule", RULE_KEYS),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{OrderField, ReceiverField};

    #[test]
    fn the_field_keys_are_the_fields() {
        let fields: Vec<&str> = ReceiverField::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(RECEIVER_KEYS, fields.as_slice());
        let orders: Vec<&str> = OrderField::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(&ORDERS_KEYS[..orders.len()], orders.as_slice());
    }
}
