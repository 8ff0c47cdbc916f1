//! Extensions of the live service (wire.md): receiver batches (upsert,
//! insert, upsertplus), activate/deactivate, and the old API versions.

use listpipe_api::batch::{BatchReceiver, BatchStatus};
use listpipe_api::{Id, ReceiverInput, ReceiverQuery, detail};
use listpipe_testkit::TestServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn at(email: &str) -> ReceiverInput {
    ReceiverInput::email(email)
}

fn statuses(items: &[BatchStatus]) -> Vec<&str> {
    items.iter().map(|s| s.status.as_str()).collect()
}

async fn emails(t: &TestServer, group: Id, kind: &str) -> Vec<String> {
    let q = ReceiverQuery {
        kind: Some(kind.into()),
        pagesize: Some(5000),
        ..Default::default()
    };
    let mut all: Vec<String> = t
        .client
        .receivers(group, &q)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.email)
        .collect();
    all.sort();
    all
}

#[tokio::test]
async fn upsert_creates_new_addresses_updates_known_ones_and_answers_bad_items_in_place() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let old = t
        .client
        .create_receiver(
            g.id,
            &ReceiverInput {
                source: Some("crm".into()),
                registered: Some(1_500_000_000),
                activated: Some(1_500_000_000),
                ..at("old@example.com")
            },
        )
        .await
        .unwrap();

    let (http, base, token) = t.raw();
    let body = json!([
        {"email": "new@example.com", "source": "shop", "tags": ["Shop.Buyer"]},
        {"email": "OLD@example.com", "source": "shop"},
        {"email": "not an address"},
        {"source": "no email"},
        {"email": "ghost@example.com", "attributes": {"nosuch": "1"}},
        "just a string",
    ]);
    let res = http
        .post(format!("{base}/v3/groups/{}/receivers/upsert", g.id))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let answer: Vec<BatchStatus> = res.json().await.unwrap();
    assert_eq!(
        statuses(&answer),
        [
            "insert success",
            "update success",
            "Bad Request: invalid email address \"not an address\"",
            "Bad Request: email is required",
            &format!(
                "Bad Request: unknown attribute of group {} \"nosuch\"; create it first",
                g.id
            ),
            "Bad Request: item 5 is not a receiver: invalid type: string \"just a string\", expected struct ReceiverInput",
        ]
    );

    // The good items are stored; the failed ones left nothing behind.
    assert_eq!(
        emails(&t, g.id, "all").await,
        ["new@example.com", "old@example.com"]
    );
    let ghost = t.client.receiver("ghost@example.com", None, 0).await;
    assert_eq!(ghost.unwrap_err().status(), Some(404));
    let updated = t
        .client
        .group_receiver(g.id, "old@example.com", detail::ALL)
        .await
        .unwrap();
    assert_eq!(updated.id, old.id);
    assert_eq!(updated.source, "shop");
    assert_eq!(
        updated.registered, 1_500_000_000,
        "fields not sent are kept"
    );
    let new = t
        .client
        .group_receiver(g.id, "new@example.com", detail::TAGS)
        .await
        .unwrap();
    assert!(new.active);
    assert_eq!(new.tags, Some(vec!["Shop.Buyer".to_string()]));
}

#[tokio::test]
async fn upsert_follows_the_update_rules_so_an_opt_out_is_not_revived_by_activated() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let input = ReceiverInput {
        deactivated: Some(1_600_000_000),
        ..at("gone@example.com")
    };
    t.client.create_receiver(g.id, &input).await.unwrap();
    let again = ReceiverInput {
        activated: Some(1_700_000_000),
        ..at("gone@example.com")
    };
    let answer = t.client.upsert_receivers(g.id, &[again]).await.unwrap();
    assert_eq!(statuses(&answer), ["update success"]);
    assert!(emails(&t, g.id, "active").await.is_empty());
}

