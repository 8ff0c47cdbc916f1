//! Write policies and limited runs (issue 62), over HTTP against the
//! built-in server: `update = "if_empty" | "never"` and `empty = "clear"`
//! decide what an update overwrites, read back from the target; `--limit N`
//! writes the first N receivers, and a later run the rest.

use crate::import::{run, run_with};
use crate::in_process::run_here;
use crate::pipeline_errors::errors_beside;
use crate::support::TestServer;
use listpipe::api::Receiver;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The mappings of both files: one policy per attribute, `zip` without.
const MAPPINGS: &str = "[import.receiver]\nemail = \"email\"\n\
    [import.global_attributes]\n\
    firstname = { column = \"first\", update = \"if_empty\" }\n\
    city = { column = \"city\", update = \"never\" }\n\
    nick = { column = \"nick\", empty = \"clear\" }\n\
    zip = \"zip\"\n\
    [import.attributes]\n\
    tier = { column = \"tier\", update = \"if_empty\" }\n";

/// A pipeline `name.toml` in `dir` importing `source` into `News`.
fn pipeline(dir: &Path, name: &str, source: &str, extra: &str, mappings: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let toml = format!(
        "[[import]]\nname = \"people\"\nsource = \"{source}\"\ngroup = \"News\"\ncreate_group = true\n{extra}{mappings}"
    );
    std::fs::write(&path, toml).unwrap();
    path
}

/// The value the target holds for a global attribute ("" when none).
fn global<'r>(r: &'r Receiver, name: &str) -> &'r str {
    r.global_attributes.get(name).map_or("", String::as_str)
}

/// The target's values of `email`: firstname, city, nick, zip, tier.
fn values<'r>(receivers: &'r [Receiver], email: &str) -> [&'r str; 5] {
    let r = receivers
        .iter()
        .find(|r| r.email == email)
        .unwrap_or_else(|| panic!("no receiver {email}"));
    let tier = r.attributes.get("tier").map_or("", String::as_str);
    [
        global(r, "firstname"),
        global(r, "city"),
        global(r, "nick"),
        global(r, "zip"),
        tier,
    ]
}

fn counts(report: &Value) -> (u64, u64, u64, u64) {
    let i = &report["steps"][0]["import"];
    let n = |k: &str| i[k].as_u64().unwrap_or(u64::MAX);
    (
        n("created"),
        n("updated"),
        n("unchanged"),
        n("write_requests"),
    )
}

#[tokio::test]
async fn an_update_writes_only_what_its_policies_allow_and_a_rerun_writes_nothing() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("first.csv"),
        "email,first,city,nick,zip,tier\n\
         a@example.com,Anna,Köln,Annie,50667,\n\
         b@example.com,,Bonn,Benny,53111,gold\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("second.csv"),
        "email,first,city,nick,zip,tier\n\
         a@example.com,Anne,Berlin,,10115,silver\n\
         b@example.com,Bert,Berlin,,,bronze\n\
         c@example.com,Cara,Celle,,29221,\n",
    )
    .unwrap();
    let first = pipeline(dir, "first", "first.csv", "", MAPPINGS);
    let (code, report, stderr) = run_here(&t, &first, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report).0, 2, "{stderr}");

    let second = pipeline(dir, "second", "second.csv", "", MAPPINGS);
    // The dry run's plan names what the policies keep, and counts it.
    let (code, report, stderr) = run_here(&t, &second, &["--dry-run"]).await;
    assert_eq!(code, 0, "{stderr}");
    let plan = std::fs::read_to_string(dir.join(report["steps"][0]["plan_file"].as_str().unwrap()))
        .unwrap();
    let line = |email: &str| {
        plan.lines()
            .find(|l| l.contains(email))
            .unwrap_or_else(|| panic!("no {email} in\n{plan}"))
            .to_string()
    };
    let a = line("a@example.com");
    assert!(
        a.starts_with("2,a@example.com,update,\"attributes global_attributes; kept: "),
        "{a}"
    );
    assert!(
        a.contains("firstname (if_empty)") && a.contains("city (never)"),
        "{a}"
    );
    let b = line("b@example.com");
    assert!(
        b.contains("city (never)") && b.contains("tier (if_empty)"),
        "{b}"
    );
    assert!(!b.contains("firstname"), "{b}");
    assert!(line("c@example.com").contains(",create,"), "{plan}");
    assert!(
        stderr.contains("people: load: would keep by policy (values left as the target holds them): city 2, firstname 1, tier 1"),
        "{stderr}"
    );

    let (code, report, stderr) = run_here(&t, &second, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let (created, updated, unchanged, _) = counts(&report);
    assert_eq!((created, updated, unchanged), (1, 2, 0), "{stderr}");
    assert_eq!(
        report["steps"][0]["import"]["kept_by_policy"],
        json!({"city": 2, "firstname": 1, "tier": 1})
    );
    let held = t.receivers_of("News").await;
    // a: firstname held (if_empty), city never updated, nick cleared, zip
    // updated, tier filled where the target had none.
    assert_eq!(
        values(&held, "a@example.com"),
        ["Anna", "Köln", "", "10115", "silver"]
    );
    // b: firstname filled, city kept, nick cleared, an empty zip kept,
    // tier held.
    assert_eq!(
        values(&held, "b@example.com"),
        ["Bert", "Bonn", "", "53111", "gold"]
    );
    // c: created as mapped; `never` holds for updates only.
    assert_eq!(
        values(&held, "c@example.com"),
        ["Cara", "Celle", "", "29221", ""]
    );

    // The same file again: nothing to write, the same values kept.
    let (code, report, stderr) = run_here(&t, &second, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report), (0, 0, 3, 0), "{stderr}");
    assert_eq!(
        report["steps"][0]["import"]["kept_by_policy"],
        json!({"city": 2, "firstname": 1, "tier": 1})
    );
    assert_eq!(t.receivers_of("News").await.len(), 3);
}

