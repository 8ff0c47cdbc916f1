//! What reading a source tells a new user (issue 12, issue 21's unterminated quote): the
//! reject reasons with a first row in `check` and the run's summary, UTF-8 rejects with an
//! optional BOM, short rows padded, null placeholders, numbers Excel mangled, several sheets
//! of a workbook, and a quote that never closes. Fixtures are written here, reproducing the
//! traits of real exports (an Outlook contacts CSV in Windows-1252, a workbook per year).

use crate::import::{listpipe, run};
use crate::support::TestServer;
use std::path::Path;

/// An Outlook-like contacts export: Windows-1252, CRLF, every field quoted, `0.0.00` for
/// "no birthday", a phone number Excel wrote as `7.02255E+12`, a row shorter than the
/// header (Outlook leaves trailing fields off) and one longer.
const OUTLOOK: &[u8] = b"\"First Name\",\"Last Name\",\"E-mail Address\",\"Birthday\",\"Business Phone\",\"Notes\",\"Categories\",\"Sensitivity\"\r\n\
\"J\xfcrgen\",\"Wei\xdf\",\"juergen@example.com\",\"0.0.00\",\"7.02255E+12\",\"\",\"\",\"Normal\"\r\n\
\"Anna\",\"Schmidt\",\"anna@example.com\",\"3.4.1985\",\"030 1234\",\"\"\r\n\
\"Bernd\",\"K\xfchn\",\"bernd@example.com\",\"0.0.00\",\"\",\"\",\"\",\"Normal\"\r\n\
\"Carla\",\"Lang\",\"carla@example.com\",\"0.0.00\",\"\",\"\",\"\",\"Normal\",\"extra\"\r\n";

fn outlook_pipeline(source: &str, step_keys: &str) -> String {
    format!(
        "[[import]]\nname = \"contacts\"\nsource = {source}\ngroup = \"Kontakte\"\ncreate_group = true\n{step_keys}\n\
         [import.receiver]\nemail = \"E-mail Address\"\n\
         [import.global_attributes]\nfirstname = \"First Name\"\n\
         birthday = {{ column = \"Birthday\", type = \"date\", format = \"%d.%m.%Y\" }}\n"
    )
}

struct Checked {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `listpipe check p.toml` in `dir`. The previews' `"registered":<time>,`
/// (a new receiver awaits activation) is left out: the time is the run's.
fn check(dir: &Path) -> Checked {
    let out = listpipe(dir, &["check", "p.toml", "--preview", "10"]);
    Checked {
        code: out.status.code().unwrap_or(-1),
        stdout: without_registered(&String::from_utf8_lossy(&out.stdout)),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn without_registered(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(",\"registered\":") {
        out.push_str(&rest[..at]);
        rest = &rest[at + ",\"registered\":".len()..];
        rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn check_lists_each_reject_reason_with_its_count_and_first_row_and_warns_of_mangled_numbers() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "outlook.csv", OUTLOOK);
    write(
        dir.path(),
        "p.toml",
        outlook_pipeline("\"outlook.csv\"", "").as_bytes(),
    );
    let c = check(dir.path());
    assert_eq!(c.code, 1, "{}", c.stderr);
    assert!(
        c.stdout.contains(
            "  4 rows read, 4 rejected, 0 duplicates, 0 tags normalised\n\
             \x20   invalid birthday: 2, e.g. row 2, birthday \"0.0.00\": \"0.0.00\" is not a date in the format %d.%m.%Y; if it means \"no date\", set null_values = [\"0.0.00\"]\n\
             \x20   wrong number of fields: 2, e.g. row 3: row has 6 fields, the header has 8; if the missing fields are empty ones at the end, set pad_short_rows = true in the source\n\
             \x20 warning: column \"Business Phone\" holds 1 number in scientific notation (row 2, e.g. \"7.02255E+12\"): Excel dropped their digits; export the column as text from the original\n"
        ),
        "{}",
        c.stdout
    );
}

#[test]
fn rejects_of_a_windows_1252_source_are_utf_8_and_rejects_bom_puts_a_bom_first() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "outlook.csv", OUTLOOK);
    write(
        dir.path(),
        "p.toml",
        outlook_pipeline("\"outlook.csv\"", "").as_bytes(),
    );
    check(dir.path());
    let rejects = dir.path().join(".listpipe/rejects/p/contacts.rejects.csv");
    let text = String::from_utf8(std::fs::read(&rejects).unwrap()).expect("UTF-8 rejects");
    assert!(
        text.starts_with("First Name,Last Name,E-mail Address,Birthday,Business Phone,Notes,Categories,Sensitivity,row_number,field,reason\r\nJürgen,Weiß,juergen@example.com,0.0.00,7.02255E+12,,,Normal,2,birthday,"),
        "{text}"
    );

    write(
        dir.path(),
        "p.toml",
        outlook_pipeline("\"outlook.csv\"", "rejects_bom = true").as_bytes(),
    );
    check(dir.path());
    let bytes = std::fs::read(&rejects).unwrap();
    assert!(bytes.starts_with(b"\xEF\xBB\xBFFirst Name,"), "{bytes:?}");
}

#[test]
fn new_keys_of_the_wrong_type_are_refused_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "outlook.csv", OUTLOOK);
    let toml = outlook_pipeline(
        "{ path = \"outlook.csv\", pad_short_rows = \"yes\", max_quoted_lines = 0 }",
        "rejects_bom = 1\nnull_values = [0]",
    );
    write(dir.path(), "p.toml", toml.as_bytes());
    let c = check(dir.path());
    assert_eq!(c.code, 2, "{}", c.stdout);
    assert_eq!(
        c.stderr,
        "p.toml:3:51: `pad_short_rows` in `source` of [[import]] step 1 must be true or false, not a string\n\
         p.toml:3:77: `max_quoted_lines` in `source` of [[import]] step 1 must be a whole number from 1 to 100000000\n\
         p.toml:6:15: `rejects_bom` in [[import]] step 1 must be true or false, not an integer\n\
         p.toml:7:16: `null_values` in [[import]] step 1 must list strings, not an integer\n"
    );
}

