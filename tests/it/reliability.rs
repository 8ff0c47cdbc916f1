//! Exactly-once imports: `listpipe run` under injected faults, after a
//! `kill -9` of listpipe, and after a `kill -9` of the server; each time the
//! target is compared with the source row by row.

use crate::import::{listpipe, run};
use crate::in_process::run_here;
use crate::support::{TestServer, free_port, serve_child as serve, wait_up};
use listpipe::api::batch::MAX_BATCH;
use listpipe::api::{ReceiverQuery, detail};
use listpipe::client::ApiClient;
use listpipe::server::{self, ServeOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const FAULTS: &str = "500=0.05,429=0.05,reset=0.02,reset_after=0.02,delay=20ms@0.02";

/// Writes `people.csv` with `n` rows and a pipeline importing it.
fn source(dir: &Path, n: usize, concurrency: usize) -> PathBuf {
    let mut csv = String::from("email,firstname,city,tags,order_id,product,price\n");
    for i in 0..n {
        csv.push_str(&format!(
            "user{i}@example.com,Name{i},City{},\"t{},u{}\",O{i},P{},{}.50\n",
            i % 97,
            i % 7,
            i % 3,
            i % 11,
            i % 50
        ));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"[target]
url = "builtin"
concurrency = {concurrency}
retries = 12

[[import]]
name = "people"
source = "people.csv"
group = "Reliability"
create_group = true

[import.receiver]
email = "email"

[import.global_attributes]
firstname = "firstname"
city = "city"

[import.tags]
columns = "tags"

[import.orders]
order_id = "order_id"
product_id = {{ value = "X" }}
product = "product"
price = "price"
currency = {{ value = "EUR" }}
quantity = {{ value = "1" }}
"#
        ),
    )
    .unwrap();
    pipeline
}

/// Compares the group "Reliability" with the `n` source rows: every
/// address once, with its attributes, tags and order. Returns what is wrong.
async fn compare(client: &ApiClient, n: usize) -> Vec<String> {
    let groups = client.groups(None).await.unwrap();
    let found: Vec<_> = groups.iter().filter(|g| g.name == "Reliability").collect();
    assert_eq!(found.len(), 1, "one group, not a duplicate");
    let g = found[0].id;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut problems = Vec::new();
    for page in 0.. {
        let q = ReceiverQuery {
            pagesize: Some(5000),
            page: Some(page),
            detail: Some(detail::ALL),
            ..Default::default()
        };
        let rows = client.receivers(g, &q).await.unwrap();
        if rows.is_empty() {
            break;
        }
        for r in rows {
            *seen.entry(r.email.clone()).or_default() += 1;
            let Some(i) = r
                .email
                .strip_prefix("user")
                .and_then(|s| s.strip_suffix("@example.com"))
                .and_then(|s| s.parse::<usize>().ok())
            else {
                problems.push(format!("not in the source: {}", r.email));
                continue;
            };
            let want_name = format!("Name{i}");
            let want_city = format!("City{}", i % 97);
            let mut tags = r.tags.clone().unwrap_or_default();
            tags.sort();
            let orders = r.orders.clone().unwrap_or_default();
            let ok = r.global_attributes.get("firstname") == Some(&want_name)
                && r.global_attributes.get("city") == Some(&want_city)
                && tags == [format!("t{}", i % 7), format!("u{}", i % 3)]
                && orders.len() == 1
                && orders[0].order_id == format!("O{i}")
                && orders[0].product == format!("P{}", i % 11)
                && (orders[0].price - (i % 50) as f64 - 0.5).abs() < 1e-9;
            if !ok {
                problems.push(format!("differs: {r:?}"));
            }
        }
    }
    let dup: Vec<_> = seen.iter().filter(|(_, c)| **c > 1).collect();
    if !dup.is_empty() {
        problems.push(format!("{} duplicated, e.g. {:?}", dup.len(), dup[0]));
    }
    let lost = (0..n)
        .filter(|i| !seen.contains_key(&format!("user{i}@example.com")))
        .count();
    if lost > 0 {
        problems.push(format!("{lost} lost"));
    }
    problems
}

