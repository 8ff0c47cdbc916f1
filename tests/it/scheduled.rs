//! Scheduled runs: the run lock, and mirror mode with its removal guard.

use crate::support::TestServer;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_second_run_of_the_same_pipeline_against_the_same_target_is_refused() {
    // Every request waits, so the first run is still going when the second starts.
    let t = TestServer::start_with(|o| {
        o.faults = Some("delay=300ms@1".parse().unwrap());
    })
    .await;
    let dir = t.dir.path();
    let mut csv = String::from("email\n");
    (0..40).for_each(|i| csv.push_str(&format!("p{i}@example.com\n")));
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let pipeline = dir.join("nightly.toml");
    std::fs::write(
        &pipeline,
        "[[import]]\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    // The second run spells the target another way: the same server.
    let localhost = t.base_url().replace("127.0.0.1", "localhost");
    let run = |url: &str, quiet: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_listpipe"));
        cmd.current_dir(dir)
            .args(["run", pipeline.to_str().unwrap(), "--writes", "single"])
            .args(["--concurrency", "1"])
            .args(["--target-url", url, "--token", &t.client.token()])
            .env_remove("LISTPIPE_URL")
            .env_remove("LISTPIPE_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if quiet {
            cmd.arg("--quiet");
        }
        cmd
    };
    let mut first = run(&t.base_url(), true).spawn().unwrap();
    let pid = first.id();
    // The first run holds the lock once its journal has a confirmed row.
    // (Named by the target and group since issue 41: was `import-1.jsonl`.)
    let journal = || crate::support::journal_of_step(dir, "nightly", "import-1");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(journal()).is_ok_and(|s| s.contains("\"ev\":\"done\"")) {
        assert!(Instant::now() < deadline, "the first run never wrote a row");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run(&localhost, false).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "listpipe: another run is in progress: pid {pid} since "
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("it writes group \"News\" of http://localhost:"),
        "{stderr}"
    );
    // The second run wrote nothing and left the first one's journal alone.
    assert!(!stderr.contains("did not finish"), "{stderr}");
    let _ = first.kill();
    let _ = first.wait();
}

/// A source of `emails`, and a mirror pipeline over it (`extra` lines added to the step).
fn mirror_pipeline(t: &TestServer, emails: &[String], extra: &str) -> std::path::PathBuf {
    let dir = t.dir.path();
    let mut csv = String::from("email,signup\n");
    emails
        .iter()
        .for_each(|e| csv.push_str(&format!("{e},2024-05-01\n")));
    std::fs::write(dir.join("members.csv"), csv).unwrap();
    let path = dir.join("members.toml");
    std::fs::write(
        &path,
        format!(
            "[[import]]\nname = \"members\"\nsource = \"members.csv\"\ngroup = \"Members\"\ncreate_group = true\nmode = \"mirror\"\n{extra}\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\nactivated = \"signup\"\n"
        ),
    )
    .unwrap();
    path
}

fn members(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("m{i}@example.com")).collect()
}

/// Receivers of group "Members" by email: deactivated timestamp.
async fn states(t: &TestServer) -> std::collections::BTreeMap<String, i64> {
    t.receivers_of("Members")
        .await
        .into_iter()
        .map(|r| (r.email, r.deactivated))
        .collect()
}

