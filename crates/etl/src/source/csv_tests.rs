//! Tests of reading delimited text (`csv.rs`) through `source::read`, on small fixtures
//! written to a temporary directory: encodings, delimiters, quoting, row numbers, ragged
//! rows, several files, and rejects written back and read again.

use polars::prelude::DataFrame;

use crate::source::{
    Dialect, FILE_COL, LineEnding, ROW_COL, RawReject, SourceError, SourceFormat, SourceSpec,
    Table, TextEncoding, WRONG_FIELD_COUNT, read, read_columns,
};

pub(crate) fn spec(paths: &[&str]) -> SourceSpec {
    SourceSpec {
        paths: paths.iter().map(|p| p.to_string()).collect(),
        header_row: 1,
        ..SourceSpec::default()
    }
}

/// Writes `bytes` as `name` in a fresh directory and reads it with `spec` adjusted by `tweak`.
fn read_bytes(
    name: &str,
    bytes: &[u8],
    tweak: impl FnOnce(&mut SourceSpec),
) -> Result<Table, SourceError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let mut spec = spec(&[name]);
    tweak(&mut spec);
    let whole = read(&spec, dir.path());
    // Large files are read in windows: every fixture read so, in windows
    // of a few bytes, must give the same table or the same error.
    for window in [1, 2, 5, 64] {
        let Some(windowed) = super::super::stream::read_in_windows(&spec, dir.path(), window)
        else {
            break;
        };
        match (&whole, windowed) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.columns, b.columns, "window {window}");
                assert_eq!(a.frame, b.frame, "window {window}");
                assert_eq!(a.ragged, b.ragged, "window {window}");
                assert_eq!(a.dialect, b.dialect, "window {window}");
                assert_eq!(a.padded, b.padded, "window {window}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "window {window}"),
            (a, b) => panic!("window {window}: whole {a:?}, windowed {b:?}"),
        }
    }
    whole
}

fn read_ok(name: &str, bytes: &[u8]) -> Table {
    read_bytes(name, bytes, |_| {}).unwrap()
}

pub(crate) fn cells(frame: &DataFrame, column: &str) -> Vec<Option<String>> {
    let column = frame.column(column).unwrap().str().unwrap();
    (0..column.len())
        .map(|i| column.get(i).map(String::from))
        .collect()
}

pub(crate) fn some(values: &[&str]) -> Vec<Option<String>> {
    values
        .iter()
        .map(|v| (!v.is_empty()).then(|| v.to_string()))
        .collect()
}

pub(crate) fn row_numbers(frame: &DataFrame) -> Vec<u32> {
    frame
        .column(ROW_COL)
        .unwrap()
        .u32()
        .unwrap()
        .into_no_null_iter()
        .collect()
}

#[test]
fn a_comma_separated_utf8_file_keeps_exact_cell_text_and_empty_cells_are_null() {
    let table = read_ok(
        "list.csv",
        b"email,first name,zip\nA@x.de, Anna ,01234\nb@x.de,,\n",
    );
    assert_eq!(table.columns, ["email", "first name", "zip"]);
    assert_eq!(cells(&table.frame, "email"), some(&["A@x.de", "b@x.de"]));
    assert_eq!(cells(&table.frame, "first name"), some(&[" Anna ", ""]));
    assert_eq!(cells(&table.frame, "zip"), some(&["01234", ""]));
    assert_eq!(row_numbers(&table.frame), [2, 3]);
    let files: Vec<u32> = table
        .frame
        .column(FILE_COL)
        .unwrap()
        .u32()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert_eq!(files, [0, 0]);
    assert_eq!(
        table.dialect,
        Dialect {
            format: SourceFormat::Csv,
            delimiter: b',',
            encoding: TextEncoding::Utf8,
            encoding_guessed: false,
            line_ending: LineEnding::Lf,
        }
    );
    assert!(table.ragged.is_empty());
}

#[test]
fn a_semicolon_windows_1252_file_with_umlauts_and_crlf_is_decoded() {
    let table = read_ok(
        "kunden.csv",
        b"E-Mail;Name;Stra\xDFe\r\nm@x.de;M\xFCller;K\xF6ln \x80\r\n",
    );
    assert_eq!(table.columns, ["E-Mail", "Name", "Straße"]);
    assert_eq!(cells(&table.frame, "Name"), some(&["Müller"]));
    assert_eq!(cells(&table.frame, "Straße"), some(&["Köln €"]));
    assert_eq!(table.dialect.encoding, TextEncoding::Windows1252);
    assert_eq!(table.dialect.delimiter, b';');
    assert_eq!(table.dialect.line_ending, LineEnding::Crlf);
}

