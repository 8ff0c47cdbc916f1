//! Issue 42, second half: every reject reason and step error that an option would fix
//! names the option and the value to try, and the smaller changes to values are decided,
//! counted and said. Each case runs against the built-in server over HTTP: the message
//! first, then the pipeline with the named fix, and what the target holds after it.
//! Fixtures are written here and reproduce the traits of real exports.

use crate::import::run;
use crate::in_process::check_here;
use crate::support::TestServer;
use listpipe::api::detail;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// An import of `source` into `News`, its receiver table and any further tables.
fn pipeline(source: &str, step_keys: &str, rest: &str) -> String {
    format!(
        "[[import]]\nname = \"imp\"\nsource = {source}\ngroup = \"News\"\ncreate_group = true\n{step_keys}\n\
         [import.receiver]\nemail = \"email\"\n{rest}"
    )
}

/// The reject reasons of the step's rejects file, one per rejected row.
fn rejects(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".listpipe/rejects/p/imp.rejects.csv")).unwrap_or_default()
}

/// `(code, report, stderr)` of `listpipe run p.toml` in the server's folder.
async fn run_p(t: &TestServer) -> (i32, serde_json::Value, String) {
    run(t, &t.dir.path().join("p.toml"), &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_row_names_pad_short_rows_and_with_it_the_row_is_imported() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "people.csv",
        "email,name,city\na@example.com,Anna,Berlin\nb@example.com,Ben\n",
    );
    write(
        dir,
        "p.toml",
        &pipeline(
            "\"people.csv\"",
            "",
            "[import.global_attributes]\ncity = \"city\"\n",
        ),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "imp: rejected: wrong number of fields: 1, e.g. row 3: row has 2 fields, the header has 3; if the missing fields are empty ones at the end, set pad_short_rows = true in the source\n"
        ),
        "{stderr}"
    );

    write(
        dir,
        "p.toml",
        &pipeline(
            "{ path = \"people.csv\", pad_short_rows = true }",
            "",
            "[import.global_attributes]\ncity = \"city\"\n",
        ),
    );
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("imp: source: 1 short row padded with empty fields (pad_short_rows)"),
        "{stderr}"
    );
    assert_eq!(report["steps"][0]["import"]["created"], 1, "{report}");
    assert_eq!(t.receivers_of("News").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_birthday_names_null_values_and_with_it_the_rows_are_imported() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "people.csv",
        "email,birthday\na@example.com,0.0.00\nb@example.com,3.4.1985\nc@example.com,0.0.00\n",
    );
    let attrs = "[import.global_attributes]\nbirthday = { column = \"birthday\", type = \"date\", format = \"%d.%m.%Y\" }\n";
    write(dir, "p.toml", &pipeline("\"people.csv\"", "", attrs));
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 1, "{stderr}");
    let reason = "\"0.0.00\" is not a date in the format %d.%m.%Y; if it means \"no date\", set null_values = [\"0.0.00\"]";
    assert!(
        stderr.contains(&format!(
            "imp: rejected: invalid birthday: 2, e.g. row 2, birthday \"0.0.00\": {reason}\n"
        )),
        "{stderr}"
    );
    assert!(
        rejects(dir).contains("null_values = [\"\"0.0.00\"\"]"),
        "{}",
        rejects(dir)
    );

    write(
        dir,
        "p.toml",
        &pipeline("\"people.csv\"", "null_values = [\"0.0.00\"]", attrs),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    let news = t.receivers_of("News").await;
    assert_eq!(news.len(), 3);
    let b = news.iter().find(|r| r.email == "b@example.com").unwrap();
    assert_eq!(b.global_attributes["birthday"], "1985-04-03");
}

/// A report tool's export: two title lines and an empty one above the names (row 4).
const TITLED: &str =
    "Member report\nexported 2024-05-01 by admin\n,,\nemail,name,city\na@example.com,Anna,Berlin\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn title_rows_above_the_header_are_one_error_naming_header_row_and_with_it_the_file_imports()
{
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "titled.csv", TITLED);
    let attrs = "[import.global_attributes]\nfirstname = \"name\"\ncity = \"city\"\n";
    write(dir, "p.toml", &pipeline("\"titled.csv\"", "", attrs));
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "p.toml:3:10: the source's header (row 1) lacks the mapped columns \"email\", \"city\", \"name\"; row 4 holds them all: set header_row = 4 in the source, e.g. source = { path = \"titled.csv\", header_row = 4 }"
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("p.toml:").count(),
        1,
        "one error, not one per column\n{stderr}"
    );

    write(
        dir,
        "p.toml",
        &pipeline("{ path = \"titled.csv\", header_row = 4 }", "", attrs),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    let news = t.receivers_of("News").await;
    assert_eq!(news[0].global_attributes["city"], "Berlin");
}

