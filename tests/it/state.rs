//! The run's own state: journal writes that fail stop the run with exit 74,
//! a damaged ledger is refused, a journal belongs to one target and group,
//! damaged journal lines are reported, credentials are always whole.

use crate::import::{listpipe, run};
use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::server;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `people.csv` with `n` rows and `people.toml` importing it into "People".
fn people(dir: &Path, n: usize, extra: &str) -> PathBuf {
    let mut csv = String::from("email,firstname\n");
    (0..n).for_each(|i| csv.push_str(&format!("user{i}@example.com,Name{i}\n")));
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("people.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n{extra}\n[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nfirstname = \"firstname\"\n"
        ),
    )
    .unwrap();
    pipeline
}

/// The journal of `people.toml`'s step against `target` ([`TestServer::resolved`]):
/// keyed by the target and group since issue 41 (was `.listpipe/journal/people/people.jsonl`).
fn journal(dir: &Path, target: &str) -> PathBuf {
    dir.join(journal_name(target))
}

/// [`journal`] from the working directory, as messages name it.
fn journal_name(target: &str) -> PathBuf {
    listpipe::load::journal::path(
        std::path::Path::new(".listpipe"),
        "people",
        "people",
        target,
        "group \"People\"",
    )
}

/// Every address of group "People", sorted (a receiver twice shows twice).
async fn held(t: &TestServer) -> Vec<String> {
    let mut all: Vec<String> = t
        .receivers_of("People")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    all.sort();
    all
}

fn expected(n: usize) -> Vec<String> {
    let mut all: Vec<String> = (0..n).map(|i| format!("user{i}@example.com")).collect();
    all.sort();
    all
}

#[cfg(unix)]
#[tokio::test]
async fn a_journal_that_cannot_be_written_stops_the_run_with_exit_74_naming_the_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let pipeline = people(dir, 20, "");
    let target = t.resolved().await;
    let journal = journal(dir, &target);
    // A real failing device in the journal's place: every write is ENOSPC.
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/full", &journal).unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 74, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "listpipe: people: cannot write {}: No space left on device",
            journal_name(&target).display()
        )),
        "{stderr}"
    );
    assert!(
        held(&t).await.is_empty(),
        "no row is sent without its journal"
    );
    // Fixed (the device replaced), the run resumes and completes.
    std::fs::remove_file(&journal).unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(held(&t).await, expected(20));
}

