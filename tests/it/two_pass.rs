//! Sources read twice in small chunks (`dedupe = "last"` and `"merge"`,
//! mirror mode, `fill_down`) run as the same sources read whole: the same plan, counts, rejects, writes
//! and removals, and mirror mode's guard still refuses before any write.

use crate::import::run_with;
use crate::support::TestServer;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The source read as one chunk (the budget's rows: all of them).
pub(crate) const WHOLE: [(&str, &str); 1] = [("LISTPIPE_CHUNK_ROWS", "18446744073709551615")];
/// Chunks of 4 rows, one key in memory: every set and map on disk.
pub(crate) const CHUNKED: [(&str, &str); 2] =
    [("LISTPIPE_CHUNK_ROWS", "4"), ("LISTPIPE_SPILL_AFTER", "1")];

/// A file of the step's output named in the report, as text.
pub(crate) fn file_of(t: &TestServer, report: &Value, key: &str) -> String {
    let path = report["steps"][0][key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}: {report}"));
    std::fs::read_to_string(t.dir.path().join(path)).unwrap()
}

/// What the report says the step read and did (not how: the requests
/// depend on the chunks).
pub(crate) fn counts(report: &Value) -> (Value, Value) {
    let step = &report["steps"][0];
    let import = &step["import"];
    let did = [
        "created",
        "updated",
        "unchanged",
        "removed",
        "failed",
        "not_started",
    ]
    .map(|k| (k.to_string(), import[k].clone()));
    (
        step["prepare"].clone(),
        Value::Object(did.into_iter().collect()),
    )
}

/// Dry runs of the pipeline at `path`, whole and in chunks, both exiting
/// 1 (some rows rejected), with the same plan, rejects and counts; answers
/// the chunked run's report and the plan.
pub(crate) async fn dry_runs_agree(t: &TestServer, path: &Path) -> (Value, String) {
    let (code, whole, stderr) = run_with(t, path, &["--dry-run"], &WHOLE).await;
    assert_eq!(code, 1, "rejected rows: {stderr}");
    let (code, chunked, stderr) = run_with(t, path, &["--dry-run"], &CHUNKED).await;
    assert_eq!(code, 1, "{stderr}");
    let plan = file_of(t, &whole, "plan_file");
    assert_eq!(file_of(t, &chunked, "plan_file"), plan);
    assert_eq!(
        file_of(t, &chunked, "rejects_file"),
        file_of(t, &whole, "rejects_file")
    );
    assert_eq!(counts(&chunked), counts(&whole));
    (chunked, plan)
}

fn city_by_email(receivers: Vec<listpipe::api::Receiver>) -> BTreeMap<String, String> {
    receivers
        .into_iter()
        .map(|r| {
            (
                r.email,
                r.attributes.get("city").cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// 30 rows of 8 addresses, each address's rows chunks apart, its city the
/// row's; rows 7 and 29 of the data (lines 9 and 31) with a date that
/// cannot be read.
fn last_source(dir: &Path) -> PathBuf {
    let mut csv = String::from("email,city,signup\n");
    for i in 0..30 {
        let signup = if i == 7 || i == 29 {
            "never"
        } else {
            "2024-05-01"
        };
        csv.push_str(&format!("p{}@example.com,City{i},{signup}\n", i % 8));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("people.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\ndedupe = \"last\"\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\n[import.attributes]\ncity = \"city\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn dedupe_last_read_twice_in_chunks_plans_and_imports_what_a_whole_read_does() {
    let t = TestServer::start().await;
    let path = last_source(t.dir.path());
    let (chunked, whole_plan) = dry_runs_agree(&t, &path).await;
    // 8 addresses kept, 20 duplicates, 2 rejected: p7's last row is on
    // line 25; p5's, on line 31, was rejected: its row on line 23 is kept.
    assert_eq!(chunked["steps"][0]["prepare"]["duplicates"], 20);
    for line in [
        "\n25,p7@example.com,create",
        "\n23,p5@example.com,create",
        "\n15,p5@example.com,duplicate",
        "\n31,,invalid,\"registered: ",
    ] {
        assert!(whole_plan.contains(line), "{line}: {whole_plan}");
    }

    // Written in chunks: each receiver holds its last valid row's city.
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNKED).await;
    assert_eq!(code, 1, "{stderr}");
    let cities = city_by_email(t.receivers_of("People").await);
    let mut want: BTreeMap<String, String> = (22..29)
        .map(|i| (format!("p{}@example.com", i % 8), format!("City{i}")))
        .collect();
    want.insert("p5@example.com".into(), "City21".into());
    assert_eq!(cities, want);
}

/// 30 rows of 8 addresses, each address's rows chunks apart: address n's
/// city only on its (n % 4)-th row, its name from its (n % 3)-th row on;
/// rows 7 and 29 of the data (lines 9 and 31) with a date that cannot be
/// read.
fn merge_source(dir: &Path) -> PathBuf {
    let mut csv = String::from("email,name,city,signup\n");
    for i in 0..30 {
        let (n, k) = (i % 8, i / 8);
        let name = if k >= n % 3 {
            format!("N{i}")
        } else {
            String::new()
        };
        let city = if k == n % 4 {
            format!("City{i}")
        } else {
            String::new()
        };
        let signup = if i == 7 || i == 29 {
            "never"
        } else {
            "2024-05-01"
        };
        csv.push_str(&format!("p{n}@example.com,{name},{city},{signup}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("people.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\ndedupe = \"merge\"\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\n[import.attributes]\nname = \"name\"\ncity = \"city\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn dedupe_merge_read_twice_in_chunks_plans_and_imports_what_a_whole_read_does() {
    let t = TestServer::start().await;
    let path = merge_source(t.dir.path());
    let (chunked, whole_plan) = dry_runs_agree(&t, &path).await;
    // 8 addresses kept, each at its first valid row, 20 duplicates, 2
    // rejected: p7's first row, on line 9, was rejected: line 17 is kept.
    assert_eq!(chunked["steps"][0]["prepare"]["duplicates"], 20);
    for line in [
        "\n2,p0@example.com,create",
        "\n17,p7@example.com,create",
        "\n10,p0@example.com,duplicate",
        "\n31,,invalid,\"registered: ",
    ] {
        assert!(whole_plan.contains(line), "{line}: {whole_plan}");
    }

    // Written in chunks: each receiver holds its first name and city,
    // wherever they came, but none of a rejected row (p5's line 31).
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNKED).await;
    assert_eq!(code, 1, "{stderr}");
    let held: BTreeMap<String, (String, String)> = t
        .receivers_of("People")
        .await
        .into_iter()
        .map(|r| {
            let value = |k: &str| r.attributes.get(k).cloned().unwrap_or_default();
            (r.email.clone(), (value("name"), value("city")))
        })
        .collect();
    let want: BTreeMap<String, (String, String)> = [
        (0, "N0", "City0"),
        (1, "N9", "City9"),
        (2, "N18", "City18"),
        (3, "N3", "City27"),
        (4, "N12", "City4"),
        (5, "N21", "City13"),
        (6, "N6", "City22"),
        (7, "N15", ""),
    ]
    .into_iter()
    .map(|(n, name, city)| (format!("p{n}@example.com"), (name.into(), city.into())))
    .collect();
    assert_eq!(held, want);
}

/// 24 order lines of 6 orders, each order's lines chunks apart: order k's
/// address only on its (k % 4)-th line, its city only on its last; order
/// 5's address broken (its lines rejected).
fn fill_source(dir: &Path) -> PathBuf {
    let mut csv = String::from(
        "Name,Email,City,Lineitem
",
    );
    for i in 0..24 {
        let (k, line) = (i % 6, i / 6);
        let email = match (k, line == k % 4) {
            (5, true) => "broken".to_string(),
            (_, true) => format!("buyer{k}@example.com"),
            _ => String::new(),
        };
        let city = if line == 3 {
            format!("City{k}")
        } else {
            String::new()
        };
        csv.push_str(&format!("#{k},{email},{city},L{i}\n"));
    }
    std::fs::write(dir.join("orders.csv"), csv).unwrap();
    let path = dir.join("orders.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"buyers\"\nsource = \"orders.csv\"\ngroup = \"Buyers\"\ncreate_group = true\nfill_down = { within = \"Name\", columns = [\"Email\", \"City\"] }\n[import.receiver]\nemail = \"Email\"\n[import.attributes]\ncity = \"City\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn fill_down_read_in_chunks_plans_and_imports_what_a_whole_read_does() {
    let t = TestServer::start().await;
    let path = fill_source(t.dir.path());
    let (chunked, whole_plan) = dry_runs_agree(&t, &path).await;
    // 5 buyers, each at its order's first line, 15 duplicates; order 5's
    // 4 lines rejected showing the address and city filled in.
    assert_eq!(chunked["steps"][0]["prepare"]["duplicates"], 15);
    assert!(
        whole_plan.contains("\n4,buyer2@example.com,create"),
        "{whole_plan}"
    );
    let rejects = file_of(&t, &chunked, "rejects_file");
    for line in ["\n#5,broken,City5,L5,7,", "\n#5,broken,City5,L23,25,"] {
        assert!(rejects.contains(line), "{line}: {rejects}");
    }

    // Written in chunks: each buyer holds its order's city.
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNKED).await;
    assert_eq!(code, 1, "{stderr}");
    let want: BTreeMap<String, String> = (0..5)
        .map(|k| (format!("buyer{k}@example.com"), format!("City{k}")))
        .collect();
    assert_eq!(city_by_email(t.receivers_of("Buyers").await), want);
}

/// A mirror pipeline over `rows` (email, signup) in `dir`.
fn mirror_source(dir: &Path, rows: &[(String, &str)], extra: &str) -> PathBuf {
    let mut csv = String::from("email,signup\n");
    rows.iter()
        .for_each(|(e, d)| csv.push_str(&format!("{e},{d}\n")));
    std::fs::write(dir.join("members.csv"), csv).unwrap();
    let path = dir.join("members.toml");
    std::fs::write(
        &path,
        format!(
            "[[import]]\nname = \"members\"\nsource = \"members.csv\"\ngroup = \"Members\"\ncreate_group = true\nmode = \"mirror\"\n{extra}\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\n"
        ),
    )
    .unwrap();
    path
}

fn members(range: std::ops::Range<usize>) -> Vec<(String, &'static str)> {
    range
        .map(|i| (format!("m{i}@example.com"), "2024-05-01"))
        .collect()
}

async fn states(t: &TestServer) -> BTreeMap<String, i64> {
    t.receivers_of("Members")
        .await
        .into_iter()
        .map(|r| (r.email, r.deactivated))
        .collect()
}

/// Runs one mirror scenario against a fresh server with `env`: what each
/// run reported and planned, and what the group held at the end.
async fn mirror_scenario(
    env: &[(&str, &str)],
) -> (
    Vec<(i32, Value, Value)>,
    Vec<String>,
    BTreeMap<String, bool>,
) {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut runs = Vec::new();
    let mut plans = Vec::new();
    let path = mirror_source(dir, &members(0..40), "");
    let (code, report, stderr) = run_with(&t, &path, &[], env).await;
    assert_eq!(code, 0, "{stderr}");
    let (prepare, import) = counts(&report);
    runs.push((code, prepare, import));

    // Three left; one stays with a date that cannot be read (rejected,
    // still in the source: not removed); one comes twice.
    let mut rows = members(3..40);
    rows[10].1 = "never";
    rows.push(rows[20].clone());
    let path = mirror_source(dir, &rows, "");
    for extra in [&["--dry-run"][..], &[]] {
        let (code, report, stderr) = run_with(&t, &path, extra, env).await;
        assert_eq!(code, 1, "a rejected row: {stderr}");
        if extra.is_empty() {
            assert!(report["steps"][0]["plan_file"].is_null());
        } else {
            plans.push(file_of(&t, &report, "plan_file"));
        }
        let (prepare, import) = counts(&report);
        runs.push((code, prepare, import));
    }

    // A truncated source and a new address: refused before any write.
    let before = states(&t).await;
    let mut short = members(3..13);
    short.push(("new@example.com".into(), "2024-05-01"));
    let path = mirror_source(dir, &short, "");
    let (code, _, stderr) = run_with(&t, &path, &[], env).await;
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains(
            "mirror mode would deactivate 27 of the group's 40 receivers (67.5%), more than the limit of 10% (4); no receiver was written"
        ),
        "{stderr}"
    );
    assert_eq!(states(&t).await, before, "nothing written");
    let group = before.into_iter().map(|(e, d)| (e, d > 0)).collect();
    (runs, plans, group)
}

#[tokio::test]
async fn mirror_mode_read_twice_in_chunks_removes_what_a_whole_read_removes_and_guards_alike() {
    let (whole_runs, whole_plans, whole_group) = mirror_scenario(&WHOLE).await;
    let (runs, plans, group) = mirror_scenario(&CHUNKED).await;
    assert_eq!(runs, whole_runs);
    assert_eq!(plans, whole_plans);
    assert_eq!(group, whole_group);
    // The removals: the three that left, listed first in the plan (row 0).
    let first: Vec<String> = plans[0]
        .lines()
        .skip(1)
        .take(4)
        .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        first[..3],
        [
            "0,m0@example.com,remove",
            "0,m1@example.com,remove",
            "0,m2@example.com,remove"
        ]
    );
    assert!(!first[3].starts_with("0,"), "{first:?}");
    assert_eq!(runs[2].2["removed"], 3, "{:?}", runs[2]);
    let gone: Vec<&String> = group.iter().filter(|(_, d)| **d).map(|(e, _)| e).collect();
    assert_eq!(gone, ["m0@example.com", "m1@example.com", "m2@example.com"]);
}

/// `listpipe check` of the pipeline at `path`, chunked: exit code, what it
/// printed and the rejects it wrote.
fn check_chunked(dir: &Path, path: &Path) -> (Option<i32>, String, String) {
    let out = crate::support::binary()
        .args(["check", path.to_str().unwrap(), "--preview", "3"])
        .envs(CHUNKED)
        .current_dir(dir)
        .output()
        .unwrap();
    let rejects = dir.join(".listpipe/rejects/members/members.rejects.csv");
    let rejects = std::fs::read_to_string(rejects).unwrap_or_default();
    // The pipeline's path heads the output.
    let stdout = String::from_utf8_lossy(&out.stdout).replace(dir.to_str().unwrap(), "DIR");
    (out.status.code(), stdout, rejects)
}

#[test]
fn a_check_of_a_mirror_step_reads_its_rows_as_the_plain_step_does() {
    // A check plans no removals, so it skips mirror mode's first read of
    // every address; what it counts, shows and rejects is the plain step's.
    let dir = tempfile::tempdir().unwrap();
    let mut rows = members(0..30);
    rows.insert(9, ("not-an-address".into(), "2024-05-01"));
    rows.push(("m3@example.com".into(), "2024-05-02"));
    let mirrored = mirror_source(dir.path(), &rows, "");
    // The same step and rows, not mirrored, in a folder of its own.
    let other = tempfile::tempdir().unwrap();
    let plain = mirror_source(other.path(), &rows, "");
    let text = std::fs::read_to_string(&plain).unwrap();
    std::fs::write(&plain, text.replace("mode = \"mirror\"\n", "")).unwrap();
    let (code, stdout, rejects) = check_chunked(dir.path(), &mirrored);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("30 receivers to send"), "{stdout}");
    assert!(
        rejects.contains("not-an-address,2024-05-01,11,email"),
        "{rejects}"
    );
    assert_eq!(check_chunked(other.path(), &plain), (code, stdout, rejects));
}
