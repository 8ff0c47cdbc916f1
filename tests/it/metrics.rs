//! Prometheus metrics (issue 61): `run --metrics-file` and `--pushgateway`
//! against the built-in test server and a tiny HTTP listener of the test's
//! own, and `serve --metrics-listen`'s `/metrics` on a listener of its own.

use crate::import::{repo, run};
use crate::support::TestServer;
use serde_json::Value;
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The value of the series `name` whose labels include every one of `labels`.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, v) = l.rsplit_once(' ')?;
        let (n, rest) = series.split_once('{').unwrap_or((series, ""));
        let all = labels
            .iter()
            .all(|(k, val)| rest.contains(&format!("{k}=\"{val}\"")));
        (n == name && all).then(|| v.parse().ok())?
    })
}

/// `promtool check metrics` accepts `text`. Without promtool: a failure
/// under `CI=true` (`.ci/run` installs Debian's `prometheus`), a note and
/// a skip otherwise.
fn promtool_accepts(text: &str) {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "promtool is needed under CI=true (Debian's prometheus package): {e}"
            );
            eprintln!("note: promtool not installed ({e}): the format check is skipped");
            return;
        }
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics refused the file:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()
}

#[tokio::test]
async fn the_metrics_file_has_the_counts_of_the_report_and_promtool_accepts_it() {
    let t = TestServer::start().await;
    let file = t.dir.path().join("quickstart.prom");
    let (code, report, stderr) = run(
        &t,
        &repo("pipelines/quickstart.toml"),
        &["--metrics-file", file.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    let text = std::fs::read_to_string(&file).unwrap();
    let shop = step(&report, "shop-customers");
    let labels = [("pipeline", "quickstart"), ("step", "shop-customers")];
    for (series, json) in [
        ("listpipe_rows_read", &shop["prepare"]["rows_read"]),
        ("listpipe_duplicates", &shop["prepare"]["duplicates"]),
        ("listpipe_receivers_created", &shop["import"]["created"]),
        ("listpipe_receivers_updated", &shop["import"]["updated"]),
        ("listpipe_blocked", &shop["import"]["blocked"]),
    ] {
        assert_eq!(
            value(&text, series, &labels),
            json.as_f64(),
            "{series}\n{text}"
        );
    }
    for (reason, n) in shop["prepare"]["rejected"].as_object().unwrap() {
        let mut l = labels.to_vec();
        l.push(("reason", reason));
        assert_eq!(
            value(&text, "listpipe_rows_rejected", &l),
            n.as_f64(),
            "{reason}\n{text}"
        );
    }
    let run_labels = [("pipeline", "quickstart")];
    assert_eq!(
        value(&text, "listpipe_requests_total", &run_labels),
        report["requests"]["sent"].as_f64()
    );
    assert_eq!(
        value(&text, "listpipe_run_exit_code", &run_labels),
        Some(1.0)
    );
    let finished = value(
        &text,
        "listpipe_run_finished_timestamp_seconds",
        &run_labels,
    )
    .unwrap();
    // Exit 1 with every step run (rows rejected) still counts as a success.
    assert_eq!(
        value(
            &text,
            "listpipe_run_last_success_timestamp_seconds",
            &run_labels
        ),
        Some(finished)
    );
    assert!(value(&text, "listpipe_run_duration_seconds", &run_labels).unwrap() >= 0.0);
    promtool_accepts(&text);
}

/// A pipeline of three valid rows that exits 0, in `dir`.
fn clean_pipeline(dir: &Path) -> std::path::PathBuf {
    std::fs::write(
        dir.join("people.csv"),
        "email\na@example.com\nb@example.com\nc@example.com\n",
    )
    .unwrap();
    let p = dir.join("people.toml");
    std::fs::write(
        &p,
        "[target]\nurl = \"builtin\"\n\n[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    p
}

/// An HTTP server on a free loopback port for `answers.len()` requests in
/// turn, one connection each: answers each with 200 and its body, and
/// hands back each request line and body.
async fn listener_answering(
    answers: Vec<String>,
) -> (String, tokio::task::JoinHandle<Vec<(String, String)>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        for answer in answers {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the connection closed before the whole request");
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).into_owned();
                let Some((head, body)) = text.split_once("\r\n\r\n") else {
                    continue;
                };
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                    s.write_all(reply.as_bytes()).await.unwrap();
                    let line = head.lines().next().unwrap_or_default().to_string();
                    seen.push((line, body.to_string()));
                    break;
                }
            }
        }
        seen
    });
    (url, task)
}

