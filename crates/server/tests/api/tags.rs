use listpipe_api::ReceiverInput;
use listpipe_testkit::TestServer;

#[tokio::test]
async fn tags_are_normalised_as_the_spec_says() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    let long_origin = format!("{}.x", "o".repeat(60));
    let added = t
        .client
        .add_receiver_tags(
            "a@example.com",
            &["Shop.Buyer!", "Größe 44", "a.b.c", &long_origin],
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        added,
        [
            "Shop.Buyer_",
            "Größe_44",
            "a.b_c",
            &format!("{}.x", "o".repeat(50))
        ]
    );
}

#[tokio::test]
async fn only_new_tags_are_reported_as_added_and_a_minus_removes() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    assert_eq!(
        t.client
            .add_group_receiver_tags(g.id, "a@example.com", &["vip", "shop.buyer"])
            .await
            .unwrap(),
        ["vip", "shop.buyer"]
    );
    assert_eq!(
        t.client
            .add_receiver_tags("a@example.com", &["vip", "new"], Some(g.id))
            .await
            .unwrap(),
        ["new"]
    );
    assert!(
        t.client
            .add_receiver_tags("a@example.com", &["-vip"], None)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        t.client.receiver_tags("a@example.com", None).await.unwrap(),
        ["new", "shop.buyer"]
    );
    let other = t.group("Other").await;
    assert_eq!(
        t.client
            .add_group_receiver_tags(other.id, "a@example.com", &["x"])
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn tag_listings_filter_by_origin() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let input = ReceiverInput {
        tags: Some(vec!["Shop.Buyer".into(), "plain".into(), "Crm.Lead".into()]),
        ..ReceiverInput::email("a@example.com")
    };
    t.client.create_receiver(g.id, &input).await.unwrap();
    let c = &t.client;
    assert_eq!(
        c.tags(None).await.unwrap(),
        ["Crm.Lead", "Shop.Buyer", "plain"]
    );
    assert_eq!(
        c.tags(Some("*")).await.unwrap(),
        ["Crm.Lead", "Shop.Buyer", "plain"]
    );
    assert_eq!(c.tags(Some("")).await.unwrap(), ["plain"]);
    assert_eq!(c.tags(Some("Shop")).await.unwrap(), ["Shop.Buyer"]);
    assert_eq!(
        c.receiver_tags("a@example.com", Some("Crm")).await.unwrap(),
        ["Crm.Lead"]
    );
}
