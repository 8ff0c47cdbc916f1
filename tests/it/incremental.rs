//! Incremental exports (issue 45) over real HTTP: the first run writes
//! everything, the next only what appeared or changed (registered,
//! activated, deactivated, bounced), a run without changes nothing;
//! `--full` starts again; a failed run moves no cursor; a change landing
//! while a run reads is in the next run.

use crate::import::{listpipe, spawn_export};
use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::{GroupInput, Id, ReceiverInput};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Output;

/// Runs `listpipe export --group Shop --incremental` with `args` in the test's folder.
async fn export(t: &TestServer, args: &[&str]) -> Output {
    spawn_incremental(t, args).await.unwrap()
}

/// [`export`], left running.
fn spawn_incremental(t: &TestServer, args: &[&str]) -> tokio::task::JoinHandle<Output> {
    let mut all = vec!["--group", "Shop", "--incremental"];
    all.extend(args);
    spawn_export(t, &all)
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

/// The rows of a JSON-lines export by email.
fn rows(t: &TestServer, file: &str) -> BTreeMap<String, Value> {
    std::fs::read_to_string(t.dir.path().join(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["email"].as_str().unwrap().to_string(), v))
        .collect()
}

fn emails(rows: &BTreeMap<String, Value>) -> Vec<&str> {
    rows.keys().map(String::as_str).collect()
}

async fn shop(t: &TestServer, emails: &[&str]) -> Id {
    let g = t
        .client
        .create_group(&GroupInput::named("Shop"))
        .await
        .unwrap();
    add(t, g.id, emails).await;
    g.id
}

async fn add(t: &TestServer, group: Id, emails: &[&str]) {
    let items: Vec<ReceiverInput> = emails.iter().map(|e| ReceiverInput::email(*e)).collect();
    t.client.upsert_receivers(group, &items).await.unwrap();
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn deactivate(t: &TestServer, group: Id, email: &str) {
    let input = ReceiverInput {
        deactivated: Some(now()),
        ..Default::default()
    };
    t.client
        .update_receiver(group, email, &input)
        .await
        .unwrap();
}

async fn bounce(t: &TestServer, group: Id, email: &str) {
    let input = ReceiverInput {
        bounced: Some(now()),
        ..Default::default()
    };
    t.client
        .update_receiver(group, email, &input)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_incremental_export_writes_everything_then_exactly_what_was_added_deactivated_or_bounced()
 {
    let t = TestServer::start().await;
    let g = shop(&t, &["a@x.de", "b@x.de", "c@x.de"]).await;

    let first = ok(&export(&t, &["--out", "run1.jsonl"]).await);
    assert!(
        first.contains("export: incremental, everything (first run); next run from "),
        "{first}"
    );
    assert_eq!(
        emails(&rows(&t, "run1.jsonl")),
        ["a@x.de", "b@x.de", "c@x.de"]
    );

    add(&t, g, &["d@x.de"]).await;
    deactivate(&t, g, "a@x.de").await;
    bounce(&t, g, "b@x.de").await;
    let second = ok(&export(&t, &["--out", "run2.jsonl"]).await);
    assert!(
        second.contains("export: incremental, the changes since "),
        "{second}"
    );
    let changed = rows(&t, "run2.jsonl");
    assert_eq!(emails(&changed), ["a@x.de", "b@x.de", "d@x.de"]);
    assert!(changed["a@x.de"]["deactivated"].is_string());
    assert!(changed["b@x.de"]["bounced"].is_string());
    assert_eq!(changed["d@x.de"]["deactivated"], Value::Null);

    ok(&export(&t, &["--out", "run3.jsonl"]).await);
    assert!(rows(&t, "run3.jsonl").is_empty(), "nothing changed since");

    ok(&export(&t, &["--out", "run4.jsonl", "--full"]).await);
    assert_eq!(
        emails(&rows(&t, "run4.jsonl")),
        ["a@x.de", "b@x.de", "c@x.de", "d@x.de"]
    );
    let cursors = std::fs::read_dir(t.dir.path().join(".listpipe/export-cursors"))
        .unwrap()
        .count();
    assert_eq!(
        cursors, 1,
        "one cursor per selection, whatever the output's name"
    );
}

#[tokio::test]
async fn a_failed_incremental_run_moves_no_cursor_and_the_next_run_has_no_gap() {
    let t = TestServer::start().await;
    let g = shop(&t, &["a@x.de", "b@x.de"]).await;
    ok(&export(&t, &["--out", "run1.jsonl"]).await);

    add(&t, g, &["c@x.de"]).await;
    deactivate(&t, g, "a@x.de").await;
    // The output's place is taken by a folder: the run reads everything, then cannot write it.
    std::fs::create_dir(t.dir.path().join("taken.jsonl")).unwrap();
    let failed = export(&t, &["--out", "taken.jsonl"]).await;
    assert_ne!(failed.status.code(), Some(0), "the run must fail");

    ok(&export(&t, &["--out", "run3.jsonl"]).await);
    let changed = rows(&t, "run3.jsonl");
    assert_eq!(emails(&changed), ["a@x.de", "c@x.de"]);
    assert!(changed["a@x.de"]["deactivated"].is_string());
}

#[tokio::test]
async fn a_change_landing_while_an_incremental_export_reads_is_in_the_next_run() {
    // Every request waits a little, so the export is still reading while receivers change.
    let t = TestServer::start_with(|o| o.faults = Some("delay=20ms@1".parse().unwrap())).await;
    let emails_in: Vec<String> = (0..20).map(|i| format!("r{i:02}@x.de")).collect();
    let refs: Vec<&str> = emails_in.iter().map(String::as_str).collect();
    let g = shop(&t, &refs).await;
    ok(&export(&t, &["--out", "run1.jsonl"]).await);

    let slow = ["--page-size", "1", "--concurrency", "1", "--full"];
    let mut args = vec!["--out", "run2.jsonl"];
    args.extend(slow);
    let running = spawn_incremental(&t, &args);
    // Wait until the run has written its temporary file and read its first pages.
    let started = || {
        std::fs::read_dir(t.dir.path()).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".run2.jsonl.")
        })
    };
    for _ in 0..1000 {
        if started() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    deactivate(&t, g, "r00@x.de").await;
    add(&t, g, &["late@x.de"]).await;
    ok(&running.await.unwrap());
    let during = rows(&t, "run2.jsonl");
    assert_eq!(
        during["r00@x.de"]["deactivated"],
        Value::Null,
        "read before it changed"
    );

    ok(&export(&t, &["--out", "run3.jsonl"]).await);
    let after = rows(&t, "run3.jsonl");
    assert!(after["r00@x.de"]["deactivated"].is_string(), "{after:?}");
    assert!(
        during.contains_key("late@x.de") || after.contains_key("late@x.de"),
        "the receiver added during the run is in it or in the next"
    );
    let unchanged = after
        .keys()
        .filter(|e| e.starts_with('r') && *e != "r00@x.de")
        .count();
    assert_eq!(unchanged, 0, "{:?}", emails(&after));
}

#[tokio::test]
async fn an_incremental_export_of_a_blacklist_is_refused() {
    let t = TestServer::start().await;
    let out = listpipe(
        t.dir.path(),
        &[
            "export",
            "--target-url",
            &t.base_url(),
            "--token",
            &t.client.token(),
            "--blacklist",
            "--incremental",
            "--out",
            "b.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--incremental needs receivers: a blacklist has no change times to follow")
    );
}

#[tokio::test]
async fn a_pipeline_step_with_incremental_and_placeholders_writes_each_run_to_its_own_dated_file() {
    let t = TestServer::start().await;
    let g = shop(&t, &["a@x.de", "b@x.de"]).await;
    let file = t.dir.path().join("consent.toml");
    std::fs::write(
        &file,
        "[[export]]\nname = \"consent\"\ngroup = \"Shop\"\nincremental = true\nout = \"lake/date={date}/run-{run}.jsonl\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &file, &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    let export = &report["steps"][0]["export"];
    let written = export["file"].as_str().unwrap().to_string();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        written.starts_with(&format!("lake/date={today}/run-")) && written.ends_with("Z.jsonl"),
        "{written}"
    );
    assert_eq!(export["rows"], 2);
    assert_eq!(export["incremental"]["since"], Value::Null);

    deactivate(&t, g, "b@x.de").await;
    // Another second, so the second run's `{run}` names another file.
    let first_run = export["incremental"]["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    while chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string() == first_run {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (code, report, stderr) = run_here(&t, &file, &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    let export = &report["steps"][0]["export"];
    let second = export["file"].as_str().unwrap();
    assert_ne!(second, written);
    assert_eq!(export["rows"], 1);
    assert_eq!(export["incremental"]["since"], first_run.as_str());
    assert_eq!(emails(&rows(&t, second)), ["b@x.de"]);
    assert_eq!(emails(&rows(&t, &written)), ["a@x.de", "b@x.de"]);

    // `run --full`: the step forgets its cursor and writes everything again.
    let second_run = export["incremental"]["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    while chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string() == second_run {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (code, report, stderr) = run_here(&t, &file, &["--full"]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    let export = &report["steps"][0]["export"];
    assert_eq!(export["rows"], 2);
    assert_eq!(export["incremental"]["since"], Value::Null);
    let third = export["file"].as_str().unwrap();
    assert_eq!(emails(&rows(&t, third)), ["a@x.de", "b@x.de"]);
}

#[test]
fn an_unknown_placeholder_in_out_is_refused_with_its_position_and_the_placeholders_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[export]]\ngroup = \"Shop\"\nout = \"lake/day={day}/part.parquet\"\n",
    )
    .unwrap();
    let err = listpipe::pipeline::load(&file).unwrap_err().to_string();
    assert_eq!(
        err.lines().next().unwrap(),
        format!(
            "{}:3:7: unknown placeholder \"{{day}}\" in \"lake/day={{day}}/part.parquet\"; the placeholders are: {{date}} (the run's UTC date, YYYY-MM-DD), {{run}} (the run's start in UTC, YYYYMMDDTHHMMSSZ)",
            file.display()
        )
    );
}

