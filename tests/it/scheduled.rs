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
    let run = |quiet: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_listpipe"));
        cmd.current_dir(dir)
            .args(["run", pipeline.to_str().unwrap(), "--writes", "single"])
            .args(["--concurrency", "1"])
            .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
            .env_remove("LISTPIPE_URL")
            .env_remove("LISTPIPE_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if quiet {
            cmd.arg("--quiet");
        }
        cmd
    };
    let mut first = run(true).spawn().unwrap();
    let pid = first.id();
    // Wait until the first run holds the lock (it writes its description).
    let lock = listpipe::load::lock::path(&pipeline, &t.base_url());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&lock).is_ok_and(|s| s.contains(&format!("process {pid}"))) {
        assert!(
            Instant::now() < deadline,
            "the first run never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run(false).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("another run of"), "{stderr}");
    assert!(stderr.contains(&format!("process {pid} on ")), "{stderr}");
    // The second run wrote nothing and left the first one's journal alone.
    let _ = first.kill();
    let _ = first.wait();
}
