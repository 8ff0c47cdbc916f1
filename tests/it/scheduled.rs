//! Scheduled runs: the run lock, and mirror mode with its removal guard.

use crate::in_process::run_here;
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
        let mut cmd = crate::support::binary();
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
    let (code, _, stderr) = run_here(&t, &mirror_pipeline(&t, &all, ""), &[]).await;
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
    let (code, report, stderr) = run_here(&t, &path, &["--dry-run"]).await;
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

    let (code, report, stderr) = run_here(&t, &path, &[]).await;
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
    let (_, report, _) = run_here(&t, &path, &[]).await;
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
        run_here(&t, &mirror_pipeline(&t, &all, "removal = \"delete\""), &[]).await;
    assert_eq!(code, 0, "{stderr}");

    // A truncated source: 20 of 50 rows, and one new address.
    let mut short: Vec<String> = all[..20].to_vec();
    short.push("new@example.com".into());
    let path = mirror_pipeline(&t, &short, "removal = \"delete\"");
    let (code, _, stderr) = run_here(&t, &path, &[]).await;
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
    let (code, report, stderr) = run_here(&t, &path, &["--allow-mass-removal"]).await;
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
    let (code, report, stderr) = run_here(&t, &path, &[]).await;
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
    let (code, _, stderr) = run_here(&t, &plain, &[]).await;
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
    let (code, _, stderr) = run_here(&t, &plain, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let mut text = std::fs::read_to_string(ledger_file(&t)).unwrap();
    assert_eq!(text.lines().count(), 1 + 10 + 2, "{text}");
    // A crash cut the next append mid-line.
    text.push_str("m1");
    std::fs::write(ledger_file(&t), &text).unwrap();

    // Mirror mode reads it: the cut line is ignored, the repeats are one.
    let mirror = mirror_pipeline(&t, &all[1..], "");
    let (code, report, stderr) = run_here(&t, &mirror, &[]).await;
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

/// A command running its arguments as the unprivileged user `nobody`
/// (`runuser`, util-linux), for the run lock shared by every user. These
/// tests need root and `runuser`; without them they fail saying so (CI
/// runs as root: `.ci/run`), unless `LISTPIPE_SKIP_MULTIUSER=1` skips them.
fn as_nobody() -> Option<Command> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let runuser = root
        && Command::new("runuser")
            .args(["-u", "nobody", "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    let missing = match (root, runuser) {
        (true, true) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "nobody", "--"]);
            return Some(cmd);
        }
        (false, _) => "the tests do not run as root",
        (true, false) => "`runuser -u nobody` is missing or refused",
    };
    assert!(
        std::env::var("LISTPIPE_SKIP_MULTIUSER").as_deref() == Ok("1"),
        "{missing}: this test runs listpipe as root and as the user `nobody`; run it as root \
         with util-linux's runuser, or set LISTPIPE_SKIP_MULTIUSER=1 to skip it"
    );
    eprintln!("skipped: {missing} (LISTPIPE_SKIP_MULTIUSER=1)");
    None
}

/// Folders two users can run in: `tmp`, their `TMPDIR` (sticky, like
/// `/tmp`), and a working folder each, `root` and `nobody`, holding
/// `pipeline` (a pipeline writing group "News" from `people.csv`, of `rows`
/// rows named by the folder).
fn two_users(pipeline: &str, rows: usize) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    mode(top.path(), 0o755);
    for (name, m) in [("tmp", 0o1777), ("root", 0o755), ("nobody", 0o777)] {
        let dir = top.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        mode(&dir, m);
        let mut csv = String::from("email\n");
        (0..rows).for_each(|i| csv.push_str(&format!("{name}{i}@example.com\n")));
        std::fs::write(dir.join("people.csv"), csv).unwrap();
        std::fs::write(
            dir.join(pipeline),
            "[[import]]\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
        )
        .unwrap();
    }
    top
}

