//! A target that is down as a whole (issue 58): the built-in server on a
//! PostgreSQL that is stopped under it answers every request 503 with
//! `Retry-After`; the run waits the outage out instead of failing rows,
//! says so, and gives up after `max_outage_secs` with exit 3 and an exact
//! `--resume`. Real servers: PostgreSQL in a temp dir, the server in this
//! process, the binary as a child.

use crate::pg::PgServer;
use listpipe::client::ApiClient;
use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// `n` receivers in `dir/people.csv` and a pipeline importing them into
/// "Outage", with `target` lines added to `[target]`.
fn pipeline(dir: &Path, n: usize, target: &str) -> std::path::PathBuf {
    let mut csv = String::from("email,firstname\n");
    for i in 0..n {
        csv.push_str(&format!("down{i}@example.com,Name{i}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("outage.toml");
    std::fs::write(
        &path,
        format!(
            "[target]\nurl = \"builtin\"\n{target}\n\n[[import]]\nname = \"people\"\n\
             source = \"people.csv\"\ngroup = \"Outage\"\ncreate_group = true\n\n\
             [import.receiver]\nemail = \"email\"\n\n[import.global_attributes]\nfirstname = \"firstname\"\n"
        ),
    )
    .unwrap();
    path
}

fn run(dir: &Path, p: &Path, url: &str, token: &str, extra: &[&str]) -> std::process::Child {
    crate::support::binary()
        .current_dir(dir)
        .args([
            "run",
            p.to_str().unwrap(),
            "--target-url",
            url,
            "--token",
            token,
        ])
        .args(["--report", "report.json"])
        .args(extra)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (on this thread) until the group holds some receivers.
async fn started(client: &ApiClient) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let groups = client.groups(None).await.unwrap_or_default();
        if let Some(g) = groups.iter().find(|g| g.name == "Outage")
            && client
                .group_stats(g.id)
                .await
                .is_ok_and(|s| s.total_count > 0)
        {
            return;
        }
        assert!(Instant::now() < deadline, "the run never started writing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn count(client: &ApiClient) -> u64 {
    let groups = client.groups(None).await.unwrap();
    let g = groups.iter().find(|g| g.name == "Outage").unwrap();
    client.group_stats(g.id).await.unwrap().total_count as u64
}

/// The server in this process on a new database `name` of `pg`: the
/// server, its first access token and a client with it.
async fn serve(pg: &PgServer, name: &str) -> (listpipe::server::RunningServer, String, ApiClient) {
    let running = listpipe::server::start(listpipe::server::ServeOptions::new(
        pg.database(name),
        "127.0.0.1:0",
    ))
    .await
    .expect("server starts");
    let token = running
        .credentials
        .clone()
        .expect("first start")
        .access_token;
    let client = ApiClient::new(&running.base_url, &token).unwrap();
    (running, token, client)
}

fn report(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap_or_default())
        .unwrap_or(Value::Null)
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_stopped_under_the_server_is_waited_out_and_no_row_fails() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    for (writes, n) in [("auto", 20_000), ("single", 3_000)] {
        let (running, token, client) = serve(&pg, &format!("outage_{writes}")).await;
        let dir = tempfile::tempdir().unwrap();
        let p = pipeline(dir.path(), n, "");
        let child = run(
            dir.path(),
            &p,
            &running.base_url,
            &token,
            &["--writes", writes],
        );
        started(&client).await;
        tokio::task::block_in_place(|| pg.stop());
        tokio::time::sleep(Duration::from_secs(8)).await;
        tokio::task::block_in_place(|| pg.start_again());
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let stderr = text(&out);
        assert_eq!(out.status.code(), Some(0), "{writes}: {stderr}");
        let r = report(dir.path());
        let import = &r["steps"][0]["import"];
        assert_eq!(import["failed"], 0, "{writes}: {import}");
        assert_eq!(
            count(&client).await,
            n as u64,
            "{writes}: every row, without --resume"
        );
        let outages = r["requests"]["outages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(outages.len(), 1, "{writes}: {}", r["requests"]);
        let lasted = outages[0]["lasted_ms"].as_u64().unwrap_or(0);
        assert!(
            (5_000..=30_000).contains(&lasted),
            "{writes}: {}",
            outages[0]
        );
        assert!(
            outages[0]["cause"].as_str().unwrap_or("").contains("503"),
            "{}",
            outages[0]
        );
        assert!(stderr.contains("the target is down"), "{writes}: {stderr}");
        assert!(
            stderr.contains("the target answers again"),
            "{writes}: {stderr}"
        );
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_down_longer_than_max_outage_stops_the_run_and_the_resume_is_exact() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let (running, token, client) = serve(&pg, "outage_long").await;
    let dir = tempfile::tempdir().unwrap();
    let n = 3_000;
    let p = pipeline(dir.path(), n, "max_outage_secs = 3");
    let child = run(
        dir.path(),
        &p,
        &running.base_url,
        &token,
        &["--writes", "single"],
    );
    started(&client).await;
    tokio::task::block_in_place(|| pg.stop());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("max_outage_secs"), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    let r = report(dir.path());
    assert_eq!(
        r["requests"]["outages"][0]["gave_up"], true,
        "{}",
        r["requests"]
    );
    tokio::task::block_in_place(|| pg.start_again());
    let out = run(
        dir.path(),
        &p,
        &running.base_url,
        &token,
        &["--writes", "single", "--resume"],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(count(&client).await, n as u64);
    running.stop().await;
}
