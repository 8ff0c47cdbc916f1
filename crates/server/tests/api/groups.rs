use listpipe_api::{GroupInput, ReceiverInput};
use listpipe_testkit::TestServer;

#[tokio::test]
async fn groups_can_be_created_read_updated_listed_and_deleted() {
    let t = TestServer::start().await;
    let c = &t.client;
    let input = GroupInput {
        name: Some("News".into()),
        receiver_info: Some("weekly".into()),
        locked: Some(true),
        backup: None,
    };
    let g = c.create_group(&input).await.unwrap();
    assert_eq!(
        (
            g.name.as_str(),
            g.receiver_info.as_str(),
            g.locked,
            g.backup
        ),
        ("News", "weekly", true, false)
    );
    assert!(g.stamp > 0 && g.last_changed >= g.stamp);
    assert_eq!(c.group(g.id).await.unwrap(), g);

    let changed = c
        .update_group(
            g.id,
            &GroupInput {
                backup: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (changed.name.as_str(), changed.locked, changed.backup),
        ("News", true, true)
    );

    assert_eq!(c.groups(None).await.unwrap(), vec![changed.clone()]);
    assert!(c.delete_group(g.id).await.unwrap());
    assert_eq!(c.group(g.id).await.unwrap_err().status(), Some(404));
    assert!(c.groups(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_group_needs_a_unique_name() {
    let t = TestServer::start().await;
    assert_eq!(
        t.client
            .create_group(&GroupInput::default())
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
    t.group("News").await;
    assert_eq!(
        t.client
            .create_group(&GroupInput::named("news"))
            .await
            .unwrap_err()
            .status(),
        Some(409)
    );
}

#[tokio::test]
async fn group_list_follows_the_order_query() {
    let t = TestServer::start().await;
    let a = t.group("A").await;
    let b = t.group("B").await;
    let names = |gs: Vec<listpipe_api::Group>| gs.into_iter().map(|g| g.name).collect::<Vec<_>>();
    assert_eq!(
        names(t.client.groups(Some("created ASC")).await.unwrap()),
        ["A", "B"]
    );
    assert_eq!(
        names(t.client.groups(Some("created DESC")).await.unwrap()),
        ["B", "A"]
    );
    assert_eq!(
        names(t.client.groups(Some("changed DESC")).await.unwrap()),
        ["B", "A"]
    );
    let _ = (a, b);
    let err = t.client.groups(Some("name ASC")).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string()
            .contains("created ASC, created DESC, changed ASC, changed DESC"),
        "{err}"
    );
}

#[tokio::test]
async fn stats_count_receivers_by_state() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    c.create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    c.create_receiver(
        g.id,
        &ReceiverInput {
            points: Some(10),
            ..ReceiverInput::email("b@example.com")
        },
    )
    .await
    .unwrap();
    c.create_receiver(
        g.id,
        &ReceiverInput {
            registered: Some(1_600_000_000),
            ..ReceiverInput::email("c@example.com")
        },
    )
    .await
    .unwrap();
    c.create_receiver(
        g.id,
        &ReceiverInput {
            bounced: Some(1_600_000_000),
            ..ReceiverInput::email("d@example.com")
        },
    )
    .await
    .unwrap();
    let s = c.group_stats(g.id).await.unwrap();
    assert_eq!(
        (
            s.total_count,
            s.active_count,
            s.inactive_count,
            s.bounce_count
        ),
        (4, 2, 1, 1)
    );
    assert_eq!(s.avg_points, 2.5);
    assert!(s.time > 0);

    let adv = c.group_advanced_stats(g.id).await.unwrap();
    assert_eq!(adv.stats.total_count, 4);
    assert_eq!(adv.awaiting_activation_count, 1);
}

#[tokio::test]
async fn clearing_a_group_removes_its_receivers_and_keeps_the_group() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    assert!(t.client.clear_group(g.id).await.unwrap());
    assert_eq!(t.client.group_stats(g.id).await.unwrap().total_count, 0);
    assert_eq!(t.client.group(g.id).await.unwrap().name, "News");
    assert_eq!(
        t.client
            .receiver("a@example.com", None, 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn deleting_a_group_deletes_its_receivers() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    t.client.delete_group(g.id).await.unwrap();
    assert_eq!(
        t.client
            .receiver(&r.id.to_string(), None, 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        t.client.group_stats(g.id).await.unwrap_err().status(),
        Some(404)
    );
}
