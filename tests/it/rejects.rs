//! Rejects files and dry-run plans are written as rows fail, chunk by
//! chunk, not built in memory: a source of several chunks whose every row
//! is rejected (the usual wrong column mapping) writes every row, in order,
//! with its row number; a dry run's plan lists every row in row order.

use crate::import::run_with;
use crate::in_process::run_here;
use crate::support::TestServer;

/// Rows in a chunk for these runs (the child's `LISTPIPE_CHUNK_ROWS`; the
/// default is 65,536): a few thousand rows then cross several chunks.
const CHUNK: [(&str, &str); 1] = [("LISTPIPE_CHUNK_ROWS", "1000")];

/// Five chunks of [`CHUNK`]'s 1,000 rows, the last one partial.
const ROWS: usize = 4_500;

fn write_pipeline(dir: &std::path::Path, csv: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("wide.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n[import.global_attributes]\nfirstname = \"name\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn a_source_whose_every_row_is_rejected_writes_every_row_to_the_rejects_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut csv = String::from("email,name\n");
    for i in 0..ROWS {
        csv.push_str(&format!("not-an-address-{i},N{i}\n"));
    }
    let path = write_pipeline(dir, &csv);
    let (code, report, stderr) = run_with(&t, &path, &[], &CHUNK).await;
    assert_eq!(code, 1, "rows were rejected\n{stderr}");
    let step = &report["steps"][0];
    assert_eq!(step["prepare"]["rows_read"], ROWS);
    assert_eq!(step["prepare"]["rejected"]["invalid email"], ROWS);
    let rejects =
        std::fs::read_to_string(dir.join(".listpipe/rejects/wide/people.rejects.csv")).unwrap();
    let mut lines = rejects.lines();
    assert_eq!(lines.next(), Some("email,name,row_number,field,reason"));
    let mut n = 0;
    for (i, line) in lines.enumerate() {
        assert_eq!(
            line,
            format!(
                "not-an-address-{i},N{i},{},email,\"\"\"not-an-address-{i}\"\" is not a valid email address: no @\"",
                i + 2
            )
        );
        n += 1;
    }
    assert_eq!(n, ROWS, "every row, once");
    let left: Vec<_> = std::fs::read_dir(dir.join(".listpipe/rejects/wide"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["people.rejects.csv"], "no temporary file is left");

    // Fixed, the source rejects nothing: the old rejects file goes.
    let path = write_pipeline(dir, "email,name\na@example.com,Ann\n");
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNK).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !dir.join(".listpipe/rejects/wide/people.rejects.csv")
            .exists()
    );
}

#[tokio::test]
async fn a_dry_run_plan_of_several_chunks_lists_every_row_in_row_order() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    // Every third row invalid, and the last rows repeat the first ones'
    // addresses (duplicates chunks apart): three chunks of [`CHUNK`]'s rows.
    let mut csv = String::from("email,name\n");
    let rows: usize = 2_500;
    for i in 0..rows {
        match i {
            _ if i.is_multiple_of(3) => csv.push_str(&format!("bad-{i},N{i}\n")),
            _ if i >= rows - 100 => {
                csv.push_str(&format!("user{}@example.com,N{i}\n", i - (rows - 100)))
            }
            _ => csv.push_str(&format!("user{i}@example.com,N{i}\n")),
        }
    }
    let path = write_pipeline(dir, &csv);
    let (code, report, stderr) = run_with(&t, &path, &["--dry-run"], &CHUNK).await;
    assert_eq!(code, 1, "rows were rejected\n{stderr}");
    let plan = std::fs::read_to_string(dir.join(report["steps"][0]["plan_file"].as_str().unwrap()))
        .unwrap();
    let mut lines = plan.lines();
    assert_eq!(lines.next(), Some("row_number,email,action,detail"));
    let mut actions = std::collections::BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let (row, rest) = line.split_once(',').unwrap();
        assert_eq!(row, (i + 2).to_string(), "{line}");
        let action = rest.split(',').nth(1).unwrap();
        *actions.entry(action.to_string()).or_insert(0) += 1;
        if i.is_multiple_of(3) {
            assert_eq!(
                rest,
                format!(",invalid,\"email: \"\"bad-{i}\"\" is not a valid email address: no @\""),
            );
        }
    }
    let invalid = rows.div_ceil(3);
    let duplicates = (rows - 100..rows)
        .filter(|i| !i.is_multiple_of(3) && !(i - (rows - 100)).is_multiple_of(3))
        .count();
    assert_eq!(
        actions,
        [
            ("create".to_string(), rows - invalid - duplicates),
            ("duplicate".into(), duplicates),
            ("invalid".into(), invalid),
        ]
        .into_iter()
        .collect()
    );
}

