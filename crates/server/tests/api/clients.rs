//! Clients (spec §2.2, §4.2): the account's own records, all 11 operations.

use chrono::{Datelike, Timelike, Utc};
use listpipe_api::client_info::ClientLimit;
use listpipe_api::{AttributeInput, AttributeType, Id, ReceiverInput};
use listpipe_server::store::db::params;
use listpipe_testkit::TestServer;
use serde_json::Value;

async fn raw_get(t: &TestServer, path: &str) -> (u16, Value) {
    let (http, base, token) = t.raw();
    let res = http
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

#[tokio::test]
async fn a_single_client_is_answered_as_an_object() {
    let t = TestServer::start().await;
    let me = t.client.whoami().await.unwrap();

    let (status, body) = raw_get(&t, "/v3/clients").await;
    assert_eq!(status, 200);
    assert!(body.is_object(), "{body}");
    assert_eq!(body["id"], Value::String(me.id.to_string()));

    assert_eq!(
        t.client.clients(None, None).await.unwrap(),
        vec![me.clone()]
    );
    assert_eq!(
        t.client.clients(Some(1), Some(0)).await.unwrap(),
        vec![me.clone()]
    );
    // Pages count from 0; the one client is on page 0.
    let (_, past_end) = raw_get(&t, "/v3/clients?page=1").await;
    assert_eq!(past_end, Value::Array(vec![]));
    assert!(t.client.clients(None, Some(1)).await.unwrap().is_empty());
    for bad in [(Some(0), None), (Some(5001), None), (None, Some(-1))] {
        let err = t.client.clients(bad.0, bad.1).await.unwrap_err();
        assert_eq!(err.status(), Some(400), "{bad:?}: {err}");
    }
}

#[tokio::test]
async fn the_client_reads_as_itself_by_id_and_by_login_domain() {
    let t = TestServer::start().await;
    let me = t.client.whoami().await.unwrap();
    assert_eq!(t.client.client(me.id).await.unwrap(), me);
    assert_eq!(
        t.client.client_by_domain(&me.login_domain).await.unwrap(),
        me
    );
    assert_eq!(
        t.client
            .client_by_domain(&me.login_domain.to_uppercase())
            .await
            .unwrap(),
        me
    );
    let err = t
        .client
        .client_by_domain("elsewhere.example")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}

#[tokio::test]
async fn the_plan_is_a_flat_rate_and_a_flat_rate_has_no_contingent() {
    let t = TestServer::start().await;
    let id = t.client.whoami().await.unwrap().id;
    let plan = t.client.client_plan(id).await.unwrap();
    assert_eq!(
        (plan.name.as_str(), plan.flatrate, plan.currency.as_str()),
        ("Flatrate", true, "EUR")
    );
    let (_, body) = raw_get(&t, &format!("/v3/clients/{id}/plan")).await;
    let mut keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "currency",
            "emails",
            "flatrate",
            "id",
            "name",
            "price",
            "receiver_cap",
            "runtime"
        ]
    );
    assert_eq!(t.client.client_contingent(id).await.unwrap(), 0);

    // The plan decides: off a flat rate, the prepaid balance shows.
    let store = t.server.as_ref().unwrap().store.clone();
    store
        .write(move |c| {
            c.exec(
                "INSERT INTO plans (id, name, flatrate, emails) VALUES (2, 'Prepaid', 0, 10000)",
                params![],
            )?;
            c.exec(
                "UPDATE accounts SET plan_id = 2, contingent = 7500 WHERE id = ?1",
                params![id.0],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let plan = t.client.client_plan(id).await.unwrap();
    assert_eq!(
        (plan.name.as_str(), plan.flatrate, plan.emails),
        ("Prepaid", false, 10000)
    );
    assert_eq!(t.client.client_contingent(id).await.unwrap(), 7500);
}

#[tokio::test]
async fn limits_name_each_limit_with_its_value_and_use() {
    let t = TestServer::start().await;
    let id = t.client.whoami().await.unwrap().id;
    let g = t.group("News").await;
    t.group("Shop").await;
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    t.client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    let limits = t.client.client_limits(id).await.unwrap();
    let find = |name: &str| -> ClientLimit {
        limits
            .iter()
            .find(|l| l.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no limit {name} in {limits:?}"))
    };
    let lim = |value: Option<i64>, used: Option<i64>| (value, used);
    assert_eq!(
        lim(find("receivers").value, find("receivers").used),
        (None, Some(1))
    );
    assert_eq!(find("groups").used, Some(2));
    assert_eq!(
        (find("attributes").value, find("attributes").used),
        (Some(200), Some(1))
    );
    assert_eq!(
        (find("forms").value, find("forms").used),
        (Some(100), Some(0))
    );
    assert_eq!(find("blacklist_batch").value, Some(1000));
    assert_eq!(find("receivers_pagesize").value, Some(5000));
    assert_eq!(find("requests_per_second").used, None);
}

#[tokio::test]
async fn invoice_address_and_next_invoice_date_are_the_accounts() {
    let t = TestServer::start().await;
    let me = t.client.whoami().await.unwrap();
    let address = t.client.client_invoice_address(me.id).await.unwrap();
    assert_eq!(address.company, me.company);
    assert_eq!(
        (
            address.street.as_str(),
            address.zip.as_str(),
            address.city.as_str()
        ),
        ("", "", "")
    );

    let when = t.client.client_next_invoice_date(me.id).await.unwrap();
    let date = chrono::DateTime::from_timestamp(when, 0).unwrap();
    let now = Utc::now();
    assert!(when > now.timestamp(), "{date}");
    assert_eq!(
        (date.day(), date.hour(), date.minute(), date.second()),
        (1, 0, 0, 0)
    );
    let months = (date.year() - now.year()) * 12 + date.month() as i32 - now.month() as i32;
    assert_eq!(months, 1, "{date}");
}

#[tokio::test]
async fn receiver_counts_are_bare_integers_of_all_and_of_active_receivers() {
    let t = TestServer::start().await;
    let id = t.client.whoami().await.unwrap().id;
    let (a, b) = (t.group("A").await, t.group("B").await);
    let c = &t.client;
    c.create_receiver(a.id, &ReceiverInput::email("one@example.com"))
        .await
        .unwrap();
    c.create_receiver(b.id, &ReceiverInput::email("one@example.com"))
        .await
        .unwrap();
    let awaiting = ReceiverInput {
        registered: Some(1_600_000_000),
        ..ReceiverInput::email("two@example.com")
    };
    c.create_receiver(a.id, &awaiting).await.unwrap();
    let opted_out = ReceiverInput {
        deactivated: Some(1_600_000_000),
        ..ReceiverInput::email("three@example.com")
    };
    c.create_receiver(b.id, &opted_out).await.unwrap();

    assert_eq!(c.client_receiver_count(id).await.unwrap(), 4);
    assert_eq!(c.client_active_receiver_count(id).await.unwrap(), 2);
    let (_, body) = raw_get(&t, &format!("/v3/clients/{id}/receivercount")).await;
    assert_eq!(body, Value::from(4));
    let (_, body) = raw_get(&t, &format!("/v3/clients/{id}/activereceivercount")).await;
    assert_eq!(body, Value::from(2));
}

#[tokio::test]
async fn users_are_the_people_who_can_log_in_to_the_account() {
    let t = TestServer::start().await;
    let me = t.client.whoami().await.unwrap();
    let users = t.client.client_users(me.id).await.unwrap();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(
        (users[0].name.as_str(), users[0].role.as_str()),
        ("Administrator", "admin")
    );
    assert!(
        users[0].email.contains('@') && users[0].id.0 > 0,
        "{users:?}"
    );
    // An account made without a login has no users.
    let other = t.other_tenant("acme").await;
    let theirs = other.whoami().await.unwrap();
    assert!(other.client_users(theirs.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn another_accounts_client_is_not_found() {
    let t = TestServer::start().await;
    let mine = t.client.whoami().await.unwrap();
    let other = t.other_tenant("acme").await;
    let theirs = other.whoami().await.unwrap();
    assert_ne!(mine.id, theirs.id);
    assert_eq!(other.clients(None, None).await.unwrap(), vec![theirs]);

    let id = mine.id;
    let statuses = [
        other.client(id).await.map(|_| ()),
        other.client_by_domain(&mine.login_domain).await.map(|_| ()),
        other.client_plan(id).await.map(|_| ()),
        other.client_limits(id).await.map(|_| ()),
        other.client_invoice_address(id).await.map(|_| ()),
        other.client_next_invoice_date(id).await.map(|_| ()),
        other.client_contingent(id).await.map(|_| ()),
        other.client_receiver_count(id).await.map(|_| ()),
        other.client_active_receiver_count(id).await.map(|_| ()),
        other.client_users(id).await.map(|_| ()),
        other.client(Id(987_654)).await.map(|_| ()),
    ]
    .map(|r| r.unwrap_err().status());
    assert_eq!(statuses, [Some(404); 11]);
    let (status, _) = raw_get(&t, "/v3/clients/me/plan").await;
    assert_eq!(status, 404);
}
