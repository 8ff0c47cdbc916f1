//! The query plans of the store's main queries, checked (issue 15): each
//! list, filter, export, batch and delete query must reach receivers and
//! contacts through an index, never by a pass over the whole table, since
//! a pass costs as much as the database is large. Planned on an empty
//! database without `ANALYZE`, as a fresh server plans them. SQLite's plans
//! only (`EXPLAIN QUERY PLAN`): PostgreSQL plans by its own statistics.

#![cfg(test)]

use super::groups::ACTIVE_SQL;
use super::receivers::list::{PAGE_START_SQL, page_sql};
use super::receivers::{DELETE_ORPHAN_CONTACT, bulk, page};
use super::{AccountId, Store};
use super::{attributes, blacklist};

/// The plan's lines of `sql` (EXPLAIN QUERY PLAN's detail column).
fn plan(store_conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = store_conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|e| panic!("{e}: {sql}"));
    // Unbound parameters are NULL: the plan does not depend on them.
    let mut rows = stmt.raw_query();
    let mut lines = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        lines.push(row.get::<_, String>(3).unwrap());
    }
    lines
}

/// Asserts that `sql` uses each of `indexes` and scans no table whole.
fn assert_indexed(conn: &rusqlite::Connection, name: &str, sql: &str, indexes: &[&str]) {
    let lines = plan(conn, sql);
    let text = lines.join("\n");
    for line in &lines {
        let whole_scan = line.starts_with("SCAN ")
            && !line.contains("VIRTUAL TABLE")
            && line != "SCAN CONSTANT ROW"
            && !line.contains("USING COVERING INDEX")
            && !line.contains("USING INDEX");
        assert!(!whole_scan, "{name} scans a whole table:\n{text}");
    }
    for index in indexes {
        assert!(text.contains(index), "{name} does not use {index}:\n{text}");
    }
}

#[test]
fn the_main_queries_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("plans.db")).unwrap();
    let conn = store.lite_conn();
    let group_page = page_sql("r.group_id = ?", "1", "r.id ASC");
    let active_page = page_sql("r.group_id = ?", ACTIVE_SQL, "r.id ASC");
    let pk = "INTEGER PRIMARY KEY";
    let checks: &[(&str, &str, &[&str])] = &[
        (
            "a page of a group",
            &group_page,
            &["receivers_group_order", pk],
        ),
        (
            "a page of a group's active receivers",
            &active_page,
            &["receivers_group_order", pk],
        ),
        (
            "the start of a deep page",
            PAGE_START_SQL,
            &["COVERING INDEX receivers_group_order"],
        ),
        (
            "the batch's lookup",
            bulk::EXISTING_IN_GROUP,
            &[
                "sqlite_autoindex_contacts_1",
                "sqlite_autoindex_receivers_1",
            ],
        ),
        (
            "the batch's contacts",
            bulk::CONTACT_IDS,
            &["sqlite_autoindex_contacts_1"],
        ),
        ("the batch's update", bulk::UPDATE_RECEIVERS, &[pk]),
        (
            "the batch's cleared values",
            bulk::CLEAR_VALUES,
            &["PRIMARY KEY"],
        ),
        (
            "the batch's defaults",
            bulk::APPLY_DEFAULTS,
            &["sqlite_autoindex_attributes_1"],
        ),
        (
            "the batch's removed tags",
            bulk::REMOVE_TAGS,
            &["PRIMARY KEY"],
        ),
        (
            "a page's attribute values",
            page::VALUES,
            &["SCAN j VIRTUAL TABLE", "v USING PRIMARY KEY (contact_id=?)"],
        ),
        (
            "a page's tags",
            page::TAGS,
            &["SCAN j VIRTUAL TABLE", "t USING PRIMARY KEY (contact_id=?)"],
        ),
        (
            "a page's orders",
            page::ORDERS,
            &[
                "SCAN j VIRTUAL TABLE",
                "o USING INDEX orders_key (contact_id=?)",
            ],
        ),
        (
            "a page's events",
            page::EVENTS,
            &["SCAN j VIRTUAL TABLE", "e USING INDEX"],
        ),
        (
            "a list's blacklist check",
            blacklist::ARE_BLOCKED,
            &[
                "SCAN i VIRTUAL TABLE",
                "blacklist USING PRIMARY KEY (account_id=? AND email=?)",
                "group_blocklist USING PRIMARY KEY (group_id=? AND email=?)",
            ],
        ),
        (
            "a receiver's delete",
            DELETE_ORPHAN_CONTACT,
            &[pk, "receivers_contact"],
        ),
    ];
    for (name, sql, indexes) in checks {
        assert_indexed(&conn, name, sql, indexes);
    }
}