#[test]
fn a_utf8_bom_never_becomes_part_of_the_first_column_name() {
    let table = read_ok(
        "excel.csv",
        "\u{feff}Email;First name\r\nfoo@x.de;Joël\r\n".as_bytes(),
    );
    assert_eq!(table.columns, ["Email", "First name"]);
    assert_eq!(cells(&table.frame, "First name"), some(&["Joël"]));
    assert_eq!(table.dialect.encoding, TextEncoding::Utf8Bom);
}

#[test]
fn a_utf16le_file_with_bom_is_read() {
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(
        "email\tname\r\nz@x.de\tZoë\r\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    let table = read_ok("unicode.txt", &bytes);
    assert_eq!(table.columns, ["email", "name"]);
    assert_eq!(cells(&table.frame, "name"), some(&["Zoë"]));
    assert_eq!(table.dialect.encoding, TextEncoding::Utf16Le);
    assert_eq!(table.dialect.delimiter, b'\t');
}

#[test]
fn tab_and_pipe_delimiters_are_sniffed_and_an_explicit_one_wins() {
    let tab = read_ok("a.tsv", b"email\tname\na@x.de\tA, B\n");
    assert_eq!(cells(&tab.frame, "name"), some(&["A, B"]));
    let pipe = read_ok("a.csv", b"email|name\na@x.de|A\n");
    assert_eq!(pipe.columns, ["email", "name"]);
    let forced = read_bytes("a.csv", b"email|name\na@x.de|A\n", |s| {
        s.delimiter = Some(b',')
    })
    .unwrap();
    assert_eq!(forced.columns, ["email|name"]);
}

#[test]
fn a_quoted_multi_line_field_is_one_row_and_the_rows_after_it_are_numbered_right() {
    for newline in ["\n", "\r\n"] {
        let text = "email,notes,name\na@x.de,\"line 1\nline 2\nline 3\",A\nb@x.de,,B\n"
            .replace('\n', newline);
        let table = read_ok("multi.csv", text.as_bytes());
        let notes = cells(&table.frame, "notes");
        assert_eq!(
            notes[0].as_deref(),
            Some(format!("line 1{newline}line 2{newline}line 3").as_str())
        );
        assert_eq!(row_numbers(&table.frame), [2, 3], "newline {newline:?}");
    }
}

#[test]
fn blank_lines_are_skipped_but_count_as_rows() {
    let table = read_ok(
        "gaps.csv",
        b"email\r\n\r\na@x.de\r\n  \r\n\r\nb@x.de\r\n\r\n",
    );
    assert_eq!(cells(&table.frame, "email"), some(&["a@x.de", "b@x.de"]));
    assert_eq!(row_numbers(&table.frame), [3, 6]);
    assert!(table.ragged.is_empty());
}

#[test]
fn short_and_long_rows_become_ragged_with_their_row_numbers_and_the_rest_is_read() {
    let text = "email,first,last\na@x.de,A,Alpha\nb@x.de,B\nc@x.de,C,Gamma\nd@x.de,D,Delta,extra\ne@x.de,E,Echo";
    let table = read_ok("ragged.csv", text.as_bytes());
    assert_eq!(
        cells(&table.frame, "email"),
        some(&["a@x.de", "c@x.de", "e@x.de"])
    );
    assert_eq!(row_numbers(&table.frame), [2, 4, 6]);
    assert_eq!(
        table.ragged,
        [
            RawReject {
                file: 0,
                row_number: 3,
                values: vec!["b@x.de".into(), "B".into()],
                reason: "row has 2 fields, the header has 3; if the missing fields are empty ones at the end, set pad_short_rows = true in the source".into(),
                category: WRONG_FIELD_COUNT,
                column: None,
            },
            RawReject {
                file: 0,
                row_number: 5,
                values: vec!["d@x.de".into(), "D".into(), "Delta".into(), "extra".into()],
                reason: "row has 4 fields, the header has 3".into(),
                category: WRONG_FIELD_COUNT,
                column: None,
            },
        ]
    );
}

#[test]
fn trailing_empty_fields_and_unnamed_trailing_columns_do_not_make_rows_ragged() {
    let table = read_ok(
        "excel.csv",
        b"email;name;\r\na@x.de;A;\r\nb@x.de;B\r\nc@x.de;C;;;\r\nd@x.de;D;x\r\n",
    );
    assert_eq!(table.columns, ["email", "name", "column_3"]);
    assert_eq!(cells(&table.frame, "column_3"), some(&["", "", "", "x"]));
    assert!(table.ragged.is_empty());
}

#[test]
fn an_excel_sep_line_names_the_delimiter_and_is_not_a_row() {
    let table = read_ok("sep.csv", b"sep=;\r\nemail;name, first\r\na@x.de;A\r\n");
    assert_eq!(table.columns, ["email", "name, first"]);
    assert_eq!(row_numbers(&table.frame), [2]);
    assert_eq!(table.dialect.delimiter, b';');
}

#[test]
fn header_row_3_skips_two_title_lines() {
    let text = b"Contacts export\nCreated 2024-03-01, by admin\nemail;name\na@x.de;A\n";
    let table = read_bytes("titled.csv", text, |s| s.header_row = 3).unwrap();
    assert_eq!(table.columns, ["email", "name"]);
    assert_eq!(cells(&table.frame, "name"), some(&["A"]));
    assert_eq!(row_numbers(&table.frame), [4]);
    assert_eq!(table.dialect.delimiter, b';');
}

#[test]
fn a_header_row_beyond_the_end_names_the_last_row() {
    let err = read_bytes("short.csv", b"a\n1\n", |s| s.header_row = 5)
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .starts_with("header row 5 is beyond the end of "),
        "{err}"
    );
    assert!(
        err.to_string()
            .ends_with("short.csv (its last row is 2); lower header_row"),
        "{err}"
    );
}

