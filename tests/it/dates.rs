//! Dates and times as users' files hold them (issue 17): a `format` list
//! tried in order, ambiguous values refused naming both readings, spreadsheet
//! serial days, and naive times read in the pipeline's `timezone` and stored
//! by the built-in server as the right Unix seconds.

use crate::in_process::{check_here, run_here};
use crate::support::TestServer;
use listpipe::api::detail;
use std::path::Path;

/// Rows 2..8: two good rows, an ambiguous value, one no format reads, a time
/// the Berlin clocks skip, a doubled time with an offset-bearing activation,
/// and a serial day past 9999-12-31.
const PEOPLE: &str = "email,signed_up,confirmed,birthday\n\
anna@example.com,24/03/2025 10:00,2025-03-24 10:05,45292\n\
ben@example.com,03/04/2025 10:00,,\n\
cara@example.com,x,,\n\
dan@example.com,30/03/2025 02:30,,\n\
eva@example.com,26/10/2025 02:30,2025-07-01T12:00:00+02:00,36526.5\n\
fay@example.com,13/01/2025 09:00,,2958466\n\
gus@example.com,,,1990-05-17\n";

const PIPELINE: &str = "timezone = \"Europe/Berlin\"\n\
[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n\
[import.receiver]\nemail = \"email\"\n\
registered = { column = \"signed_up\", format = [\"%d/%m/%Y %H:%M\", \"%m/%d/%Y %H:%M\"] }\n\
activated = \"confirmed\"\n\
[import.global_attributes]\n\
birthday = { column = \"birthday\", type = \"date\", format = [\"%Y-%m-%d\", \"excel\"] }\n";

fn files(dir: &Path) {
    std::fs::write(dir.join("people.csv"), PEOPLE).unwrap();
    std::fs::write(dir.join("p.toml"), PIPELINE).unwrap();
}

fn rejects(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".listpipe/rejects/p/people.rejects.csv")).unwrap()
}

/// The reject line ends of rows 3..7: row, field and reason, as CSV.
const REJECTED: &[&str] = &[
    "3,registered,\"\"\"03/04/2025 10:00\"\" is ambiguous: 2025-04-03 10:00:00 with %d/%m/%Y %H:%M, 2025-03-04 10:00:00 with %m/%d/%Y %H:%M; list the format that wins first and set ambiguous = \"\"first\"\"\"",
    "4,registered,\"\"\"x\"\" does not match any of the formats %d/%m/%Y %H:%M, %m/%d/%Y %H:%M\"",
    "5,registered,\"\"\"30/03/2025 02:30\"\" is a local time that does not exist in Europe/Berlin (the clocks skip it when they move forward)\"",
    "7,birthday,\"\"\"2958466\"\" does not match any of the formats %Y-%m-%d, excel\"",
];