/// `listpipe run PIPELINE` in `top`'s folder `user`, as that user.
fn run_as(t: &TestServer, top: &std::path::Path, user: &str, pipeline: &str) -> Option<Command> {
    let mut cmd = if user == "root" {
        crate::support::binary()
    } else {
        let mut cmd = as_nobody()?;
        cmd.arg(crate::support::BINARY);
        cmd
    };
    cmd.current_dir(top.join(user))
        .args(["run", pipeline, "--quiet", "--writes", "single"])
        .args(["--concurrency", "1"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .env("TMPDIR", top.join("tmp"))
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    Some(cmd)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lock_folder_is_shared_by_every_user_of_the_machine() {
    use std::os::unix::fs::PermissionsExt;
    if as_nobody().is_none() {
        return;
    }
    let t = TestServer::start().await;
    let top = two_users("nightly.toml", 3);
    let top = top.path();
    // The folder as an earlier version left it: the first user's, 0755.
    let locks = top.join("tmp/listpipe-locks");
    std::fs::create_dir(&locks).unwrap();
    std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |user: &str| {
        let out = run_as(&t, top, user, "nightly.toml")
            .unwrap()
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Another user cannot create a lock file in it: the message says what to do.
    let (code, stderr) = run("nobody");
    assert_eq!(code, Some(74), "{stderr}");
    let shown = locks.display();
    assert!(
        stderr.starts_with(&format!(
            "listpipe: the lock folder {shown} is not writable by this user: `chmod 1777 {shown}` or set TMPDIR to a folder of your own"
        )),
        "{stderr}"
    );
    // Its owner's run makes it shared; then either user's run takes the lock.
    for user in ["root", "nobody", "root", "nobody"] {
        let (code, stderr) = run(user);
        assert_eq!(code, Some(0), "{user}: {stderr}");
        let mode = std::fs::metadata(&locks).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o1777, "{user}");
    }
    let emails: std::collections::BTreeSet<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    assert_eq!(emails.len(), 6, "{emails:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_users_run_waits_for_the_lock_a_run_as_root_holds() {
    if as_nobody().is_none() {
        return;
    }
    // Every request waits, so the first run is still going when the second starts.
    let t = TestServer::start_with(|o| {
        o.faults = Some("delay=300ms@1".parse().unwrap());
    })
    .await;
    let two = two_users("nightly.toml", 40);
    let top = two.path();
    // The other user's pipeline is another file, `nobody/nightly.toml` (a
    // run of the same one is refused, exit 4), of one row.
    std::fs::write(
        top.join("nobody/people.csv"),
        "email\nnobody0@example.com\n",
    )
    .unwrap();
    let mut first = run_as(&t, top, "root", "nightly.toml")
        .unwrap()
        .spawn()
        .unwrap();
    let journal = || crate::support::journal_of_step(&top.join("root"), "nightly", "import-1");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(journal()).is_ok_and(|s| s.contains("\"ev\":\"done\"")) {
        assert!(Instant::now() < deadline, "the first run never wrote a row");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut second = run_as(&t, top, "nobody", "nightly.toml")
        .unwrap()
        .spawn()
        .unwrap();
    // Its stderr, line by line, as it comes.
    let (tx, lines) = std::sync::mpsc::channel();
    let stderr = second.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let waiting = lines
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("no line from the other user's run: {:?}", second.try_wait()));
    assert!(
        waiting.starts_with(
            "listpipe: waiting for another run writing group \"News\" of http://localhost:"
        ),
        "{waiting}"
    );
    assert!(
        waiting.contains(&format!("pid {} since ", first.id())),
        "{waiting}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(second.try_wait().unwrap().is_none(), "it did not wait");
    // The first run ends (killed): the other user's takes the lock and finishes.
    first.kill().unwrap();
    first.wait().unwrap();
    let status = second.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = lines.try_iter().collect();
    assert_eq!(status.code(), Some(0), "{rest:?}");
    assert!(
        t.receivers_of("News")
            .await
            .iter()
            .any(|r| r.email == "nobody0@example.com")
    );
}