#[test]
fn null_values_of_a_column_empty_only_that_column_and_ignore_case() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.csv",
        b"email,birthday,city\na@example.com,n/a,N/A\n",
    );
    write(
        dir.path(),
        "p.toml",
        b"[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n\
          [import.global_attributes]\nbirthday = { column = \"birthday\", type = \"date\", null_values = [\"N/A\"] }\ncity = \"city\"\n",
    );
    let c = check(dir.path());
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    assert!(
        c.stdout
            .contains(r#"row 2: {"email":"a@example.com","global_attributes":{"city":"N/A"}}"#),
        "{}",
        c.stdout
    );
}

#[tokio::test]
async fn an_outlook_export_with_short_rows_padded_and_its_placeholder_birthdays_is_imported() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "outlook.csv", OUTLOOK);
    let pipeline = dir.join("p.toml");
    std::fs::write(
        &pipeline,
        outlook_pipeline(
            "{ path = \"outlook.csv\", pad_short_rows = true }",
            "null_values = [\"0.0.00\"]",
        ),
    )
    .unwrap();
    let (code, report, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 1, "the long row is still rejected\n{stderr}");
    assert!(
        stderr.contains(
            "contacts: rejected: wrong number of fields: 1, e.g. row 5: row has 9 fields, the header has 8\n\
             contacts: source: 1 short row padded with empty fields (pad_short_rows)\n\
             contacts: source: warning: column \"Business Phone\" holds 1 number in scientific notation (row 2, e.g. \"7.02255E+12\")"
        ),
        "{stderr}"
    );
    let prepare = &report["steps"][0]["prepare"];
    assert_eq!(prepare["padded"], 1);
    assert_eq!(prepare["mangled_numbers"][0]["column"], "Business Phone");
    assert_eq!(
        prepare["mangled_numbers"][0]["rows"],
        serde_json::json!([2])
    );
    assert_eq!(
        prepare["reject_examples"]["wrong number of fields"]["row"],
        5
    );
    let receivers = t.receivers_of("Kontakte").await;
    let mut emails: Vec<&str> = receivers.iter().map(|r| r.email.as_str()).collect();
    emails.sort();
    assert_eq!(
        emails,
        [
            "anna@example.com",
            "bernd@example.com",
            "juergen@example.com"
        ]
    );
    let anna = receivers
        .iter()
        .find(|r| r.email == "anna@example.com")
        .unwrap();
    assert_eq!(anna.global_attributes["birthday"], "1985-04-03");
    let juergen = receivers
        .iter()
        .find(|r| r.email == "juergen@example.com")
        .unwrap();
    assert_eq!(juergen.global_attributes["firstname"], "Jürgen");
    assert!(
        juergen
            .global_attributes
            .get("birthday")
            .is_none_or(|b| b.is_empty())
    );
}

const UNTERMINATED: &[u8] = b"email,name\nx@example.com,ok\n\"y@example.com,unterminated\nz@example.com,ok\nw@example.com,ok\n";

#[test]
fn a_quote_that_never_closes_is_named_with_its_row_and_the_rows_after_it_are_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.csv", UNTERMINATED);
    write(
        dir.path(),
        "p.toml",
        b"[[import]]\nname = \"imp\"\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
    );
    let c = check(dir.path());
    assert_eq!(c.code, 1, "{}", c.stderr);
    let reason = "the quote opened in column \"email\" (field 1) of row 3 never closes: it ran to the end of the file, over 3 lines; the row is rejected and the lines after it are read as rows";
    assert!(
        c.stdout.contains(&format!(
            "  row 2: {{\"email\":\"x@example.com\"}}\n  row 4: {{\"email\":\"z@example.com\"}}\n  row 5: {{\"email\":\"w@example.com\"}}\n  3 receivers to send, 0 orders\n  4 rows read, 1 rejected, 0 duplicates, 0 tags normalised\n    unterminated quote: 1, e.g. row 3, email: {reason}\n"
        )),
        "{}",
        c.stdout
    );
    let rejects =
        std::fs::read_to_string(dir.path().join(".listpipe/rejects/p/imp.rejects.csv")).unwrap();
    assert_eq!(
        rejects,
        format!(
            "email,name,row_number,field,reason\n\"\"\"y@example.com\",unterminated,3,email,\"{}\"\n",
            reason.replace('"', "\"\"")
        )
    );
}