#[test]
fn a_file_without_final_newline_keeps_its_last_row() {
    let table = read_ok("last.csv", b"email,name\r\na@x.de,A\r\nb@x.de,\"B\"");
    assert_eq!(cells(&table.frame, "name"), some(&["A", "B"]));
    assert_eq!(row_numbers(&table.frame), [2, 3]);
}

#[test]
fn an_empty_file_is_an_error_naming_it() {
    for bytes in [&b""[..], b"\xEF\xBB\xBF", b"\n\r\n  \n"] {
        let err = read_bytes("empty.csv", bytes, |_| {}).err().unwrap();
        let message = err.to_string();
        assert!(
            message.ends_with(
                "empty.csv is empty (no rows, not even a header); export the list again or remove the file from `paths`"
            ),
            "{message}"
        );
    }
}

#[test]
fn a_header_only_file_has_zero_rows_and_is_not_an_error() {
    let table = read_ok("header.csv", b"email;first_name");
    assert_eq!(table.columns, ["email", "first_name"]);
    assert_eq!(table.frame.height(), 0);
    assert_eq!(table.frame.width(), 4);
}

#[test]
fn spaces_before_quotes_are_read_as_quoting_not_as_text() {
    let text = b"Email, First name, Last name\nfoo@example.com, Foo, Bar\n\"foo2@example.com\",\"Foo2\",\"Bar2\"\nfoo3@example.com, \"Smith, J\", \"Bar3\"\n";
    let table = read_ok("malformed.csv", text);
    assert_eq!(table.columns, ["Email", "First name", "Last name"]);
    assert_eq!(
        cells(&table.frame, "First name"),
        some(&[" Foo", "Foo2", "Smith, J"])
    );
    assert_eq!(
        cells(&table.frame, "Last name"),
        some(&[" Bar", "Bar2", "Bar3"])
    );
    assert!(table.ragged.is_empty());
}

#[test]
fn invalid_bytes_under_explicit_utf8_are_an_error_with_file_and_offset() {
    let err = read_bytes("bad.csv", b"email\nm\xFCller@x.de\n", |s| {
        s.encoding = Some(TextEncoding::Utf8)
    })
    .err()
    .unwrap();
    let message = err.to_string();
    assert!(
        message.contains("bad.csv: invalid UTF-8 at byte 7; set encoding"),
        "{message}"
    );
}

#[test]
fn a_column_named_like_an_internal_column_is_renamed() {
    let table = read_ok("odd.csv", b"__row,__file,email\n1,2,a@x.de\n");
    assert_eq!(table.columns, ["__row_2", "__file_2", "email"]);
    assert_eq!(row_numbers(&table.frame), [2]);
}

