//! `run --resume` finishes whatever an earlier run left in flight: journals
//! holding 0, 1, 250 and 5,000 rows started and never confirmed, resumed on
//! both write paths and in every concurrency mode (a journal of more rows in
//! flight than the adaptive mode's 256 once hung the single-write path for
//! ever, issue 41); and a
//! graceful stop of a run held to a slow rate ends within a request's time.

use crate::support::TestServer;
use listpipe::api::{ReceiverQuery, detail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Writes `people.csv` with `n` rows and `people.toml` importing it, with
/// `[target]` lines of the test's choosing.
fn source(dir: &Path, n: usize, target: &str) -> PathBuf {
    let mut csv = String::from("email,firstname\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com,Name{i}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[target]\nurl = \"builtin\"\n{target}\n\n[[import]]\nname = \"people\"\nsource = \"people.csv\"\n\
             group = \"Resumed\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n\
             [import.global_attributes]\nfirstname = \"firstname\"\n"
        ),
    )
    .unwrap();
    pipeline
}

/// The journal of the step `people` of the pipeline `people.toml` against
/// `target` (as [`TestServer::resolved`] names it): keyed by the target
/// and group since issue 41 (was `.listpipe/journal/people/people.jsonl`).
fn journal(dir: &Path, target: &str) -> PathBuf {
    dir.join(listpipe::load::journal::path(
        std::path::Path::new(".listpipe"),
        "people",
        "people",
        target,
        "group \"Resumed\"",
    ))
}

