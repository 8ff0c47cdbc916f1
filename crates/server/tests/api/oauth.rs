//! The token service and the debug operations (spec §4.1, §5).

use listpipe_client::{ApiClient, oauth};
use listpipe_testkit::TestServer;
use serde_json::Value;

#[tokio::test]
async fn a_refresh_token_gives_a_new_pair_and_works_once() {
    let t = TestServer::start().await;
    let c = &t.creds;
    let fresh = oauth::refresh(
        &c.base_url,
        &c.client_id,
        &c.client_secret,
        &c.refresh_token,
    )
    .await
    .unwrap();
    assert_eq!(
        (fresh.token_type.as_str(), fresh.expires_in),
        ("bearer", 3600)
    );
    assert!(
        !fresh.access_token.is_empty()
            && !fresh.refresh_token.is_empty()
            && !fresh.scope.is_empty()
    );
    let client = ApiClient::new(&c.base_url, &fresh.access_token).unwrap();
    assert!(client.validate().await.unwrap());

    let err = oauth::refresh(
        &c.base_url,
        &c.client_id,
        &c.client_secret,
        &c.refresh_token,
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("invalid_grant"), "{err}");
}

#[tokio::test]
async fn client_credentials_work_as_basic_auth_json_multipart_and_raw_bodies() {
    let t = TestServer::start().await;
    let (http, base, _) = t.raw();
    let c = &t.creds;
    let url = format!("{base}/oauth/token.php");
    let basic = base64_basic(&c.client_id, &c.client_secret);

    let answers = [
        // HTTP Basic with several spaces after the scheme, form body.
        http.post(&url).header("Authorization", format!("Basic    {basic}")).header("Content-Type", "application/x-www-form-urlencoded").body("grant_type=client_credentials"),
        // JSON body with the client in it.
        http.post(&url).json(&serde_json::json!({"grant_type": "client_credentials", "client_id": c.client_id, "client_secret": c.client_secret})),
        // A raw "&grant_type=..." string with no content type.
        http.post(&url).body(format!("&grant_type=client_credentials&client_id={}&client_secret={}", c.client_id, c.client_secret)),
        // Multipart.
        http.post(&url)
            .header("Content-Type", "multipart/form-data; boundary=XyZ")
            .body(format!(
                "--XyZ\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\nclient_credentials\r\n--XyZ\r\nContent-Disposition: form-data; name=\"client_id\"\r\n\r\n{}\r\n--XyZ\r\nContent-Disposition: form-data; name=\"client_secret\"\r\n\r\n{}\r\n--XyZ--\r\n",
                c.client_id, c.client_secret
            )),
    ];
    for req in answers {
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let body: Value = res.json().await.unwrap();
        for key in [
            "access_token",
            "expires_in",
            "refresh_token",
            "token_type",
            "scope",
        ] {
            assert!(!body[key].is_null(), "{key} missing in {body}");
        }
    }
}

#[tokio::test]
async fn an_authorization_code_is_exchanged_once_for_its_redirect_uri() {
    let t = TestServer::start().await;
    let c = &t.creds;
    let store = t.server.as_ref().unwrap().store.clone();
    let mint = || {
        let store = store.clone();
        async move {
            store
                .write(|conn| {
                    let app = listpipe_server::store::accounts::app_of(conn, "default")?;
                    listpipe_server::store::accounts::mint_code(
                        conn,
                        &app,
                        "https://app.example/cb",
                    )
                })
                .await
                .unwrap()
        }
    };
    let code = mint().await;
    let tokens = oauth::authorization_code(
        &c.base_url,
        &c.client_id,
        &c.client_secret,
        &code,
        "https://app.example/cb",
    )
    .await
    .unwrap();
    assert!(
        ApiClient::new(&c.base_url, &tokens.access_token)
            .unwrap()
            .validate()
            .await
            .unwrap()
    );
    let again = oauth::authorization_code(
        &c.base_url,
        &c.client_id,
        &c.client_secret,
        &code,
        "https://app.example/cb",
    )
    .await;
    assert_eq!(again.unwrap_err().status(), Some(400));
    let other = mint().await;
    let wrong_uri = oauth::authorization_code(
        &c.base_url,
        &c.client_id,
        &c.client_secret,
        &other,
        "https://evil.example/cb",
    )
    .await;
    assert_eq!(wrong_uri.unwrap_err().status(), Some(400));
}

#[tokio::test]
async fn a_wrong_secret_or_grant_gets_the_oauth_error_body() {
    let t = TestServer::start().await;
    let (http, base, _) = t.raw();
    let c = &t.creds;
    let res = http
        .post(format!("{base}/oauth/token.php"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", &c.client_id),
            ("client_secret", "wrong"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "invalid_client"
    );
    let res = http
        .post(format!("{base}/oauth/token.php"))
        .form(&[
            ("grant_type", "password"),
            ("client_id", &c.client_id),
            ("client_secret", &c.client_secret),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "unsupported_grant_type");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("authorization_code, refresh_token or client_credentials")
    );
}

#[tokio::test]
async fn debug_reports_who_and_how_long_and_exchange_retires_the_old_token() {
    let t = TestServer::start().await;
    let c = &t.client;
    assert_eq!(c.whoami().await.unwrap().id.0, 1);
    let ttl = c.ttl().await.unwrap();
    assert!(ttl.ttl > 3500 && ttl.ttl <= 3600, "{ttl:?}");
    assert!(c.validate().await.unwrap());

    let old = ApiClient::new(&t.base_url(), &t.creds.access_token).unwrap();
    let fresh = c.exchange().await.unwrap();
    assert_ne!(fresh.access_token, t.creds.access_token);
    assert!(
        c.validate().await.unwrap(),
        "the client switched to the new token"
    );
    assert_eq!(old.validate().await.unwrap_err().status(), Some(401));
}

/// One token, one successor: of several exchanges of one token sent at
/// once (through a server process each, on PostgreSQL), one gets a pair and
/// the others are refused; the pair works, the old token does not.
#[tokio::test]
async fn exchanges_of_one_token_at_once_make_one_new_pair() {
    let t = TestServer::start().await;
    let (http, base, token) = t.raw();
    let url = format!("{base}/v3/debug/exchange");
    let calls = (0..6).map(|_| http.get(&url).bearer_auth(&token).send());
    let answers = futures::future::join_all(calls).await;
    let statuses: Vec<u16> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 401].contains(s)),
        "{statuses:?}"
    );
    let old = ApiClient::new(&base, &token).unwrap();
    assert_eq!(old.validate().await.unwrap_err().status(), Some(401));
}

#[tokio::test]
async fn every_v3_operation_needs_a_live_token_in_any_of_three_places() {
    let t = TestServer::start_on_test_clock(|o| o.token_ttl = 2).await;
    let (http, base, token) = t.raw();
    let whoami = format!("{base}/v3/debug/whoami");
    assert_eq!(
        http.get(&whoami)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http.get(&whoami)
            .header("X-ACCESS-TOKEN", &token)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http.get(format!("{whoami}?token={token}"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    for res in [
        http.get(&whoami).send().await.unwrap(),
        http.get(&whoami)
            .bearer_auth("0123456789abcdef0123456789abcdef0123456789abcdef")
            .send()
            .await
            .unwrap(),
        http.get(&whoami)
            .bearer_auth("garbage")
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(res.status(), 401);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], 401);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Unauthorized")
        );
    }

    t.advance(3);
    assert_eq!(
        http.get(&whoami)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status(),
        401,
        "expired token"
    );
}

fn base64_basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
}
