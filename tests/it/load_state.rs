//! The load side's own state under a target that misreports: a group's
//! `total_count` is only a hint (`serve --faults stats_count=N`), never the
//! size of anything and never where the read of the group ends.

use crate::import::run;
use crate::support::TestServer;
use listpipe::client::ApiClient;
use listpipe::server::{self, ServeOptions};
use std::path::{Path, PathBuf};

/// More receivers than one page of the group read (5,000) holds.
const ROWS: usize = 6_000;

/// Writes `people.csv` with `n` rows and a pipeline importing it.
fn source(dir: &Path, n: usize) -> PathBuf {
    let mut csv = String::from("email,firstname\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com,Name{i}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        r#"[target]
url = "builtin"

[[import]]
name = "people"
source = "people.csv"
group = "Counted"
create_group = true

[import.receiver]
email = "email"

[import.global_attributes]
firstname = "firstname"
"#,
    )
    .unwrap();
    pipeline
}

/// Restarts the server on its database with `faults`.
async fn restart_with_faults(t: &mut TestServer, faults: &str) {
    if let Some(s) = t.server.take() {
        s.stop().await;
    }
    let mut opts = ServeOptions::new(t.db(), "127.0.0.1:0");
    opts.faults = Some(faults.parse().expect("a valid spec"));
    let s = server::start(opts).await.expect("server restarts");
    t.client = ApiClient::new(&s.base_url, &t.creds.access_token).expect("client");
    t.server = Some(s);
}

/// Imports the source once, then again against a server whose stats say
/// `count`: the re-import must find every receiver unchanged.
async fn reimport_with_reported_count(count: &str) {
    let mut t = TestServer::start().await;
    let pipeline = source(t.dir.path(), ROWS);
    let (code, report, stderr) = run(&t, &pipeline, &["--quiet"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], ROWS as u64);

    restart_with_faults(&mut t, &format!("stats_count={count}")).await;
    let g = t.group_named("Counted").await;
    let stats = t.client.group_stats(g.id).await.unwrap();
    assert_eq!(
        stats.total_count.to_string(),
        count,
        "the server misreports"
    );

    let (code, report, stderr) = run(&t, &pipeline, &["--quiet"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(import["unchanged"], ROWS as u64, "{import}");
    assert_eq!(import["created"], 0, "{import}");
    assert_eq!(import["updated"], 0, "{import}");
    assert_eq!(import["write_requests"], 0, "{import}");
}

#[tokio::test]
async fn a_group_counted_too_small_is_still_read_to_its_end_and_the_reimport_writes_nothing() {
    reimport_with_reported_count("10").await;
}

#[tokio::test]
async fn a_group_counted_in_the_quadrillions_does_not_abort_the_reimport() {
    reimport_with_reported_count("1000000000000000").await;
}