#[tokio::test]
async fn the_pushgateway_gets_the_same_text_as_the_file_by_put() {
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    let file = t.dir.path().join("people.prom");
    let (url, pushed) = listener_answering(vec![String::new()]).await;
    let (code, report, stderr) = run(
        &t,
        &pipeline,
        &[
            "--metrics-file",
            file.to_str().unwrap(),
            "--pushgateway",
            &url,
        ],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(step(&report, "people")["import"]["created"], 3);
    let (line, body) = pushed.await.unwrap().remove(0);
    assert_eq!(
        line, "PUT /metrics/job/listpipe/pipeline/people HTTP/1.1",
        "{stderr}"
    );
    assert_eq!(body, std::fs::read_to_string(&file).unwrap());
    assert_eq!(
        value(
            &body,
            "listpipe_receivers_created",
            &[("pipeline", "people"), ("step", "people")]
        ),
        Some(3.0)
    );
}

#[tokio::test]
async fn a_pushgateway_that_refuses_the_connection_is_a_warning_not_a_failed_run() {
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    // A port nothing listens on any more.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (code, _, stderr) = run(&t, &pipeline, &["--pushgateway", &refused]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: the metrics could not be pushed"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_servers_metrics_are_on_their_own_listener_by_route_template() {
    let t = TestServer::start_with(|o| o.metrics_listen = Some("127.0.0.1:0".into())).await;
    let addr = t.server.as_ref().unwrap().metrics_addr.unwrap();
    let g = t.group("Metrics").await;
    t.client.groups(None).await.unwrap();
    t.client.groups(None).await.unwrap();
    t.client.group_stats(g.id).await.unwrap();
    let (http, base, _) = t.raw();
    let refused = http
        .get(format!("{base}/v3/groups"))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let c = &t.creds;
    let grant = http
        .post(format!("{base}/oauth/token.php"))
        .json(&serde_json::json!({"grant_type": "client_credentials", "client_id": c.client_id, "client_secret": c.client_secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(grant.status(), 200);

    let answer = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    let groups = [
        ("route", "/v3/groups"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert_eq!(
        value(&text, "listpipe_server_requests_total", &groups),
        Some(2.0),
        "{text}"
    );
    // The template, not the URL: one series for every group's stats.
    let stats = [
        ("route", "/v3/groups/{group_id}/stats"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert_eq!(
        value(&text, "listpipe_server_requests_total", &stats),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&text, "listpipe_server_auth_failures_total", &[]).unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        value(
            &text,
            "listpipe_server_request_duration_seconds_count",
            &[("route", "/v3/groups"), ("method", "GET")]
        )
        .unwrap()
            >= 2.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "listpipe_server_token_grants_total", &[]),
        Some(1.0),
        "{text}"
    );
    // The metrics request itself is not one of the API's.
    assert_eq!(
        value(&text, "listpipe_server_requests_in_flight", &[]),
        Some(0.0),
        "{text}"
    );
    promtool_accepts(&text);

    // The API's port has no /metrics.
    let api = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(api.status(), 404);
    assert!(!api.text().await.unwrap().contains("listpipe_server_"));
}

#[tokio::test]
async fn the_pipeline_files_metrics_table_names_the_file() {
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    let text = std::fs::read_to_string(&pipeline).unwrap();
    std::fs::write(
        &pipeline,
        format!("[metrics]\nfile = \"metrics/people.prom\"\n\n{text}"),
    )
    .unwrap();
    std::fs::create_dir(t.dir.path().join("metrics")).unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let written = std::fs::read_to_string(t.dir.path().join("metrics/people.prom")).unwrap();
    assert_eq!(
        value(
            &written,
            "listpipe_receivers_created",
            &[("pipeline", "people"), ("step", "people")]
        ),
        Some(3.0),
        "{written}"
    );
}

#[tokio::test]
async fn a_failed_run_pushes_the_last_success_the_pushgateway_held() {
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    // The Pushgateway's own /metrics, as it shows an earlier push.
    let held = "listpipe_run_last_success_timestamp_seconds{instance=\"\",job=\"listpipe\",pipeline=\"people\"} 1.7e+09\n";
    let (url, seen) = listener_answering(vec![held.to_string(), String::new()]).await;
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (code, _, stderr) =
        crate::import::run_at(&t, &down, &pipeline, &["--pushgateway", &url], &[]).await;
    assert_eq!(code, 3, "{stderr}");
    let seen = seen.await.unwrap();
    assert_eq!(seen[0].0, "GET /metrics HTTP/1.1");
    assert_eq!(
        seen[1].0,
        "PUT /metrics/job/listpipe/pipeline/people HTTP/1.1"
    );
    let body = &seen[1].1;
    let run = [("pipeline", "people")];
    assert_eq!(
        value(body, "listpipe_run_exit_code", &run),
        Some(3.0),
        "{body}"
    );
    assert_eq!(
        value(body, "listpipe_run_last_success_timestamp_seconds", &run),
        Some(1.7e9),
        "{body}"
    );
}