/// Restarts the server on its database and its port: the same target, as
/// the journal names it (a resume against another address is refused).
async fn restart_with_faults(t: &mut TestServer, spec: Option<&str>, seed: u64) {
    let port = t.server.as_ref().map_or(0, |s| s.addr.port());
    if let Some(s) = t.server.take() {
        s.stop().await;
    }
    let mut opts = ServeOptions::new(t.db(), format!("127.0.0.1:{port}"));
    opts.faults = spec.map(|s| s.parse().expect("a valid spec"));
    opts.fault_seed = seed;
    let s = server::start(opts).await.expect("server restarts");
    t.client = ApiClient::new(&s.base_url, &t.creds.access_token).expect("client");
    t.server = Some(s);
}

/// Rows of a run killed midway: three batch upserts (two full, one half)
/// sent one at a time (concurrency 4), so the kill after the first
/// confirmation lands with at least one batch still unsent.
const KILLED_RUN_ROWS: usize = 2 * MAX_BATCH + MAX_BATCH / 2;

fn journal_dir(dir: &Path) -> PathBuf {
    dir.join(".listpipe/journal/people")
}

/// The emails the journal shows as confirmed by the target.
fn confirmed(dir: &Path) -> Vec<String> {
    listpipe::load::journal::read_events(&crate::support::journal_of_step(dir, "people", "people"))
        .into_iter()
        .filter(|(ev, _)| ev == "done")
        .map(|(_, email)| email)
        .collect()
}