#[test]
fn a_quoted_field_longer_than_max_quoted_lines_is_taken_for_an_unclosed_quote() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.csv",
        b"email,note\na@example.com,\"one\ntwo\nthree\"\nb@example.com,ok\n",
    );
    write(
        dir.path(),
        "p.toml",
        b"[[import]]\nname = \"imp\"\nsource = { path = \"in.csv\", max_quoted_lines = 2 }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
    );
    let c = check(dir.path());
    assert!(
        c.stdout.contains("unterminated quote: 1, e.g. row 2, note: the quote opened in column \"note\" (field 2) of row 2 did not close within 2 lines (it closed after 3; raise `max_quoted_lines` if a field really is that long)"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("b@example.com"), "{}", c.stdout);
}

#[tokio::test]
async fn the_addresses_after_an_unterminated_quote_are_imported() {
    let t = TestServer::start().await;
    write(t.dir.path(), "in.csv", UNTERMINATED);
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "[[import]]\nname = \"imp\"\nsource = \"in.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("imp: rejected: unterminated quote: 1, e.g. row 3, email: the quote opened in column \"email\" (field 1) of row 3 never closes"),
        "{stderr}"
    );
    assert_eq!(
        report["steps"][0]["prepare"]["rejected"]["unterminated quote"],
        1
    );
    let mut emails: Vec<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    emails.sort();
    assert_eq!(emails, ["w@example.com", "x@example.com", "z@example.com"]);
}

/// A workbook with a sheet per year (same layout) and a notes sheet.
fn workbook(path: &Path) {
    let mut book = rust_xlsxwriter::Workbook::new();
    for (name, rows) in [
        (
            "2024",
            &[["a@example.com", "Anna"], ["b@example.com", "Bernd"]][..],
        ),
        (
            "2025",
            &[["c@example.com", "Carla"], ["not-an-address", "Dora"]][..],
        ),
    ] {
        let sheet = book.add_worksheet().set_name(name).unwrap();
        sheet.write_string(0, 0, "email").unwrap();
        sheet.write_string(0, 1, "name").unwrap();
        for (i, row) in rows.iter().enumerate() {
            for (j, cell) in row.iter().enumerate() {
                sheet.write_string(i as u32 + 1, j as u16, *cell).unwrap();
            }
        }
    }
    let notes = book.add_worksheet().set_name("Notes").unwrap();
    notes.write_string(0, 0, "exported by hand").unwrap();
    book.save(path).unwrap();
}

const BOOK_PIPELINE: &str = "[[import]]\nname = \"imp\"\nsource = SOURCE\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nfirstname = \"name\"\n";

#[test]
fn check_names_the_sheets_of_a_workbook_and_the_ones_it_read() {
    let dir = tempfile::tempdir().unwrap();
    workbook(&dir.path().join("book.xlsx"));
    write(
        dir.path(),
        "p.toml",
        BOOK_PIPELINE.replace("SOURCE", "\"book.xlsx\"").as_bytes(),
    );
    let c = check(dir.path());
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("  workbook book.xlsx: sheets 2024, 2025, Notes; read 2024\n"),
        "{}",
        c.stdout
    );

    write(
        dir.path(),
        "p.toml",
        BOOK_PIPELINE
            .replace(
                "SOURCE",
                "{ path = \"book.xlsx\", sheets = [\"2024\", \"2025\"] }",
            )
            .as_bytes(),
    );
    let c = check(dir.path());
    assert_eq!(c.code, 1, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("  workbook book.xlsx: sheets 2024, 2025, Notes; read 2024, 2025\n"),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout.contains("    invalid email: 1, e.g. row 3 of book.xlsx[2025], email \"not-an-address\": \"not-an-address\" is not a valid email address: no @\n"),
        "{}",
        c.stdout
    );
    let rejects =
        std::fs::read_to_string(dir.path().join(".listpipe/rejects/p/imp.rejects.csv")).unwrap();
    assert_eq!(
        rejects,
        "\u{feff}email,name,file,row_number,field,reason\r\nnot-an-address,Dora,book.xlsx[2025],3,email,\"\"\"not-an-address\"\" is not a valid email address: no @\"\r\n"
    );
}

#[tokio::test]
async fn every_sheet_of_a_workbook_is_imported_with_sheet_star() {
    let t = TestServer::start().await;
    workbook(&t.dir.path().join("book.xlsx"));
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        BOOK_PIPELINE.replace("SOURCE", "{ path = \"book.xlsx\", sheet = \"*\" }"),
    )
    .unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let mut emails: Vec<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    emails.sort();
    assert_eq!(emails, ["a@example.com", "b@example.com", "c@example.com"]);
}
