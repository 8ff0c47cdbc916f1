//! `listpipe init` end to end: for exports shaped like other tools' (Mailchimp, HubSpot,
//! Shopify, Brevo, Google contacts, a Windows-1252 shop file with semicolons, titles above
//! the header, ragged rows, a workbook), the pipeline `init` writes is run unedited against
//! a server on port 0, then the group is exported over HTTP and read back: receivers,
//! states, dates, attributes and tags.

use crate::import::{listpipe, run};
use crate::in_process::run_here;
use crate::support::TestServer;
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) type Row = BTreeMap<String, String>;

/// Runs the binary in the test's folder (off the async runtime, which serves the target).
pub(crate) async fn cli(t: &TestServer, args: Vec<String>) -> std::process::Output {
    let dir = t.dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        listpipe(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `files` under `exports/`, runs `init` on them into `pipeline.toml`, checks it,
/// runs it and exports `group`: the pipeline, init's summary and the exported rows.
pub(crate) async fn init_run_export(
    t: &TestServer,
    files: &[(&str, &[u8])],
    group: &str,
) -> (String, String, Vec<Row>) {
    let dir = t.dir.path();
    std::fs::create_dir_all(dir.join("exports")).unwrap();
    let mut args = vec!["init".to_string()];
    for (name, bytes) in files {
        std::fs::write(dir.join("exports").join(name), bytes).unwrap();
        args.push(format!("exports/{name}"));
    }
    args.extend(["--group", group, "--out", "pipeline.toml"].map(String::from));
    let out = cli(t, args).await;
    let summary = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{summary}");
    let pipeline = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();

    let check = cli(t, vec!["check".into(), "pipeline.toml".into()]).await;
    assert!(
        matches!(check.status.code(), Some(0 | 1)),
        "{pipeline}\n{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    let (code, _, stderr) = run(t, &dir.join("pipeline.toml"), &[]).await;
    assert!(matches!(code, 0 | 1), "{pipeline}\n{stderr}");

    let export = cli(
        t,
        vec![
            "export".into(),
            "--target-url".into(),
            t.base_url(),
            "--token".into(),
            t.client.token(),
            "--group".into(),
            group.into(),
            "--out".into(),
            "out.csv".into(),
        ],
    )
    .await;
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    (pipeline, summary, read_csv(&dir.join("out.csv")))
}

fn read_csv(path: &Path) -> Vec<Row> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

pub(crate) fn row<'a>(rows: &'a [Row], email: &str) -> &'a Row {
    rows.iter()
        .find(|r| r["email"] == email)
        .unwrap_or_else(|| panic!("no {email} in {rows:?}"))
}

pub(crate) fn emails(rows: &[Row]) -> Vec<&str> {
    let mut e: Vec<&str> = rows.iter().map(|r| r["email"].as_str()).collect();
    e.sort();
    e
}

fn tags(r: &Row) -> Vec<&str> {
    let mut t: Vec<&str> = r["tags"].split(',').filter(|t| !t.is_empty()).collect();
    t.sort();
    t
}

#[tokio::test]
async fn init_reads_a_mailchimp_export_with_its_preset() {
    let t = TestServer::start().await;
    let file = "Email Address,First Name,Last Name,MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,TIMEZONE,CC,REGION,LAST_CHANGED,LEID,EUID,NOTES,TAGS\n\
anna@example.com,Anna,Berg,2,2023-04-21 11:16:57,,2023-04-21 11:20:00,,,,,,,,,2023-04-21 11:20:00,1,abc,,\"\"\"VIP\"\",\"\"Newsletter\"\"\"\n\
ben@example.com,Ben,Cole,2,2018-02-12 10:54:27,,2018-02-12 10:54:27,,,,,,,,,2018-02-12 10:54:27,2,abd,,\n";
    let (pipeline, summary, rows) = init_run_export(
        &t,
        &[("subscribed_members_export_1.csv", file.as_bytes())],
        "News",
    )
    .await;
    assert!(pipeline.contains("preset = \"mailchimp\""), "{pipeline}");
    assert!(
        summary.contains("the mailchimp preset (its headers fit)"),
        "{summary}"
    );
    assert_eq!(emails(&rows), ["anna@example.com", "ben@example.com"]);
    let anna = row(&rows, "anna@example.com");
    assert_eq!(anna["active"], "true");
    assert_eq!(anna["activated"], "2023-04-21T11:20:00Z");
    assert_eq!(tags(anna), ["Newsletter", "VIP"]);
}

#[tokio::test]
async fn init_reads_a_hubspot_export_and_activates_marketing_contacts_only() {
    let t = TestServer::start().await;
    let file = "Record ID,First Name,Last Name,Email,Lifecycle Stage,Create Date,Marketing contact status,Unsubscribed from all email\n\
101,Anna,Berg,anna@example.com,Lead,2024-03-01 10:00:00,Marketing contact,false\n\
102,Ben,Cole,ben@example.com,Customer,2024-03-02 10:00:00,Non-marketing contact,false\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("hubspot-crm-exports.csv", file.as_bytes())], "CRM").await;
    assert!(pipeline.contains("preset = \"hubspot\""), "{pipeline}");
    assert_eq!(row(&rows, "anna@example.com")["active"], "true");
    assert_eq!(
        row(&rows, "anna@example.com")["activated"],
        "2024-03-01T10:00:00Z"
    );
    assert_eq!(row(&rows, "ben@example.com")["active"], "false");
    assert_eq!(
        row(&rows, "ben@example.com")["registered"],
        "2024-03-02T10:00:00Z"
    );
}

#[tokio::test]
async fn init_reads_a_shopify_customers_export_with_its_tags() {
    let t = TestServer::start().await;
    let file = "Customer ID,First Name,Last Name,Email,Accepts Email Marketing,Default Address Zip,Total Spent,Total Orders,Tags\n\
7001,Anna,Berg,anna@example.com,yes,'01067,12.50,1,\"vip, wholesale\"\n\
7002,Ben,Cole,ben@example.com,no,'10115,0.00,0,\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("customers_export.csv", file.as_bytes())], "Shop").await;
    assert!(
        pipeline.contains("preset = \"shopify-customers\""),
        "{pipeline}"
    );
    let anna = row(&rows, "anna@example.com");
    assert_eq!(anna["active"], "true");
    assert_eq!(tags(anna), ["vip", "wholesale"]);
    assert_eq!(row(&rows, "ben@example.com")["active"], "false");
}

#[tokio::test]
async fn init_reads_a_brevo_export_and_deactivates_the_blocklisted() {
    let t = TestServer::start().await;
    let file = "EMAIL,FIRSTNAME,LASTNAME,ADDED_TIME,MODIFIED_TIME,EMAIL_BLACKLISTED,DOUBLE_OPT-IN\n\
anna@example.com,Anna,Berg,2024-01-05 09:00:00,2024-02-01 09:00:00,No,Yes\n\
ben@example.com,Ben,Cole,2024-01-06 09:00:00,2024-02-02 09:00:00,Yes,Yes\n\
cleo@example.com,Cleo,Dorn,2024-01-07 09:00:00,2024-01-07 09:00:00,No,No\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("contacts.csv", file.as_bytes())], "Brevo").await;
    assert!(pipeline.contains("preset = \"brevo\""), "{pipeline}");
    assert_eq!(row(&rows, "anna@example.com")["active"], "true");
    assert_eq!(
        row(&rows, "ben@example.com")["deactivated"],
        "2024-02-02T09:00:00Z"
    );
    assert_eq!(row(&rows, "ben@example.com")["active"], "false");
    assert_eq!(row(&rows, "cleo@example.com")["active"], "false");
}

#[tokio::test]
async fn init_maps_a_google_contacts_export_without_inventing_consent() {
    let t = TestServer::start().await;
    let file = "Name,Given Name,Family Name,Notes,Group Membership,E-mail 1 - Type,E-mail 1 - Value,Phone 1 - Type,Phone 1 - Value\r\n\
Anna Berg,Anna,Berg,\"first line\r\nsecond line\",* myContacts ::: Friends,* Home,anna@example.com,Mobile,+49 170 1234567\r\n\
Ben Cole,Ben,Cole,,* myContacts,,,Mobile,+49 170 7654321\r\n\
Cleo Dorn,Cleo,Dorn,,* myContacts ::: Work,* Work,cleo@example.com,,\r\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("contacts.csv", file.as_bytes())], "Contacts").await;
    assert!(
        pipeline.contains("email = \"E-mail 1 - Value\""),
        "{pipeline}"
    );
    assert!(pipeline.contains("separator = \" ::: \""), "{pipeline}");
    assert!(
        summary.contains("consent: the file records no consent: if everyone on it has opted in, set activated = { value = \"now\" }"),
        "{summary}"
    );
    assert_eq!(emails(&rows), ["anna@example.com", "cleo@example.com"]);
    let anna = row(&rows, "anna@example.com");
    assert_eq!(anna["active"], "false");
    assert_eq!(anna["firstname"], "Anna");
    assert!(tags(anna).contains(&"Friends"), "{anna:?}");
}

#[tokio::test]
async fn init_reads_a_windows_1252_shop_file_with_semicolons_dates_and_a_newsletter_flag() {
    let t = TestServer::start().await;
    let (file, _, _) = encoding_rs::WINDOWS_1252.encode(
        "E-Mail;Vorname;Nachname;Anrede;Newsletter;Anmeldedatum;Interessen;Passwort\r\n\
anna@example.de;Jörg;Müller;Herr;1;03.02.2024;Sport,Musik;5f4dcc3b5aa765d61d8327deb882cf99\r\n\
ben@example.de;Änne;Schön;Frau;0;15.01.2024;Kochen;e99a18c428cb38d5f260853678922e03\r\n",
    );
    let (pipeline, summary, rows) = init_run_export(&t, &[("kunden.csv", &file)], "Shop").await;
    assert!(
        pipeline.contains(r#"source = { path = "exports/kunden.csv", delimiter = ";", encoding = "windows-1252" }"#),
        "{pipeline}"
    );
    assert!(
        pipeline.contains(r#"registered = { column = "Anmeldedatum", format = "%d.%m.%Y" }"#),
        "{pipeline}"
    );
    assert!(
        pipeline.contains("\"Newsletter\" records consent; its values: \"1\", \"0\"."),
        "{pipeline}"
    );
    assert!(
        pipeline.contains("# - \"Passwort\": a password or its hash"),
        "{pipeline}"
    );
    assert!(
        summary.contains("\"Passwort\" left out (a secret)"),
        "{summary}"
    );
    let anna = row(&rows, "anna@example.de");
    assert_eq!(anna["active"], "true");
    assert_eq!(anna["activated"], "2024-02-03T00:00:00Z");
    assert_eq!(anna["firstname"], "Jörg");
    assert_eq!(tags(anna), ["Musik", "Sport"]);
    let ben = row(&rows, "ben@example.de");
    assert_eq!(ben["active"], "false");
    assert_eq!(ben["registered"], "2024-01-15T00:00:00Z");
    assert!(!rows[0].contains_key("passwort"));
}

#[tokio::test]
async fn init_finds_the_header_below_title_rows() {
    let t = TestServer::start().await;
    let file = "Subscriber list\nexported 2024-03-05\n\nemail,name,status,signup\n\
anna@example.com,Anna,subscribed,2024-03-01\n\
ben@example.com,Ben,unsubscribed,2024-02-01\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("list.csv", file.as_bytes())], "List").await;
    assert!(pipeline.contains("header_row = "), "{pipeline}");
    assert!(summary.contains("rows above it are skipped"), "{summary}");
    assert_eq!(row(&rows, "anna@example.com")["active"], "true");
    assert_eq!(
        row(&rows, "anna@example.com")["activated"],
        "2024-03-01T00:00:00Z"
    );
    assert_eq!(row(&rows, "ben@example.com")["active"], "false");
    assert_eq!(
        row(&rows, "ben@example.com")["deactivated"],
        "2024-02-01T00:00:00Z"
    );
}

#[tokio::test]
async fn init_pads_the_short_rows_of_a_ragged_file() {
    let t = TestServer::start().await;
    let file = "First Name,Last Name,E-mail Address,Business Phone,Categories\r\n\
Anna,Berg,anna@example.com,+49 30 1234,Kunde;VIP\r\n\
Ben,Cole,ben@example.com\r\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("outlook.csv", file.as_bytes())], "Outlook").await;
    assert!(pipeline.contains("pad_short_rows = true"), "{pipeline}");
    assert!(
        summary.contains("1 row(s) have fewer fields than the header"),
        "{summary}"
    );
    assert_eq!(emails(&rows), ["anna@example.com", "ben@example.com"]);
    assert_eq!(tags(row(&rows, "anna@example.com")), ["Kunde", "VIP"]);
    assert_eq!(row(&rows, "ben@example.com")["lastname"], "Cole");
}

#[tokio::test]
async fn init_reads_a_workbook_and_names_its_sheet() {
    let t = TestServer::start().await;
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet().set_name("Kontakte").unwrap();
    for (r, cells) in [
        ["email", "first_name", "newsletter", "signup"],
        ["anna@example.com", "Anna", "yes", "2024-03-01"],
        ["ben@example.com", "Ben", "no", "2024-03-02"],
    ]
    .iter()
    .enumerate()
    {
        for (c, v) in cells.iter().enumerate() {
            sheet.write_string(r as u32, c as u16, *v).unwrap();
        }
    }
    book.add_worksheet().set_name("Notes").unwrap();
    let bytes = book.save_to_buffer().unwrap();
    let (pipeline, _, rows) = init_run_export(&t, &[("kontakte.xlsx", &bytes)], "CRM").await;
    assert!(pipeline.contains("sheet = \"Kontakte\""), "{pipeline}");
    assert_eq!(row(&rows, "anna@example.com")["active"], "true");
    assert_eq!(
        row(&rows, "anna@example.com")["activated"],
        "2024-03-01T00:00:00Z"
    );
    assert_eq!(row(&rows, "ben@example.com")["active"], "false");
}

#[tokio::test]
async fn init_refuses_to_overwrite_a_pipeline_unless_forced() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("list.csv"), "email\na@example.com\n").unwrap();
    std::fs::write(dir.join("pipeline.toml"), "# mine\n").unwrap();
    let args = |force: bool| {
        let mut a: Vec<String> = ["init", "list.csv", "--out", "pipeline.toml"]
            .map(String::from)
            .to_vec();
        if force {
            a.push("--force".into());
        }
        a
    };
    let out = cli(&t, args(false)).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "listpipe: error: pipeline.toml exists; choose another --out or add --force to overwrite it"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("pipeline.toml")).unwrap(),
        "# mine\n"
    );
    let out = cli(&t, args(true)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        std::fs::read_to_string(dir.join("pipeline.toml"))
            .unwrap()
            .contains("email = \"email\"")
    );
}

