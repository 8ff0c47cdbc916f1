//! A page written from the rows is byte for byte the receivers the single
//! reads build (`Receiver` values through serde), for every `detail`, page
//! size and selection, on data meant to trip a hand-written serializer.

use super::super::super::{AccountId, Db, Store, accounts, attributes, events, groups};
use super::super::list::{Selection, list, list_matching};
use super::super::{ReceiverKey, create, get};
use listpipe_api::{
    AttributeInput, AttributeType, GroupInput, Order, ReceiverInput, ReceiverQuery,
};
use std::collections::BTreeMap;

fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn order(id: &str, price: f64, product: &str) -> Order {
    Order {
        order_id: id.into(),
        product_id: "P\u{1}".into(),
        product: product.into(),
        price,
        currency: "EUR".into(),
        quantity: 3,
        mailing_id: "m/1".into(),
        stamp: 1_600_000_000,
    }
}

/// Two groups; global attributes and each group's own, names in an order
/// that is not their ids' or their case-blind order; receivers with
/// escapes, non-ASCII text, tags, orders, events, every state; one
/// contact in both groups. Returns the groups' ids.
fn fixture(c: &Db) -> (AccountId, i64, i64) {
    let (app, _) = accounts::create_account(c, "pages").unwrap();
    let account = app.account;
    let g = groups::create(c, account, &GroupInput::named("G"))
        .unwrap()
        .id
        .0;
    let h = groups::create(c, account, &GroupInput::named("H"))
        .unwrap()
        .id
        .0;
    for name in ["zeta", "Alpha", "city", "u_", "Zed"] {
        let input = AttributeInput::new(name, AttributeType::Text);
        attributes::create(c, account, 0, &input).unwrap();
    }
    for (group, name) in [(g, "beta"), (g, "Aa"), (h, "beta"), (h, "x")] {
        let input = AttributeInput::new(name, AttributeType::Text);
        attributes::create(c, account, group, &input).unwrap();
    }
    let people = [
        ReceiverInput {
            global_attributes: map(&[("zeta", "z\"\\\n\t\u{7}"), ("Alpha", "Ärger 🙂")]),
            attributes: map(&[("beta", "b"), ("Aa", "</script>")]),
            tags: Some(vec!["b".into(), "A".into(), "a".into(), "é".into()]),
            orders: Some(vec![
                order("O1", 0.1, "Grinder \"Classic\""),
                order("O2", 1e21, "x"),
                order("O0", 3.0, "ü"),
            ]),
            source: Some("web\u{2028}form".into()),
            last_ip: Some("10.0.0.1".into()),
            points: Some(-4),
            ..ReceiverInput::email("eins@example.com")
        },
        ReceiverInput {
            activated: Some(0),
            global_attributes: map(&[("city", ""), ("u_", "1"), ("Zed", "q")]),
            ..ReceiverInput::email("zwei@example.com")
        },
        ReceiverInput {
            deactivated: Some(1_700_000_000),
            orders: Some(vec![order("O9", 12345.678, "y")]),
            ..ReceiverInput::email("drei@example.com")
        },
        ReceiverInput {
            bounced: Some(1_700_000_001),
            tags: Some(vec!["only".into()]),
            ..ReceiverInput::email("vier@example.com")
        },
        ReceiverInput::email("fünf@example.com"),
    ];
    for p in &people {
        create(c, account, g, p).unwrap();
    }
    // The first contact again in the other group, with that group's values.
    let again = ReceiverInput {
        attributes: map(&[("beta", "in H"), ("x", "1")]),
        bounced: Some(5),
        ..ReceiverInput::email("eins@example.com")
    };
    create(c, account, h, &again).unwrap();
    for (kind, stamp) in [("open", 20), ("click", 10), ("send", 10)] {
        events::record(c, account, "eins@example.com", kind, "M\"1", stamp, "v").unwrap();
    }
    (account, g, h)
}

/// What the single reads answer for each receiver, as one JSON array.
fn one_by_one(c: &Db, account: AccountId, ids: &[i64], group: Option<i64>, detail: i64) -> String {
    let each: Vec<String> = ids
        .iter()
        .map(|id| {
            let r = get(c, account, group, &ReceiverKey::Id(*id), detail).unwrap();
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    format!("[{}]", each.join(","))
}

fn ids_of(json: &[u8]) -> Vec<i64> {
    let v: Vec<serde_json::Value> = serde_json::from_slice(json).unwrap();
    v.iter()
        .map(|r| r["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_page_is_byte_for_byte_the_receivers_read_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    let guard = store.lite_conn();
    let c = &Db::Lite(&guard);
    let (account, g, h) = fixture(c);
    for detail in 0..=7 {
        for (pagesize, pages) in [(50, 1), (2, 4)] {
            for group in [g, h] {
                for page in 0..pages {
                    let q = ReceiverQuery {
                        pagesize: Some(pagesize),
                        page: Some(page),
                        detail: Some(detail),
                        ..Default::default()
                    };
                    let got = list(c, account, group, &q).unwrap().0;
                    let want = one_by_one(c, account, &ids_of(&got), Some(group), detail);
                    assert_eq!(String::from_utf8(got).unwrap(), want, "detail {detail}");
                }
            }
            // Across groups and without group parts, as the bounced list reads.
            let everyone = Selection {
                sql: "1".into(),
                ..Default::default()
            };
            let q = ReceiverQuery {
                pagesize: Some(pagesize),
                detail: Some(detail),
                order_by: Some("email desc".into()),
                ..Default::default()
            };
            let got = list_matching(c, account, &everyone, &q, false).unwrap().0;
            let ids = ids_of(&got);
            assert_eq!(ids.len() as i64, pagesize.min(6));
            let want = one_by_one(c, account, &ids, None, detail);
            assert_eq!(String::from_utf8(got).unwrap(), want, "detail {detail}");
        }
    }
}

#[test]
fn a_page_past_the_end_is_an_empty_array() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("e.db")).unwrap();
    let guard = store.lite_conn();
    let c = &Db::Lite(&guard);
    let (account, g, _) = fixture(c);
    let q = ReceiverQuery {
        page: Some(3),
        pagesize: Some(5),
        detail: Some(7),
        ..Default::default()
    };
    assert_eq!(list(c, account, g, &q).unwrap().0, b"[]");
}