/// A rejects file that cannot be written stops the run with exit 74, and
/// the message names the file once (it read `cannot write F: cannot write
/// F: …`). Its folder is a regular file, so that the write fails as root too.
#[tokio::test]
async fn a_rejects_file_that_cannot_be_written_is_named_once() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("people.csv"),
        "email\nnot-an-address\nok@example.com\n",
    )
    .unwrap();
    std::fs::write(dir.join("somefile.txt"), "").unwrap();
    let path = dir.join("blocked.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n\
         rejects = \"somefile.txt/rejects.csv\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &path, &["--quiet"]).await;
    assert_eq!(code, 74, "{stderr}");
    let named = "somefile.txt/rejects.csv";
    let line = stderr
        .lines()
        .find(|l| l.starts_with("listpipe: people: cannot write "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    assert_eq!(line.matches(named).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("cannot write").count(), 1, "{stderr}");
    let step = &report["steps"][0];
    let error = step["error"].as_str().unwrap_or_default();
    assert_eq!(error.matches(named).count(), 1, "{report}");
    // The receiver was written before the rejects file failed: the report
    // says so, with the source's totals and the timings.
    assert_eq!(step["import"]["created"], 1, "{report}");
    assert_eq!(step["prepare"]["rows_read"], 2, "{report}");
    assert_eq!(step["prepare"]["rejected"]["invalid email"], 1, "{report}");
    assert!(step["timings_ms"]["load"].as_u64() > Some(0), "{report}");
}

/// A run killed with `kill -9` leaves the rejects file's temporary beside
/// it (written as rows fail); the next run removes it and says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_removes_the_temporary_rejects_file_a_killed_run_left() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    // Every request waits, so the run is still loading when it is killed.
    let t = TestServer::start_with(|o| {
        o.faults = Some("delay=100ms@1".parse().unwrap());
    })
    .await;
    let dir = t.dir.path();
    let mut csv = String::from("email,name\nnot-an-address,N\n");
    (0..200).for_each(|i| csv.push_str(&format!("k{i}@example.com,N{i}\n")));
    let path = write_pipeline(dir, &csv);
    let folder = dir.join(".listpipe/rejects/wide");
    let temps = || -> Vec<String> {
        std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".people.rejects.csv.") && n.ends_with(".tmp"))
            .collect()
    };
    let mut child = crate::support::binary()
        .current_dir(dir)
        .args([
            "run",
            path.to_str().unwrap(),
            "--quiet",
            "--writes",
            "single",
        ])
        .args(["--concurrency", "1"])
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while temps().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the run never started its rejects file"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = temps();
    assert_eq!(left.len(), 1, "{left:?}");
    // Continued, it removes what the killed run left.
    let (code, _, stderr) = run_with(&t, &path, &["--resume", "--concurrency", "8"], &[]).await;
    assert_eq!(code, 1, "one row rejected\n{stderr}");
    assert!(
        stderr.contains(
            "listpipe: note: removed 1 temporary file left by an earlier run beside .listpipe/rejects/wide/people.rejects.csv\n"
        ),
        "{stderr}"
    );
    assert!(temps().is_empty(), "{:?}", temps());
    assert!(folder.join("people.rejects.csv").exists());
}
