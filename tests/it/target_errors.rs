//! How a run reports the target's failures: an unreachable target with its
//! operating-system cause, a refusal at set-up as the step's failure (not a
//! lost target), a target killed mid-import stopping the run at once with
//! exit 3 and a resumable journal, and two runs creating one group and its
//! attributes at the same time.

use crate::import::{listpipe, run};
use crate::support::{TestServer, free_port, serve_child as serve};
use listpipe::api::ReceiverQuery;
use listpipe::client::ApiClient;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `n` rows `user{i}@example.com` in `people.csv`, and a pipeline
/// importing them into `group` with a global attribute `city`.
fn people(dir: &Path, n: usize, group: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut csv = String::from("email,city\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com,City{}\n", i % 13));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"[target]
url = "builtin"
concurrency = 4
retries = 12

[[import]]
name = "people"
source = "people.csv"
group = "{group}"
create_group = true

[import.receiver]
email = "email"
activated = {{ value = "now" }}

[import.global_attributes]
city = "city"
"#
        ),
    )
    .unwrap();
    pipeline
}

#[test]
fn a_closed_port_prints_connection_refused_as_a_cause_and_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = people(tmp.path(), 3, "Closed");
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = listpipe(
        tmp.path(),
        &[
            "run",
            pipeline.to_str().unwrap(),
            "--target-url",
            &url,
            "--token",
            "t",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!("listpipe: error: cannot reach the target {url}\n")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("  caused by: ")
                && l.to_lowercase().contains("connection refused")),
        "{stderr}"
    );
}

#[test]
fn every_subcommand_reports_its_error_the_same_way() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    for args in [
        vec!["run", "missing.toml"],
        vec!["check", "missing.toml"],
        vec![
            "export",
            "--target-url",
            &url,
            "--token",
            "t",
            "--group",
            "G",
            "--out",
            "o.csv",
        ],
    ] {
        let out = listpipe(tmp.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A pipeline file's errors name the file first, as a compiler does.
        let expected = match args[0] {
            "export" => "listpipe: error: ",
            _ => "missing.toml: cannot read the pipeline file: ",
        };
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_group_the_target_refuses_at_set_up_fails_that_step_and_the_run_goes_on() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("a.csv"), "email\na@example.com\n").unwrap();
    let long = "G".repeat(300);
    let pipeline = dir.join("two.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"[target]
url = "builtin"

[[import]]
name = "refused"
source = "a.csv"
group = "{long}"
create_group = true
[import.receiver]
email = "email"

[[import]]
name = "fine"
source = "a.csv"
group = "Fine"
create_group = true
[import.receiver]
email = "email"
"#
        ),
    )
    .unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &["--quiet"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("listpipe: refused: POST /v3/groups: HTTP 400: Bad Request: name is longer than 255 characters"),
        "{stderr}"
    );
    assert_eq!(t.receivers_of("Fine").await.len(), 1, "{stderr}");
}