#[tokio::test]
async fn the_consent_sync_example_writes_each_nights_deactivations_and_bounces_once() {
    let t = TestServer::start().await;
    let g = t
        .client
        .create_group(&GroupInput::named("Newsletter"))
        .await
        .unwrap()
        .id;
    add(&t, g, &["a@x.de", "b@x.de", "c@x.de"]).await;
    deactivate(&t, g, "a@x.de").await;
    bounce(&t, g, "b@x.de").await;
    let example = crate::import::repo("examples/consent-sync/consent.toml");
    let night = |report: &Value, step: usize| -> Vec<String> {
        let file = report["steps"][step]["export"]["file"].as_str().unwrap();
        let text = std::fs::read_to_string(t.dir.path().join(file)).unwrap();
        text.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect()
    };

    let (code, report, stderr) = run_here(&t, &example, &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    assert_eq!(night(&report, 0), ["a@x.de"]);
    assert_eq!(night(&report, 1), ["b@x.de"]);
    let header = std::fs::read_to_string(
        t.dir
            .path()
            .join(report["steps"][0]["export"]["file"].as_str().unwrap()),
    )
    .unwrap();
    assert!(header.starts_with("email,unsubscribed_at\n"), "{header}");

    deactivate(&t, g, "c@x.de").await;
    let (code, report, stderr) = run_here(&t, &example, &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    assert_eq!(night(&report, 0), ["c@x.de"], "only the new unsubscribe");
    assert!(night(&report, 1).is_empty(), "no new bounce");
}

#[tokio::test]
async fn an_incremental_export_of_a_saved_filter_writes_only_the_changes_the_filter_selects() {
    use listpipe::api::filter::{FilterInput, Rule};
    let t = TestServer::start().await;
    let g = shop(&t, &["a@x.de", "z@y.de"]).await;
    t.client
        .create_filter(
            g,
            &FilterInput {
                name: Some("x.de".into()),
                rules: Some(vec![Rule {
                    field: "email".into(),
                    logic: "ends".into(),
                    condition: "@x.de".into(),
                }]),
                operator: Some("AND".into()),
            },
        )
        .await
        .unwrap();
    ok(&export(&t, &["--filter", "x.de", "--out", "run1.jsonl"]).await);
    assert_eq!(emails(&rows(&t, "run1.jsonl")), ["a@x.de"]);

    deactivate(&t, g, "a@x.de").await;
    deactivate(&t, g, "z@y.de").await;
    add(&t, g, &["b@x.de", "w@y.de"]).await;
    ok(&export(&t, &["--filter", "x.de", "--out", "run2.jsonl"]).await);
    assert_eq!(emails(&rows(&t, "run2.jsonl")), ["a@x.de", "b@x.de"]);
}
