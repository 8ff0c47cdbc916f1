//! `serve --rate-limit` and `serve --faults`: what a client sees over real
//! HTTP, and what is stored when a connection drops.

use crate::support::TestServer;
use listpipe::api::{GroupInput, ReceiverInput, ReceiverQuery};
use listpipe::client::{ApiClient, ClientError};
use listpipe::server::{self, ServeOptions};
use std::num::NonZeroU32;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Restarts `t`'s server on its database with options set by `set`.
async fn restart_with(t: &mut TestServer, set: impl FnOnce(&mut ServeOptions)) {
    if let Some(s) = t.server.take() {
        s.stop().await;
    }
    let mut opts = ServeOptions::new(t.db(), "127.0.0.1:0");
    opts.clock = t.clock();
    set(&mut opts);
    let s = server::start(opts).await.expect("server restarts");
    t.client = ApiClient::new(&s.base_url, &t.creds.access_token).expect("client");
    t.server = Some(s);
}

fn faults(spec: &str, seed: u64) -> impl FnOnce(&mut ServeOptions) {
    let spec = spec.parse().expect("a valid spec");
    move |o| {
        o.faults = Some(spec);
        o.fault_seed = seed;
    }
}

/// The statuses of `n` requests sent one after another (0: transport error).
async fn statuses(client: &ApiClient, n: usize) -> Vec<u16> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(match client.validate().await {
            Ok(_) => 200,
            Err(e) => e.status().unwrap_or(0),
        });
    }
    out
}

#[tokio::test]
async fn over_the_rate_limit_a_token_gets_429_with_retry_after() {
    let mut t = TestServer::start_on_test_clock(|_| {}).await;
    let other = t.other_tenant("second").await;
    restart_with(&mut t, |o| o.rate_limit = NonZeroU32::new(5)).await;
    let other = ApiClient::new(&t.base_url(), &other.token()).unwrap();

    // 20 requests at once: a burst of 5 passes, the rest is refused (one
    // may pass as the quota refills every 200 ms, hence the margin).
    let calls = (0..20).map(|_| t.client.validate());
    let results = futures::future::join_all(calls).await;
    let limited: Vec<ClientError> = results.into_iter().filter_map(Result::err).collect();
    assert!(
        (12..=15).contains(&limited.len()),
        "{} refused",
        limited.len()
    );
    for e in &limited {
        assert_eq!(e.status(), Some(429));
        assert_eq!(e.retry_after(), Some(1));
        assert_eq!(
            e.server_message(),
            "HTTP 429: Too Many Requests: over 5 requests per second for this account; retry after 1 s"
        );
    }
    // Another token has its own quota; the first one's comes back in time.
    assert!(other.validate().await.unwrap());
    t.advance(1);
    assert!(t.client.validate().await.unwrap());
}

#[tokio::test]
async fn with_seed_7_a_500_share_of_0_2_fails_about_a_fifth_the_same_way_each_time() {
    let mut t = TestServer::start().await;
    restart_with(&mut t, faults("500=0.2", 7)).await;
    let first = statuses(&t.client, 1000).await;
    let errors = first.iter().filter(|s| **s == 500).count();
    // Binomial(1000, 0.2): sd 12.6; ±45 is about 3.5 sd.
    assert!((155..=245).contains(&errors), "{errors} errors");
    assert!(first.iter().all(|s| *s == 200 || *s == 500));

    restart_with(&mut t, faults("500=0.2", 7)).await;
    assert_eq!(
        statuses(&t.client, 1000).await,
        first,
        "same seed, same sequence"
    );
    restart_with(&mut t, faults("500=0.2", 8)).await;
    assert_ne!(statuses(&t.client, 1000).await, first);
}

#[tokio::test]
async fn an_injected_500_carries_the_error_body_and_an_injected_429_retry_after() {
    let mut t = TestServer::start().await;
    restart_with(&mut t, faults("500=1", 1)).await;
    let e = t.client.validate().await.unwrap_err();
    assert_eq!(
        e.server_message(),
        "HTTP 500: Internal Server Error: RestException (injected fault)"
    );

    // The token endpoint is never faulted.
    let (http, base, _) = t.raw();
    let res = http
        .post(format!("{base}/oauth/token.php"))
        .basic_auth(&t.creds.client_id, Some(&t.creds.client_secret))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    restart_with(&mut t, faults("429=1", 1)).await;
    let e = t.client.validate().await.unwrap_err();
    assert_eq!((e.status(), e.retry_after()), (Some(429), Some(1)));
}

#[tokio::test]
async fn reset_after_stores_the_write_although_the_client_sees_a_transport_error() {
    let mut t = TestServer::start().await;
    let g = t.group("News").await;
    restart_with(&mut t, faults("reset_after=1", 3)).await;

    let err = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");

    t.restart().await;
    let r = t
        .client
        .group_receiver(g.id, "a@example.com", 0)
        .await
        .expect("the write was committed before the connection dropped");
    assert_eq!(r.email, "a@example.com");
    // So a blind retry of the create now meets a 409.
    let again = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap_err();
    assert_eq!(again.status(), Some(409));
}

#[tokio::test]
async fn reset_drops_the_connection_before_anything_is_written() {
    let mut t = TestServer::start().await;
    let g = t.group("News").await;
    restart_with(&mut t, faults("reset=1", 3)).await;

    let err = t
        .client
        .create_group(&GroupInput::named("Never"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
    let err = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");

    t.restart().await;
    let all = t
        .client
        .receivers(g.id, &ReceiverQuery::default())
        .await
        .unwrap();
    assert!(all.is_empty());
    let groups = t.client.groups(None).await.unwrap();
    assert_eq!(groups.len(), 1);
}

#[tokio::test]
async fn delay_holds_a_request_back() {
    let mut t = TestServer::start().await;
    let started = Instant::now();
    t.client.validate().await.unwrap();
    let plain = started.elapsed();

    restart_with(&mut t, faults("delay=300ms@1", 1)).await;
    let started = Instant::now();
    assert!(t.client.validate().await.unwrap());
    let delayed = started.elapsed();
    assert!(delayed >= Duration::from_millis(300), "{delayed:?}");
    assert!(
        delayed >= plain + Duration::from_millis(250),
        "{plain:?} vs {delayed:?}"
    );
}

#[test]
fn a_bad_fault_spec_is_a_usage_error_naming_the_valid_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::binary()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--faults",
            "503=0.1",
            "--db",
        ])
        .arg(dir.path().join("server.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown fault \"503\""), "{stderr}");
    assert!(
        stderr.contains(
            "valid keys: 500=SHARE, 429=SHARE, reset=SHARE, reset_after=SHARE, delay=DURATION@SHARE"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("server.db").exists(), "nothing started");
}

#[test]
fn serve_warns_loudly_when_faults_are_on() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = crate::support::binary()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--faults",
            "500=0.1",
            "--fault-seed",
            "9",
        ])
        .arg("--db")
        .arg(dir.path().join("server.db"))
        .arg("--credentials")
        .arg(dir.path().join("credentials.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut warning = None;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("WARNING: FAULT INJECTION IS ON") => {
                warning = Some(line);
                break;
            }
            Ok(_) => continue,
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        warning.as_deref(),
        Some(
            "listpipe: WARNING: FAULT INJECTION IS ON (500=0.1, seed 9): this server fails requests ON PURPOSE; never use it as a real target"
        )
    );
}
