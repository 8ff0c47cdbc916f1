//! The server under more than it takes at once (issue 15): requests over
//! `--max-in-flight` and requests slower than `--request-timeout` are
//! answered 503 with `Retry-After` and the API's error body, and a refused
//! request wrote nothing.

use listpipe_api::ReceiverQuery;
use listpipe_server::faults::FaultSpec;
use listpipe_testkit::TestServer;
use serde_json::{Value, json};
use std::time::Duration;

fn slow(spec: &str) -> Option<FaultSpec> {
    Some(spec.parse().expect("a fault spec"))
}

#[tokio::test]
async fn a_flood_beyond_the_bound_is_answered_503_with_retry_after_and_nothing_of_it_is_written() {
    // One request at a time, each held a second: the flood's others are over the bound.
    let t = TestServer::start_with(|o| {
        o.max_in_flight = 1;
        o.faults = slow("delay=1s@1");
    })
    .await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let sends = (0..6).map(|batch| {
        let body: Vec<Value> = (0..20)
            .map(|n| json!({"email": format!("b{batch}-{n}@example.com")}))
            .collect();
        http.post(format!("{base}/v3/groups/{}/receivers/upsert", g.id))
            .bearer_auth(&token)
            .json(&body)
            .send()
    });
    let answers = futures::future::join_all(sends).await;

    let mut written = Vec::new();
    let mut refused = 0;
    for (batch, answer) in answers.into_iter().enumerate() {
        let res = answer.expect("an answer");
        match res.status().as_u16() {
            200 => written.extend((0..20).map(|n| format!("b{batch}-{n}@example.com"))),
            503 => {
                refused += 1;
                assert_eq!(res.headers()["retry-after"], "1");
                let body: Value = res.json().await.unwrap();
                assert_eq!(
                    body,
                    json!({"error": {"code": 503, "message":
                        "Service Unavailable: the server is handling 1 requests; retry after 1 s"}})
                );
            }
            other => panic!("batch {batch}: status {other}"),
        }
    }
    assert!(refused > 0, "six requests at once, one handled at a time");
    assert!(!written.is_empty(), "the first request is handled");

    // Each batch is all there or not there at all.
    let q = ReceiverQuery {
        pagesize: Some(5000),
        ..Default::default()
    };
    let mut stored: Vec<String> = t
        .client
        .receivers(g.id, &q)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.email)
        .collect();
    stored.sort();
    written.sort();
    assert_eq!(stored, written);
}

#[tokio::test]
async fn a_request_slower_than_the_timeout_is_answered_503_with_retry_after() {
    let t = TestServer::start_with(|o| {
        o.request_timeout = Duration::from_secs(1);
        o.faults = slow("delay=3s@1");
    })
    .await;
    let (http, base, token) = t.raw();
    let res = http
        .get(format!("{base}/v3/groups"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(res.headers()["retry-after"], "1");
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": 503, "message":
            "Service Unavailable: the request took longer than 1 s; retry after 1 s"}})
    );
}
