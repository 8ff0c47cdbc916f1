//! Tokens under attack (issue 43): a replayed refresh token or code revokes
//! its whole family, a debug exchange retires the pair it replaces, a
//! revocation holds for every request sent after it, wrong client secrets
//! are limited per client id and address (issue 56: not per client id
//! alone, which anyone could lock out), and minting tokens does not
//! multiply the rate limit.

use crate::support::TestServer;
use listpipe::api::TokenResponse;
use listpipe::client::oauth;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The status of `GET /v3/debug/validate` with `token`.
async fn validate(t: &TestServer, token: &str) -> u16 {
    let (http, base, _) = t.raw();
    http.get(format!("{base}/v3/debug/validate"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn refresh(t: &TestServer, refresh_token: &str) -> Result<TokenResponse, u16> {
    let c = &t.creds;
    oauth::refresh(&c.base_url, &c.client_id, &c.client_secret, refresh_token)
        .await
        .map_err(|e| e.status().unwrap_or(0))
}

async fn client_credentials(t: &TestServer) -> TokenResponse {
    let c = &t.creds;
    oauth::client_credentials(&c.base_url, &c.client_id, &c.client_secret)
        .await
        .unwrap()
}

#[tokio::test]
async fn replaying_a_spent_refresh_token_revokes_its_whole_family_access_tokens_included() {
    let t = TestServer::start().await;
    let first = t.creds.clone();
    let second = refresh(&t, &first.refresh_token).await.unwrap();
    let third = refresh(&t, &second.refresh_token).await.unwrap();
    // Another grant of the same client: another family.
    let other = client_credentials(&t).await;
    for token in [
        &first.access_token,
        &second.access_token,
        &third.access_token,
    ] {
        assert_eq!(validate(&t, token).await, 200);
    }

    // The first refresh token again: it leaked.
    assert_eq!(refresh(&t, &first.refresh_token).await.unwrap_err(), 400);
    for token in [
        &first.access_token,
        &second.access_token,
        &third.access_token,
    ] {
        assert_eq!(validate(&t, token).await, 401);
    }
    assert_eq!(refresh(&t, &third.refresh_token).await.unwrap_err(), 400);
    assert_eq!(validate(&t, &other.access_token).await, 200);
    assert!(refresh(&t, &other.refresh_token).await.is_ok());
}

#[tokio::test]
async fn replaying_an_authorization_code_revokes_the_tokens_of_its_first_exchange() {
    let t = TestServer::start().await;
    let c = &t.creds;
    let store = t.server.as_ref().unwrap().store.clone();
    let code = store
        .write(|conn| {
            let app = listpipe::server::store::accounts::app_of(conn, "default")?;
            listpipe::server::store::accounts::mint_code(conn, &app, "https://app.example/cb")
        })
        .await
        .unwrap();
    let exchange = || {
        oauth::authorization_code(
            &c.base_url,
            &c.client_id,
            &c.client_secret,
            &code,
            "https://app.example/cb",
        )
    };
    let tokens = exchange().await.unwrap();
    let refreshed = refresh(&t, &tokens.refresh_token).await.unwrap();
    assert_eq!(validate(&t, &refreshed.access_token).await, 200);

    let again = exchange().await.unwrap_err();
    assert_eq!(again.status(), Some(400));
    assert!(again.to_string().contains("invalid_grant"), "{again}");
    assert_eq!(validate(&t, &tokens.access_token).await, 401);
    assert_eq!(validate(&t, &refreshed.access_token).await, 401);
    assert_eq!(
        refresh(&t, &refreshed.refresh_token).await.unwrap_err(),
        400
    );
    // The server's first tokens are of another grant.
    assert_eq!(validate(&t, &c.access_token).await, 200);
}

#[tokio::test]
async fn a_debug_exchange_revokes_the_pair_it_replaces_refresh_token_included() {
    let t = TestServer::start().await;
    let old = client_credentials(&t).await;
    let (http, base, _) = t.raw();
    let new: TokenResponse = http
        .get(format!("{base}/v3/debug/exchange"))
        .bearer_auth(&old.access_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(validate(&t, &old.access_token).await, 401);
    assert_eq!(refresh(&t, &old.refresh_token).await.unwrap_err(), 400);
    assert_eq!(validate(&t, &new.access_token).await, 200);
    assert!(refresh(&t, &new.refresh_token).await.is_ok());
}

#[tokio::test]
async fn a_token_revoked_while_in_use_is_refused_by_every_request_sent_after_the_revocation() {
    let t = TestServer::start().await;
    let (http, base, _) = t.raw();
    for _ in 0..15 {
        let pair = client_credentials(&t).await;
        let revoked = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        // Four clients use the token without pause, each counting the
        // requests it sent after the revocation was answered and that were
        // accepted all the same.
        let users: Vec<_> = (0..4)
            .map(|_| {
                let (http, url) = (http.clone(), format!("{base}/v3/debug/validate"));
                let token = pair.access_token.clone();
                let (revoked, stop) = (revoked.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut accepted_after = 0;
                    while !stop.load(Ordering::SeqCst) {
                        let after = revoked.load(Ordering::SeqCst);
                        let res = http.get(&url).bearer_auth(&token).send().await.unwrap();
                        if after && res.status() == 200 {
                            accepted_after += 1;
                        }
                    }
                    accepted_after
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let res = http
            .get(format!("{base}/v3/debug/exchange"))
            .bearer_auth(&pair.access_token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        revoked.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(30)).await;
        stop.store(true, Ordering::SeqCst);
        for user in users {
            assert_eq!(user.await.unwrap(), 0, "a revoked token was accepted");
        }
    }
}

#[tokio::test]
async fn wrong_client_secrets_are_answered_429_with_retry_after_after_ten_in_a_row() {
    let t = TestServer::start().await;
    let c = &t.creds;
    let (http, base, _) = t.raw();
    let attempt = |secret: String| {
        http.post(format!("{base}/oauth/token.php"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", c.client_id.as_str()),
                ("client_secret", secret.as_str()),
            ])
            .send()
    };
    let mut statuses = Vec::new();
    let mut last = None;
    for n in 0..30 {
        let res = attempt(format!("{n:064x}")).await.unwrap();
        statuses.push(res.status().as_u16());
        last = Some(res);
    }
    assert_eq!(statuses[..10], [401; 10]);
    assert_eq!(statuses[10..], [429; 20]);
    let last = last.unwrap();
    let wait: u64 = last.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=6).contains(&wait), "Retry-After: {wait}");
    let body: serde_json::Value = last.json().await.unwrap();
    assert_eq!(body["error"], "slow_down");
    assert_eq!(
        body["error_description"],
        format!(
            "too many failed client authentications for this client from this address; retry after {wait} s"
        )
    );
    // While it waits even the right secret from this address is not
    // checked; the client's tokens keep working.
    let right = attempt(c.client_secret.clone()).await.unwrap();
    assert_eq!(right.status(), 429);
    assert_eq!(validate(&t, &c.access_token).await, 200);
}

/// A client of the token endpoint whose requests come from `from` (a
/// loopback address: 127.0.0.2 reaches the server on 127.0.0.1 too).
fn http_from(from: [u8; 4]) -> reqwest::Client {
    listpipe::client::init_tls();
    reqwest::Client::builder()
        .local_address(IpAddr::from(from))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Posts a token request for `t`'s client with `secret` (and `extra`
/// fields, `grant_type` among them), with `headers`.
async fn token_request(
    t: &TestServer,
    http: &reqwest::Client,
    secret: &str,
    extra: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = vec![
        ("client_id", t.creds.client_id.as_str()),
        ("client_secret", secret),
    ];
    form.extend_from_slice(extra);
    let mut req = http
        .post(format!("{}/oauth/token.php", t.base_url()))
        .form(&form);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

const CLIENT_CREDENTIALS: &[(&str, &str)] = &[("grant_type", "client_credentials")];

/// The status of `n` client-credentials requests with a wrong secret.
async fn wrong_secrets(
    t: &TestServer,
    http: &reqwest::Client,
    n: usize,
    headers: &[(&str, &str)],
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for _ in 0..n {
        let res = token_request(t, http, &"0".repeat(64), CLIENT_CREDENTIALS, headers).await;
        statuses.push(res.status().as_u16());
    }
    statuses
}

/// Issue 56: the client id is public, so an attacker elsewhere who fails it
/// without pause is slowed, and the client itself, from its own address
/// with the right secret, gets its tokens (refreshes included) all along.
#[tokio::test]
async fn an_attacker_failing_a_client_id_from_another_address_does_not_lock_the_client_out() {
    let t = TestServer::start().await;
    let attacker = http_from([127, 0, 0, 2]);
    let client = http_from([127, 0, 0, 1]);
    assert_eq!(wrong_secrets(&t, &attacker, 10, &[]).await, [401; 10]);

    let attack = wrong_secrets(&t, &attacker, 40, &[]);
    let work = async {
        let mut refresh_token = t.creds.refresh_token.clone();
        let mut issued = 0;
        for n in 0..10 {
            let grant: Vec<(&str, &str)> = if n % 2 == 0 {
                CLIENT_CREDENTIALS.to_vec()
            } else {
                vec![
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh_token.as_str()),
                ]
            };
            let res = token_request(&t, &client, &t.creds.client_secret, &grant, &[]).await;
            if res.status() == 200 {
                issued += 1;
                let tokens: TokenResponse = res.json().await.unwrap();
                if n % 2 == 1 {
                    refresh_token = tokens.refresh_token;
                }
            }
        }
        issued
    };
    let (attacked, issued) = tokio::join!(attack, work);
    assert!(issued >= 9, "the client got tokens {issued} times in 10");
    // The attacker waits: a failure comes back every 6 s, which a slow
    // machine may take in the middle of its 40 attempts.
    assert!(
        attacked.iter().all(|s| *s == 401 || *s == 429),
        "{attacked:?}"
    );
    let refused = attacked.iter().filter(|s| **s == 429).count();
    assert!(refused >= 38, "{attacked:?}");
    let last = token_request(&t, &attacker, &"0".repeat(64), CLIENT_CREDENTIALS, &[]).await;
    assert_eq!(last.status(), 429);
    let wait: u64 = last.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=6).contains(&wait), "Retry-After: {wait}");
    let body: serde_json::Value = last.json().await.unwrap();
    assert_eq!(
        body["error_description"],
        format!(
            "too many failed client authentications for this client from this address; retry after {wait} s"
        )
    );
}

/// "10 in a row": a success from an address starts its count for the
/// client over.
#[tokio::test]
async fn a_right_secret_resets_the_failures_of_its_client_from_its_address() {
    let t = TestServer::start().await;
    let http = http_from([127, 0, 0, 1]);
    let right = || token_request(&t, &http, &t.creds.client_secret, CLIENT_CREDENTIALS, &[]);
    assert_eq!(wrong_secrets(&t, &http, 9, &[]).await, [401; 9]);
    assert_eq!(right().await.status(), 200);
    // Without the reset the second of these would be the eleventh failure.
    assert_eq!(wrong_secrets(&t, &http, 10, &[]).await, [401; 10]);
    assert_eq!(right().await.status(), 429, "ten in a row");
}

/// Behind a proxy given to `--trusted-proxy`, the address it forwards for
/// is counted; from any other peer `X-Forwarded-For` is ignored.
#[tokio::test]
async fn forwarded_addresses_are_counted_only_from_a_trusted_proxy() {
    let t =
        TestServer::start_with(|o| o.trusted_proxies = vec![IpAddr::from([127, 0, 0, 1])]).await;
    let proxy = http_from([127, 0, 0, 1]);
    let right = |http, from| {
        let t = &t;
        async move {
            let headers = [("x-forwarded-for", from)];
            token_request(
                t,
                http,
                &t.creds.client_secret,
                CLIENT_CREDENTIALS,
                &headers,
            )
            .await
            .status()
            .as_u16()
        }
    };
    let attacker = [("x-forwarded-for", "203.0.113.66")];
    assert_eq!(wrong_secrets(&t, &proxy, 10, &attacker).await, [401; 10]);
    assert_eq!(wrong_secrets(&t, &proxy, 1, &attacker).await, [429]);
    assert_eq!(
        right(&proxy, "198.51.100.7").await,
        200,
        "another client address"
    );
    assert_eq!(
        right(&proxy, "203.0.113.66").await,
        429,
        "the attacker's address"
    );

    // 127.0.0.2 is no trusted proxy: what it claims is ignored, its own
    // address is counted.
    let other = http_from([127, 0, 0, 2]);
    let claims = [("x-forwarded-for", "198.51.100.7")];
    assert_eq!(wrong_secrets(&t, &other, 10, &claims).await, [401; 10]);
    assert_eq!(right(&other, "192.0.2.1").await, 429);
    assert_eq!(
        right(&proxy, "198.51.100.7").await,
        200,
        "not counted against"
    );
}

#[tokio::test]
async fn wrong_secrets_for_many_clients_from_one_address_are_limited_after_thirty() {
    let t = TestServer::start().await;
    let (http, base, _) = t.raw();
    let mut statuses = Vec::new();
    for n in 0..32 {
        let res = http
            .post(format!("{base}/oauth/token.php"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", format!("client{n}").as_str()),
                ("client_secret", "wrong"),
            ])
            .send()
            .await
            .unwrap();
        statuses.push(res.status().as_u16());
        if n == 31 {
            let body: serde_json::Value = res.json().await.unwrap();
            let text = body["error_description"].as_str().unwrap();
            assert!(
                text.starts_with("too many failed client authentications from this address"),
                "{text}"
            );
        }
    }
    assert_eq!(statuses[..30], [401; 30]);
    assert_eq!(statuses[30..], [429; 2]);
}

#[tokio::test]
async fn minting_more_tokens_does_not_multiply_the_rate_limit_of_an_account() {
    let t = TestServer::start_with(|o| o.rate_limit = std::num::NonZeroU32::new(1)).await;
    let mut tokens = vec![t.creds.access_token.clone()];
    for _ in 0..3 {
        tokens.push(client_credentials(&t).await.access_token);
    }
    // 20 requests at once over four tokens of one account: its burst of 1
    // passes, and one more each second the requests take (a busy machine
    // or PostgreSQL). Limited per token, each of the four would pass.
    let calls = (0..20).map(|n| validate(&t, &tokens[n % 4]));
    let statuses = futures::future::join_all(calls).await;
    let passed = statuses.iter().filter(|s| **s == 200).count();
    assert!((1..=3).contains(&passed), "{passed} passed: {statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429));
}

#[tokio::test]
async fn a_replayed_refresh_token_is_logged_as_a_security_event() {
    let files = crate::hardening::raise_own_open_file_limit();
    let server = crate::hardening::LimitedServer::start(files, files, &[]);
    let creds: listpipe::api::oauth::Credentials =
        serde_json::from_slice(&std::fs::read(server.dir.path().join("credentials.json")).unwrap())
            .unwrap();
    let refresh = || {
        oauth::refresh(
            &server.base_url,
            &creds.client_id,
            &creds.client_secret,
            &creds.refresh_token,
        )
    };
    refresh().await.unwrap();
    assert_eq!(refresh().await.unwrap_err().status(), Some(400));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let line = loop {
        let found = server
            .log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.contains("security_event"))
            .cloned();
        if let Some(line) = found {
            break without_colours(&line);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no security event logged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains(
            "a spent refresh token was presented again: it leaked; every token of its family is revoked"
        ),
        "{line}"
    );
    assert!(line.contains("security_event=\"token_replay\""), "{line}");
    // The first start's access token, and the pair of the first refresh.
    assert!(line.contains("revoked=3"), "{line}");
    assert!(!line.contains(&creds.refresh_token), "{line}");
}

/// `line` without its terminal colour codes (`ESC [ ... m`).
fn without_colours(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// Two runs sharing one credentials file: one refreshes while the other
/// waits for the file's lock. The waiting one takes the tokens the first
/// saved instead of presenting the spent refresh token again, which would
/// have revoked the family and so both runs' tokens.
#[tokio::test]
async fn a_run_whose_token_another_process_refreshed_takes_the_saved_tokens_and_revokes_nothing() {
    let t = TestServer::start().await;
    let dir = t.dir.path().to_path_buf();
    let path = dir.join("credentials.json");
    // The run starts with a token the server refuses (as after its expiry)
    // and the refresh token the other process is about to spend.
    let mut stale = t.creds.clone();
    stale.access_token = "expired".into();
    listpipe::server::write_credentials(&path, &stale).unwrap();
    std::fs::write(dir.join("in.csv"), "email\na@example.com\n").unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "[target]\nurl = \"{}\"\ncredentials = \"credentials.json\"\n[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
            t.base_url()
        ),
    )
    .unwrap();
    let other = listpipe::credentials_lock::lock(&path).unwrap();
    let log = dir.join("run.log");
    let mut child = crate::support::binary()
        .current_dir(&dir)
        .args(["run", "p.toml"])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .env("LISTPIPE_LOG", "listpipe=debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let waiting = "taking the credentials file's lock";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log).unwrap().contains(waiting) {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never asked for the lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The other process refreshes and saves, then lets go.
    let fresh = refresh(&t, &t.creds.refresh_token).await.unwrap();
    let mut saved = t.creds.clone();
    saved.access_token = fresh.access_token.clone();
    saved.refresh_token = fresh.refresh_token.clone();
    listpipe::server::write_credentials(&path, &saved).unwrap();
    drop(other);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("refreshed by another process sharing the credentials file"),
        "{stderr}"
    );
    assert_eq!(
        validate(&t, &fresh.access_token).await,
        200,
        "nothing was revoked"
    );
    let on_disk: listpipe::api::oauth::Credentials =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(on_disk.refresh_token, fresh.refresh_token);
    assert!(
        refresh(&t, &fresh.refresh_token).await.is_ok(),
        "the family lives on"
    );
}