#[test]
fn a_filter_for_one_address_finds_it_on_the_contacts_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("plans.db")).unwrap();
    let conn = store.lite_conn();
    let rule = |logic: &str| listpipe_api::filter::Rule {
        field: "email".into(),
        logic: logic.into(),
        condition: "anna@example.com".into(),
    };
    let one = super::filters::rules::compile(
        &super::Db::Lite(&conn),
        AccountId(1),
        &[1],
        &[rule("eq")],
        "AND",
    )
    .unwrap();
    let sql = page_sql(
        &format!("r.group_id = ? AND ({})", one.sql),
        "1",
        "r.id ASC",
    );
    let lines = plan(&conn, &sql).join("\n");
    assert!(
        lines.contains("sqlite_autoindex_contacts_1 (account_id=? AND email=?)"),
        "{lines}"
    );
    // A group's page without it still walks the group in id order.
    let page = page_sql("r.group_id = ?", "1", "r.id ASC");
    let lines = plan(&conn, &page).join("\n");
    assert!(lines.contains("receivers_group_order"), "{lines}");
    assert!(!lines.contains("TEMP B-TREE"), "{lines}");
}

#[test]
fn a_runtime_filter_walks_its_group_or_account_in_id_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("plans.db")).unwrap();
    let conn = store.lite_conn();
    let rule = listpipe_api::filter::Rule {
        field: "points".into(),
        logic: "bg".into(),
        condition: "3".into(),
    };
    let rules =
        super::filters::rules::compile(&super::Db::Lite(&conn), AccountId(1), &[1], &[rule], "AND")
            .unwrap();
    let page_of = |groups: &[i64], whole_account: bool| {
        let scope = super::filters::runtime_scope(super::Backend::Sqlite, groups, whole_account)
            .and(rules.clone());
        plan(&conn, &page_sql(&scope.sql, "1", "r.id ASC")).join("\n")
    };
    // Its first page stops at its 50th match: no sort of every match.
    let one = page_of(&[1], false);
    assert!(one.contains("receivers_group_order"), "{one}");
    assert!(!one.contains("TEMP B-TREE"), "{one}");
    let account = page_of(&[1, 2, 3], true);
    assert!(
        account.contains("r USING INTEGER PRIMARY KEY") || account.starts_with("SCAN r"),
        "{account}"
    );
    assert!(!account.contains("TEMP B-TREE"), "{account}");
    // Some of the account's groups: gathered from each group's index.
    let some = page_of(&[1, 2], false);
    assert!(some.contains("receivers_group_order"), "{some}");
}

/// What runs once per address or per receiver (the blacklist check's
/// lookups, an attribute's lookup and the defaults of a single create)
/// builds no
/// temporary table per call: an `IN` list, or an `OR` on one column that
/// SQLite makes one, is built into a b-tree on every call.
#[test]
fn per_receiver_lookups_build_no_temporary_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("plans.db")).unwrap();
    let conn = store.lite_conn();
    for (sql, seeks) in [
        (blacklist::ARE_BLOCKED, 4),
        (attributes::RESOLVE, 1),
        (attributes::APPLY_DEFAULTS, 2),
    ] {
        let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).unwrap();
        let mut rows = stmt.raw_query();
        let mut ops = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            ops.push(row.get::<_, String>(1).unwrap());
        }
        assert!(
            !ops.iter().any(|op| op == "OpenEphemeral"),
            "{sql}: {ops:?}"
        );
        assert_eq!(
            ops.iter().filter(|op| *op == "SeekGE").count(),
            seeks,
            "{sql}"
        );
    }
}