#[tokio::test]
async fn mirror_mode_deactivates_exactly_what_left_the_source_and_never_a_hand_added_receiver() {
    let t = TestServer::start().await;
    let all = members(40);
    let (code, _, stderr) = crate::import::run(&t, &mirror_pipeline(&t, &all, ""), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    // Someone adds a receiver by hand; listpipe never imported it.
    let g = t.group_named("Members").await;
    t.client
        .create_receiver(
            g.id,
            &listpipe::api::ReceiverInput::email("hand@example.com"),
        )
        .await
        .unwrap();

    // Three members left the source: a dry run lists them, changes nothing.
    let kept: Vec<String> = all[3..].to_vec();
    let path = mirror_pipeline(&t, &kept, "");
    let (code, report, stderr) = crate::import::run(&t, &path, &["--dry-run"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 3);
    let plan = std::fs::read_to_string(
        t.dir
            .path()
            .join(report["steps"][0]["plan_file"].as_str().unwrap()),
    )
    .unwrap();
    for e in &all[..3] {
        assert!(
            plan.contains(&format!("0,{e},remove,\"deactivate:")),
            "{plan}"
        );
    }
    assert!(states(&t).await.values().all(|d| *d == 0));

    let (code, report, stderr) = crate::import::run(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(import["removed"], 3, "{import}");
    assert_eq!(import["unchanged"], 37, "{import}");
    let now = states(&t).await;
    for (email, deactivated) in &now {
        let gone = all[..3].contains(email);
        assert_eq!(*deactivated > 0, gone, "{email}: {deactivated}");
    }
    assert_eq!(now["hand@example.com"], 0, "not listpipe's to remove");

    // Again: nothing left to remove, nothing written.
    let (_, report, _) = crate::import::run(&t, &path, &[]).await;
    let import = &report["steps"][0]["import"];
    assert_eq!(
        (
            import["removed"].as_u64(),
            import["write_requests"].as_u64()
        ),
        (Some(0), Some(0)),
        "{import}"
    );
}

#[tokio::test]
async fn the_guard_refuses_mass_removal_before_writing_anything_unless_allowed() {
    let t = TestServer::start().await;
    let all = members(50);
    let (code, _, stderr) =
        crate::import::run(&t, &mirror_pipeline(&t, &all, "removal = \"delete\""), &[]).await;
    assert_eq!(code, 0, "{stderr}");

    // A truncated source: 20 of 50 rows, and one new address.
    let mut short: Vec<String> = all[..20].to_vec();
    short.push("new@example.com".into());
    let path = mirror_pipeline(&t, &short, "removal = \"delete\"");
    let (code, _, stderr) = crate::import::run(&t, &path, &[]).await;
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains(
            "would delete 30 of the group's 50 receivers (60.0%), more than the limit of 10% (5)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-mass-removal"), "{stderr}");
    let now = states(&t).await;
    assert_eq!(now.len(), 50, "nothing removed, nothing added");

    // Meant: allowed, exactly the missing 30 go and the new one arrives.
    let (code, report, stderr) = crate::import::run(&t, &path, &["--allow-mass-removal"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 30);
    let now: Vec<String> = states(&t).await.into_keys().collect();
    let mut want = short.clone();
    want.sort();
    assert_eq!(now, want);

    // A higher limit in the file lets the next shrink through.
    let path = mirror_pipeline(
        &t,
        &short[..15],
        "removal = \"delete\"\nmax_removal = \"50%\"",
    );
    let (code, report, stderr) = crate::import::run(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 6);
}

#[test]
fn mirror_mode_knows_its_receivers_on_the_built_in_target_whatever_port_it_gets() {
    let dir = tempfile::tempdir().unwrap();
    let write = |emails: &[String]| {
        let mut csv = String::from("email\n");
        emails.iter().for_each(|e| csv.push_str(&format!("{e}\n")));
        std::fs::write(dir.path().join("m.csv"), csv).unwrap();
    };
    std::fs::write(
        dir.path().join("m.toml"),
        "[target]\nurl = \"builtin\"\n[[import]]\nsource = \"m.csv\"\ngroup = \"M\"\ncreate_group = true\nmode = \"mirror\"\nmax_removal = \"50%\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let all = members(10);
    write(&all);
    let first = crate::import::listpipe(dir.path(), &["run", "m.toml", "--quiet"]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    write(&all[2..]);
    let report = dir.path().join("r.json");
    let second = crate::import::listpipe(
        dir.path(),
        &[
            "run",
            "m.toml",
            "--quiet",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["steps"][0]["import"]["removed"], 2, "{json}");
}

/// Rewrites `members.csv` with `emails`, each signed up on `signup(i)`.
fn members_csv(t: &TestServer, emails: &[String], signup: impl Fn(usize) -> &'static str) {
    let mut csv = String::from("email,signup\n");
    for (i, e) in emails.iter().enumerate() {
        csv.push_str(&format!("{e},{}\n", signup(i)));
    }
    std::fs::write(t.dir.path().join("members.csv"), csv).unwrap();
}

#[tokio::test]
async fn a_group_spilled_to_disk_is_diffed_and_mirrored_as_one_held_in_memory() {
    let t = TestServer::start().await;
    let tmp = t.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // One receiver in memory at most: every re-import reads the group into
    // the spill, in a TMPDIR of the test's own.
    let env = [
        ("LISTPIPE_SPILL_AFTER", "1"),
        ("LISTPIPE_LOG", "listpipe=info,listpipe::load::held=debug"),
        ("TMPDIR", tmp.to_str().unwrap()),
    ];
    let spilled = "target index spilled to disk";
    let all = members(40);
    let path = mirror_pipeline(&t, &all, "");
    let (code, report, stderr) = crate::import::run_with(&t, &path, &[], &env).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 40);
    assert!(!stderr.contains(spilled), "an empty group: {stderr}");

    let (code, report, stderr) = crate::import::run_with(&t, &path, &[], &env).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(
        (
            import["unchanged"].as_u64(),
            import["write_requests"].as_u64()
        ),
        (Some(40), Some(0)),
        "{import}"
    );
    assert!(stderr.contains(spilled), "{stderr}");

    // Three left the source, two signed up again later.
    let kept = all[3..].to_vec();
    let path = mirror_pipeline(&t, &kept, "");
    members_csv(
        &t,
        &kept,
        |i| if i < 2 { "2024-06-01" } else { "2024-05-01" },
    );
    let (code, report, stderr) = crate::import::run_with(&t, &path, &["--dry-run"], &env).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(
        (import["removed"].as_u64(), import["updated"].as_u64()),
        (Some(3), Some(2)),
        "{import}"
    );
    let (code, report, stderr) = crate::import::run_with(&t, &path, &[], &env).await;
    assert_eq!(code, 0, "{stderr}");
    let import = &report["steps"][0]["import"];
    let counts = ["removed", "updated", "unchanged", "created"].map(|k| import[k].as_u64());
    assert_eq!(counts, [Some(3), Some(2), Some(35), Some(0)], "{import}");
    let now = states(&t).await;
    for (email, deactivated) in &now {
        assert_eq!(*deactivated > 0, all[..3].contains(email), "{email}");
    }

    // The guard counts the spilled group: 9 of 40 is more than 10%.
    let path = mirror_pipeline(&t, &all[12..], "");
    let (code, _, stderr) = crate::import::run_with(&t, &path, &[], &env).await;
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains("would deactivate 9 of the group's 40 receivers (22.5%)"),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("listpipe-spill"))
        .collect();
    assert!(left.is_empty(), "the spill files are removed: {left:?}");
}

/// The one ledger file of the "members" step.
fn ledger_file(t: &TestServer) -> std::path::PathBuf {
    let dir = t.dir.path().join(".listpipe/ledger/members");
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[tokio::test]
async fn a_plain_import_appends_to_the_ledger_and_mirror_mode_reads_past_a_cut_line_and_repeats() {
    let t = TestServer::start().await;
    let header = "# Receivers listpipe imported into this group (mirror mode removes only these).";
    let all = members(10);
    // The same pipeline (the ledger's name) in plain import mode.
    let plain = mirror_pipeline(&t, &all, "");
    let toml = std::fs::read_to_string(&plain).unwrap();
    std::fs::write(&plain, toml.replace("mode = \"mirror\"\n", "")).unwrap();
    let (code, _, stderr) = crate::import::run(&t, &plain, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(ledger_file(&t)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.remove(0), header);
    lines.sort();
    assert_eq!(lines, all.iter().map(String::as_str).collect::<Vec<_>>());

    // Two rows change: they are appended again (a repeat), unread.
    members_csv(
        &t,
        &all,
        |i| if i < 2 { "2024-06-01" } else { "2024-05-01" },
    );
    let (code, _, stderr) = crate::import::run(&t, &plain, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let mut text = std::fs::read_to_string(ledger_file(&t)).unwrap();
    assert_eq!(text.lines().count(), 1 + 10 + 2, "{text}");
    // A crash cut the next append mid-line.
    text.push_str("m1");
    std::fs::write(ledger_file(&t), &text).unwrap();

    // Mirror mode reads it: the cut line is ignored, the repeats are one.
    let mirror = mirror_pipeline(&t, &all[1..], "");
    let (code, report, stderr) = crate::import::run(&t, &mirror, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["removed"], 1);
    // Rewritten compacted, streamed: each address once, in the order the
    // file first held it (the deactivated one too).
    let text = std::fs::read_to_string(ledger_file(&t)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.remove(0), header);
    lines.sort();
    assert_eq!(
        lines,
        all.iter().map(String::as_str).collect::<Vec<_>>(),
        "rewritten compacted"
    );
}
