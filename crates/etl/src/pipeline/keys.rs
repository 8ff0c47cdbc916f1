//! Every key the pipeline parser accepts, by where it is written. A test
//! (`tests/it/pipeline_keys.rs`) walks each one and asserts its effect, and
//! fails when a key is added here without a row of its own: no key is
//! accepted and then ignored.

use super::export::{EXPORT_KEYS, RULE_KEYS};

/// Where each table's keys are written down: the parser checks against
/// these lists, and [`ACCEPTED_KEYS`] gathers them.
pub(super) const TOP_KEYS: &[&str] = &[
    "target",
    "timezone",
    "metrics",
    "report",
    "import",
    "blacklist",
    "export",
];
/// `[metrics]`: where `run` writes and pushes its figures (issue 61).
pub(super) const METRICS_KEYS: &[&str] = &["file", "pushgateway"];
/// `[report]`: the page `check` and `run` write (issue 60).
pub(super) const REPORT_KEYS: &[&str] = &["html"];
pub(super) const TARGET_KEYS: &[&str] = &[
    "url",
    "token_env",
    "credentials",
    "database",
    "concurrency",
    "max_requests_per_second",
    "timeout_secs",
    "retries",
    "max_outage_secs",
];
pub(super) const IMPORT_KEYS: &[&str] = &[
    "name",
    "source",
    "group",
    "create_group",
    "preset",
    "dedupe",
    "rejects",
    "receiver",
    "global_attributes",
    "attributes",
    "tags",
    "orders",
    "mode",
    "removal",
    "max_removal",
    "fill_down",
    "other_columns",
    "ignore_columns",
    "json_attributes",
    "date_format",
    "ambiguous",
    "null_values",
    "rejects_bom",
    "update",
    "empty",
    "limit",
];
pub(super) const BLACKLIST_KEYS: &[&str] = &[
    "name",
    "source",
    "email",
    "comment",
    "group",
    "rejects",
    "only_if",
    "null_values",
    "rejects_bom",
];
pub(super) const MAPPING_KEYS: &[&str] = &[
    "column",
    "value",
    "trim",
    "trim_chars",
    "case",
    "map",
    "default",
    "format",
    "ambiguous",
    "timezone",
    "decimal",
    "only_if",
    "null_values",
];
/// A receiver field other than the address: a mapping, and its write
/// policies (`update`, `empty`; see `policy.rs`).
pub(super) const FIELD_KEYS: &[&str] = &[
    "column",
    "value",
    "trim",
    "trim_chars",
    "case",
    "map",
    "default",
    "format",
    "ambiguous",
    "timezone",
    "decimal",
    "only_if",
    "null_values",
    "update",
    "empty",
];
/// The address takes one key more: the reject reason when it is empty.
pub(super) const EMAIL_KEYS: &[&str] = &[
    "column",
    "value",
    "trim",
    "trim_chars",
    "case",
    "map",
    "default",
    "format",
    "decimal",
    "only_if",
    "null_values",
    "missing_reason",
    "allow",
];
/// What an address may be, beyond a dot-atom at a host name (`allow`).
pub(super) const EMAIL_ALLOW: &[&str] = &["quoted_local", "ip_literal", "utf8_local"];
pub(super) const ATTRIBUTE_KEYS: &[&str] = &[
    "column",
    "value",
    "type",
    "trim",
    "trim_chars",
    "case",
    "map",
    "default",
    "format",
    "ambiguous",
    "timezone",
    "decimal",
    "only_if",
    "null_values",
    "update",
    "empty",
];
pub(super) const TAGS_KEYS: &[&str] = &[
    "columns",
    "separator",
    "fixed",
    "origin",
    "trim_start",
    "map",
];
/// `fill_down = { ... }` of an import step.
pub(super) const FILL_DOWN_KEYS: &[&str] = &["within", "columns"];
/// A `source` table.
pub(super) const SOURCE_KEYS: &[&str] = &[
    "path",
    "paths",
    "format",
    "delimiter",
    "encoding",
    "header_row",
    "header",
    "sheet",
    "sheets",
    "pad_short_rows",
    "max_quoted_lines",
    "postgres",
    "postgres_env",
    "query",
];
/// One `only_if` condition.
pub(super) const CONDITION_KEYS: &[&str] = &["column", "equals", "not_equals", "in_file", "any"];

/// `[import.receiver]`: one key per receiver field ([`ReceiverField::ALL`](super::ReceiverField::ALL)).
pub(super) const RECEIVER_KEYS: &[&str] = &[
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
pub(super) const ORDERS_KEYS: &[&str] = &[
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
    "duplicate_lines",
];

/// Every accepted key, by position.
pub const ACCEPTED_KEYS: &[(&str, &[&str])] = &[
    ("pipeline", TOP_KEYS),
    ("target", TARGET_KEYS),
    ("metrics", METRICS_KEYS),
    ("report", REPORT_KEYS),
    ("import", IMPORT_KEYS),
    ("import.receiver", RECEIVER_KEYS),
    ("receiver email", EMAIL_KEYS),
    ("receiver field", FIELD_KEYS),
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