#[tokio::test]
async fn upsert_of_one_object_answers_the_receiver_created_then_updated() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let url = format!("{base}/v3/groups/{}/receivers/upsert", g.id);
    let send = |body: Value| http.post(&url).bearer_auth(&token).json(&body).send();

    let res = send(json!({"postdata": {"email": "a@example.com", "source": "form"}}))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["email"], "a@example.com");
    assert_eq!(created["source"], "form");
    assert_eq!(created["active"], true);

    let res = send(json!({"email": "a@example.com", "points": 5}))
        .await
        .unwrap();
    let updated: Value = res.json().await.unwrap();
    assert_eq!(updated["id"], created["id"]);
    assert_eq!(
        (updated["points"].clone(), updated["source"].clone()),
        (json!(5), json!("form"))
    );

    let res = send(json!({"email": "nope"})).await.unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": 400, "message": "Bad Request: invalid email address \"nope\""}})
    );

    let r = t
        .client
        .upsert_receiver(g.id, &at("b@example.com"))
        .await
        .unwrap();
    assert_eq!(r.email, "b@example.com");
}

#[tokio::test]
async fn a_batch_arrives_as_php_bracket_form_or_wrapped_in_postdata() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let url = format!("{base}/v3/groups/{}/receivers/upsert", g.id);
    let res = http
        .post(&url)
        .bearer_auth(&token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("0[email]=a@example.com&0[tags][]=x&1[email]=b@example.com&1[source]=form")
        .send()
        .await
        .unwrap();
    let answer: Value = res.json().await.unwrap();
    assert_eq!(
        answer,
        json!([{"status": "insert success"}, {"status": "insert success"}])
    );
    let res = http
        .post(&url)
        .bearer_auth(&token)
        .json(&json!({"postdata": [{"email": "b@example.com", "points": 3}]}))
        .send()
        .await
        .unwrap();
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer, json!([{"status": "update success"}]));
    let b = t
        .client
        .group_receiver(g.id, "b@example.com", 0)
        .await
        .unwrap();
    assert_eq!((b.source.as_str(), b.points), ("form", 3));
}

#[tokio::test]
async fn insert_answers_duplicate_address_for_addresses_already_in_the_group() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let first = ReceiverInput {
        source: Some("first".into()),
        ..at("a@example.com")
    };
    t.client.create_receiver(g.id, &first).await.unwrap();
    let batch = [
        ReceiverInput {
            source: Some("second".into()),
            ..at("a@example.com")
        },
        at("b@example.com"),
        at("b@example.com"),
    ];
    let answer = t.client.insert_receivers(g.id, &batch).await.unwrap();
    assert_eq!(
        statuses(&answer),
        ["duplicate address", "insert success", "duplicate address"]
    );
    let a = t
        .client
        .group_receiver(g.id, "a@example.com", 0)
        .await
        .unwrap();
    assert_eq!(
        a.source, "first",
        "insert never changes an existing receiver"
    );
    assert_eq!(
        emails(&t, g.id, "all").await,
        ["a@example.com", "b@example.com"]
    );
}

#[tokio::test]
async fn upsertplus_answers_full_receivers_and_a_status_for_failed_items() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let known = t
        .client
        .create_receiver(g.id, &at("known@example.com"))
        .await
        .unwrap();
    let batch = [
        ReceiverInput {
            tags: Some(vec!["Shop.Buyer".into()]),
            global_attributes: Some(BTreeMap::new()),
            ..at("new@example.com")
        },
        ReceiverInput {
            points: Some(9),
            ..at("known@example.com")
        },
        at("broken"),
    ];
    let answer = t.client.upsert_receivers_plus(g.id, &batch).await.unwrap();
    assert_eq!(answer.len(), 3);
    let new = answer[0].receiver().expect("a receiver");
    assert_eq!(new.email, "new@example.com");
    assert_eq!(new.group_id, g.id);
    assert_eq!(new.tags, Some(vec!["Shop.Buyer".to_string()]));
    assert_eq!(new.orders, Some(vec![]), "as create answers: with detail");
    let updated = answer[1].receiver().expect("a receiver");
    assert_eq!((updated.id, updated.points), (known.id, 9));
    assert_eq!(
        answer[2],
        BatchReceiver::Failed(BatchStatus::new(
            "Bad Request: invalid email address \"broken\""
        ))
    );
}