/// US times: `5/6/2012 15:53` reads either way; `12/25/2012 10:00` only month first.
const US_TIMES: &str =
    "email,signed_up\na@example.com,5/6/2012 15:53\nb@example.com,12/25/2012 10:00\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn us_times_name_the_month_first_format_read_from_the_column_and_with_it_they_are_stored() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "people.csv", US_TIMES);
    write(
        dir,
        "p.toml",
        &pipeline("\"people.csv\"", "", "registered = \"signed_up\"\n"),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "imp: rejected: invalid registered: 2, e.g. row 2, registered \"5/6/2012 15:53\": \"5/6/2012 15:53\" is not a date or time listpipe can read by itself (ISO 8601 or Unix seconds); set format = \"%m/%d/%Y %H:%M\" (read from the column's values: month first, as \"12/25/2012 10:00\" has no day-first reading)\n"
        ),
        "{stderr}"
    );

    write(
        dir,
        "p.toml",
        &pipeline(
            "\"people.csv\"",
            "",
            "registered = { column = \"signed_up\", format = \"%m/%d/%Y %H:%M\" }\n",
        ),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    let g = t.group_named("News").await;
    let a = t
        .client
        .group_receiver(g.id, "a@example.com", detail::ALL)
        .await
        .unwrap();
    let b = t
        .client
        .group_receiver(g.id, "b@example.com", detail::ALL)
        .await
        .unwrap();
    // 2012-05-06 15:53 and 2012-12-25 10:00, UTC.
    assert_eq!((a.registered, b.registered), (1_336_319_580, 1_356_429_600));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_speaks_of_the_pipeline_file_first_and_ends_with_the_rows_verdict_and_counts() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "people.csv", US_TIMES);
    write(
        dir,
        "p.toml",
        &pipeline("\"people.csv\"", "", "registered = \"signed_up\"\n"),
    );
    let out = check_here(dir, &["p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let first = stdout.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "p.toml: the pipeline file is valid (1 step); its rows are checked below"
    );
    assert!(
        stdout.ends_with(
            "\nrows: all 2 rows rejected, none would be sent; the reasons above name what to change\n"
        ),
        "{stdout}"
    );

    // The fix named, the same check: every row ready; the run sends them.
    write(
        dir,
        "p.toml",
        &pipeline(
            "\"people.csv\"",
            "",
            "registered = { column = \"signed_up\", format = \"%m/%d/%Y %H:%M\" }\n",
        ),
    );
    let out = check_here(dir, &["p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.ends_with("\nrows: all 2 rows ready to send\n"),
        "{stdout}"
    );
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 2, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_says_which_sheets_of_a_workbook_it_did_not_read_in_its_summary_and_report() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut book = rust_xlsxwriter::Workbook::new();
    for (name, email) in [("2024", "a@example.com"), ("2025", "b@example.com")] {
        let sheet = book.add_worksheet().set_name(name).unwrap();
        sheet.write_string(0, 0, "email").unwrap();
        sheet.write_string(1, 0, email).unwrap();
    }
    book.save(dir.join("book.xlsx")).unwrap();
    write(dir, "p.toml", &pipeline("\"book.xlsx\"", "", ""));
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "book.xlsx: 2025; to read them too, set sheet = \"*\" (or list them in `sheets`)\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("imp: source: warning: sheet not read: "),
        "{stderr}"
    );
    let unread = report["steps"][0]["prepare"]["unread_sheets"][0]
        .as_str()
        .unwrap_or_default();
    assert!(unread.ends_with("book.xlsx: 2025"), "{report}");
    assert_eq!(t.receivers_of("News").await.len(), 1);

    write(
        dir,
        "p.toml",
        &pipeline("{ path = \"book.xlsx\", sheet = \"*\" }", "", ""),
    );
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("not read"), "{stderr}");
    assert!(
        report["steps"][0]["prepare"].get("unread_sheets").is_none(),
        "{report}"
    );
    assert_eq!(t.receivers_of("News").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_separator_list_splits_at_each_and_symbols_written_together_are_refused() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "people.csv",
        "email,tags\na@example.com,\"vip,news|shop\"\n",
    );
    write(
        dir,
        "p.toml",
        &pipeline(
            "\"people.csv\"",
            "",
            "[import.tags]\ncolumns = \"tags\"\nseparator = \",|\"\n",
        ),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "p.toml:11:13: separator \",|\" splits only where \",\" and \"|\" stand together; to split at each of them, write separator = [\",\", \"|\"]; to split at \",|\" as written, separator = [\",|\"]"
        ),
        "{stderr}"
    );

    write(
        dir,
        "p.toml",
        &pipeline(
            "\"people.csv\"",
            "",
            "[import.tags]\ncolumns = \"tags\"\nseparator = [\",\", \"|\"]\n",
        ),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    let mut tags = t.receivers_of("News").await[0]
        .tags
        .clone()
        .unwrap_or_default();
    tags.sort();
    assert_eq!(tags, ["news", "shop", "vip"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_values_are_trimmed_of_leading_symbols_mapped_or_dropped_and_each_is_counted() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    // Google Contacts: ` ::: ` between groups, `* ` before the system ones.
    write(
        dir,
        "people.csv",
        "email,groups\na@example.com,kunden ::: * My Contacts ::: * Starred\nb@example.com,* My Contacts\n",
    );
    let tags = "[import.tags]\ncolumns = \"groups\"\nseparator = \" ::: \"\ntrim_start = \"* \"\nmap = { \"Starred\" = \"\", \"kunden\" = \"customer\" }\n";
    write(dir, "p.toml", &pipeline("\"people.csv\"", "", tags));
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("imp: source: 3 tags trimmed (trim_start)\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("imp: source: 2 tags mapped, 1 of them to \"\" and dropped (map)\n"),
        "{stderr}"
    );
    let prepare = &report["steps"][0]["prepare"];
    assert_eq!(
        (
            prepare["tags_trimmed"].as_u64(),
            prepare["tags_mapped"].as_u64(),
            prepare["tags_dropped"].as_u64()
        ),
        (Some(3), Some(2), Some(1)),
        "{report}"
    );
    let news = t.receivers_of("News").await;
    let a = news.iter().find(|r| r.email == "a@example.com").unwrap();
    let mut a_tags = a.tags.clone().unwrap_or_default();
    a_tags.sort();
    assert_eq!(a_tags, ["My_Contacts", "customer"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_holding_only_quotes_is_a_row_counted_and_rejected_not_a_blank_line() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "people.csv", "email\n\"\"\n\na@example.com\n");
    write(dir, "p.toml", &pipeline("\"people.csv\"", "", ""));
    let (code, report, stderr) = run_p(&t).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["steps"][0]["prepare"]["rows_read"], 2, "{report}");
    assert!(
        stderr.contains("imp: rejected: missing email: 1, e.g. row 2, email: missing email\n"),
        "{stderr}"
    );
    assert_eq!(t.receivers_of("News").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_real_provider_is_never_taken_for_a_typo_of_a_popular_one() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "people.csv",
        "email\na@email.com\nb@ymail.com\nc@gmial.com\n",
    );
    write(dir, "p.toml", &pipeline("\"people.csv\"", "", ""));
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: 1 address at \"gmial.com\" (row 4): did you mean \"gmail.com\"?"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("at \"email.com\"") && !stderr.contains("at \"ymail.com\""),
        "{stderr}"
    );
    assert_eq!(t.receivers_of("News").await.len(), 3);
}