#[tokio::test]
async fn a_ledger_or_report_that_cannot_be_written_stops_the_run_with_exit_74() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let pipeline = people(dir, 5, "");
    // A rejected row, and a file where the rejects file's folder should be.
    let mut csv = std::fs::read_to_string(dir.join("people.csv")).unwrap();
    csv.push_str("not-an-address,Nobody\n");
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    std::fs::create_dir_all(dir.join(".listpipe/rejects")).unwrap();
    std::fs::write(dir.join(".listpipe/rejects/people"), "").unwrap();
    let (code, _, stderr) = crate::import::run(&t, &pipeline, &[]).await;
    assert_eq!(code, 74, "{stderr}");
    assert!(
        stderr.contains(
            "listpipe: people: cannot write .listpipe/rejects/people/people.rejects.csv: "
        ),
        "{stderr}"
    );
    assert!(stderr.contains("resume with: listpipe run"), "{stderr}");
    std::fs::remove_file(dir.join(".listpipe/rejects/people")).unwrap();
    let (code, _, stderr) = crate::import::run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        dir.join(".listpipe/rejects/people/people.rejects.csv")
            .exists()
    );

    // The report's folder is a file: the run says so and exits 74.
    let (url, token) = (t.base_url(), t.client.token());
    let (d, p) = (dir.to_path_buf(), pipeline.clone());
    let out = tokio::task::spawn_blocking(move || {
        listpipe(
            &d,
            &[
                "run",
                p.to_str().unwrap(),
                "--target-url",
                &url,
                "--token",
                &token,
                "--report",
                "people.csv/report.json",
            ],
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(
        stderr.contains("listpipe: the run report: cannot write people.csv/report.json: "),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_damaged_mirror_ledger_is_refused_and_left_as_it_is() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let pipeline = people(dir, 5, "mode = \"mirror\"");
    let (code, _, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let ledgers: Vec<PathBuf> = std::fs::read_dir(dir.join(".listpipe/ledger/people"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(ledgers.len(), 1, "{ledgers:?}");
    let damaged = b"\x00\x00\x00garbage\xff\n";
    std::fs::write(&ledgers[0], damaged).unwrap();
    let (code, _, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 74, "{stderr}");
    assert!(
        stderr.contains(
            "the mirror ledger cannot be used: it is not text. It was left as it is; restore it from a backup, or move it away to start a new ledger"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&ledgers[0]).unwrap(), damaged);
}

/// A server answering every request after 40 ms, and a run of `n` rows
/// against it killed (SIGKILL) after some rows were confirmed.
async fn killed_run(n: usize) -> (TestServer, PathBuf) {
    let t = TestServer::start_with(|o| o.faults = Some("delay=40ms@1".parse().unwrap())).await;
    let dir = t.dir.path().to_path_buf();
    let pipeline = people(&dir, n, "");
    let mut child = crate::support::binary()
        .current_dir(&dir)
        .args(["run", pipeline.to_str().unwrap(), "--quiet"])
        .args(["--writes", "single", "--concurrency", "1"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let j = journal(&dir, &t.resolved().await);
    let confirmed = move || {
        listpipe::load::journal::read_events(&j)
            .iter()
            .filter(|(ev, _)| ev == "done")
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while confirmed() < 10 {
        assert!(Instant::now() < deadline, "no progress in the journal");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(confirmed() < n, "killed midway");
    (t, pipeline)
}

#[tokio::test]
async fn resume_is_refused_against_another_server_and_resends_what_a_restored_one_lost() {
    let n = 60;
    let (t, pipeline) = killed_run(n).await;
    let dir = t.dir.path().to_path_buf();
    let port = t.server.as_ref().unwrap().addr.port();

    // A fresh server B: the journal belongs to A, so --resume is refused.
    let b = TestServer::start().await;
    let (url, token) = (b.base_url(), b.client.token());
    let (d, p) = (dir.clone(), pipeline.clone());
    let out = tokio::task::spawn_blocking(move || {
        listpipe(
            &d,
            &[
                "run",
                p.to_str().unwrap(),
                "--resume",
                "--target-url",
                &url,
                "--token",
                &token,
            ],
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "listpipe: the journal {} belongs to group \"People\" of http://localhost:{port} (account ",
            journal_name(&t.resolved().await).display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("--discard-journal"), "{stderr}");
    assert!(
        b.client.groups(None).await.unwrap().is_empty(),
        "nothing was written to B"
    );

    // A restored to an empty group (as from a backup): the rows the journal
    // calls done are not there any more, so they are sent again; none twice.
    let g = t.group_named("People").await;
    for email in held(&t).await {
        t.client.delete_receiver(&email, Some(g.id)).await.unwrap();
    }
    assert!(held(&t).await.is_empty());
    let (code, report, stderr) = run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(import["created"], n as u64, "{import}");
    assert_eq!(import["resumed"], 0, "{import}");
    assert_eq!(held(&t).await, expected(n));
}

#[tokio::test]
async fn damaged_journal_lines_are_counted_in_a_warning_and_the_report() {
    let n = 60;
    let (t, pipeline) = killed_run(n).await;
    let dir = t.dir.path().to_path_buf();
    let journal = journal(&dir, &t.resolved().await);
    // A line of binary garbage, then a line torn by a kill.
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"\x00\xff\xfe garbage \x01\n{\"ev\":\"done\",\"file\":0,\"ro");
    std::fs::write(&journal, bytes).unwrap();
    let (code, report, stderr) = crate::import::run(&t, &pipeline, &["--resume"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "people: warning: 2 line(s) of the journal could not be read (a line torn by a kill, or damage); their rows were checked against the target"
        ),
        "{stderr}"
    );
    assert_eq!(report["steps"][0]["import"]["journal_unreadable_lines"], 2);
    assert_eq!(held(&t).await, expected(n));
}

#[test]
fn credentials_rewritten_over_and_over_are_always_a_whole_usable_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.json");
    let creds = |i: usize| listpipe::api::oauth::Credentials {
        base_url: "http://localhost:1".into(),
        client_id: "app".into(),
        client_secret: "secret".into(),
        access_token: format!("access-{i}-{}", "x".repeat(4000)),
        refresh_token: format!("refresh-{i}"),
        expires_in: 3600,
        ..Default::default()
    };
    server::write_credentials(&path, &creds(0)).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).unwrap();
                let c: listpipe::api::oauth::Credentials = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("a torn credentials file ({e}): {text:?}"));
                assert!(c.refresh_token.starts_with("refresh-"));
                reads += 1;
            }
            reads
        })
    };
    for i in 1..300 {
        server::write_credentials(&path, &creds(i)).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file is left behind");
}

/// `<folder>/nightly.toml`, a mirror step `people` deleting what left its
/// source, `<folder>/people.csv` holding `emails`, into the group "Shared".
fn shared_nightly(root: &Path, folder: &str, emails: &[String]) -> PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("email\n");
    emails.iter().for_each(|e| csv.push_str(&format!("{e}\n")));
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("nightly.toml");
    std::fs::write(
        &pipeline,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"Shared\"\ncreate_group = true\n\
         mode = \"mirror\"\nremoval = \"delete\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    pipeline
}

/// Every line of the one ledger file under `folder` but its header, sorted.
fn ledger_lines(folder: &Path) -> Vec<String> {
    let files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut lines: Vec<String> = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn plans_and_ledgers_of_two_same_named_pipelines_of_two_folders_stay_apart() {
    let t = TestServer::start().await;
    let root = t.dir.path().to_path_buf();
    let of = |folder: &str| -> Vec<String> {
        (0..10)
            .map(|i| format!("{folder}{i}@example.com"))
            .collect()
    };
    let a = shared_nightly(&root, "a", &of("a"));
    let b = shared_nightly(&root, "b", &of("b"));

    // Dry runs: each plan under its pipeline's path (was
    // `.listpipe/plans/nightly/people.plan.csv`, one file for both).
    for (folder, pipeline) in [("a", &a), ("b", &b)] {
        let (code, report, stderr) = run_here(&t, pipeline, &["--dry-run"]).await;
        assert_eq!(code, 0, "{stderr}");
        let plan_file = format!(".listpipe/plans/{folder}/nightly/people.plan.csv");
        assert_eq!(report["steps"][0]["plan_file"], plan_file.as_str());
        let plan = std::fs::read_to_string(root.join(&plan_file)).unwrap();
        assert_eq!(plan.lines().count(), 11, "{plan}");
        assert!(
            of(folder)
                .iter()
                .all(|e| plan.contains(&format!(",{e},create,"))),
            "{plan}"
        );
    }
    let plan_a = std::fs::read_to_string(root.join(".listpipe/plans/a/nightly/people.plan.csv"));
    assert!(
        !plan_a.unwrap().contains("b0@example.com"),
        "b's plan is its own"
    );

    // Both import into one group of one target. One ledger per pipeline:
    // with one ledger for both, b's mirror step took a's ten for its own
    // and planned to delete them (half the group: refused by the guard).
    for pipeline in [&a, &b] {
        let (code, _, stderr) = run_here(&t, pipeline, &[]).await;
        assert_eq!(code, 0, "{stderr}");
    }
    assert_eq!(t.receivers_of("Shared").await.len(), 20);
    assert_eq!(
        ledger_lines(&root.join(".listpipe/ledger/a/nightly")),
        of("a")
    );
    assert_eq!(
        ledger_lines(&root.join(".listpipe/ledger/b/nightly")),
        of("b")
    );
    assert!(!root.join(".listpipe/ledger/nightly").exists());

    // a0 leaves a's source: a's mirror deletes a0, and nothing of b's.
    let a = shared_nightly(&root, "a", &of("a")[1..]);
    let (code, report, stderr) = run_here(&t, &a, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 1, "{report}");
    let mut held: Vec<String> = t
        .receivers_of("Shared")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    held.sort();
    let mut want: Vec<String> = of("a")[1..].to_vec();
    want.extend(of("b"));
    want.sort();
    assert_eq!(held, want);
    let (code, report, stderr) = run_here(&t, &b, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 0, "{report}");
}
