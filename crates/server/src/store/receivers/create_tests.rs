//! A create answers what a read of the new receiver answers, for a new
//! contact and for one someone else's already. (The answer is read back;
//! building it from what was written instead saved no measurable server
//! time, issue 15, and these tests would hold such a shortcut too.)

use super::super::{AccountId, Db, Store, StoreResult, accounts, attributes, events, groups};
use super::{ReceiverKey, bulk, create, get};
use listpipe_api::receiver::detail;
use listpipe_api::{AttributeInput, AttributeType, GroupInput, Order, ReceiverInput};
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

/// Groups G and H, global attributes `plan` (with a default) and `score`
/// (a number), and G's `city`; answers G's id and H's.
fn two_groups(c: &Db, account: AccountId) -> (i64, i64) {
    let group = |name| {
        groups::create(c, account, &GroupInput::named(name))
            .unwrap()
            .id
            .0
    };
    let (g, h) = (group("G"), group("H"));
    let with_default = AttributeInput {
        default_value: Some("none yet".into()),
        ..AttributeInput::new("plan", AttributeType::Text)
    };
    attributes::create(c, account, 0, &with_default).unwrap();
    let score = AttributeInput::new("score", AttributeType::Number);
    attributes::create(c, account, 0, &score).unwrap();
    let city = AttributeInput::new("city", AttributeType::Text);
    attributes::create(c, account, g, &city).unwrap();
    (g, h)
}

fn creates(c: &Db, account: AccountId) {
    let (g, h) = two_groups(c, account);

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

/// Single creates that wait for the writer together are written as one
/// batch (`create_many`); each answers exactly what it answers alone, one
/// after the other: the same receivers, and the same refusals with the
/// same messages, among them an address given twice, an address both
/// taken and with too long a source (the size is checked first), an
/// unknown attribute, a bad number, an order without id and no such group;
/// and what two groups' receivers share is written in the order it came.
// Holding the writer's lock across awaits is the point: it stalls the writer.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_waiting_together_answer_as_each_alone() {
    let dir = tempfile::tempdir().unwrap();
    let alone = Store::open(&dir.path().join("alone.db")).unwrap();
    let merged = Store::open(&dir.path().join("merged.db")).unwrap();
    let mut made = Vec::new();
    for store in [&alone, &merged] {
        let guard = store.lite_conn();
        let c = Db::Lite(&guard);
        let (app, _) = accounts::create_account(&c, "tests").unwrap();
        let account = app.account;
        let (g, h) = two_groups(&c, account);
        let known = ReceiverInput {
            tags: Some(vec!["old".into()]),
            ..ReceiverInput::email("known@example.com")
        };
        create(&c, account, h, &known).unwrap();
        made.push((account, g, h));
    }
    assert_eq!(made[0], made[1]);
    let (account, g, h) = made[0];

    let at = |email: &str| ReceiverInput {
        registered: Some(1_700_000_000),
        activated: Some(1_700_000_100),
        ..ReceiverInput::email(email)
    };
    let dated = |mut o: Order| {
        o.stamp = 1_700_000_200;
        o
    };
    let values = |pairs: &[(&str, &str)]| {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        )
    };
    let scored = |email: &str, score: &str| ReceiverInput {
        global_attributes: values(&[("score", score)]),
        ..at(email)
    };
    let inputs: Vec<(i64, ReceiverInput)> = vec![
        (g, at("plain@example.com")),
        (
            g,
            ReceiverInput {
                tags: Some(vec!["b".into(), "a".into(), "-a".into()]),
                ..at(" tags@example.com ")
            },
        ),
        (
            g,
            ReceiverInput {
                orders: Some(vec![
                    dated(order("O1", "P", 1.0)),
                    dated(order("O1", "P", 9.99)),
                ]),
                ..at("orders@example.com")
            },
        ),
        (h, at("other-group@example.com")),
        (h, scored("shared@example.com", "2")),
        (g, scored("shared@example.com", "1")),
        (g, at("PLAIN@example.com")),
        (
            g,
            ReceiverInput {
                global_attributes: values(&[("score", "0042")]),
                attributes: values(&[("city", "Köln")]),
                tags: Some(vec!["new".into()]),
                ..at("Known@Example.com")
            },
        ),
        (
            g,
            ReceiverInput {
                source: Some("x".repeat(10_001)),
                ..at("plain@example.com")
            },
        ),
        (g, at("not an address")),
        (g, ReceiverInput::default()),
        (
            g,
            ReceiverInput {
                attributes: values(&[("nope", "1")]),
                ..at("unknown@example.com")
            },
        ),
        (g, scored("number@example.com", "many")),
        (
            g,
            ReceiverInput {
                orders: Some(vec![dated(order(" ", "P", 1.0))]),
                ..at("order@example.com")
            },
        ),
        (9_999, at("nogroup@example.com")),
        (g, at("last@example.com")),
    ];
    let shown = |answer: StoreResult<listpipe_api::Receiver>| match answer {
        Ok(r) => {
            let mut v = serde_json::to_value(&r).unwrap();
            v.as_object_mut().unwrap().remove("id");
            format!("ok {v}")
        }
        Err(e) => format!("{e:?}"),
    };
    let mut one_by_one = Vec::new();
    for (group, input) in inputs.clone() {
        let answer = alone
            .write(move |c| create(c, account, group, &input))
            .await;
        one_by_one.push(shown(answer));
    }

    // The writer is held while every create is offered, in order, so
    // all of them wait and are written as one batch.
    let held = merged.lite_conn();
    let offered = {
        let merged = merged.clone();
        tokio::spawn(futures::future::join_all(inputs.into_iter().map(
            move |(group, input)| {
                let merged = merged.clone();
                async move { merged.create_receiver(account, group, input).await }
            },
        )))
    };
    while merged.creates_waiting() < one_by_one.len() {
        tokio::task::yield_now().await;
    }
    drop(held);
    let together: Vec<String> = offered.await.unwrap().into_iter().map(shown).collect();
    assert_eq!(together, one_by_one);
    assert_eq!(one_by_one.iter().filter(|a| a.starts_with("ok")).count(), 8);

    // What receivers in two groups share, their contact's global
    // attributes, is written in the order it came: the last value wins.
    let mut shared = Vec::new();
    for store in [&alone, &merged] {
        let key = ReceiverKey::parse("shared@example.com");
        let read = store.read(move |c| get(c, account, Some(h), &key, detail::ALL));
        shared.push(shown(read.await));
    }
    assert_eq!(shared[0], shared[1]);
    assert!(shared[0].contains(r#""score":"1""#), "{}", shared[0]);
}
