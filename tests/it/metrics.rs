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
    let (code, _, stderr) = crate::import::run(&t, &pipeline, &[]).await;
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

/// A seeded metrics file of `pipeline`: only an earlier success, at
/// 1,700,000,000 (what the run must keep while it goes, or when it fails).
fn earlier_success(file: &Path, pipeline: &str) {
    std::fs::write(
        file,
        format!(
            "listpipe_run_last_success_timestamp_seconds{{pipeline=\"{pipeline}\"}} 1700000000\n"
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metrics_file_is_rewritten_while_the_run_goes_and_the_final_figures_win() {
    // Every request waits 400 ms, one at a time: the run takes longer than
    // the five seconds between two writes of the file.
    let t = TestServer::start_with(|o| o.faults = Some("delay=400ms@1".parse().unwrap())).await;
    let dir = t.dir.path();
    let mut csv = String::from("email\n");
    (0..16).for_each(|i| csv.push_str(&format!("p{i}@example.com\n")));
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let file = dir.join("people.prom");
    earlier_success(&file, "people");
    let mut child = crate::support::binary()
        .current_dir(dir)
        .args(["run", pipeline.to_str().unwrap(), "--quiet"])
        .args(["--writes", "single", "--concurrency", "1"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .args(["--metrics-file", file.to_str().unwrap()])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = [("pipeline", "people")];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let live = loop {
        let text = std::fs::read_to_string(&file).unwrap();
        if value(&text, "listpipe_run_in_progress", &run).is_some() {
            break text;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before a write of the file while it went"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no write during the run"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // Written while the run goes: marked so, no exit code or finish yet,
    // the requests so far, the earlier success kept.
    assert_eq!(
        value(&live, "listpipe_run_in_progress", &run),
        Some(1.0),
        "{live}"
    );
    assert!(child.try_wait().unwrap().is_none(), "{live}");
    for absent in [
        "listpipe_run_exit_code",
        "listpipe_run_finished_timestamp_seconds",
        "listpipe_run_duration_seconds",
    ] {
        assert_eq!(value(&live, absent, &run), None, "{absent}\n{live}");
    }
    assert!(
        value(&live, "listpipe_requests_total", &run).unwrap() >= 1.0,
        "{live}"
    );
    assert_eq!(
        value(&live, "listpipe_run_last_success_timestamp_seconds", &run),
        Some(1.7e9),
        "{live}"
    );
    assert!(value(&live, "listpipe_run_started_timestamp_seconds", &run).is_some());
    promtool_accepts(&live);

    let status = child.wait().unwrap();
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let last = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        value(&last, "listpipe_run_in_progress", &run),
        Some(0.0),
        "{last}"
    );
    assert_eq!(
        value(&last, "listpipe_run_exit_code", &run),
        Some(0.0),
        "{last}"
    );
    assert_eq!(
        value(
            &last,
            "listpipe_receivers_created",
            &[("pipeline", "people"), ("step", "people")]
        ),
        Some(16.0),
        "{last}"
    );
    let finished = value(&last, "listpipe_run_finished_timestamp_seconds", &run).unwrap();
    assert_eq!(
        value(&last, "listpipe_run_last_success_timestamp_seconds", &run),
        Some(finished)
    );
    promtool_accepts(&last);
}

#[tokio::test]
async fn a_run_refused_because_another_holds_the_lock_writes_its_metrics() {
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    let file = t.dir.path().join("people.prom");
    earlier_success(&file, "people");
    // This process holds the lock the run needs: the same pipeline file,
    // target and group, as another run of it would.
    let _held = listpipe::load::lock::acquire(
        &pipeline,
        &t.resolved().await,
        &["group \"People\"".to_string()],
    )
    .unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &["--metrics-file", file.to_str().unwrap()]).await;
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("another run is in progress"), "{stderr}");
    let text = std::fs::read_to_string(&file).unwrap();
    let run = [("pipeline", "people")];
    assert_eq!(
        value(&text, "listpipe_run_exit_code", &run),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "listpipe_run_in_progress", &run),
        Some(0.0),
        "{text}"
    );
    assert!(value(&text, "listpipe_run_finished_timestamp_seconds", &run).unwrap() > 1.7e9);
    assert_eq!(
        value(&text, "listpipe_run_last_success_timestamp_seconds", &run),
        Some(1.7e9),
        "{text}"
    );
    promtool_accepts(&text);
}

#[tokio::test]
async fn a_run_stopped_by_a_leftover_journal_writes_its_metrics() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let pipeline = clean_pipeline(dir);
    let file = dir.join("people.prom");
    earlier_success(&file, "people");
    // A journal as a run killed mid-way leaves it: a row started.
    let journal = dir.join(listpipe::load::journal::path(
        std::path::Path::new(".listpipe"),
        "people",
        "people",
        &t.resolved().await,
        "group \"People\"",
    ));
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::fs::write(
        &journal,
        "{\"ev\":\"start\",\"file\":0,\"row\":2,\"email\":\"a@example.com\",\"action\":\"create\",\"hash\":\"00\"}\n",
    )
    .unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &["--metrics-file", file.to_str().unwrap()]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert!(journal.exists(), "the journal is left for the decision");
    let text = std::fs::read_to_string(&file).unwrap();
    let run = [("pipeline", "people")];
    assert_eq!(
        value(&text, "listpipe_run_exit_code", &run),
        Some(2.0),
        "{text}"
    );
    assert!(value(&text, "listpipe_run_finished_timestamp_seconds", &run).unwrap() > 1.7e9);
    assert_eq!(
        value(&text, "listpipe_run_last_success_timestamp_seconds", &run),
        Some(1.7e9),
        "{text}"
    );
    promtool_accepts(&text);
}

/// A Pushgateway of the test's own (Debian's `prometheus-pushgateway`) on
/// a free loopback port, its data in a temp dir; killed when dropped.
struct Pushgateway {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pushgateway {
    /// Started and answering; `None` (a note, the test skipped) when the
    /// binary is not installed, a failure under `CI=true` (`.ci/run`
    /// installs it).
    async fn start() -> Option<Pushgateway> {
        let found = ["prometheus-pushgateway", "pushgateway"]
            .iter()
            .find_map(|name| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|dir| dir.join(name))
                        .find(|p| p.is_file())
                })
            });
        let Some(binary) = found else {
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !in_ci,
                "prometheus-pushgateway is missing: CI must install it (apt-get install -y prometheus-pushgateway; see .ci/run)"
            );
            eprintln!(
                "note: SKIPPED the Pushgateway test: prometheus-pushgateway is not installed"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = listpipe_testkit::free_port();
        let child = std::process::Command::new(binary)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // Debian's default is a file under /var/lib/prometheus.
            .arg(format!(
                "--persistence.file={}",
                dir.path().join("pushgateway.data").display()
            ))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let gateway = Pushgateway {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let ready = format!("{}/-/ready", gateway.url);
        let http = reqwest::Client::new();
        let up = listpipe_testkit::eventually(std::time::Duration::from_secs(30), || async {
            http.get(&ready)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        })
        .await;
        assert!(up, "the Pushgateway never answered on {}", gateway.url);
        Some(gateway)
    }

    async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_real_pushgateway_holds_the_runs_figures_and_keeps_the_last_success() {
    let Some(gateway) = Pushgateway::start().await else {
        return;
    };
    let t = TestServer::start().await;
    let pipeline = clean_pipeline(t.dir.path());
    let (code, report, stderr) = run(&t, &pipeline, &["--pushgateway", &gateway.url]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let text = gateway.metrics().await;
    let group = [("job", "listpipe"), ("pipeline", "people")];
    let of_step = [
        ("job", "listpipe"),
        ("pipeline", "people"),
        ("step", "people"),
    ];
    let people = step(&report, "people");
    for (series, json) in [
        ("listpipe_rows_read", &people["prepare"]["rows_read"]),
        ("listpipe_receivers_created", &people["import"]["created"]),
        ("listpipe_receivers_updated", &people["import"]["updated"]),
        ("listpipe_receivers_failed", &people["import"]["failed"]),
    ] {
        assert_eq!(
            value(&text, series, &of_step),
            json.as_f64(),
            "{series}\n{text}"
        );
    }
    assert_eq!(
        value(&text, "listpipe_receivers_created", &of_step),
        Some(3.0)
    );
    assert_eq!(
        value(&text, "listpipe_requests_total", &group),
        report["requests"]["sent"].as_f64(),
        "{text}"
    );
    assert_eq!(
        value(&text, "listpipe_run_exit_code", &group),
        Some(0.0),
        "{text}"
    );
    let success = value(&text, "listpipe_run_last_success_timestamp_seconds", &group).unwrap();
    // The Pushgateway's own record of the push.
    assert!(
        value(&text, "push_time_seconds", &group).is_some(),
        "{text}"
    );

    // A failed run (the target down), pushed without a metrics file: the
    // PUT replaces the group, and the last success read back from the
    // Pushgateway is in it.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (code, _, stderr) =
        crate::import::run_at(&t, &down, &pipeline, &["--pushgateway", &gateway.url], &[]).await;
    assert_eq!(code, 3, "{stderr}");
    let text = gateway.metrics().await;
    assert_eq!(
        value(&text, "listpipe_run_exit_code", &group),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "listpipe_run_last_success_timestamp_seconds", &group),
        Some(success),
        "{text}"
    );
    // The PUT replaced the group: the first run's counts are gone (its
    // steps did not run, so it has none of its own).
    assert_eq!(
        value(&text, "listpipe_receivers_created", &of_step),
        None,
        "{text}"
    );
}

/// The value of `name` summed over every series whose labels include `labels`.
fn sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, v) = l.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            let all = labels
                .iter()
                .all(|(k, val)| rest.contains(&format!("{k}=\"{val}\"")));
            (n == name && all).then(|| v.parse::<f64>().ok())?
        })
        .sum()
}