#[test]
fn read_columns_finds_a_header_longer_than_its_first_read() {
    let mut text = format!("email,{}\n", "n".repeat(1 << 20));
    text.push_str("a@x.de,1\n");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.csv"), &text).unwrap();
    let columns = read_columns(&spec(&["wide.csv"]), dir.path()).unwrap();
    assert_eq!(columns.len(), 2);
    assert_eq!(columns[1].len(), 1 << 20);
}

#[test]
fn ten_thousand_columns_and_a_megabyte_cell_are_read() {
    let header: Vec<String> = (0..10_000).map(|i| format!("c{i}")).collect();
    let mut text = header.join(";");
    text.push('\n');
    text.push_str(&format!("\"{}\"", "x".repeat(1 << 20)));
    text.push_str(&";v".repeat(9_999));
    let table = read_ok("wide.csv", text.as_bytes());
    assert_eq!(table.columns.len(), 10_000);
    assert_eq!(
        cells(&table.frame, "c0")[0].as_ref().map(String::len),
        Some(1 << 20)
    );
    assert_eq!(cells(&table.frame, "c9999"), some(&["v"]));
}

#[test]
fn garbage_named_csv_is_an_error_or_rows_never_a_panic() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..200 {
        let len = (round * 37) % 700;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Favour the bytes CSV parsing cares about.
                match seed % 16 {
                    0 => b'"',
                    1 => b'\n',
                    2 => b'\r',
                    3 => b';',
                    4 => b',',
                    5 => b' ',
                    _ => (seed >> 8) as u8,
                }
            })
            .collect();
        let _ = read_bytes("garbage.csv", &bytes, |_| {});
        let _ = read_bytes("garbage.csv", &bytes, |s| s.header_row = 3);
    }
    let err = read_bytes("x.csv", b"PK\x03\x04\x14\0\0\0", |_| {})
        .err()
        .unwrap();
    assert!(matches!(err, SourceError::SpreadsheetAsText { .. }));
}

#[test]
fn a_spreadsheet_file_that_is_really_text_is_refused_with_a_hint() {
    let err = read_bytes("list.xlsx", b"email\na@x.de\n", |_| {})
        .err()
        .unwrap();
    assert!(matches!(err, SourceError::NotSpreadsheet { .. }), "{err}");
    assert!(
        err.to_string()
            .ends_with("; for CSV text set format = \"csv\""),
        "{err}"
    );
}

/// A Medium member list: one address a line, no header, a blank line in the middle.
const HEADERLESS: &[u8] =
    b"lorem@example.com\nipsum@example.com\n\ndolor@example.com\nsimet@example.com\n";

#[test]
fn without_a_header_row_the_first_row_is_data_and_keeps_its_line_number() {
    // `read_bytes` reads it whole and in windows of 1, 2, 5 and 64 bytes: the same table.
    let table = read_bytes("members.txt", HEADERLESS, |s| s.no_header = true).unwrap();
    assert_eq!(table.columns, ["column_1"]);
    assert_eq!(
        cells(&table.frame, "column_1"),
        some(&[
            "lorem@example.com",
            "ipsum@example.com",
            "dolor@example.com",
            "simet@example.com"
        ])
    );
    assert_eq!(row_numbers(&table.frame), [1, 2, 4, 5]);
    assert!(table.ragged.is_empty());
    // As before without the key: the first address is the header.
    let with_header = read_bytes("members.txt", HEADERLESS, |_| {}).unwrap();
    assert_eq!(with_header.columns, ["lorem@example.com"]);
    assert_eq!(row_numbers(&with_header.frame), [2, 4, 5]);
}

#[test]
fn without_a_header_row_the_header_read_names_the_first_rows_fields() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("list.csv"),
        b"a@x.de;Anna;\r\nb@x.de;Bob;Bonn\r\n",
    )
    .unwrap();
    let mut spec = spec(&["list.csv"]);
    spec.no_header = true;
    assert_eq!(
        read_columns(&spec, dir.path()).unwrap(),
        ["column_1", "column_2", "column_3"]
    );
    let table = read_bytes("list.csv", b"a@x.de;Anna;\r\nb@x.de;Bob;Bonn\r\n", |s| {
        s.no_header = true
    })
    .unwrap();
    assert_eq!(table.columns, ["column_1", "column_2", "column_3"]);
    assert_eq!(cells(&table.frame, "column_3"), some(&["", "Bonn"]));
    assert_eq!(row_numbers(&table.frame), [1, 2]);
}

