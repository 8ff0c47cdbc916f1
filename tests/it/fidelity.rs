//! The server as the live service answers: a body of the wrong JSON type is
//! refused, `--spec-only` hides the extensions with 404, and the live
//! service's receiver extensions (bounced list, groups of a receiver,
//! address change) behave as documented.

use crate::support::TestServer;
use listpipe::api::{Group, Receiver, ReceiverInput};
use serde_json::{Value, json};

/// Every endpoint that takes an object body, with an array instead: serde
/// would fill the struct by position (`[1,2,3]` made a group named "1").
#[tokio::test]
async fn an_array_where_an_object_is_expected_is_a_400_on_every_endpoint() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    let (http, base, token) = t.raw();
    let (g, r) = (g.id, r.id);
    let endpoints = [
        ("POST", "/v3/groups".to_string()),
        ("PUT", format!("/v3/groups/{g}")),
        ("POST", "/v3/attributes".to_string()),
        ("POST", format!("/v3/groups/{g}/attributes")),
        ("POST", format!("/v3/groups/{g}/receivers")),
        ("PUT", format!("/v3/groups/{g}/receivers/{r}")),
        ("POST", format!("/v3/groups/{g}/get_receivers")),
        ("POST", format!("/v3/groups/{g}/filters")),
        ("POST", "/v3/receivers/filter".to_string()),
        ("POST", format!("/v3/receivers/{r}/tags")),
        ("POST", format!("/v3/groups/{g}/receivers/{r}/tags")),
        ("PUT", "/v3/attributes/1".to_string()),
        ("PUT", format!("/v3/receivers/{r}/attributes/1")),
        ("PUT", "/v3/blacklist".to_string()),
        ("POST", format!("/v3/forms/{g}/createfromtemplate/default")),
        ("POST", "/v3/forms/1/send/activate".to_string()),
        ("POST", "/v3/blacklist".to_string()),
        ("POST", "/v3/blacklist/validate".to_string()),
        ("POST", format!("/v3/groups/{g}/blacklist")),
        ("PUT", format!("/v3/receivers/{r}/email")),
    ];
    for (method, path) in &endpoints {
        for suffix in ["", ".json", ".xml"] {
            let url = format!("{base}{path}{suffix}");
            let req = match *method {
                "POST" => http.post(&url),
                _ => http.put(&url),
            };
            let res = req
                .bearer_auth(&token)
                .json(&json!(["1", "2", "3"]))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 400, "{method} {path}{suffix}");
            let body = res.text().await.unwrap();
            if suffix == ".xml" {
                assert!(body.contains("<error>"), "{method} {path}: {body}");
            } else {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["error"]["code"], 400, "{method} {path}: {body}");
            }
            assert!(body.contains("array"), "{method} {path}: {body}");
        }
    }
    // Nothing was made of the arrays.
    let names: Vec<String> = t
        .client
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(names, ["News"]);
    assert!(t.client.attributes(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn batch_items_and_token_requests_that_are_arrays_are_refused() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let res = http
        .post(format!("{base}/v3/groups/{}/receivers/upsert", g.id))
        .bearer_auth(&token)
        .json(&json!([["x@example.com"], {"email": "y@example.com"}]))
        .send()
        .await
        .unwrap();
    let answer: Value = res.json().await.unwrap();
    assert_eq!(
        answer[0]["status"],
        "Bad Request: item 0 is not a receiver: expected an object, got an array"
    );
    assert_eq!(answer[1]["status"], "insert success");

    let res = http
        .post(format!("{base}/v3/blacklist/batch"))
        .bearer_auth(&token)
        .json(&json!([["x@example.com", "comment"]]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);

    let res = http
        .post(format!("{base}/oauth/token.php"))
        .json(&json!(["client_credentials", "id", "secret"]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"], "invalid_request");
}

#[tokio::test]
async fn spec_only_answers_404_for_every_extension_path() {
    let t = TestServer::start_with(|o| o.spec_only = true).await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    for (method, path) in [
        ("POST", format!("/v3/groups/{}/receivers/upsert", g.id)),
        ("POST", format!("/v3/groups/{}/receivers/insert", g.id)),
        ("POST", format!("/v3/groups/{}/receivers/upsertplus", g.id)),
        ("GET", "/v3/receivers/bounced".to_string()),
        ("GET", "/v3/receivers/1/groups".to_string()),
        ("PUT", "/v3/receivers/1/email".to_string()),
    ] {
        let url = format!("{base}{path}");
        let req = match method {
            "POST" => http.post(&url),
            "PUT" => http.put(&url),
            _ => http.get(&url),
        };
        let res = req
            .bearer_auth(&token)
            .json(&json!([]))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{method} {path}");
    }
}

async fn get<T: serde::de::DeserializeOwned>(t: &TestServer, path: &str) -> (u16, T) {
    let (http, base, token) = t.raw();
    let res = http
        .get(format!("{base}{path}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

#[tokio::test]
async fn bounced_receivers_are_listed_account_wide_and_paged() {
    let t = TestServer::start().await;
    let (news, shop) = (t.group("News").await, t.group("Shop").await);
    for (g, email, bounced) in [
        (news.id, "ok@example.com", 0),
        (news.id, "b1@example.com", 1_700_000_000),
        (shop.id, "b2@example.com", 1_700_000_100),
        (shop.id, "ok2@example.com", 0),
    ] {
        let input = ReceiverInput {
            bounced: Some(bounced),
            ..ReceiverInput::email(email)
        };
        t.client.create_receiver(g, &input).await.unwrap();
    }
    let (status, all): (u16, Vec<Receiver>) = get(&t, "/v3/receivers/bounced.json").await;
    assert_eq!(status, 200);
    let emails: Vec<&str> = all.iter().map(|r| r.email.as_str()).collect();
    assert_eq!(emails, ["b1@example.com", "b2@example.com"]);
    let (_, second): (u16, Vec<Receiver>) =
        get(&t, "/v3/receivers/bounced?pagesize=1&page=1").await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].email, "b2@example.com");
    assert_eq!(second[0].group_id, shop.id);
}

#[tokio::test]
async fn a_receivers_groups_are_every_group_its_address_is_in() {
    let t = TestServer::start().await;
    let (news, _shop, vip) = (
        t.group("News").await,
        t.group("Shop").await,
        t.group("VIP").await,
    );
    let r = t
        .client
        .create_receiver(news.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    t.client
        .create_receiver(vip.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    for key in [r.id.to_string(), "a@example.com".to_string()] {
        let (status, groups): (u16, Vec<Group>) =
            get(&t, &format!("/v3/receivers.json/{key}/groups")).await;
        assert_eq!(status, 200);
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["News", "VIP"], "by {key}");
    }
    let (status, body): (u16, Value) = get(&t, "/v3/receivers/nobody@example.com/groups").await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn changing_an_address_keeps_the_receiver_in_every_group_and_refuses_a_taken_one() {
    let t = TestServer::start().await;
    let (news, vip) = (t.group("News").await, t.group("VIP").await);
    let input = ReceiverInput {
        activated: Some(1_700_000_000),
        tags: Some(vec!["Shop.Buyer".into()]),
        ..ReceiverInput::email("old@example.com")
    };
    let r = t.client.create_receiver(news.id, &input).await.unwrap();
    t.client.create_receiver(vip.id, &input).await.unwrap();
    t.client
        .create_receiver(news.id, &ReceiverInput::email("other@example.com"))
        .await
        .unwrap();
    let (http, base, token) = t.raw();
    let put = |key: String, body: Value| {
        http.put(format!("{base}/v3/receivers/{key}/email"))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };

    let res = put(r.id.to_string(), json!({"email": "New@Example.com "}))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let changed: Receiver = res.json().await.unwrap();
    assert_eq!(changed.id, r.id);
    assert_eq!(changed.email, "New@Example.com");
    for g in [news.id, vip.id] {
        let got = t
            .client
            .group_receiver(g, "New@Example.com", listpipe::api::detail::ALL)
            .await
            .unwrap();
        assert!(got.active, "the state is kept");
        assert_eq!(got.tags, Some(vec!["Shop.Buyer".to_string()]));
    }
    let gone = t.client.receiver("old@example.com", None, 0).await;
    assert_eq!(gone.unwrap_err().status(), Some(404));

    let res = put(
        "New@Example.com".into(),
        json!({"email": "other@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 409);
    let res = put(r.id.to_string(), json!({"email": "not an address"}))
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let res = put(r.id.to_string(), json!({})).await.unwrap();
    assert_eq!(res.status(), 400);
    let res = put(
        "nobody@example.com".into(),
        json!({"email": "x@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 404);
}
