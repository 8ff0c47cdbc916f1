//! What reading a source tells a new user (issue 12, issue 21's unterminated quote): the
//! reject reasons with a first row in `check` and the run's summary, UTF-8 rejects with an
//! optional BOM, short rows padded, null placeholders, numbers Excel mangled, several sheets
//! of a workbook, a quote that never closes, and a Japanese export in CP932 (issue 55).
//! Fixtures are written here, reproducing the traits of real exports (an Outlook contacts
//! CSV in Windows-1252, a workbook per year, a Japanese Excel's "CSV").

use crate::import::{listpipe, run};
use crate::in_process::run_here;
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
    let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
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
    let (code, _, stderr) = run_here(&t, &pipeline, &[]).await;
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

/// A Japanese Excel's "CSV": CP932 (Shift_JIS with Microsoft's extensions: `髙` of 髙橋 is
/// one of them), CRLF, Japanese column names; one row's address is not one.
fn cp932_contacts() -> Vec<u8> {
    let text = "メールアドレス,姓,名,都道府県\r\n\
tanaka@example.jp,田中,太郎,東京都\r\n\
suzuki@example.jp,鈴木,花子,大阪府\r\n\
takahashi@example.jp,髙橋,美咲,愛知県\r\n\
sato@example.jp,佐藤,健,神奈川県\r\n\
ito@example.jp,伊藤,翔太,北海道\r\n\
watanabe@example.jp,渡辺,さくら,福岡県\r\n\
yamamoto@example.jp,山本,大輔,兵庫県\r\n\
nakamura@example.jp,中村,あゆみ,京都府\r\n\
kobayashi@example.jp,小林,直樹,宮城県\r\n\
メールなし,加藤,ゆかり,広島県\r\n";
    let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode(text);
    assert!(!unmappable);
    bytes.into_owned()
}

const CP932_PIPELINE: &str = "[[import]]\nname = \"kunden\"\nsource = SOURCE\ngroup = \"顧客\"\ncreate_group = true\n\
     [import.receiver]\nemail = \"メールアドレス\"\n\
     [import.global_attributes]\nlastname = \"姓\"\nfirstname = \"名\"\ncity = \"都道府県\"\n";

#[tokio::test]
async fn a_cp932_export_with_japanese_names_is_detected_imported_and_read_back_intact() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(dir, "kunden.csv", &cp932_contacts());
    write(
        dir,
        "p.toml",
        CP932_PIPELINE
            .replace("SOURCE", "\"kunden.csv\"")
            .as_bytes(),
    );
    // `check` shows the names as they will be sent: detected, not guessed (no warning).
    let c = check(dir);
    assert_eq!(c.code, 1, "{}{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains(
            r#"row 4: {"email":"takahashi@example.jp","global_attributes":{"city":"愛知県","firstname":"美咲","lastname":"髙橋"}}"#
        ),
        "{}",
        c.stdout
    );
    assert!(!c.stdout.contains("guessed"), "{}", c.stdout);

    let (code, _, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 1, "the row without an address is rejected\n{stderr}");
    let receivers = t.receivers_of("顧客").await;
    assert_eq!(receivers.len(), 9);
    let name = |email: &str| {
        let r = receivers.iter().find(|r| r.email == email).unwrap();
        (
            r.global_attributes["lastname"].as_str(),
            r.global_attributes["firstname"].as_str(),
            r.global_attributes["city"].as_str(),
        )
    };
    assert_eq!(name("tanaka@example.jp"), ("田中", "太郎", "東京都"));
    assert_eq!(name("takahashi@example.jp"), ("髙橋", "美咲", "愛知県"));
    assert_eq!(name("watanabe@example.jp"), ("渡辺", "さくら", "福岡県"));
    // Rejects are UTF-8, as for every source, the Japanese text intact.
    let rejects = std::fs::read(dir.join(".listpipe/rejects/p/kunden.rejects.csv")).unwrap();
    let rejects = String::from_utf8(rejects).expect("UTF-8 rejects");
    assert!(
        rejects.starts_with("メールアドレス,姓,名,都道府県,row_number,field,reason\r\nメールなし,加藤,ゆかり,広島県,11,"),
        "{rejects}"
    );
}

