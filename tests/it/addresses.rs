//! Addresses as a careful sender checks them, end to end: every invalid
//! kind rejected with its reason and row, invisible characters never stored,
//! international domains sent in their ASCII form, `allow` widening the
//! rules, and a warning for a domain one letter off a big provider.

use crate::in_process::{check_here, run_here};
use crate::support::TestServer;
use std::path::Path;

/// Row numbers as a spreadsheet shows them (the header is row 1).
const CONTACTS: &str = "email,name\n\
ok@example.com,valid\n\
a..b@example.com,doubled dot\n\
.lead@example.com,leading dot\n\
user@host,no tld\n\
\"ok@example.com\u{200B}\",zero-width space\n\
user@[192.0.2.1],ip literal\n\
user@Bücher.example,idn\n\
anna@gmial.com,typo\n\
user@example.123,numeric tld\n";

fn pipeline(dir: &Path, allow: &str) {
    std::fs::write(dir.join("contacts.csv"), CONTACTS).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "[[import]]\nname = \"contacts\"\nsource = \"contacts.csv\"\ngroup = \"News\"\ncreate_group = true\n\
             [import.receiver]\nemail = {{ column = \"email\"{allow} }}\n"
        ),
    )
    .unwrap();
}

#[test]
fn check_rejects_each_kind_of_impossible_address_with_its_row_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let out = check_here(dir.path(), &["p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("warning: 1 address at \"gmial.com\" (row 9): did you mean \"gmail.com\"?"),
        "{stdout}"
    );
    let rejects =
        std::fs::read_to_string(dir.path().join(".listpipe/rejects/p/contacts.rejects.csv"))
            .unwrap();
    for line in [
        "3,email,\"\"\"a..b@example.com\"\" is not a valid email address: two dots in a row in the local part\"",
        "4,email,\"\"\".lead@example.com\"\" is not a valid email address: the local part starts with a dot\"",
        "5,email,\"\"\"user@host\"\" is not a valid email address: a domain without a dot (a host name or a top-level domain alone)\"",
        "6,email,\"\"\"ok@example.com\u{200B}\"\" is not a valid email address: an invisible or control character (U+200B)\"",
        "7,email,\"\"\"user@[192.0.2.1]\"\" is not a valid email address: an IP address instead of a domain (allowed with allow = [\"\"ip_literal\"\"])\"",
        "10,email,\"\"\"user@example.123\"\" is not a valid email address: the top-level domain \"\"123\"\" is not alphabetic\"",
    ] {
        assert!(rejects.contains(line), "{line}\nnot in\n{rejects}");
    }
    assert_eq!(rejects.lines().count(), 7, "{rejects}");
}

#[tokio::test]
async fn the_run_stores_international_domains_in_ascii_and_allow_widens_the_rules() {
    let t = TestServer::start().await;
    pipeline(t.dir.path(), ", allow = [\"ip_literal\"]");
    let (code, report, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let prepare = &report["steps"][0]["prepare"];
    assert_eq!(prepare["rejected"]["invalid email"], 5, "{prepare}");
    assert_eq!(
        prepare["domain_typos"][0]["domain"], "gmial.com",
        "{prepare}"
    );
    assert_eq!(prepare["domain_typos"][0]["rows"][0], 9, "{prepare}");
    let mut emails: Vec<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    emails.sort();
    assert_eq!(
        emails,
        [
            "anna@gmial.com",
            "ok@example.com",
            "user@[192.0.2.1]",
            "user@xn--bcher-kva.example"
        ]
    );
}

#[test]
fn an_unknown_allow_value_is_refused_with_its_position_and_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), ", allow = [\"quoted\"]");
    let out = check_here(dir.path(), &["p.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "p.toml:7:38: unknown `allow` \"quoted\"; valid values: `quoted_local`, `ip_literal` or `utf8_local`"
        ),
        "{stderr}"
    );
}

/// The benchmark's generator makes every kind of invalid address on purpose
/// and knows the rows: the address rejects are exactly those rows.
#[test]
fn the_generators_invalid_addresses_are_exactly_the_rows_rejected_for_their_address() {
    use listpipe::bench::data;
    const ROWS: u64 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let files = data::generate(dir.path(), ROWS, 0, false).unwrap();
    let pipeline = data::import_pipeline("gen", &files.receivers, "Generated", None);
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let out = check_here(dir.path(), &["p.toml"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (mut invalid, mut missing) = (Vec::new(), Vec::new());
    for i in 0..ROWS {
        match data::bad_address(i) {
            Some("") => missing.push(i + 2),
            Some(_) => invalid.push(i + 2),
            None => {}
        }
    }
    let rejects = dir.path().join(".listpipe/rejects/p/gen.rejects.csv");
    let mut reader = csv::Reader::from_path(rejects).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (row, field, reason) = (at("row_number"), at("field"), at("reason"));
    let (mut got_invalid, mut got_missing) = (Vec::new(), Vec::new());
    for record in reader.records() {
        let record = record.unwrap();
        if &record[field] != "email" {
            continue;
        }
        let n: u64 = record[row].parse().unwrap();
        if record[reason].contains("is not a valid email address: ") {
            got_invalid.push(n);
        } else {
            got_missing.push(n);
        }
    }
    assert!(
        invalid.len() > 50,
        "{} invalid rows generated",
        invalid.len()
    );
    assert_eq!(got_invalid, invalid);
    assert_eq!(got_missing, missing);
}
