use listpipe_api::{AttributeInput, AttributeType, ReceiverInput};
use listpipe_testkit::TestServer;

#[tokio::test]
async fn global_attributes_are_created_read_updated_listed_and_deleted() {
    let t = TestServer::start().await;
    let c = &t.client;
    let input = AttributeInput {
        description: Some("Shoe".into()),
        default_value: Some("42".into()),
        ..AttributeInput::new("shoesize", AttributeType::Number)
    };
    let a = c.create_attribute(&input).await.unwrap();
    assert_eq!(
        (
            a.name.as_str(),
            a.kind.as_str(),
            a.group_id,
            a.default_value.as_str(),
            a.tag.as_str()
        ),
        ("shoesize", "number", 0, "42", "{SHOESIZE}")
    );
    assert_eq!(c.attribute(a.id).await.unwrap(), a);
    assert_eq!(c.attributes(None).await.unwrap(), vec![a.clone()]);

    let changed = c
        .update_attribute(
            a.id,
            &AttributeInput {
                kind: Some("text".into()),
                preview_value: Some("44".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            changed.kind.as_str(),
            changed.preview_value.as_str(),
            changed.description.as_str()
        ),
        ("text", "44", "Shoe")
    );

    assert!(c.delete_attribute(a.id).await.unwrap());
    assert_eq!(c.attribute(a.id).await.unwrap_err().status(), Some(404));
}

#[tokio::test]
async fn attribute_ids_are_numbers_and_both_spellings_are_sent() {
    let t = TestServer::start().await;
    t.client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    let (http, base, token) = t.raw();
    let body: serde_json::Value = http
        .get(format!("{base}/v3/attributes"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let a = &body[0];
    assert!(a["id"].is_number(), "{a}");
    assert_eq!(a["group_id"], 0);
    assert_eq!(a["groups_id"], 0);
    assert_eq!(a["value"], "");
}

#[tokio::test]
async fn the_name_cannot_change_and_default_value_is_refused_on_update() {
    let t = TestServer::start().await;
    let a = t
        .client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    let rename = AttributeInput {
        name: Some("town".into()),
        ..Default::default()
    };
    assert_eq!(
        t.client
            .update_attribute(a.id, &rename)
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
    let default = AttributeInput {
        default_value: Some("x".into()),
        ..Default::default()
    };
    assert_eq!(
        t.client
            .update_attribute(a.id, &default)
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
}

#[tokio::test]
async fn an_existing_name_is_a_conflict_and_an_unknown_type_names_the_choices() {
    let t = TestServer::start().await;
    t.client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    let again = t
        .client
        .create_attribute(&AttributeInput::new("City", AttributeType::Text))
        .await
        .unwrap_err();
    assert_eq!(again.status(), Some(409));
    let bad = AttributeInput {
        kind: Some("colour".into()),
        ..AttributeInput::new("eyes", AttributeType::Text)
    };
    let err = t.client.create_attribute(&bad).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string()
            .contains("valid types: text, number, gender, date"),
        "{err}"
    );
}

#[tokio::test]
async fn group_attributes_live_in_their_group() {
    let t = TestServer::start().await;
    let (g, other) = (t.group("News").await, t.group("Other").await);
    let c = &t.client;
    let a = c
        .create_group_attribute(g.id, &AttributeInput::new("size", AttributeType::Number))
        .await
        .unwrap();
    assert_eq!(a.group_id, g.id.0);
    assert_eq!(c.group_attributes(g.id).await.unwrap(), vec![a.clone()]);
    assert_eq!(c.attributes(Some(g.id)).await.unwrap(), vec![a.clone()]);
    assert!(c.attributes(None).await.unwrap().is_empty());
    // The global create endpoint takes group_id too.
    let b = c
        .create_attribute(&AttributeInput {
            group_id: Some(g.id.0),
            ..AttributeInput::new("colour", AttributeType::Text)
        })
        .await
        .unwrap();
    assert_eq!(b.group_id, g.id.0);

    let changed = c
        .update_group_attribute(
            g.id,
            a.id,
            &AttributeInput {
                description: Some("EU".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.description, "EU");
    assert_eq!(
        c.update_group_attribute(other.id, a.id, &AttributeInput::default())
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        c.delete_group_attribute(other.id, a.id)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert!(c.delete_group_attribute(g.id, a.id).await.unwrap());
}

#[tokio::test]
async fn a_group_attribute_is_favoured_over_a_global_one_of_the_same_name() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let global = c
        .create_attribute(&AttributeInput::new("size", AttributeType::Text))
        .await
        .unwrap();
    let local = c
        .create_group_attribute(g.id, &AttributeInput::new("size", AttributeType::Number))
        .await
        .unwrap();
    let mut input = ReceiverInput::email("a@example.com");
    input.attributes = Some([("size".to_string(), "44".to_string())].into());
    c.create_receiver(g.id, &input).await.unwrap();
    let values = c
        .receiver_attributes("a@example.com", Some(g.id))
        .await
        .unwrap();
    assert_eq!(values.len(), 1);
    assert_eq!((values[0].id, values[0].value.as_str()), (local.id, "44"));
    assert!(
        c.receiver_attributes("a@example.com", None)
            .await
            .unwrap()
            .is_empty()
    );
    let _ = global;
}

#[tokio::test]
async fn values_are_set_through_both_endpoints_and_checked_against_the_type() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let birthday = c
        .create_attribute(&AttributeInput::new("birthday", AttributeType::Date))
        .await
        .unwrap();
    let size = c
        .create_group_attribute(g.id, &AttributeInput::new("size", AttributeType::Number))
        .await
        .unwrap();
    let r = c
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();

    assert!(
        c.set_receiver_attribute(&r.id.to_string(), birthday.id, "1993-02-11")
            .await
            .unwrap()
    );
    assert!(
        c.set_group_receiver_attribute(g.id, "a@example.com", size.id, "44")
            .await
            .unwrap()
    );
    let got = c.receiver("a@example.com", Some(g.id), 0).await.unwrap();
    assert_eq!(got.global_attributes["birthday"], "1993-02-11");
    assert_eq!(got.attributes["size"], "44");

    let err = c
        .set_receiver_attribute("a@example.com", birthday.id, "11.02.1993")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("YYYY-MM-DD"), "{err}");
    assert_eq!(
        c.set_group_receiver_attribute(g.id, "a@example.com", size.id, "big")
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
}

#[tokio::test]
async fn defaults_fill_values_a_new_receiver_does_not_give() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let input = AttributeInput {
        default_value: Some("de".into()),
        ..AttributeInput::new("lang", AttributeType::Text)
    };
    t.client.create_attribute(&input).await.unwrap();
    let r = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    assert_eq!(r.global_attributes["lang"], "de");
}

#[tokio::test]
async fn limits_say_how_many_attributes_the_account_may_have() {
    let t = TestServer::start().await;
    t.client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    let l = t.client.attribute_limits().await.unwrap();
    assert_eq!((l.used_global, l.max_global), (1, 200));
}