#[test]
fn an_encoding_named_in_the_source_is_used_and_a_guess_is_named_by_check() {
    let dir = tempfile::tempdir().unwrap();
    // One row: too little for the detector to be sure.
    let (one_row, _, _) =
        encoding_rs::SHIFT_JIS.encode("email,name\r\ntanaka@example.jp,田中 太郎\r\n");
    write(dir.path(), "in.csv", &one_row);
    let pipeline = |source: &str| {
        format!(
            "[[import]]\nname = \"imp\"\nsource = {source}\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nname = \"name\"\n"
        )
    };
    write(dir.path(), "p.toml", pipeline("\"in.csv\"").as_bytes());
    let c = check(dir.path());
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains(
            "\n[imp] import into group \"News\"\n  warning: in.csv: the encoding was guessed as shift_jis; if the text looks wrong, set encoding = \"...\" in the source to the file's real encoding (encoding = \"shift_jis\" keeps this one)\n"
        ),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains(r#""name":"田中 太郎""#), "{}", c.stdout);

    write(
        dir.path(),
        "p.toml",
        pipeline("{ path = \"in.csv\", encoding = \"cp932\" }").as_bytes(),
    );
    let c = check(dir.path());
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    assert!(!c.stdout.contains("guessed"), "{}", c.stdout);
    assert!(c.stdout.contains(r#""name":"田中 太郎""#), "{}", c.stdout);

    write(
        dir.path(),
        "p.toml",
        pipeline("{ path = \"in.csv\", encoding = \"cp-932\" }").as_bytes(),
    );
    let c = check(dir.path());
    assert_eq!(c.code, 2, "{}", c.stdout);
    assert!(
        c.stderr.contains("unknown encoding \"cp-932\"; valid encodings: utf-8, utf-8-bom, utf-16, utf-16le, utf-16be, windows-1252, latin-1, windows-1250 to windows-1258, windows-874, iso-8859-2 to iso-8859-16, koi8-r, koi8-u, ibm866, x-mac-cyrillic, macintosh, shift_jis (cp932), euc-jp, iso-2022-jp, gbk, gb18030, big5, euc-kr"),
        "{}",
        c.stderr
    );
}

/// A Medium member list: one address a line, no header, an empty third line.
const MEDIUM_MEMBERS: &[u8] = b"lorem@example.com\nipsum@example.com\n\ndolor@example.com\nsimet@example.com\namett@example.com\n";

#[tokio::test]
async fn a_headerless_list_of_addresses_is_imported_whole_by_the_pipeline_init_writes() {
    let t = TestServer::start().await;
    let (pipeline, summary, rows) =
        crate::init::init_run_export(&t, &[("members.txt", MEDIUM_MEMBERS)], "G").await;
    assert!(
        pipeline.contains(
            "source = { path = \"exports/members.txt\", delimiter = \",\", encoding = \"utf-8\", header = false }"
        ),
        "{pipeline}"
    );
    assert!(pipeline.contains("email = \"column_1\""), "{pipeline}");
    assert!(summary.contains("no header row"), "{summary}");
    assert_eq!(
        crate::init::emails(&rows),
        [
            "amett@example.com",
            "dolor@example.com",
            "ipsum@example.com",
            "lorem@example.com",
            "simet@example.com"
        ]
    );
}

#[test]
fn header_false_names_the_columns_column_n_and_a_non_boolean_is_refused_at_the_key() {
    use crate::pipeline_errors::errors_beside;
    let files: &[(&str, &[u8])] = &[
        ("members.txt", MEDIUM_MEMBERS),
        ("members.jsonl", b"{\"email\":\"a@example.com\"}\n"),
    ];
    let pipeline = |source: &str| {
        format!(
            "[[import]]\nsource = {source}\ngroup = \"News\"\n[import.receiver]\nemail = \"column_1\"\n"
        )
    };
    let no_header = pipeline("{ path = \"members.txt\", header = false }");
    assert_eq!(errors_beside(files, &no_header), Vec::<String>::new());
    // The key refused, the source is read with its first row as the header, as without it.
    assert_eq!(
        errors_beside(
            files,
            &pipeline("{ path = \"members.txt\", header = \"no\" }")
        ),
        [
            "p.toml:2:43: `header` in `source` of [[import]] step 1 must be true or false, not a string",
            "p.toml:5:9: the source has no column \"column_1\"; its columns: `lorem@example.com`"
        ]
    );
    assert_eq!(
        errors_beside(
            files,
            &pipeline("{ path = \"members.txt\", header = true }")
        ),
        ["p.toml:5:9: the source has no column \"column_1\"; its columns: `lorem@example.com`"]
    );
    assert_eq!(
        errors_beside(
            files,
            &pipeline("{ path = \"members.jsonl\", header = false }")
        ),
        [
            "p.toml:2:45: `header = false` is for CSV files and spreadsheets without a header row; a Parquet or JSON lines file names its own columns; remove it",
            "p.toml:5:9: the source has no column \"column_1\"; its columns: `email`"
        ]
    );
    // `check` reads every address, the first line's too, under its own row number.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "members.txt", MEDIUM_MEMBERS);
    write(dir.path(), "p.toml", no_header.as_bytes());
    let c = check(dir.path());
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    assert!(c.stdout.contains("5 rows read"), "{}", c.stdout);
    assert!(
        c.stdout.contains("  row 1: ") && c.stdout.contains("lorem@example.com"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("  row 4: "), "{}", c.stdout);
}