/// A step's defaults hold for every mapping without its own: `update =
/// "if_empty"` on the step keeps a value the target holds, but a mapping's
/// own `update = "always"` is written; a step's `empty = "clear"` clears a
/// text field written `always`, and never consent.
#[tokio::test]
async fn step_defaults_hold_unless_a_mapping_sets_its_own() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("first.csv"),
        "email,first,city,src,act\na@example.com,Anna,Köln,shop,2024-01-01T00:00:00Z\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("second.csv"),
        "email,first,city,src,act\na@example.com,Anne,Bonn,,\n",
    )
    .unwrap();
    let mappings = "[import.receiver]\nemail = \"email\"\nsource = { column = \"src\", update = \"always\" }\nactivated = \"act\"\n\
        [import.global_attributes]\nfirstname = \"first\"\ncity = { column = \"city\", update = \"always\" }\n";
    let first = pipeline(dir, "first", "first.csv", "", mappings);
    let (code, _, stderr) = run_here(&t, &first, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let defaults = "update = \"if_empty\"\nempty = \"clear\"\n";
    let second = pipeline(dir, "second", "second.csv", defaults, mappings);
    let (code, report, stderr) = run_here(&t, &second, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report).1, 1, "{stderr}");
    let held = t.receivers_of("News").await;
    let a = &held[0];
    assert_eq!(
        (global(a, "firstname"), global(a, "city")),
        ("Anna", "Bonn")
    );
    assert_eq!(a.source, "", "cleared by the step's empty = \"clear\"");
    assert_eq!(a.activated, 1704067200, "consent is never cleared");
    let (code, report, stderr) = run_here(&t, &second, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report), (0, 0, 1, 0), "{stderr}");
}