#[tokio::test]
async fn init_without_out_prints_the_pipeline() {
    let t = TestServer::start().await;
    std::fs::write(
        t.dir.path().join("list.csv"),
        "email,newsletter\na@example.com,yes\n",
    )
    .unwrap();
    let out = cli(&t, ["init", "list.csv"].map(String::from).to_vec()).await;
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("[[import]]\nname = \"list\"\n"), "{stdout}");
    assert!(
        stdout.contains(
            r#"activated = { value = "now", only_if = { column = "newsletter", equals = "yes" } }"#
        ),
        "{stdout}"
    );
}

#[tokio::test]
async fn init_downloads_a_url_source_and_the_pipeline_names_the_url() {
    let t = TestServer::start().await;
    let url = crate::remote::serve_bytes(
        "members.csv",
        b"email,subscribed,joined\nanna@example.com,true,2024-03-01\nben@example.com,false,2024-03-02\n".to_vec(),
    )
    .await;
    let out = cli(
        &t,
        vec![
            "init".into(),
            url.clone(),
            "--group".into(),
            "Web".into(),
            "--out".into(),
            "p.toml".into(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pipeline = std::fs::read_to_string(t.dir.path().join("p.toml")).unwrap();
    assert!(
        pipeline.contains(&format!("path = \"{url}\"")),
        "{pipeline}"
    );
    assert_eq!(crate::remote::downloads_left(t.dir.path()), 0);
    let (code, _, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{pipeline}\n{stderr}");
    let rows = t.receivers_of("Web").await;
    let anna = rows.iter().find(|r| r.email == "anna@example.com").unwrap();
    let ben = rows.iter().find(|r| r.email == "ben@example.com").unwrap();
    assert_eq!(anna.activated, 1_709_251_200);
    assert_eq!(ben.activated, 0);
}

#[tokio::test]
async fn init_leaves_an_ambiguous_date_format_to_the_user_and_leaves_out_only_the_values_it_reads_two_ways()
 {
    let t = TestServer::start().await;
    let file = "email,signup\nanna@example.com,03/04/2025\nben@example.com,05/05/2025\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("list.csv", file.as_bytes())], "List").await;
    assert!(
        // Issue 55: an undecided date must not reject its rows: the value is left out.
        pipeline.contains(r#"registered = { column = "signup", format = ["%d/%m/%Y", "%m/%d/%Y"], ambiguous = "omit" }"#),
        "{pipeline}"
    );
    assert!(
        pipeline.contains("# DECIDE: \"signup\" reads day first and month first alike"),
        "{pipeline}"
    );
    assert!(
        summary.contains("the date format of \"signup\""),
        "{summary}"
    );
    assert_eq!(emails(&rows), ["anna@example.com", "ben@example.com"]);
    assert_eq!(
        row(&rows, "ben@example.com")["registered"],
        "2025-05-05T00:00:00Z"
    );
    assert_ne!(
        row(&rows, "anna@example.com")["registered"],
        "2025-03-04T00:00:00Z"
    );
    assert_ne!(
        row(&rows, "anna@example.com")["registered"],
        "2025-04-03T00:00:00Z"
    );
}