#[tokio::test]
async fn a_batch_of_1000_is_stored_and_one_of_1001_is_a_413_that_stores_nothing() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let batch: Vec<ReceiverInput> = (0..1001)
        .map(|i| at(&format!("r{i}@example.com")))
        .collect();

    let err = t.client.upsert_receivers(g.id, &batch).await.unwrap_err();
    assert_eq!(err.status(), Some(413));
    assert_eq!(
        err.server_message(),
        "HTTP 413: Payload Too Large: 1001 receivers; a batch holds at most 1000"
    );
    let err = t.client.insert_receivers(g.id, &batch).await.unwrap_err();
    assert_eq!(err.status(), Some(413));
    assert!(emails(&t, g.id, "all").await.is_empty());

    let answer = t
        .client
        .upsert_receivers(g.id, &batch[..1000])
        .await
        .unwrap();
    assert!(answer.iter().all(BatchStatus::is_inserted));
    assert_eq!(emails(&t, g.id, "all").await.len(), 1000);
}

#[tokio::test]
async fn a_batch_into_an_unknown_group_is_a_404() {
    let t = TestServer::start().await;
    let err = t
        .client
        .upsert_receivers(Id(999_999), &[at("a@example.com")])
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}

#[tokio::test]
async fn activate_and_deactivate_move_the_state_and_answer_true() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let waiting = ReceiverInput {
        registered: Some(1_500_000_000),
        ..at("a@example.com")
    };
    let r = t.client.create_receiver(g.id, &waiting).await.unwrap();
    assert!(emails(&t, g.id, "active").await.is_empty());

    assert!(
        t.client
            .activate_receiver(g.id, "a@example.com")
            .await
            .unwrap()
    );
    assert_eq!(emails(&t, g.id, "active").await, ["a@example.com"]);
    let activated = t
        .client
        .group_receiver(g.id, "a@example.com", 0)
        .await
        .unwrap();
    assert!(activated.activated > 0);

    let by_id = r.id.to_string();
    assert!(t.client.deactivate_receiver(g.id, &by_id).await.unwrap());
    assert!(emails(&t, g.id, "active").await.is_empty());
    assert_eq!(emails(&t, g.id, "inactive").await, ["a@example.com"]);
    let out = t.client.group_receiver(g.id, &by_id, 0).await.unwrap();
    assert!(out.deactivated > 0 && !out.active);

    // activate is the explicit reactivation: it clears the opt-out.
    assert!(t.client.activate_receiver(g.id, &by_id).await.unwrap());
    let back = t.client.group_receiver(g.id, &by_id, 0).await.unwrap();
    assert_eq!((back.active, back.deactivated), (true, 0));
}

#[tokio::test]
async fn activate_answers_404_for_a_receiver_not_in_the_group() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let other = t.group("Other").await;
    t.client
        .create_receiver(other.id, &at("a@example.com"))
        .await
        .unwrap();
    let err = t
        .client
        .activate_receiver(g.id, "a@example.com")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(
        err.server_message(),
        "HTTP 404: Not Found: invalid receiver (not in this group)"
    );
    let err = t
        .client
        .deactivate_receiver(g.id, "nobody@example.com")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}