/// The token the child server wrote, once it is up.
async fn child_token(dir: &Path, url: &str) -> (String, ApiClient) {
    let creds = dir.join("child-credentials.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let json: serde_json::Value = std::fs::read(&creds)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if let Some(tok) = json["access_token"].as_str() {
            let client = ApiClient::new(url, tok).unwrap();
            if client.validate().await.is_ok() {
                return (tok.to_string(), client);
            }
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How many times each address is in `group`.
async fn counted(client: &ApiClient, group: &str) -> HashMap<String, usize> {
    let groups = client.groups(None).await.unwrap();
    let found: Vec<_> = groups.iter().filter(|g| g.name == group).collect();
    assert_eq!(found.len(), 1, "one group {group}, not a duplicate");
    let mut seen = HashMap::new();
    for page in 0.. {
        let q = ReceiverQuery {
            pagesize: Some(5000),
            page: Some(page),
            detail: Some(0),
            ..Default::default()
        };
        let rows = client.receivers(found[0].id, &q).await.unwrap();
        if rows.is_empty() {
            break;
        }
        for r in rows {
            *seen.entry(r.email).or_insert(0) += 1;
        }
    }
    seen
}

fn run_child(dir: &Path, pipeline: &Path, url: &str, token: &str, resume: bool) -> Child {
    let mut cmd = crate::support::binary();
    cmd.current_dir(dir)
        .args([
            "run",
            pipeline.to_str().unwrap(),
            "--quiet",
            "--writes",
            "single",
        ])
        .args(["--target-url", url, "--token", token])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if resume {
        cmd.arg("--resume");
    }
    cmd.spawn().unwrap()
}

#[tokio::test]
async fn a_target_killed_mid_import_stops_the_run_with_3_and_resume_completes_it() {
    let n = 3_000;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pipeline = people(dir, n, "Dying");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = serve(dir, port, Some("delay=30ms@1"));
    let (token, _) = child_token(dir, &url).await;

    let child = run_child(dir, &pipeline, &url, &token, false);
    // Kill the target once some rows are in the journal.
    // (Named by the target and group since issue 41: was `people/people.jsonl`.)
    let journal = || crate::support::journal_of_step(dir, "people", "people");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(journal()).map_or(0, |m| m.len()) < 20_000 {
        assert!(Instant::now() < deadline, "no progress in the journal");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill().unwrap(); // SIGKILL of the target mid-import
    server.wait().unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "listpipe: people: target {url} stopped answering: "
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the run did not finish; resume with: listpipe run {} --resume",
            pipeline.display()
        )),
        "{stderr}"
    );
    assert!(
        !dir.join("people.rejects.csv").exists()
            && std::fs::read_dir(dir).unwrap().all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("rejects")),
        "rows that failed because the target died are not rejects"
    );

    let mut server = serve(dir, port, None);
    let (_, client) = child_token(dir, &url).await;
    let resumed = run_child(dir, &pipeline, &url, &token, true);
    let out = tokio::task::spawn_blocking(move || resumed.wait_with_output().unwrap())
        .await
        .unwrap();
    let seen = counted(&client, "Dying").await;
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.len(), n, "every row present");
    assert!(seen.values().all(|c| *c == 1), "every row exactly once");
}

#[tokio::test]
async fn two_runs_creating_the_same_group_and_attributes_at_once_both_succeed() {
    // Every request waits 200 ms: both runs list the groups (and the
    // attributes) before either creates, so one of them meets the 409.
    let t = TestServer::start_with(|o| o.faults = Some("delay=200ms@1".parse().unwrap())).await;
    let n = 50;
    for round in 0..3 {
        let group = format!("Shared{round}");
        let a = people(&t.dir.path().join(format!("a{round}")), n, &group);
        // The second folder's rows overlap half of the first's.
        let b_dir = t.dir.path().join(format!("b{round}"));
        let b = people(&b_dir, n, &group);
        let b_csv: String = std::fs::read_to_string(b_dir.join("people.csv"))
            .unwrap()
            .replace("user", "other");
        std::fs::write(b_dir.join("people.csv"), b_csv).unwrap();
        let (ra, rb) = tokio::join!(run_in(&t, &a), run_in(&t, &b));
        assert_eq!(ra.0, Some(0), "round {round}, first: {}", ra.1);
        assert_eq!(rb.0, Some(0), "round {round}, second: {}", rb.1);
        let seen = counted(&t.client, &group).await;
        assert_eq!(
            seen.len(),
            2 * n,
            "round {round}: every receiver of both files"
        );
    }
}

/// `listpipe run` in the pipeline's own folder (its own journal and state).
async fn run_in(t: &TestServer, pipeline: &Path) -> (Option<i32>, String) {
    let (url, token) = (t.base_url(), t.client.token());
    let pipeline = pipeline.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let dir = pipeline.parent().unwrap();
        let out = listpipe(
            dir,
            &[
                "run",
                pipeline.to_str().unwrap(),
                "--quiet",
                "--target-url",
                &url,
                "--token",
                &token,
            ],
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}