/// Waits until the journal shows `n` confirmations (or panics after 60 s).
fn wait_confirmed(dir: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while confirmed(dir).len() < n {
        assert!(Instant::now() < deadline, "no progress in the journal");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn_run(dir: &Path, pipeline: &Path, url: &str, token: &str) -> Child {
    crate::support::binary()
        .current_dir(dir)
        .args(["run", pipeline.to_str().unwrap(), "--quiet"])
        .args(["--target-url", url, "--token", token])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn under_faults_every_row_arrives_exactly_once() {
    let n = 5_000;
    let mut t = TestServer::start().await;
    restart_with_faults(&mut t, Some(FAULTS), 42).await;
    let pipeline = source(t.dir.path(), n, 16);
    let (code, report, stderr) = run_here(&t, &pipeline, &["--quiet"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(import["created"], n as u64, "{import}");
    assert_eq!(import["failed"], 0);
    assert!(import["retries"].as_u64().unwrap() > 0, "{import}");
    assert!(
        !journal_dir(t.dir.path()).exists(),
        "a completed run removes its journal"
    );

    restart_with_faults(&mut t, None, 0).await;
    let problems = compare(&t.client, n).await;
    assert!(
        problems.is_empty(),
        "{:?}",
        &problems[..problems.len().min(5)]
    );
}

#[tokio::test]
async fn after_kill_9_of_listpipe_resume_finishes_without_duplicates() {
    let n = KILLED_RUN_ROWS;
    let mut t = TestServer::start().await;
    restart_with_faults(&mut t, Some("delay=40ms@1"), 1).await;
    let dir = t.dir.path().to_path_buf();
    let pipeline = source(&dir, n, 4);
    let mut child = spawn_run(&dir, &pipeline, &t.base_url(), &t.client.token());
    let d = dir.clone();
    tokio::task::spawn_blocking(move || wait_confirmed(&d, 100))
        .await
        .unwrap();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = confirmed(&dir).len();
    assert!(before < n, "killed midway ({before} confirmed)");

    // Without --resume the leftover journal stops the run before any write.
    let (code, _, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--resume") && stderr.contains("--discard-journal"),
        "{stderr}"
    );

    restart_with_faults(&mut t, None, 0).await;
    let (code, report, stderr) = run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert!(
        import["resumed"].as_u64().unwrap() >= before as u64,
        "{import}"
    );
    let sum: u64 = ["created", "updated", "unchanged", "resumed"]
        .iter()
        .map(|k| import[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, n as u64, "{import}");
    assert!(!journal_dir(&dir).exists());
    let problems = compare(&t.client, n).await;
    assert!(
        problems.is_empty(),
        "{:?}",
        &problems[..problems.len().min(5)]
    );
}

#[tokio::test]
async fn after_kill_9_of_the_server_restart_and_resume_keep_what_was_acknowledged() {
    let n = KILLED_RUN_ROWS;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let pipeline = source(&dir, n, 4);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = serve(&dir, port, Some("delay=40ms@1"));
    let creds = dir.join("child-credentials.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    let token = loop {
        let json: serde_json::Value = std::fs::read(&creds)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if let Some(tok) = json["access_token"].as_str() {
            break tok.to_string();
        }
        assert!(Instant::now() < deadline, "no credentials");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    wait_up(&url, &token).await;

    let mut run_child = spawn_run(&dir, &pipeline, &url, &token);
    let d = dir.clone();
    tokio::task::spawn_blocking(move || wait_confirmed(&d, 100))
        .await
        .unwrap();
    server.kill().unwrap(); // SIGKILL of the server mid-import
    server.wait().unwrap();
    // listpipe now retries against a dead server; stop it hard as well so
    // the test stays bounded (a graceful stop is tested elsewhere).
    tokio::time::sleep(Duration::from_millis(300)).await;
    run_child.kill().unwrap();
    run_child.wait().unwrap();
    let acknowledged = confirmed(&dir);
    assert!(acknowledged.len() >= 100 && acknowledged.len() < n);

    let mut server = serve(&dir, port, None);
    let client = wait_up(&url, &token).await;
    let groups = client.groups(None).await.unwrap();
    let g = groups.iter().find(|g| g.name == "Reliability").unwrap().id;
    for email in &acknowledged {
        client
            .group_receiver(g, email, 0)
            .await
            .unwrap_or_else(|e| panic!("{email} was acknowledged before the kill: {e}"));
    }

    let out = tokio::task::spawn_blocking({
        let (dir, pipeline, url, token) =
            (dir.clone(), pipeline.clone(), url.clone(), token.clone());
        move || {
            listpipe(
                &dir,
                &[
                    "run",
                    pipeline.to_str().unwrap(),
                    "--resume",
                    "--quiet",
                    "--target-url",
                    &url,
                    "--token",
                    &token,
                ],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let problems = compare(&client, n).await;
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        problems.is_empty(),
        "{:?}",
        &problems[..problems.len().min(5)]
    );
}

#[tokio::test]
async fn sigterm_stops_gracefully_with_130_and_resume_finishes() {
    sigterm_then_resume(None).await;
}

/// A stop with the source in chunks, the later ones not read yet: the
/// report still has the step, what it wrote and the prepared rows it did
/// not start (before, the read's stop dropped the step from the report).
#[tokio::test]
async fn a_stop_between_chunks_keeps_the_step_in_the_report() {
    sigterm_then_resume(Some(40)).await;
}

/// Stops an import of 600 rows with SIGTERM once 50 are confirmed, checks
/// what it reports, then resumes it to the end; `chunk_rows` prepares the
/// source in chunks of that many rows.
async fn sigterm_then_resume(chunk_rows: Option<usize>) {
    let n = 600;
    let mut t = TestServer::start().await;
    restart_with_faults(&mut t, Some("delay=40ms@1"), 1).await;
    let dir = t.dir.path().to_path_buf();
    let pipeline = source(&dir, n, 4);
    let report = dir.join("stopped.json");
    // One request per row, so that the stop lands between rows.
    let child = crate::support::binary()
        .current_dir(&dir)
        .args([
            "run",
            pipeline.to_str().unwrap(),
            "--quiet",
            "--writes",
            "single",
        ])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .arg("--report")
        .arg(&report)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .envs(chunk_rows.map(|r| ("LISTPIPE_CHUNK_ROWS", r.to_string())))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let d = dir.clone();
    let out = tokio::task::spawn_blocking(move || {
        wait_confirmed(&d, 50);
        let term = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "listpipe: stopped; resume with: listpipe run {} --resume",
            pipeline.display()
        )),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let import = &json["steps"][0]["import"];
    assert_eq!(import["stopped"], true, "{import}");
    assert!(import["not_started"].as_u64().unwrap() > 0, "{import}");
    let counted: u64 = ["created", "updated", "unchanged", "failed", "not_started"]
        .iter()
        .map(|k| import[k].as_u64().unwrap())
        .sum();
    // Rows of chunks never read are in no count.
    assert!(counted <= n as u64, "{import}");
    assert_eq!(json["exit_code"], 130);
    // Nothing was left in flight: every started row was confirmed.
    let events = listpipe::load::journal::read_events(&crate::support::journal_of_step(
        &dir, "people", "people",
    ));
    let started = events.iter().filter(|(e, _)| e == "start").count();
    assert_eq!(started, confirmed(&dir).len());

    restart_with_faults(&mut t, None, 0).await;
    let (code, _, stderr) = run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 0, "{stderr}");
    let problems = compare(&t.client, n).await;
    assert!(
        problems.is_empty(),
        "{:?}",
        &problems[..problems.len().min(5)]
    );
}
