//! A create answers what a read of the new receiver answers, for a new
//! contact and for one someone else's already. (The answer is read back;
//! building it from what was written instead saved no measurable server
//! time, issue 15, and these tests would hold such a shortcut too.)

use super::super::{AccountId, Db, Store, accounts, attributes, events, groups};
use super::{ReceiverKey, bulk, create, get};
use crate::api::receiver::detail;
use crate::api::{AttributeInput, AttributeType, GroupInput, Order, ReceiverInput};
use std::collections::BTreeMap;

fn order(id: &str, product_id: &str, price: f64) -> Order {
    Order {
        order_id: id.into(),
        product_id: product_id.into(),
        price,
        quantity: 1,
        ..Default::default()
    }
}

/// Runs `test` on a new database with one account.
fn with_account(test: impl FnOnce(&Db, AccountId)) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("c.db")).unwrap();
    let guard = store.lite_conn();
    let c = Db::Lite(&guard);
    let (app, _) = accounts::create_account(&c, "tests").unwrap();
    test(&c, app.account);
}

#[test]
fn a_create_answers_what_reading_the_new_receiver_answers() {
    with_account(creates);
}

fn creates(c: &Db, account: AccountId) {
    let g = groups::create(c, account, &GroupInput::named("G"))
        .unwrap()
        .id
        .0;
    let h = groups::create(c, account, &GroupInput::named("H"))
        .unwrap()
        .id
        .0;
    let with_default = AttributeInput {
        default_value: Some("none yet".into()),
        ..AttributeInput::new("plan", AttributeType::Text)
    };
    attributes::create(c, account, 0, &with_default).unwrap();
    attributes::create(
        c,
        account,
        0,
        &AttributeInput::new("score", AttributeType::Number),
    )
    .unwrap();
    attributes::create(
        c,
        account,
        g,
        &AttributeInput::new("city", AttributeType::Text),
    )
    .unwrap();

    // Someone already in H, with events, tags and orders there.
    let before = ReceiverInput {
        tags: Some(vec!["old".into()]),
        orders: Some(vec![order("O0", "P", 2.5)]),
        ..ReceiverInput::email("known@example.com")
    };
    create(c, account, h, &before).unwrap();
    events::record(c, account, "known@example.com", "open", "M1", 7, "").unwrap();

    let values: BTreeMap<String, String> = [("score".to_string(), "0042".to_string())].into();
    let inputs = [
        ReceiverInput::email("plain@example.com"),
        ReceiverInput {
            tags: Some(vec!["b".into(), "a".into(), "-a".into(), "b".into()]),
            ..ReceiverInput::email(" tags@example.com ")
        },
        ReceiverInput {
            orders: Some(vec![
                order("O1", "P", 1.0),
                order("O1", "P", 9.99),
                order("O2", "", 0.1),
            ]),
            bounced: Some(3),
            ..ReceiverInput::email("orders@example.com")
        },
        ReceiverInput {
            global_attributes: Some(values),
            attributes: Some([("city".to_string(), "Köln \"x\"".to_string())].into()),
            activated: Some(0),
            source: Some("form".into()),
            last_client: Some("curl".into()),
            points: Some(5),
            imported: Some(11),
            ..ReceiverInput::email("values@example.com")
        },
        ReceiverInput {
            tags: Some(vec!["new".into()]),
            ..ReceiverInput::email("Known@Example.com")
        },
    ];
    for input in &inputs {
        let answer = create(c, account, g, input).unwrap();
        let read = get(
            c,
            account,
            Some(g),
            &ReceiverKey::Id(answer.id.0),
            detail::ALL,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&answer).unwrap(),
            serde_json::to_string(&read).unwrap()
        );
    }
}

/// A batch's contacts, new, known already, or an address given twice in
/// other letters: each address finds its one contact.
#[test]
fn a_batch_finds_every_contact_new_known_or_given_twice() {
    with_account(|c, account| {
        let first = bulk::contacts_for(c, account, &["a@example.com", "b@example.com"]).unwrap();
        assert_eq!(first.len(), 2);
        let again = bulk::contacts_for(
            c,
            account,
            &["A@example.com", "c@example.com", "C@Example.com"],
        )
        .unwrap();
        assert_eq!(again.len(), 2, "{again:?}");
        assert_eq!(again["a@example.com"], first["a@example.com"]);
        let new = again["c@example.com"];
        assert!(![first["a@example.com"], first["b@example.com"]].contains(&new));
    });
}