#[tokio::test]
async fn old_api_versions_answer_410_naming_the_v3_path() {
    let t = TestServer::start().await;
    let (http, base, token) = t.raw();
    for (path, expected) in [
        (
            "/v1/groups",
            "Gone: API v1 is not served; v3 is the current version: /v3/groups",
        ),
        (
            "/v2/groups.json/7/receivers",
            "Gone: API v2 is not served; v3 is the current version: /v3/groups/7/receivers",
        ),
        (
            "/v1",
            "Gone: API v1 is not served; v3 is the current version: /v3",
        ),
    ] {
        let res = http
            .get(format!("{base}{path}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 410, "{path}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body, json!({"error": {"code": 410, "message": expected}}));
    }
    // No token needed to learn that.
    let res = http
        .post(format!("{base}/v2/receivers"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 410);
}

/// Sets up one account for the batch comparison: a group with a number
/// attribute that has a default, and a global text attribute.
async fn account_for_batches(client: &listpipe_client::ApiClient) -> Id {
    let g = client
        .create_group(&listpipe_api::GroupInput {
            name: Some("News".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    for (group, name, kind, default) in [
        (Some(g.id), "score", "number", Some("5")),
        (Some(g.id), "city", "text", None),
        (None, "first", "text", None),
    ] {
        let input = listpipe_api::AttributeInput {
            name: Some(name.into()),
            kind: Some(kind.into()),
            default_value: default.map(String::from),
            ..Default::default()
        };
        match group {
            Some(g) => client.create_group_attribute(g, &input).await.unwrap(),
            None => client.create_attribute(&input).await.unwrap(),
        };
    }
    g.id
}

#[tokio::test]
async fn a_batch_stores_and_answers_exactly_what_its_items_sent_one_by_one_do() {
    let t = TestServer::start().await;
    let one_by_one = t.other_tenant("one by one").await;
    let (g_batch, g_single) = (
        account_for_batches(&t.client).await,
        account_for_batches(&one_by_one).await,
    );
    let order = |id: &str, price: f64| json!({"order_id": id, "product_id": "p1", "price": price, "stamp": 1_600_000_000});
    let items = [
        json!({"email": "a@example.com", "registered": 1_500_000_000, "activated": 1_500_000_000,
               "attributes": {"city": "Berlin", "score": "7"}, "global_attributes": {"first": "Ann"},
               "tags": ["Shop.Buyer", "vip"], "orders": [order("o1", 1.0), order("o2", 2.0), order("o1", 3.0)]}),
        json!({"email": "b@example.com", "registered": 1_500_000_001, "activated": 0,
               "attributes": {"city": "Köln"}}),
        // The first address again, spelt otherwise: an update of what item 0 wrote.
        json!({"email": " A@EXAMPLE.com ", "points": 3, "tags": ["-vip", "new"],
               "attributes": {"city": ""}, "orders": [order("o1", 9.0)]}),
        json!({"email": "c@example.com", "global_attributes": {"nosuch": "1"}}),
        json!({"email": "d@example.com", "registered": 1_500_000_002, "attributes": {"score": "many"}}),
        json!({"email": "b@example.com", "deactivated": 1_500_000_009, "source": "form"}),
    ];
    let batch = t.client.upsert_receivers(g_batch, &items).await.unwrap();
    let mut single = Vec::new();
    for item in &items {
        single.extend(
            one_by_one
                .upsert_receivers(g_single, std::slice::from_ref(item))
                .await
                .unwrap(),
        );
    }
    assert_eq!(batch, single);
    assert_eq!(
        statuses(&batch)[..3],
        ["insert success", "insert success", "update success"]
    );

    let q = ReceiverQuery {
        detail: Some(detail::ALL),
        ..Default::default()
    };
    let stored = |receivers: Vec<listpipe_api::Receiver>| -> Vec<Value> {
        receivers
            .into_iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap();
                v["id"] = Value::Null;
                v["group_id"] = Value::Null;
                v
            })
            .collect()
    };
    let from_batch = stored(t.client.receivers(g_batch, &q).await.unwrap());
    assert_eq!(from_batch.len(), 2);
    assert_eq!(
        from_batch,
        stored(one_by_one.receivers(g_single, &q).await.unwrap())
    );
}
