//! Tests of `sample.rs`: a file without a header row (its first row holds an address) is
//! read with `header = false`, and the draft's `source` line says so; a file with a header
//! is read as before.

use super::ask::NoQuestions;
use super::sample::{self, Sample};
use super::{Options, draft};

/// Writes `bytes` as `name` in a fresh folder and reads its sample.
fn sample_of(name: &str, bytes: &[u8]) -> Sample {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    sample::read(&[name.to_string()], dir.path()).unwrap()
}

/// The draft `init` writes for `name` holding `bytes`, and the folder both are in.
fn draft_of(name: &str, bytes: &[u8]) -> (tempfile::TempDir, super::Draft) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let opts = Options {
        sources: vec![name.into()],
        local: vec![name.into()],
        base: dir.path().to_path_buf(),
        out_dir: Some(dir.path().to_path_buf()),
        group: Some("g".into()),
        target: None,
    };
    let d = draft(&opts, &mut NoQuestions).unwrap();
    (dir, d)
}

fn cells(sample: &Sample, column: usize) -> Vec<Option<&str>> {
    sample.cells[column].iter().map(|c| c.as_deref()).collect()
}

const MEMBERS: &[u8] =
    b"lorem@example.com\nipsum@example.com\n\ndolor@example.com\nsimet@example.com\namett@example.com\n";

#[test]
fn a_headerless_list_of_addresses_is_read_without_a_header_and_keeps_its_first_row() {
    let s = sample_of("members.txt", MEMBERS);
    assert!(s.no_header);
    assert_eq!(s.header_row, 1);
    assert_eq!(s.columns, ["column_1"]);
    assert_eq!(s.rows, 5);
    assert_eq!(
        cells(&s, 0),
        [
            Some("lorem@example.com"),
            Some("ipsum@example.com"),
            Some("dolor@example.com"),
            Some("simet@example.com"),
            Some("amett@example.com"),
        ]
    );
}

#[test]
fn a_headerless_file_of_several_columns_is_detected_by_its_address_cell() {
    let s = sample_of(
        "list.csv",
        b"Anna;anna@example.com;Berlin\nBob;bob@example.com;Bonn\n",
    );
    assert!(s.no_header);
    assert_eq!(s.columns, ["column_1", "column_2", "column_3"]);
    assert_eq!(s.rows, 2);
    assert_eq!(
        cells(&s, 1),
        [Some("anna@example.com"), Some("bob@example.com")]
    );
}

#[test]
fn a_file_with_a_header_named_email_over_addresses_keeps_its_header() {
    let s = sample_of("list.csv", b"email\na@example.com\nb@example.com\n");
    assert!(!s.no_header);
    assert_eq!(s.columns, ["email"]);
    assert_eq!(s.rows, 2);
}

#[test]
fn a_normal_file_with_a_header_is_not_taken_for_a_headerless_one() {
    let s = sample_of(
        "list.csv",
        b"E-Mail,Name,City\na@example.com,Anna,Berlin\nb@example.com,Bob,Bonn\n",
    );
    assert!(!s.no_header);
    assert_eq!(s.header_row, 1);
    assert_eq!(s.columns, ["E-Mail", "Name", "City"]);
    assert_eq!(s.rows, 2);
}

#[test]
fn titles_above_headerless_rows_give_their_row_and_header_false() {
    let s = sample_of(
        "report.csv",
        b"Members export\nExported 2024-01-31\nanna@example.com,Anna\nbob@example.com,Bob\ncarl@example.com,Carl\n",
    );
    assert!(s.no_header);
    assert_eq!(s.header_row, 3);
    assert_eq!(s.columns, ["column_1", "column_2"]);
    assert_eq!(s.rows, 3);
    assert_eq!(cells(&s, 0)[0], Some("anna@example.com"));
}

#[test]
fn the_draft_of_a_headerless_file_says_header_false_and_maps_column_1() {
    let (dir, d) = draft_of("members.txt", MEMBERS);
    let source = d.text.lines().find(|l| l.starts_with("source = ")).unwrap();
    assert!(source.contains("header = false"), "{}", d.text);
    assert!(!source.contains("header_row"), "{}", d.text);
    // Comments are wrapped: read them as one line.
    let unwrapped = d.text.replace("\n# ", " ");
    assert!(
        unwrapped.contains("no header row: the first row is data, columns are column_1."),
        "{}",
        d.text
    );
    assert!(d.text.contains("email = \"column_1\""), "{}", d.text);
    assert!(
        d.look_at.iter().any(|l| l.contains("has no header row")),
        "{:?}",
        d.look_at
    );
    // The pipeline is accepted: `column_1` is a column of the source read with it.
    let parsed = crate::pipeline::parse_text(&dir.path().join("p.toml"), &d.text);
    assert!(parsed.is_ok(), "{}\n{:?}", d.text, parsed.err());
}

#[test]
fn the_draft_of_a_file_with_a_header_has_no_header_key() {
    let (_dir, d) = draft_of("list.csv", b"email,name\na@example.com,Anna\n");
    assert!(!d.text.contains("header = false"), "{}", d.text);
    assert!(!d.look_at.iter().any(|l| l.contains("no header row")));
}