async fn server_metrics(t: &TestServer) -> String {
    let addr = t.server.as_ref().unwrap().metrics_addr.unwrap();
    let (http, _, _) = t.raw();
    let answer = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.text().await.unwrap()
}

#[tokio::test]
async fn the_servers_metrics_count_the_rows_the_store_wrote_and_show_its_connections() {
    let t = TestServer::start_with(|o| o.metrics_listen = Some("127.0.0.1:0".into())).await;
    let before = server_metrics(&t).await;
    let rows = |text: &str, table: &str, op: &str| {
        sum(
            text,
            "listpipe_server_rows_written_total",
            &[("table", table), ("op", op)],
        )
    };
    assert_eq!(rows(&before, "receivers", "insert"), 0.0, "{before}");
    let g = t.group("Written").await;
    let c = &t.client;
    for e in ["a@example.com", "b@example.com"] {
        c.create_receiver(g.id, &listpipe::api::ReceiverInput::email(e))
            .await
            .unwrap();
    }
    let change = listpipe::api::ReceiverInput {
        source: Some("metrics".into()),
        ..Default::default()
    };
    c.update_receiver(g.id, "a@example.com", &change)
        .await
        .unwrap();
    c.delete_group_receiver(g.id, "b@example.com")
        .await
        .unwrap();
    c.add_to_blacklist("spam@example.com", "test")
        .await
        .unwrap();
    c.add_group_receiver_tags(g.id, "a@example.com", &["vip"])
        .await
        .unwrap();
    // Refused: the address is in the group already. Nothing of it counts.
    assert!(
        c.create_receiver(g.id, &listpipe::api::ReceiverInput::email("a@example.com"))
            .await
            .is_err()
    );

    let text = server_metrics(&t).await;
    assert_eq!(rows(&text, "receivers", "insert"), 2.0, "{text}");
    assert!(rows(&text, "receivers", "update") >= 1.0, "{text}");
    assert_eq!(rows(&text, "receivers", "delete"), 1.0, "{text}");
    assert_eq!(rows(&text, "blacklist", "insert"), 1.0, "{text}");
    assert_eq!(rows(&text, "tags", "insert"), 1.0, "{text}");
    assert_eq!(rows(&text, "groups", "insert"), 1.0, "{text}");
    // The connections: none busy between requests; SQLite's writer and
    // four readers, or PostgreSQL's pool of eight.
    let max = value(&text, "listpipe_server_store_connections_max", &[]).unwrap();
    let in_use = value(
        &text,
        "listpipe_server_store_connections",
        &[("state", "in_use")],
    );
    let idle = value(
        &text,
        "listpipe_server_store_connections",
        &[("state", "idle")],
    );
    assert_eq!(in_use, Some(0.0), "{text}");
    if listpipe_testkit::on_postgres() {
        assert_eq!(max, 8.0, "{text}");
        assert!(idle.unwrap() >= 1.0, "{text}");
        assert_eq!(value(&text, "listpipe_server_store_write_queue", &[]), None);
    } else {
        assert_eq!(max, 5.0, "{text}");
        assert_eq!(idle, Some(5.0), "{text}");
        assert_eq!(
            value(&text, "listpipe_server_store_write_queue", &[]),
            Some(0.0),
            "{text}"
        );
    }
    promtool_accepts(&text);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_metrics_show_the_requests_a_load_of_them_was_served() {
    let t = TestServer::start_with(|o| o.metrics_listen = Some("127.0.0.1:0".into())).await;
    let g = t.group("Load").await;
    let (http, base, token) = t.raw();
    // 200 single creates at once: the server's writer commits them in
    // groups, its bounds may refuse some (503); every answer is counted.
    let url = format!("{base}/v3/groups/{}/receivers", g.id);
    let sends = (0..200).map(|i| {
        http.post(&url)
            .bearer_auth(&token)
            .json(&serde_json::json!({"email": format!("load{i}@example.com")}))
            .send()
    });
    let answers = futures::future::join_all(sends).await;
    let mut by_status = std::collections::BTreeMap::<u16, f64>::new();
    for a in answers {
        *by_status.entry(a.unwrap().status().as_u16()).or_default() += 1.0;
    }
    let created = by_status.get(&200).copied().unwrap_or(0.0);
    assert!(created > 0.0, "{by_status:?}");

    let text = server_metrics(&t).await;
    let route = [
        ("route", "/v3/groups/{group_id}/receivers"),
        ("method", "POST"),
    ];
    assert_eq!(
        sum(&text, "listpipe_server_requests_total", &route),
        200.0,
        "{by_status:?}\n{text}"
    );
    for (status, n) in &by_status {
        let mut l = route.to_vec();
        let status = status.to_string();
        l.push(("status", &status));
        assert_eq!(
            value(&text, "listpipe_server_requests_total", &l),
            Some(*n),
            "{status}\n{text}"
        );
    }
    assert_eq!(
        value(
            &text,
            "listpipe_server_request_duration_seconds_count",
            &route
        ),
        Some(200.0),
        "{text}"
    );
    // Every create answered 200 is one receiver row, and no more.
    assert_eq!(
        sum(
            &text,
            "listpipe_server_rows_written_total",
            &[("table", "receivers"), ("op", "insert")]
        ),
        created,
        "{by_status:?}\n{text}"
    );
    assert_eq!(
        value(&text, "listpipe_server_requests_in_flight", &[]),
        Some(0.0)
    );
    promtool_accepts(&text);
}
