//! The report of a run that stopped (issue 41): with exit 3 (the target
//! lost) or 74 (its own output unwritable) the `--report` lists every step
//! that ran, what each wrote, and why the last one stopped (before:
//! `"steps": []`).

use crate::in_process::run_here;
use crate::support::TestServer;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn people(dir: &Path, n: usize) {
    let mut csv = String::from("email\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
}

const IMPORT: &str = "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"Kept\"\n\
     create_group = true\n[import.receiver]\nemail = \"email\"\n";

#[tokio::test]
async fn a_run_stopped_by_its_own_output_reports_every_step_and_what_it_wrote() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    people(dir, 30);
    // The export's folder is a file: its output cannot be written (74).
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            "{IMPORT}\n[[export]]\nname = \"back\"\ngroup = \"Kept\"\nout = \"people.csv/back.csv\"\n"
        ),
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &p, &["--quiet"]).await;
    assert_eq!(code, 74, "{stderr}");
    assert_eq!(report["exit_code"], 74);
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{report}");
    assert_eq!(
        (&steps[0]["name"], &steps[0]["import"]["created"]),
        (&Value::from("people"), &Value::from(30))
    );
    assert_eq!(
        (&steps[1]["name"], &steps[1]["kind"]),
        (&Value::from("back"), &Value::from("export"))
    );
    let error = steps[1]["error"].as_str().expect("the step's error");
    assert!(error.contains("people.csv/back.csv"), "{error}");
}

#[tokio::test]
async fn a_run_that_lost_its_target_reports_what_the_step_wrote_before() {
    let n = 400;
    let mut t = TestServer::start_with(|o| {
        o.faults = Some("delay=20ms@1".parse().expect("spec"));
    })
    .await;
    let dir = t.dir.path().to_path_buf();
    people(&dir, n);
    let p = dir.join("p.toml");
    // A second step the lost target leaves unrun.
    let export = "[[export]]\nname = \"back\"\ngroup = \"Kept\"\nout = \"back.csv\"\n";
    std::fs::write(
        &p,
        format!("[target]\nconcurrency = 4\nretries = 1\n\n{IMPORT}\n{export}"),
    )
    .unwrap();
    let report = dir.join("report.json");
    let child = crate::support::binary()
        .current_dir(&dir)
        .args(["run", p.to_str().unwrap(), "--quiet", "--writes", "single"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .arg("--report")
        .arg(&report)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Some rows written, then the target goes away.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let groups = t.client.groups(None).await.unwrap_or_default();
        if let Some(g) = groups.iter().find(|g| g.name == "Kept")
            && t.client
                .group_stats(g.id)
                .await
                .is_ok_and(|s| s.total_count >= 20)
        {
            break;
        }
        assert!(Instant::now() < deadline, "no rows arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    t.server.take().expect("running").stop().await;
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let json: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["exit_code"], 3);
    let step = &json["steps"][0];
    assert_eq!(
        (&step["name"], &step["kind"]),
        (&Value::from("people"), &Value::from("import")),
        "{json}"
    );
    let created = step["import"]["created"].as_u64().expect("what it wrote");
    assert!((20..n as u64).contains(&created), "{step}");
    // What it read and how long it took, as a finished step's report says.
    assert_eq!(step["prepare"]["rows_read"], n, "{step}");
    assert!(step["timings_ms"]["load"].as_u64() > Some(0), "{step}");
    assert_eq!(step["import"]["stopped"], true, "{step}");
    // And what its requests did: the writes it sent, their retries.
    let writes = step["import"]["write_requests"].as_u64().unwrap_or(0);
    assert!(
        writes >= created,
        "single writes: one request a row at least: {step}"
    );
    assert!(
        step["import"]["retries"].as_u64() > Some(0),
        "the lost target's retries: {step}"
    );
    assert!(
        step["error"]
            .as_str()
            .is_some_and(|e| e.contains("stopped answering")),
        "{step}"
    );
    let unrun = &json["steps"][1];
    assert_eq!(
        (&unrun["name"], &unrun["skipped"]),
        (
            &Value::from("back"),
            &Value::from("not run: the run stopped before this step")
        ),
        "{json}"
    );
}

#[tokio::test]
async fn a_run_that_cannot_reach_its_target_still_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    people(dir.path(), 3);
    let p = dir.path().join("p.toml");
    std::fs::write(&p, IMPORT).unwrap();
    let report = dir.path().join("report.json");
    // Nothing listens on a port just freed.
    let url = format!("http://127.0.0.1:{}", crate::support::free_port());
    let out = crate::import::listpipe(
        dir.path(),
        &[
            "run",
            p.to_str().unwrap(),
            "--quiet",
            "--target-url",
            &url,
            "--token",
            "t",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let json: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["exit_code"], 3);
    assert_eq!(json["target"], url.as_str());
    assert_eq!(
        json["steps"],
        serde_json::json!([{
            "name": "people",
            "kind": "import",
            "prepare": json["steps"][0]["prepare"],
            "timings_ms": {"prepare": 0, "load": 0},
            "skipped": "not run: the target could not be reached"
        }])
    );
}