#[test]
fn without_a_header_row_header_row_says_where_the_data_starts() {
    let text = b"Members export\n\nx@a.de,X\ny@a.de,Y\n";
    let table = read_bytes("titled.csv", text, |s| {
        s.no_header = true;
        s.header_row = 3;
    })
    .unwrap();
    assert_eq!(table.columns, ["column_1", "column_2"]);
    assert_eq!(cells(&table.frame, "column_1"), some(&["x@a.de", "y@a.de"]));
    assert_eq!(row_numbers(&table.frame), [3, 4]);
    // A blank row there: the data starts on the first non-blank row below it.
    let table = read_bytes("titled.csv", text, |s| {
        s.no_header = true;
        s.header_row = 2;
    })
    .unwrap();
    assert_eq!(row_numbers(&table.frame), [3, 4]);
    let err = read_bytes("titled.csv", text, |s| {
        s.no_header = true;
        s.header_row = 9;
    })
    .err()
    .unwrap();
    assert!(
        err.to_string().starts_with("header row 9 is beyond"),
        "{err}"
    );
}

#[test]
fn without_a_header_row_rows_wider_or_shorter_than_the_first_are_ragged_as_usual() {
    let text = b"a@x.de,A\nb@x.de,B,extra\nc@x.de\nd@x.de,D\n";
    let table = read_bytes("list.csv", text, |s| s.no_header = true).unwrap();
    assert_eq!(cells(&table.frame, "column_1"), some(&["a@x.de", "d@x.de"]));
    assert_eq!(row_numbers(&table.frame), [1, 4]);
    let ragged: Vec<(u64, &str)> = table
        .ragged
        .iter()
        .map(|r| (r.row_number, r.reason.as_str()))
        .collect();
    assert_eq!(
        ragged,
        [
            (2, "row has 3 fields, the header has 2"),
            (
                3,
                "row has 1 fields, the header has 2; if the missing fields are empty ones at the end, set pad_short_rows = true in the source"
            ),
        ]
    );
    let padded = read_bytes("list.csv", text, |s| {
        s.no_header = true;
        s.pad_short_rows = true;
    })
    .unwrap();
    assert_eq!(row_numbers(&padded.frame), [1, 3, 4]);
    assert_eq!(padded.padded, 1);
}

#[test]
fn without_a_header_row_a_quote_that_never_closes_in_the_first_row_rejects_that_row() {
    let text = b"a@x.de,\"never closes\nb@x.de,B\nc@x.de,C\n";
    let table = read_bytes("list.csv", text, |s| s.no_header = true).unwrap();
    assert_eq!(table.columns, ["column_1", "column_2"]);
    assert_eq!(cells(&table.frame, "column_1"), some(&["b@x.de", "c@x.de"]));
    assert_eq!(row_numbers(&table.frame), [2, 3]);
    assert_eq!(table.ragged.len(), 1);
    assert_eq!(table.ragged[0].row_number, 1);
    assert_eq!(table.ragged[0].column.as_deref(), Some("column_2"));
}

#[test]
fn without_a_header_row_a_sheets_first_row_is_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    sheet.write_string(0, 0, "Members").unwrap();
    sheet.write_string(2, 0, "a@x.de").unwrap();
    sheet.write_string(2, 1, "Anna").unwrap();
    sheet.write_string(3, 0, "b@x.de").unwrap();
    sheet.write_string(4, 0, "c@x.de").unwrap();
    book.save(dir.path().join("list.xlsx")).unwrap();
    let mut spec = spec(&["list.xlsx"]);
    spec.no_header = true;
    spec.header_row = 2;
    let table = read(&spec, dir.path()).unwrap();
    assert_eq!(table.columns, ["column_1", "column_2"]);
    assert_eq!(
        cells(&table.frame, "column_1"),
        some(&["a@x.de", "b@x.de", "c@x.de"])
    );
    assert_eq!(cells(&table.frame, "column_2"), some(&["Anna", "", ""]));
    assert_eq!(row_numbers(&table.frame), [3, 4, 5]);
    assert_eq!(read_columns(&spec, dir.path()).unwrap(), table.columns);
}