/// listmonk's subscriber export: a JSON object per row in `attributes`.
const LISTMONK: &str = "email,name,attributes\n\
a@example.com,Anna,\"{\"\"city\"\": \"\"Bengaluru\"\", \"\"projects\"\": 3, \"\"stack\"\": {\"\"go\"\": true}}\"\n\
b@example.com,Ben,\"{\"\"city\"\": \"\"Berlin\"\", \"\"projects\"\": 12.5}\"\n\
c@example.com,Cara,not json\n\
d@example.com,Dan,\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_object_column_is_spread_into_typed_global_attributes() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "subscribers.csv", LISTMONK);
    write(
        dir,
        "p.toml",
        &pipeline(
            "\"subscribers.csv\"",
            "json_attributes = \"attributes\"",
            "[import.global_attributes]\nfirstname = \"name\"\n",
        ),
    );
    let (code, _, stderr) = run_p(&t).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("imp: rejected: invalid attributes: 1, e.g. row 4, attributes \"not json\": \"not json\" is not a JSON object (expected ident at line 1 column 2); json_attributes reads one object per cell, such as {\"city\": \"Berlin\"}\n"),
        "{stderr}"
    );
    let news = t.receivers_of("News").await;
    let get = |e: &str| news.iter().find(|r| r.email == e).unwrap();
    let a = &get("a@example.com").global_attributes;
    assert_eq!(
        (
            a["city"].as_str(),
            a["projects"].as_str(),
            a["stack"].as_str()
        ),
        ("Bengaluru", "3", "{\"go\":true}")
    );
    assert_eq!(get("b@example.com").global_attributes["projects"], "12.5");
    assert!(!get("d@example.com").global_attributes.contains_key("city"));
    let mut kinds: Vec<(String, String)> = t
        .client
        .attributes(None)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.name, a.kind))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("city".into(), "text".into()),
            ("firstname".into(), "text".into()),
            ("projects".into(), "number".into()),
            ("stack".into(), "text".into())
        ]
    );
}