/// A journal as a run killed with `kill -9` leaves it: the first
/// `in_flight` rows of the source started, none confirmed (and, as a kill
/// can leave it, its last line torn).
fn killed_journal(dir: &Path, target: &str, in_flight: usize) {
    let mut text = String::new();
    for i in 0..in_flight {
        text.push_str(&format!(
            "{{\"ev\":\"start\",\"file\":0,\"row\":{},\"email\":\"user{i}@example.com\",\"action\":\"create\",\"hash\":\"00\"}}\n",
            i + 2
        ));
    }
    text.push_str("{\"ev\":\"start\",\"fi");
    let path = journal(dir, target);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `listpipe run` as a child, its report in `report.json`.
fn spawn(t: &TestServer, pipeline: &Path, extra: &[&str]) -> Child {
    spawn_with(t, pipeline, extra, &[])
}

/// [`spawn`] with environment variables of the child's own.
fn spawn_with(t: &TestServer, pipeline: &Path, extra: &[&str], env: &[(&str, &str)]) -> Child {
    spawn_in(t.dir.path(), t, pipeline, extra, env)
}

/// [`spawn_with`] in the folder `dir` (its `.listpipe/`, its report),
/// against `t`, which may be another server than the folder's.
fn spawn_in(
    dir: &Path,
    t: &TestServer,
    pipeline: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Child {
    crate::support::binary()
        .current_dir(dir)
        .args(["run", pipeline.to_str().unwrap(), "--quiet"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .arg("--report")
        .arg(dir.join("report.json"))
        .args(extra)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` up to `limit`; a child still running then is killed
/// and the test fails, saying what hung.
async fn finishes(mut child: Child, limit: Duration, what: &str) -> (i32, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.code().unwrap_or(-1), stderr);
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what} did not finish within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many receivers the group "Resumed" holds, and whether each of the
/// `n` source rows is among them once.
async fn held(t: &TestServer, n: usize) -> usize {
    let g = t.group_named("Resumed").await;
    let mut seen = std::collections::HashSet::new();
    for page in 0.. {
        let q = ReceiverQuery {
            pagesize: Some(5000),
            page: Some(page),
            detail: Some(detail::ALL),
            ..Default::default()
        };
        let rows = t.client.receivers(g.id, &q).await.unwrap();
        if rows.is_empty() {
            break;
        }
        for r in rows {
            assert!(seen.insert(r.email.clone()), "{} twice", r.email);
        }
    }
    assert!((0..n).all(|i| seen.contains(&format!("user{i}@example.com"))));
    seen.len()
}

#[tokio::test]
async fn journals_with_rows_in_flight_resume_to_the_end_on_every_write_path_and_concurrency() {
    let concurrencies: [(&str, &[&str]); 3] = [
        ("adaptive", &[]),
        ("fixed 1", &["--concurrency", "1"]),
        ("fixed 16", &["--concurrency", "16"]),
    ];
    // 300: past the 256 rows the adaptive mode allows in flight, where the
    // nested writer hung (5,000 hung it too; 250 did not, by a few rows).
    for in_flight in [0, 1, 250, 300, 5_000] {
        let n = in_flight + 40;
        for writes in ["single", "auto"] {
            for (mode, flags) in concurrencies {
                let t = TestServer::start().await;
                let dir = t.dir.path();
                let pipeline = source(dir, n, "");
                let target = t.resolved().await;
                killed_journal(dir, &target, in_flight);
                let mut extra = vec!["--resume", "--writes", writes];
                extra.extend_from_slice(flags);
                let what = format!("a resume of {in_flight} rows in flight, {writes}, {mode}");
                let child = spawn(&t, &pipeline, &extra);
                let (code, stderr) = finishes(child, Duration::from_secs(120), &what).await;
                assert_eq!(code, 0, "{what}: {stderr}");
                let report: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap())
                        .unwrap();
                let import = &report["steps"][0]["import"];
                assert_eq!(import["created"], n as u64, "{what}: {import}");
                assert_eq!(import["in_flight_checked"], in_flight as u64, "{what}");
                assert_eq!(import["journal_unreadable_lines"], 1, "{what}: {import}");
                assert!(
                    !journal(dir, &target).exists(),
                    "{what}: a finished run removes it"
                );
                assert_eq!(held(&t, n).await, n, "{what}");
            }
        }
    }
}

/// Lines of the journal per event.
fn events(journal: &Path, ev: &str) -> usize {
    listpipe::load::journal::read_events(journal)
        .iter()
        .filter(|(e, _)| e == ev)
        .count()
}

#[tokio::test]
async fn a_graceful_stop_of_single_writes_held_to_a_slow_rate_ends_at_once_and_resumes() {
    stop_at_a_slow_rate("single").await;
}

#[tokio::test]
async fn a_graceful_stop_of_batch_writes_held_to_a_slow_rate_ends_at_once_and_resumes() {
    stop_at_a_slow_rate("auto").await;
}

/// Runs an import held to two requests a second (the rows waiting for
/// their turn would take minutes), stops it with SIGTERM once a row is
/// started, then resumes it without the rate to the end.
async fn stop_at_a_slow_rate(writes: &str) {
    let n = 300;
    let t = TestServer::start().await;
    let dir = t.dir.path().to_path_buf();
    let pipeline = source(&dir, n, "max_requests_per_second = 2");
    let journal = journal(&dir, &t.resolved().await);
    let child = spawn(&t, &pipeline, &["--writes", writes]);
    let pid = child.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !journal.exists() || events(&journal, "start") == 0 {
        assert!(Instant::now() < deadline, "the run never started a row");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopped = Instant::now();
    let term = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(term.success());
    let what = format!("a graceful stop ({writes})");
    let (code, stderr) = finishes(child, Duration::from_secs(60), &what).await;
    assert_eq!(code, 130, "{stderr}");
    // Within a request's answer (the request timeout is 30 s).
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "{what} took {:?}",
        stopped.elapsed()
    );
    // Every row started was confirmed, or said never sent.
    assert_eq!(
        events(&journal, "start"),
        events(&journal, "done") + events(&journal, "unsent"),
        "{what}"
    );
    assert!(events(&journal, "done") < n, "{what}: stopped midway");

    let pipeline = source(&dir, n, "");
    let resumed = spawn(&t, &pipeline, &["--resume", "--writes", writes]);
    let what = format!("the resume of {what}");
    let (code, stderr) = finishes(resumed, Duration::from_secs(120), &what).await;
    assert_eq!(code, 0, "{what}: {stderr}");
    assert_eq!(held(&t, n).await, n, "{what}");
}

/// `<folder>/nightly.toml` importing `<folder>/people.csv` (`n` rows, the
/// last `bad` of them invalid addresses) into the group `group`.
fn nightly(root: &Path, folder: &str, n: usize, bad: usize, group: &str) -> PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("email,firstname\n");
    for i in 0..n {
        if i + bad >= n {
            csv.push_str(&format!("not-an-address-{i},Name{i}\n"));
        } else {
            csv.push_str(&format!("{folder}{i}@example.com,Name{i}\n"));
        }
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("nightly.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[target]\nurl = \"builtin\"\nconcurrency = 4\n\n[[import]]\nname = \"people\"\nsource = \"people.csv\"\n\
             group = \"{group}\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n\
             [import.global_attributes]\nfirstname = \"firstname\"\n"
        ),
    )
    .unwrap();
    pipeline
}

#[tokio::test]
async fn two_same_named_pipelines_of_two_folders_keep_their_state_apart_through_a_kill_and_resume()
{
    let n = 1_500;
    let t = TestServer::start_with(|o| o.faults = Some("delay=20ms@1".parse().unwrap())).await;
    let root = t.dir.path().to_path_buf();
    let a = nightly(&root, "a", n, 200, "Nightly A");
    let b = nightly(&root, "b", n, 30, "Nightly B");
    // Keyed by the target and group too since issue 41 (was
    // `.listpipe/journal/{folder}/nightly/people.jsonl`).
    let target = t.resolved().await;
    let journal_of = |folder: &str| {
        let group = format!("group \"Nightly {}\"", folder.to_uppercase());
        root.join(listpipe::load::journal::path(
            std::path::Path::new(".listpipe"),
            &format!("{folder}/nightly"),
            "people",
            &target,
            &group,
        ))
    };
    let rejects_of = |folder: &str| {
        root.join(format!(
            ".listpipe/rejects/{folder}/nightly/people.rejects.csv"
        ))
    };

    // Both run side by side from one folder; both are killed midway.
    let runs = [
        spawn(&t, &a, &["--writes", "single"]),
        spawn(&t, &b, &["--writes", "single"]),
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    while ["a", "b"].iter().any(|f| {
        listpipe::load::journal::read_events(&journal_of(f))
            .iter()
            .filter(|(e, _)| e == "done")
            .count()
            < 20
    }) {
        assert!(Instant::now() < deadline, "the runs made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for mut run in runs {
        run.kill().unwrap(); // SIGKILL
        run.wait().unwrap();
    }
    for folder in ["a", "b"] {
        let header = listpipe::load::journal::header(&journal_of(folder)).unwrap();
        let group = if folder == "a" {
            "Nightly A"
        } else {
            "Nightly B"
        };
        assert!(header.group.contains(group), "{folder}: {header:?}");
    }

    // b resumes and finishes; a's journal stays as it was left.
    let a_left = std::fs::read(journal_of("a")).unwrap();
    let (code, stderr) = finishes(
        spawn(&t, &b, &["--resume"]),
        Duration::from_secs(120),
        "b's resume",
    )
    .await;
    assert_eq!(code, 1, "30 rows rejected: {stderr}");
    assert!(
        !journal_of("b").exists(),
        "b's finished run removes its own journal"
    );
    assert_eq!(
        std::fs::read(journal_of("a")).unwrap(),
        a_left,
        "and never a's"
    );

    // a, refused without --resume (its own journal), resumes and finishes.
    let (code, stderr) = finishes(spawn(&t, &a, &[]), Duration::from_secs(60), "a").await;
    assert_eq!(code, 2, "{stderr}");
    let a_journal = journal_of("a");
    let a_name = a_journal.strip_prefix(&root).unwrap();
    assert!(stderr.contains(&a_name.display().to_string()), "{stderr}");
    let (code, stderr) = finishes(
        spawn(&t, &a, &["--resume"]),
        Duration::from_secs(120),
        "a's resume",
    )
    .await;
    assert_eq!(code, 1, "200 rows rejected: {stderr}");
    assert!(!journal_of("a").exists());

    // Each group holds its pipeline's rows once; each rejects file its own.
    for (folder, group, bad) in [("a", "Nightly A", 200), ("b", "Nightly B", 30)] {
        let held = t.receivers_of(group).await;
        assert_eq!(held.len(), n - bad, "{group}");
        assert!(held.iter().all(|r| r.email.starts_with(folder)), "{group}");
        let rejects = std::fs::read_to_string(rejects_of(folder)).unwrap();
        assert_eq!(
            rejects.lines().count(),
            bad + 1,
            "{folder}'s rejects and a header"
        );
    }
}

#[tokio::test]
async fn a_pipeline_killed_against_one_target_runs_against_another_and_its_journal_stays_and_resumes()
 {
    let n = 1_500;
    let a = TestServer::start_with(|o| o.faults = Some("delay=20ms@1".parse().unwrap())).await;
    let b = TestServer::start().await;
    let dir = a.dir.path().to_path_buf();
    let pipeline = source(&dir, n, "concurrency = 4");
    let (target_a, target_b) = (a.resolved().await, b.resolved().await);
    assert_ne!(target_a, target_b);
    let (journal_a, journal_b) = (journal(&dir, &target_a), journal(&dir, &target_b));
    assert_eq!(
        journal_a.parent(),
        journal_b.parent(),
        "one pipeline's folder"
    );

    // Killed (SIGKILL) against A midway.
    let mut run = spawn(&a, &pipeline, &["--writes", "single"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while events(&journal_a, "done") < 20 {
        assert!(Instant::now() < deadline, "the run made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let a_left = std::fs::read(&journal_a).unwrap();
    assert!(events(&journal_a, "done") < n, "killed midway");

    // The same pipeline, from the same folder, against B (`--target-url`):
    // A's journal is not B's, so the run is not refused; it finishes,
    // removes its own journal, says A's is kept and leaves it as it was.
    let (code, stderr) = finishes(
        spawn_in(&dir, &b, &pipeline, &[], &[]),
        Duration::from_secs(120),
        "the run against B",
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(held(&b, n).await, n);
    assert!(
        !journal_b.exists(),
        "B's finished run removes its own journal"
    );
    assert_eq!(std::fs::read(&journal_a).unwrap(), a_left, "and never A's");
    let a_name = journal_a.strip_prefix(&dir).unwrap().display().to_string();
    assert!(
        stderr.contains(&format!(
            "listpipe: note: the journal {a_name} of an unfinished run into group \"Resumed\" of {target_a} is kept; \
             resume it with: listpipe run {} --resume --target-url {}",
            pipeline.display(),
            listpipe::load::identity::canonical_url(&a.base_url())
        )),
        "{stderr}"
    );
    // `--discard-journal` against B discards B's journals only: A's stays.
    let (code, stderr) = finishes(
        spawn_in(&dir, &b, &pipeline, &["--discard-journal"], &[]),
        Duration::from_secs(120),
        "a run against B discarding its journal",
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read(&journal_a).unwrap(),
        a_left,
        "A's is not B's to discard"
    );

    // Against A, its journal still stops a plain run, naming it, then resumes.
    let (code, stderr) = finishes(spawn(&a, &pipeline, &[]), Duration::from_secs(60), "A").await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(&a_name), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "continue it with: listpipe run {} --resume --target-url {}",
            pipeline.display(),
            a.base_url()
        )),
        "{stderr}"
    );
    let (code, stderr) = finishes(
        spawn(&a, &pipeline, &["--resume"]),
        Duration::from_secs(120),
        "A's resume",
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let import = &report["steps"][0]["import"];
    assert!(import["resumed"].as_u64().unwrap() > 0, "{import}");
    assert!(
        !journal_a.exists(),
        "A's finished resume removes its journal"
    );
    assert_eq!(held(&a, n).await, n);
    assert_eq!(held(&b, n).await, n);
}

#[tokio::test]
async fn a_killed_run_resumes_with_its_journal_spilled_past_a_small_budget() {
    let n = 800;
    let t = TestServer::start_with(|o| o.faults = Some("delay=10ms@1".parse().unwrap())).await;
    let dir = t.dir.path().to_path_buf();
    let pipeline = source(&dir, n, "concurrency = 8");
    let journal = journal(&dir, &t.resolved().await);
    let mut run = spawn(&t, &pipeline, &["--writes", "single"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while events(&journal, "done") < 200 {
        assert!(Instant::now() < deadline, "the run made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();
    let confirmed = events(&journal, "done");
    assert!(confirmed < n, "killed midway");

    // Ten rows of the journal in memory: the rest goes to a temporary file.
    let env = [
        ("LISTPIPE_SPILL_AFTER", "10"),
        ("LISTPIPE_LOG", "listpipe=debug"),
    ];
    let resumed = spawn_with(&t, &pipeline, &["--resume", "--writes", "single"], &env);
    let (code, stderr) = finishes(resumed, Duration::from_secs(120), "the resume").await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("journal index spilled to disk"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let import = &report["steps"][0]["import"];
    assert!(
        import["resumed"].as_u64().unwrap() >= confirmed as u64,
        "{import}"
    );
    let sum: u64 = ["created", "updated", "unchanged", "resumed"]
        .iter()
        .map(|k| import[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, n as u64, "{import}");
    assert_eq!(held(&t, n).await, n);
}