#[test]
fn check_rejects_ambiguous_unreadable_and_skipped_times_with_their_reasons() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    let out = check_here(dir.path(), &["p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rejects = rejects(dir.path());
    for line in REJECTED {
        assert!(rejects.contains(line), "{line}\nnot in\n{rejects}");
    }
    assert_eq!(rejects.lines().count(), 1 + REJECTED.len(), "{rejects}");
}

#[test]
fn with_ambiguous_first_the_first_listed_format_reads_the_doubtful_row() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    std::fs::write(
        dir.path().join("p.toml"),
        PIPELINE.replace(
            "%m/%d/%Y %H:%M\"] }",
            "%m/%d/%Y %H:%M\"], ambiguous = \"first\" }",
        ),
    )
    .unwrap();
    let out = check_here(dir.path(), &["p.toml", "--preview", "5"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ben = stdout
        .lines()
        .find(|l| l.starts_with("  row 3: "))
        .unwrap_or_else(|| panic!("no row 3 in\n{stdout}"));
    // 2025-04-03 10:00 in Berlin (summer time) is 08:00 UTC.
    assert!(ben.contains("\"registered\":1743667200"), "{ben}");
    assert!(!rejects(dir.path()).contains("ambiguous"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stores_berlin_wall_clock_times_as_their_unix_seconds_and_serial_days_as_dates() {
    let t = TestServer::start().await;
    files(t.dir.path());
    let (code, report, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 1, "rows were rejected\n{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 3, "{report}");
    let rejects = rejects(t.dir.path());
    for line in REJECTED {
        assert!(rejects.contains(line), "{line}\nnot in\n{rejects}");
    }

    let groups = t.client.groups(None).await.unwrap();
    let news = groups.iter().find(|g| g.name == "News").unwrap();
    let get = |email: &'static str| t.client.group_receiver(news.id, email, detail::ALL);

    // 24/03/2025 10:00 and 10:05 in Berlin (winter time, UTC+1).
    let anna = get("anna@example.com").await.unwrap();
    assert_eq!(
        (anna.registered, anna.activated),
        (1_742_806_800, 1_742_807_100)
    );
    // The serial day 45292 is 2024-01-01.
    assert_eq!(anna.global_attributes["birthday"], "2024-01-01");

    // 02:30 on 26/10/2025 happens twice in Berlin: the earlier, 00:30 UTC.
    // The activation's own offset (+02:00) is kept: 10:00 UTC.
    let eva = get("eva@example.com").await.unwrap();
    assert_eq!(
        (eva.registered, eva.activated),
        (1_761_438_600, 1_751_364_000)
    );
    // 36526.5 is noon of 2000-01-01; a date keeps the day.
    assert_eq!(eva.global_attributes["birthday"], "2000-01-01");

    let gus = get("gus@example.com").await.unwrap();
    assert_eq!(gus.global_attributes["birthday"], "1990-05-17");
}

// Dates as people write them (issue 55, part 5): an undecided column's values left out
// (`ambiguous = "omit"`), and month names.

/// Magento's customer export: `5/6/2012 15:53` on every row, day first or month first.
const MAGENTO: &str = "email,created_at\n\
a@example.com,5/6/2012 15:53\n\
b@example.com,5/6/2012 15:53\n\
c@example.com,5/6/2012 15:53\n\
d@example.com,5/6/2012 15:53\n\
e@example.com,5/6/2012 15:53\n\
f@example.com,5/6/2012 15:53\n";

const UNDECIDED: &str = "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n\
[import.receiver]\nemail = \"email\"\n\
registered = { column = \"created_at\", format = [\"%d/%m/%Y %H:%M\", \"%m/%d/%Y %H:%M\"], ambiguous = \"omit\" }\n";

const LEFT_OUT: &str = "registered: 6 values left out until the format is decided (ambiguous = \"omit\"; \"5/6/2012 15:53\" is 2012-06-05 or 2012-05-06: put the right format first and set ambiguous = \"first\")";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ambiguous_omit_an_undecided_column_imports_every_receiver_without_the_value_and_says_so()
 {
    let t = TestServer::start().await;
    std::fs::write(t.dir.path().join("people.csv"), MAGENTO).unwrap();
    std::fs::write(t.dir.path().join("p.toml"), UNDECIDED).unwrap();

    let out = check_here(t.dir.path(), &["p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains(&format!("\n  {LEFT_OUT}\n")), "{stdout}");
    assert!(
        stdout.contains("rows: all 6 rows ready to send"),
        "{stdout}"
    );

    let before = chrono::Utc::now().timestamp();
    let (code, report, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("people: prepare: {LEFT_OUT}\n")),
        "{stderr}"
    );
    let prepare = &report["steps"][0]["prepare"];
    assert_eq!(prepare["values_left_out"]["registered"], 6, "{report}");
    assert_eq!(
        prepare["left_out_examples"]["registered"],
        "\"5/6/2012 15:53\" is 2012-06-05 or 2012-05-06"
    );
    assert_eq!(report["steps"][0]["import"]["created"], 6, "{report}");

    // Every receiver, registered at the run's time as any empty `registered` is, not in 2012.
    let rows = t.receivers_of("News").await;
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert!(
            r.registered >= before,
            "{} registered {}",
            r.email,
            r.registered
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_written_with_month_names_is_stored_as_its_time() {
    let t = TestServer::start().await;
    std::fs::write(
        t.dir.path().join("people.csv"),
        "email,signed_up,born\nanna@example.com,\"September 15, 2014 5:59:48 PM\",15. März 1990\nben@example.com,\"May 11, 2019 11:21:00 AM\",3. Mai 1985\n",
    )
    .unwrap();
    std::fs::write(
        t.dir.path().join("p.toml"),
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n\
[import.receiver]\nemail = \"email\"\n\
registered = { column = \"signed_up\", format = \"%B %d, %Y %I:%M:%S %p\" }\n\
[import.global_attributes]\n\
birthday = { column = \"born\", type = \"date\", format = \"%d. %B %Y\" }\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 2, "{report}");
    let groups = t.client.groups(None).await.unwrap();
    let news = groups.iter().find(|g| g.name == "News").unwrap();
    let anna = t
        .client
        .group_receiver(news.id, "anna@example.com", detail::ALL)
        .await
        .unwrap();
    // 2014-09-15 17:59:48 UTC.
    assert_eq!(anna.registered, 1_410_803_988);
    assert_eq!(anna.global_attributes["birthday"], "1990-03-15");
    let ben = t
        .client
        .group_receiver(news.id, "ben@example.com", detail::ALL)
        .await
        .unwrap();
    // 2019-05-11 11:21:00 UTC.
    assert_eq!(ben.registered, 1_557_573_660);
    assert_eq!(ben.global_attributes["birthday"], "1985-05-03");
}
