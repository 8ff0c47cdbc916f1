//! Adaptive concurrency and the run's one view of the target's rate limit
//! (issue 16), end to end: the real binary against the in-process server
//! with `serve --rate-limit` and `--faults`. Counts only, never timings.

use crate::in_process::run_here;
use crate::support::TestServer;
use serde_json::Value;
use std::collections::HashSet;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

/// `n` new receivers and a pipeline importing them into "Limited", with
/// `target` lines added to `[target]`.
fn pipeline(dir: &Path, n: usize, target: &str) -> PathBuf {
    let mut csv = String::from("email,firstname\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com,Name{i}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("limited.toml");
    std::fs::write(
        &path,
        format!(
            "[target]\nurl = \"builtin\"\nretries = 8\n{target}\n\n\
             [[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"Limited\"\n\
             create_group = true\n\n[import.receiver]\nemail = \"email\"\n\n\
             [import.global_attributes]\nfirstname = \"firstname\"\n"
        ),
    )
    .unwrap();
    path
}

/// Every source row arrived once, with its value.
async fn every_row_once(t: &mut TestServer, n: usize) {
    t.restart().await; // without the rate limit, to read back
    let got = t.receivers_of("Limited").await;
    let emails: HashSet<&str> = got.iter().map(|r| r.email.as_str()).collect();
    assert_eq!((got.len(), emails.len()), (n, n), "each address once");
    for i in 0..n {
        assert!(emails.contains(format!("user{i}@example.com").as_str()));
    }
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

#[tokio::test]
async fn under_a_rate_limit_every_worker_waits_for_the_retry_after_and_few_requests_are_refused() {
    let n = 120;
    let mut t = TestServer::start_with(|o| o.rate_limit = NonZeroU32::new(20)).await;
    let p = pipeline(t.dir.path(), n, "");
    let (code, report, stderr) = run_here(&t, &p, &["--quiet", "--writes", "single"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(
        (count(&import["created"]), count(&import["failed"])),
        (n as u64, 0)
    );
    let requests = &report["requests"];
    let refused = count(&requests["retries"]["rate_limited"]);
    // Workers retrying alone meet the limit again and again (one 429 in
    // two writes before); one pause for all and a learned rate keep the
    // 429s to those that told the limit and the requests in flight then:
    // about the window, which on a loaded machine has grown to a tenth of
    // the writes (seen: 14 of 134). Since a lone 429 no longer tells a
    // limit (3 of them, a fifth of the answers and of the requests in
    // flight do; issue 41, sporadic 429s), a few more are refused first
    // (seen in CI under load: 36 of 156, 7 of them before the pause), hence
    // a third.
    assert!(refused >= 1, "the limit was met: {requests}");
    assert!(
        refused * 3 <= count(&import["write_requests"]),
        "{refused} 429s for {} writes: {requests}",
        import["write_requests"]
    );
    // The writes' own refusals are counted apart, among the run's.
    let writes_refused = import["write_requests_refused"].as_u64();
    assert!(
        writes_refused.is_some_and(|w| w <= refused),
        "{import}\n{requests}"
    );
    assert!(count(&requests["pauses"]) >= 1, "{requests}");
    // Learned under the limit (this said `rate_limit_per_second < 20 *
    // 1.1` while a rate only went down), then raised again by the answers
    // without a 429 (issue 41). The limiter's burst of a second's quota,
    // full again after the pause, lets a rising rate through for seconds,
    // as long as this run lasts after it: the rate at the end may be a few
    // rises above the limit (seen: 31.6), and the 429s above stay few.
    let first = requests["paced"]["first_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(
        first > 0.0 && first < 20.0 * 1.1,
        "a rate learned under the limit: {requests}"
    );
    assert!(
        requests["rate_limit_per_second"].as_f64().unwrap_or(0.0) > 0.0,
        "{requests}"
    );
    every_row_once(&mut t, n).await;
}

#[tokio::test]
async fn a_run_reports_its_requests_concurrency_retries_and_latencies() {
    let n = 300;
    let mut t = TestServer::start().await;
    let p = pipeline(t.dir.path(), n, "");
    let (code, report, stderr) = run_here(&t, &p, &["--quiet", "--writes", "single"]).await;
    assert_eq!(code, 0, "{stderr}");
    let r = &report["requests"];
    assert_eq!(r["concurrency"]["mode"], "adaptive", "{r}");
    let c = &r["concurrency"];
    assert!(count(&c["min"]) >= 1 && count(&c["min"]) <= count(&c["median"]));
    assert!(count(&c["median"]) <= count(&c["max"]) && count(&c["max"]) <= 256);
    assert!(count(&r["sent"]) >= n as u64, "{r}");
    let l = &r["latency_ms"];
    let p = |k: &str| l[k].as_f64().unwrap_or(-1.0);
    assert!(
        p("p50") > 0.0 && p("p50") <= p("p90") && p("p90") <= p("p99"),
        "{l}"
    );
    assert_eq!(r["retries"], serde_json::json!({}));
    every_row_once(&mut t, n).await;
}

#[tokio::test]
async fn a_pinned_concurrency_stays_pinned_and_the_command_line_pins_it_too() {
    let mut t = TestServer::start().await;
    let p = pipeline(t.dir.path(), 50, "concurrency = 3");
    let (code, report, stderr) = run_here(&t, &p, &["--quiet"]).await;
    assert_eq!(code, 0, "{stderr}");
    let c = &report["requests"]["concurrency"];
    assert_eq!(
        (c["mode"].as_str(), count(&c["min"]), count(&c["max"])),
        (Some("fixed"), 3, 3)
    );
    let (code, report, stderr) = run_here(&t, &p, &["--quiet", "--concurrency", "7"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["requests"]["concurrency"]["final"], 7);
    every_row_once(&mut t, 50).await;
}

#[tokio::test]
async fn under_injected_429s_and_dropped_answers_nothing_is_lost_or_written_twice() {
    let n = 200;
    let mut t = TestServer::start_with(|o| {
        o.faults = Some("429=0.02,reset_after=0.03".parse().expect("spec"));
        o.fault_seed = 7;
    })
    .await;
    let p = pipeline(t.dir.path(), n, "");
    let (code, report, stderr) = run_here(&t, &p, &["--quiet", "--writes", "single"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(
        (count(&import["created"]), count(&import["failed"])),
        (n as u64, 0)
    );
    let retries = &report["requests"]["retries"];
    assert!(count(&retries["rate_limited"]) > 0, "{retries}");
    assert!(count(&retries["connection"]) > 0, "{retries}");
    every_row_once(&mut t, n).await;
}
