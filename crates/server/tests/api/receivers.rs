use listpipe_api::{AttributeInput, AttributeType, Order, ReceiverInput, ReceiverQuery, detail};
use listpipe_testkit::TestServer;

fn at(email: &str) -> ReceiverInput {
    ReceiverInput::email(email)
}

fn query() -> ReceiverQuery {
    ReceiverQuery::default()
}

#[tokio::test]
async fn a_receiver_created_with_no_timestamps_is_active_from_now() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let before = chrono::Utc::now().timestamp();
    let r = t
        .client
        .create_receiver(g.id, &at("a@example.com"))
        .await
        .unwrap();
    assert!(r.active);
    assert!(r.registered >= before && r.activated == r.registered);
    assert_eq!(r.deactivated, 0);
    assert_eq!(r.group_id, g.id);
}

#[tokio::test]
async fn a_receiver_with_only_registered_awaits_activation() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(
            g.id,
            &ReceiverInput {
                registered: Some(1_500_000_000),
                ..at("a@example.com")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (r.registered, r.activated, r.active),
        (1_500_000_000, 0, false)
    );
    let inactive = t
        .client
        .receivers(
            g.id,
            &ReceiverQuery {
                kind: Some("inactive".into()),
                ..query()
            },
        )
        .await
        .unwrap();
    assert_eq!(inactive.len(), 1);

    // "any → active: update with activated given"
    let r = t
        .client
        .update_receiver(
            g.id,
            "a@example.com",
            &ReceiverInput {
                activated: Some(1_600_000_000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(r.active);
    assert_eq!(r.activated, 1_600_000_000);
}

#[tokio::test]
async fn a_receiver_created_with_activated_is_active_at_once() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(
            g.id,
            &ReceiverInput {
                activated: Some(1_600_000_000),
                ..at("a@example.com")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (r.activated, r.registered, r.active),
        (1_600_000_000, 1_600_000_000, true)
    );
}

#[tokio::test]
async fn a_deactivated_receiver_is_revived_only_by_deactivated_zero() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let input = ReceiverInput {
        activated: Some(1_600_000_000),
        deactivated: Some(1_650_000_000),
        ..at("a@example.com")
    };
    let r = c.create_receiver(g.id, &input).await.unwrap();
    assert!(!r.active);
    assert_eq!(r.deactivated, 1_650_000_000);

    // An opt-out is not undone by a later `activated` alone (wire.md).
    let r = c
        .update_receiver(
            g.id,
            "a@example.com",
            &ReceiverInput {
                activated: Some(1_700_000_000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(!r.active);

    let r = c
        .update_receiver(
            g.id,
            "a@example.com",
            &ReceiverInput {
                deactivated: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(r.active);
    assert_eq!(r.activated, 1_700_000_000);
    let active = c
        .receivers(
            g.id,
            &ReceiverQuery {
                kind: Some("active".into()),
                ..query()
            },
        )
        .await
        .unwrap();
    assert_eq!(active.len(), 1);
}

#[tokio::test]
async fn the_email_of_a_receiver_cannot_change() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(g.id, &at("a@example.com"))
        .await
        .unwrap();
    let err = t
        .client
        .update_receiver(g.id, &r.id.to_string(), &at("b@example.com"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("cannot be changed"), "{err}");
    // The same address, in any case, is no change.
    t.client
        .update_receiver(g.id, &r.id.to_string(), &at("A@EXAMPLE.COM"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_receiver_is_reached_by_id_by_email_and_by_encoded_email() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(g.id, &at("ivan+news@example.com"))
        .await
        .unwrap();
    for key in [
        r.id.to_string(),
        "ivan+news@example.com".to_string(),
        "IVAN+news@example.com".to_string(),
    ] {
        assert_eq!(
            t.client.group_receiver(g.id, &key, 0).await.unwrap().id,
            r.id
        );
        assert_eq!(t.client.receiver(&key, None, 0).await.unwrap().id, r.id);
    }
    let (http, base, token) = t.raw();
    let res = http
        .get(format!("{base}/v3/receivers/ivan%2Bnews%40example.com"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn invalid_and_duplicate_addresses_are_refused() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    assert_eq!(
        t.client
            .create_receiver(g.id, &at("not-an-address"))
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
    assert_eq!(
        t.client
            .create_receiver(g.id, &ReceiverInput::default())
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
    t.client
        .create_receiver(g.id, &at("a@example.com"))
        .await
        .unwrap();
    let err = t
        .client
        .create_receiver(g.id, &at("A@example.com"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert!(err.to_string().contains("duplicate address"), "{err}");
}

#[tokio::test]
async fn tags_orders_and_events_appear_only_when_detail_asks() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let order = Order {
        order_id: "o-1".into(),
        product_id: "p-9".into(),
        product: "Shoe".into(),
        price: 49.9,
        currency: "EUR".into(),
        quantity: 2,
        ..Default::default()
    };
    let input = ReceiverInput {
        tags: Some(vec!["vip".into()]),
        orders: Some(vec![order.clone()]),
        ..at("a@example.com")
    };
    t.client.create_receiver(g.id, &input).await.unwrap();

    let plain = t
        .client
        .group_receiver(g.id, "a@example.com", 0)
        .await
        .unwrap();
    assert_eq!((plain.tags, plain.orders, plain.events), (None, None, None));
    let tagged = t
        .client
        .group_receiver(g.id, "a@example.com", detail::TAGS)
        .await
        .unwrap();
    assert_eq!(
        (tagged.tags, tagged.orders.is_none()),
        (Some(vec!["vip".to_string()]), true)
    );
    let full = t
        .client
        .group_receiver(g.id, "a@example.com", detail::ALL)
        .await
        .unwrap();
    let got = &full.orders.unwrap()[0];
    assert_eq!(
        (
            got.order_id.as_str(),
            got.product.as_str(),
            got.price,
            got.quantity
        ),
        ("o-1", "Shoe", 49.9, 2)
    );
    assert!(got.stamp > 0);
    assert_eq!(full.events, Some(vec![]));
}

#[tokio::test]
async fn the_same_order_written_twice_is_one_order() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let order = Order {
        order_id: "o-1".into(),
        product_id: "p".into(),
        price: 5.0,
        ..Default::default()
    };
    t.client
        .create_receiver(
            g.id,
            &ReceiverInput {
                orders: Some(vec![order.clone()]),
                ..at("a@example.com")
            },
        )
        .await
        .unwrap();
    let again = ReceiverInput {
        orders: Some(vec![Order {
            price: 6.0,
            ..order
        }]),
        ..Default::default()
    };
    let r = t
        .client
        .update_receiver(g.id, "a@example.com", &again)
        .await
        .unwrap();
    let orders = r.orders.unwrap();
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].price, 6.0);
    assert_eq!(t.client.group_stats(g.id).await.unwrap().order_count, 1);
}

#[tokio::test]
async fn the_list_pages_from_zero_with_a_default_of_fifty_and_a_maximum_of_5000() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    for i in 0..120 {
        t.client
            .create_receiver(g.id, &at(&format!("r{i:03}@example.com")))
            .await
            .unwrap();
    }
    let c = &t.client;
    assert_eq!(c.receivers(g.id, &query()).await.unwrap().len(), 50);
    let page2 = c
        .receivers(
            g.id,
            &ReceiverQuery {
                pagesize: Some(50),
                page: Some(2),
                ..query()
            },
        )
        .await
        .unwrap();
    assert_eq!(page2.len(), 20);
    assert_eq!(page2[0].email, "r100@example.com");
    assert_eq!(
        c.receivers(
            g.id,
            &ReceiverQuery {
                pagesize: Some(5000),
                ..query()
            }
        )
        .await
        .unwrap()
        .len(),
        120
    );
    let err = c
        .receivers(
            g.id,
            &ReceiverQuery {
                pagesize: Some(5001),
                ..query()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(
        c.receivers(
            g.id,
            &ReceiverQuery {
                page: Some(-1),
                ..query()
            }
        )
        .await
        .unwrap_err()
        .status(),
        Some(400)
    );
}

#[tokio::test]
async fn the_list_filters_by_email_list_id_list_and_type_and_orders_by_a_field() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let a = c
        .create_receiver(
            g.id,
            &ReceiverInput {
                points: Some(5),
                ..at("a@example.com")
            },
        )
        .await
        .unwrap();
    let b = c
        .create_receiver(
            g.id,
            &ReceiverInput {
                points: Some(9),
                ..at("b@example.com")
            },
        )
        .await
        .unwrap();
    c.create_receiver(
        g.id,
        &ReceiverInput {
            bounced: Some(1),
            ..at("c@example.com")
        },
    )
    .await
    .unwrap();

    let emails =
        |rs: Vec<listpipe_api::Receiver>| rs.into_iter().map(|r| r.email).collect::<Vec<_>>();
    let by_email = ReceiverQuery {
        email_list: Some(vec!["a@example.com,B@example.com".into()]),
        ..query()
    };
    assert_eq!(
        emails(c.receivers(g.id, &by_email).await.unwrap()),
        ["a@example.com", "b@example.com"]
    );
    let by_id = ReceiverQuery {
        id_list: Some(vec![b.id.to_string()]),
        ..query()
    };
    assert_eq!(
        emails(c.receivers(g.id, &by_id).await.unwrap()),
        ["b@example.com"]
    );
    let bounced = ReceiverQuery {
        kind: Some("bounce".into()),
        ..query()
    };
    assert_eq!(
        emails(c.receivers(g.id, &bounced).await.unwrap()),
        ["c@example.com"]
    );
    let ordered = ReceiverQuery {
        order_by: Some("points desc".into()),
        kind: Some("active".into()),
        ..query()
    };
    assert_eq!(
        emails(c.receivers(g.id, &ordered).await.unwrap()),
        ["b@example.com", "a@example.com"]
    );
    // The same through the body of get_receivers.
    assert_eq!(
        emails(c.receivers_by_body(g.id, &ordered).await.unwrap()),
        ["b@example.com", "a@example.com"]
    );

    let err = c
        .receivers(
            g.id,
            &ReceiverQuery {
                order_by: Some("shoe asc".into()),
                ..query()
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("valid fields: id, email"), "{err}");
    let err = c
        .receivers(
            g.id,
            &ReceiverQuery {
                kind: Some("asleep".into()),
                ..query()
            },
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("all, active, inactive, bounce"),
        "{err}"
    );
    let _ = a;
}

#[tokio::test]
async fn group_attributes_show_only_when_a_group_is_given() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    c.create_group_attribute(
        g.id,
        &AttributeInput::new("shoesize", AttributeType::Number),
    )
    .await
    .unwrap();
    c.create_attribute(&AttributeInput::new("firstname", AttributeType::Text))
        .await
        .unwrap();
    let mut input = at("a@example.com");
    input.attributes = Some([("shoesize".to_string(), "44".to_string())].into());
    input.global_attributes = Some([("firstname".to_string(), "Ivan".to_string())].into());
    c.create_receiver(g.id, &input).await.unwrap();

    let without = c.receiver("a@example.com", None, 0).await.unwrap();
    assert!(without.attributes.is_empty());
    assert_eq!(without.global_attributes["firstname"], "Ivan");
    let with = c.receiver("a@example.com", Some(g.id), 0).await.unwrap();
    assert_eq!(with.attributes["shoesize"], "44");
}

#[tokio::test]
async fn an_unknown_attribute_is_refused_with_its_name() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let mut input = at("a@example.com");
    input.attributes = Some([("nosuch".to_string(), "1".to_string())].into());
    let err = t.client.create_receiver(g.id, &input).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("\"nosuch\""), "{err}");
    // Nothing of the refused receiver was kept.
    assert_eq!(t.client.group_stats(g.id).await.unwrap().total_count, 0);
}

#[tokio::test]
async fn a_receiver_can_be_deleted_from_a_group_or_everywhere() {
    let t = TestServer::start().await;
    let (g1, g2) = (t.group("One").await, t.group("Two").await);
    let c = &t.client;
    c.create_receiver(g1.id, &at("a@example.com"))
        .await
        .unwrap();
    c.create_receiver(g2.id, &at("a@example.com"))
        .await
        .unwrap();
    c.delete_group_receiver(g1.id, "a@example.com")
        .await
        .unwrap();
    assert_eq!(
        c.group_receiver(g1.id, "a@example.com", 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        c.group_receiver(g2.id, "a@example.com", 0)
            .await
            .unwrap()
            .email,
        "a@example.com"
    );

    c.create_receiver(g1.id, &at("a@example.com"))
        .await
        .unwrap();
    c.delete_receiver("a@example.com", None).await.unwrap();
    assert_eq!(
        c.group_stats(g1.id).await.unwrap().total_count
            + c.group_stats(g2.id).await.unwrap().total_count,
        0
    );
    assert_eq!(
        c.delete_receiver("a@example.com", None)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn a_deep_page_asked_first_holds_the_receivers_that_paging_from_the_start_finds() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let other = t.group("Other").await;
    let batch: Vec<ReceiverInput> = (0..95)
        .map(|n| at(&format!("r{n:03}@example.com")))
        .collect();
    t.client.upsert_receivers(g.id, &batch).await.unwrap();
    // Receivers of another group between them, and gaps in the ids.
    t.client
        .upsert_receivers(other.id, &batch[..5])
        .await
        .unwrap();
    t.client
        .upsert_receivers(g.id, &[at("late@example.com")])
        .await
        .unwrap();
    for gone in ["r010@example.com", "r050@example.com"] {
        t.client.delete_group_receiver(g.id, gone).await.unwrap();
    }
    let page = |page: i64| ReceiverQuery {
        pagesize: Some(10),
        page: Some(page),
        ..query()
    };
    let emails = |rs: Vec<listpipe_api::Receiver>| -> Vec<String> {
        rs.into_iter().map(|r| r.email).collect()
    };
    // Asked cold, before any earlier page of the same query.
    let deep = emails(t.client.receivers(g.id, &page(8)).await.unwrap());
    let last = emails(t.client.receivers(g.id, &page(9)).await.unwrap());
    let beyond = emails(t.client.receivers(g.id, &page(10)).await.unwrap());
    let all = emails(
        t.client
            .receivers(
                g.id,
                &ReceiverQuery {
                    pagesize: Some(5000),
                    ..query()
                },
            )
            .await
            .unwrap(),
    );
    assert_eq!(all.len(), 94);
    assert_eq!(deep, all[80..90]);
    assert_eq!(last, all[90..]);
    assert_eq!(last.last().map(String::as_str), Some("late@example.com"));
    assert!(beyond.is_empty());
    // Ordered by id spelt out, as exports ask: the same pages.
    let spelt = ReceiverQuery {
        order_by: Some("id asc".into()),
        ..page(8)
    };
    assert_eq!(
        emails(t.client.receivers(g.id, &spelt).await.unwrap()),
        deep
    );
}
