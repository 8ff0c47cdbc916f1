//! Log lines fit for schedulers (issue 41): with standard error in a file
//! (how cron, Airflow and Kubernetes capture it) no colour escapes, never
//! with `NO_COLOR`; `--log-format json` or `LISTPIPE_LOG_FORMAT=json` gives
//! one JSON object a line, with the step, its counts and the cause of a
//! failure as fields; the summary lines stay as they are.

use crate::support::TestServer;
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A pipeline of two steps: "people" imports `n` rows into "Logged", and
/// "nowhere" into a group that does not exist (its step fails).
fn pipeline(dir: &Path, n: usize) -> PathBuf {
    let mut csv = String::from("email\n");
    for i in 0..n {
        csv.push_str(&format!("user{i}@example.com\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("logged.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"Logged\"\n\
         create_group = true\n[import.receiver]\nemail = \"email\"\n\n\
         [[import]]\nname = \"nowhere\"\nsource = \"people.csv\"\ngroup = \"Nowhere\"\n\
         [import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    path
}

/// Runs the pipeline with `args` and `env`, standard error into a file;
/// answers the exit code and what the file holds.
async fn run_logged(t: &TestServer, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let dir = t.dir.path().to_path_buf();
    let p = pipeline(&dir, 20);
    let log = dir.join("stderr.log");
    let mut cmd = crate::support::binary();
    cmd.current_dir(&dir)
        .arg("run")
        .arg(&p)
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .args(args)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .env_remove("LISTPIPE_LOG_FORMAT")
        .env_remove("NO_COLOR")
        .env("LISTPIPE_LOG", "listpipe=debug")
        .envs(env.iter().copied())
        .stderr(File::create(&log).unwrap());
    let status = tokio::task::spawn_blocking(move || cmd.status().unwrap())
        .await
        .unwrap();
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(&log).unwrap(),
    )
}

#[tokio::test]
async fn log_lines_in_a_file_carry_no_colour_escapes_with_or_without_no_color() {
    let t = TestServer::start().await;
    for env in [&[][..], &[("NO_COLOR", "1")][..]] {
        let (code, log) = run_logged(&t, &[], env).await;
        // The second step's group does not exist: that step fails alone.
        assert_eq!(code, 1, "{log}");
        assert!(log.contains(" DEBUG "), "debug lines were asked for: {log}");
        assert!(!log.contains('\u{1b}'), "{env:?}: {log}");
        // The summary lines are as they were.
        assert!(
            log.lines().any(|l| l.starts_with("people: load: ")),
            "{log}"
        );
    }
}

/// The JSON lines of a log; every line that is not a summary line parses.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn event<'a>(lines: &'a [Value], message: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["message"] == message)
        .unwrap_or_else(|| panic!("no \"{message}\" line in {lines:?}"))
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_with_the_step_its_counts_and_the_cause() {
    let t = TestServer::start().await;
    let by_flag = run_logged(&t, &["--log-format", "json"], &[]).await;
    let by_env = run_logged(&t, &[], &[("LISTPIPE_LOG_FORMAT", "json")]).await;
    for (code, log) in [by_flag, by_env] {
        assert_eq!(code, 1, "{log}");
        assert!(!log.contains('\u{1b}'), "{log}");
        let lines = json_lines(&log);
        assert!(
            lines
                .iter()
                .all(|l| l["level"].is_string() && l["timestamp"].is_string())
        );
        let done = event(&lines, "step finished");
        assert_eq!(done["step"], "people", "{done}");
        assert_eq!(done["kind"], "import", "{done}");
        assert_eq!(done["rows_read"], 20, "{done}");
        assert_eq!(done["level"], "INFO", "{done}");
        let failed = event(&lines, "step stopped");
        assert_eq!(failed["step"], "nowhere", "{failed}");
        assert_eq!(failed["level"], "ERROR", "{failed}");
        assert!(
            failed["cause"]
                .as_str()
                .is_some_and(|c| c.contains("Nowhere")),
            "{failed}"
        );
        // Lines logged while a step runs name it.
        assert!(
            lines.iter().any(|l| l["span"]["step"] == "people"),
            "{lines:?}"
        );
        // Every other line is a summary line, as it was.
        let text: Vec<&str> = log.lines().filter(|l| !l.starts_with('{')).collect();
        assert!(
            text.iter().any(|l| l.starts_with("people: load: ")),
            "{log}"
        );
        assert!(text.iter().all(|l| !l.contains(" DEBUG ")), "{log}");
    }
}

#[tokio::test]
async fn a_log_filter_that_does_not_parse_is_a_usage_error() {
    let t = TestServer::start().await;
    let (code, log) = run_logged(&t, &[], &[("LISTPIPE_LOG", "listpipe=loudest")]).await;
    assert_eq!(code, 2, "{log}");
    assert!(
        log.starts_with(
            "listpipe: error: LISTPIPE_LOG=\"listpipe=loudest\" is not a log filter (e.g. \"listpipe=debug\" or \"info\")"
        ),
        "{log}"
    );
}