#[tokio::test]
async fn a_limited_run_writes_the_first_n_and_a_later_run_the_rest() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut csv = String::from("email,first\n");
    for i in 0..100 {
        csv.push_str(&format!("p{i:03}@example.com,P{i}\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let mappings =
        "[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nfirstname = \"first\"\n";
    let path = pipeline(dir, "people", "people.csv", "", mappings);

    let (code, report, stderr) = run_here(&t, &path, &["--limit", "10"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report).0, 10, "{stderr}");
    assert!(
        stderr.contains(
            "people: load: limited to 10 of 100 receivers (limit); 90 left for a later run"
        ),
        "{stderr}"
    );
    let import = &report["steps"][0]["import"];
    assert_eq!(import["limited"], json!({"limit": 10, "of": 100}));
    assert_eq!(import["not_started"], 0);
    assert_eq!(import["stopped"], false);
    let mut held: Vec<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    held.sort();
    let first_ten: Vec<String> = (0..10).map(|i| format!("p{i:03}@example.com")).collect();
    assert_eq!(held, first_ten, "the first ten in the file's order");

    let (code, report, stderr) = run_here(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let (created, updated, unchanged, _) = counts(&report);
    assert_eq!((created, updated, unchanged), (90, 0, 10), "{stderr}");
    assert!(report["steps"][0]["import"].get("limited").is_none());
    assert_eq!(t.receivers_of("News").await.len(), 100);
}

/// A limit cut across chunks (7 rows each here): the first chunk whole, the
/// second in part, the rest not at all; a dry run plans the same rows.
#[tokio::test]
async fn a_limit_holds_across_chunks_and_in_a_dry_run() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut csv = String::from("email\n");
    for i in 0..30 {
        csv.push_str(&format!("p{i:03}@example.com\n"));
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let mappings = "[import.receiver]\nemail = \"email\"\n";
    let path = pipeline(dir, "people", "people.csv", "limit = 10\n", mappings);
    let env = [("LISTPIPE_CHUNK_ROWS", "7")];
    let (code, report, stderr) = run_with(&t, &path, &["--dry-run"], &env).await;
    assert_eq!(code, 0, "{stderr}");
    let plan = std::fs::read_to_string(dir.join(report["steps"][0]["plan_file"].as_str().unwrap()))
        .unwrap();
    assert_eq!(
        plan.lines().filter(|l| l.contains(",create,")).count(),
        10,
        "{plan}"
    );
    assert!(
        plan.contains("p009@example.com") && !plan.contains("p010@"),
        "{plan}"
    );
    let (code, report, stderr) = run_with(&t, &path, &[], &env).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&report).0, 10, "{stderr}");
    assert_eq!(
        report["steps"][0]["import"]["limited"],
        json!({"limit": 10, "of": 30})
    );
    // `--limit` overrides the step's.
    let (code, report, stderr) = run_with(&t, &path, &["--limit", "25"], &env).await;
    assert_eq!(code, 0, "{stderr}");
    let (created, _, unchanged, _) = counts(&report);
    assert_eq!((created, unchanged), (15, 10), "{stderr}");
    assert!(stderr.contains("limited to 25 of 30 receivers"), "{stderr}");
}

#[tokio::test]
async fn mirror_mode_refuses_a_limit() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("people.csv"), "email\na@example.com\n").unwrap();
    let path = pipeline(
        dir,
        "mirror",
        "people.csv",
        "mode = \"mirror\"\n",
        "[import.receiver]\nemail = \"email\"\n",
    );
    let (code, _, stderr) = run(&t, &path, &["--limit", "10"]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--limit 10: step people is in mirror mode: `limit` writes only the first receivers of the source, and mirror mode removes every receiver the source lacks"),
        "{stderr}"
    );
    assert!(t.client.groups(None).await.unwrap().is_empty());
}

#[test]
fn unknown_policies_are_refused_with_their_place_and_the_valid_choices() {
    let files: &[(&str, &[u8])] = &[("in.csv", b"email,name,quit\na@example.com,Ann,\n")];
    let step = "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n";
    let cases: &[(String, &[&str])] = &[
        (
            format!(
                "{step}[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nname = {{ column = \"name\", update = \"sometimes\" }}\n"
            ),
            &[
                "p.toml:7:36: unknown update \"sometimes\"; valid values: `always`, `if_empty` or `never`",
            ],
        ),
        (
            format!(
                "{step}update = \"sometimes\"\nempty = \"wipe\"\n[import.receiver]\nemail = \"email\"\n"
            ),
            &[
                "p.toml:4:10: unknown update \"sometimes\"; valid values: `always`, `if_empty` or `never`",
                "p.toml:5:9: unknown empty \"wipe\"; valid values: `keep` or `clear`",
            ],
        ),
        (
            format!(
                "{step}[import.receiver]\nemail = \"email\"\ndeactivated = {{ column = \"quit\", empty = \"clear\" }}\n"
            ),
            &[
                "p.toml:6:42: `empty = \"clear\"` cannot apply to `deactivated`: an empty cell never clears consent (an opt-out stays an opt-out); remove it",
            ],
        ),
        (
            format!("{step}mode = \"mirror\"\nlimit = 5\n[import.receiver]\nemail = \"email\"\n"),
            &[
                "p.toml:5:9: `limit` writes only the first receivers of the source, and mirror mode removes every receiver the source lacks: with a limit it would remove all the others; remove `limit` (or `--limit`), or run this step without mode = \"mirror\"",
            ],
        ),
    ];
    for (toml, expected) in cases {
        assert_eq!(errors_beside(files, toml), *expected, "{toml}");
    }
}
