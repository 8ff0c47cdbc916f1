use listpipe_api::blacklist::BlacklistInput;
use listpipe_testkit::TestServer;

#[tokio::test]
async fn blacklist_entries_are_added_read_updated_listed_and_deleted() {
    let t = TestServer::start().await;
    let c = &t.client;
    let e = c
        .add_to_blacklist("spam@example.com", "complained")
        .await
        .unwrap();
    assert_eq!(
        (e.email.as_str(), e.comment.as_str()),
        ("spam@example.com", "complained")
    );
    assert!(e.stamp > 0);
    assert_eq!(c.blacklist_entry("SPAM@example.com").await.unwrap(), e);
    assert_eq!(
        c.add_to_blacklist("spam@example.com", "")
            .await
            .unwrap_err()
            .status(),
        Some(409)
    );

    assert_eq!(
        c.update_blacklist("spam@example.com", "twice")
            .await
            .unwrap()
            .comment,
        "twice"
    );
    assert_eq!(
        c.update_blacklist("nobody@example.com", "x")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(c.blacklist().await.unwrap().len(), 1);

    assert!(c.remove_from_blacklist("spam@example.com").await.unwrap());
    let err = c.blacklist_entry("spam@example.com").await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(
        c.remove_from_blacklist("spam@example.com")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn a_batch_stores_up_to_1000_entries_and_a_larger_one_stores_nothing() {
    let t = TestServer::start().await;
    let items: Vec<_> = (0..1000)
        .map(|i| BlacklistInput::new(format!("b{i}@example.com"), "import"))
        .collect();
    assert_eq!(t.client.blacklist_batch(&items).await.unwrap().len(), 1000);
    // Repeating the batch changes nothing.
    t.client.blacklist_batch(&items).await.unwrap();
    assert_eq!(t.client.blacklist().await.unwrap().len(), 1000);

    let too_many: Vec<_> = (0..1001)
        .map(|i| BlacklistInput::new(format!("x{i}@example.com"), ""))
        .collect();
    assert_eq!(
        t.client
            .blacklist_batch(&too_many)
            .await
            .unwrap_err()
            .status(),
        Some(413)
    );
    let one_bad = vec![
        BlacklistInput::new("ok@example.com", ""),
        BlacklistInput::new("not an address", ""),
    ];
    let err = t.client.blacklist_batch(&one_bad).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("item 1"), "{err}");
    assert_eq!(t.client.blacklist().await.unwrap().len(), 1000);
}

/// A server whose blacklist holds `spam@example.com` and the domain
/// `blocked.example`, and whose group `News` blocks `local@example.com`.
async fn with_blocks() -> (TestServer, listpipe_api::Id) {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    c.add_to_blacklist("spam@example.com", "").await.unwrap();
    c.add_to_blacklist("*@blocked.example", "whole domain")
        .await
        .unwrap();
    c.add_to_group_blocklist(g.id, "local@example.com")
        .await
        .unwrap();
    (t, g.id)
}

#[tokio::test]
async fn validate_answers_the_addresses_not_blocked() {
    let (t, g) = with_blocks().await;
    let c = &t.client;
    let emails = [
        "ok@example.com",
        "spam@example.com",
        "a@blocked.example",
        "local@example.com",
    ]
    .map(String::from);

    assert_eq!(
        c.validate_blacklist(&emails, None, false).await.unwrap(),
        ["ok@example.com", "local@example.com"]
    );
    assert_eq!(
        c.validate_blacklist(&emails, Some(g), false).await.unwrap(),
        ["ok@example.com"]
    );
    assert_eq!(
        c.validate_blacklist(&emails, Some(g), true).await.unwrap(),
        ["spam@example.com", "a@blocked.example", "local@example.com"]
    );
}

/// The check compares addresses and domains in any case, as the lists
/// store them (the whole list in one statement, issue 15).
#[tokio::test]
async fn validate_blocks_an_address_in_any_case() {
    let (t, g) = with_blocks().await;
    let c = &t.client;
    let emails = [
        "SPAM@Example.COM",
        "a@BLOCKED.Example",
        "Local@Example.com",
        "Other@Example.com",
    ]
    .map(String::from);
    assert_eq!(
        c.validate_blacklist(&emails, Some(g), false).await.unwrap(),
        ["Other@Example.com"]
    );
    assert_eq!(
        c.validate_blacklist(&emails, None, true).await.unwrap(),
        ["SPAM@Example.COM", "a@BLOCKED.Example"]
    );
}

#[tokio::test]
async fn group_blocklists_are_listed_added_and_deleted() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    c.add_to_group_blocklist(g.id, "a@example.com")
        .await
        .unwrap();
    assert_eq!(
        c.group_blocklist(g.id)
            .await
            .unwrap()
            .iter()
            .map(|e| e.email.as_str())
            .collect::<Vec<_>>(),
        ["a@example.com"]
    );
    assert!(
        c.blacklist().await.unwrap().is_empty(),
        "a group blocklist is not the account blacklist"
    );
    assert!(
        c.remove_from_group_blocklist(g.id, "a@example.com")
            .await
            .unwrap()
    );
    assert_eq!(
        c.remove_from_group_blocklist(g.id, "a@example.com")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        c.add_to_group_blocklist(g.id, "nope")
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
}
