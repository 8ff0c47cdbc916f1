//! Tests of spreadsheet reading (`xlsx.rs`): the cell-to-text rules on calamine values, and,
//! when the crate ships `samples/kontakte.xlsx`, a whole workbook through `source::read`.

use std::path::Path;

use calamine::{CellErrorType, Data, ExcelDateTime, ExcelDateTimeType};

use super::*;
use crate::source::{FILE_COL, ROW_COL, SourceError, read, read_columns};

fn date(serial: f64) -> Data {
    Data::DateTime(ExcelDateTime::new(
        serial,
        ExcelDateTimeType::DateTime,
        false,
    ))
}

fn text(cell: Data) -> Option<String> {
    cell_text(&cell)
}

#[test]
fn whole_numbers_read_as_floats_print_as_integers() {
    assert_eq!(
        text(Data::Float(4915112345678.0)).as_deref(),
        Some("4915112345678")
    );
    assert_eq!(text(Data::Float(12345.0)).as_deref(), Some("12345"));
    assert_eq!(text(Data::Float(-3.0)).as_deref(), Some("-3"));
    assert_eq!(text(Data::Float(-0.0)).as_deref(), Some("0"));
    assert_eq!(text(Data::Int(42)).as_deref(), Some("42"));
}

#[test]
fn other_floats_print_shortest_as_excel_shows_them() {
    assert_eq!(text(Data::Float(0.5)).as_deref(), Some("0.5"));
    assert_eq!(text(Data::Float(1.1 * 3.0)).as_deref(), Some("3.3"));
    assert_eq!(text(Data::Float(0.1 + 0.2)).as_deref(), Some("0.3"));
    assert_eq!(text(Data::Float(2.9999999999999996)).as_deref(), Some("3"));
    assert_eq!(text(Data::Float(1e15)).as_deref(), Some("1000000000000000"));
    assert_eq!(text(Data::Float(1.5e300)).as_deref(), Some("1.5e300"));
    assert_eq!(text(Data::Float(1.25e-9)).as_deref(), Some("1.25e-9"));
}

#[test]
fn text_cells_stay_text_and_empty_ones_are_null() {
    assert_eq!(text(Data::String("01234".into())).as_deref(), Some("01234"));
    assert_eq!(text(Data::String(" a ".into())).as_deref(), Some(" a "));
    assert_eq!(text(Data::String(String::new())), None);
    assert_eq!(text(Data::Empty), None);
    assert_eq!(
        text(Data::DateTimeIso("2024-03-15T10:00:00".into())).as_deref(),
        Some("2024-03-15T10:00:00")
    );
    assert_eq!(
        text(Data::DurationIso("PT1H".into())).as_deref(),
        Some("PT1H")
    );
}

#[test]
fn booleans_and_errors_print_as_their_text() {
    assert_eq!(text(Data::Bool(true)).as_deref(), Some("true"));
    assert_eq!(text(Data::Bool(false)).as_deref(), Some("false"));
    assert_eq!(
        text(Data::Error(CellErrorType::Div0)).as_deref(),
        Some("#DIV/0!")
    );
    assert_eq!(
        text(Data::Error(CellErrorType::NA)).as_deref(),
        Some("#N/A")
    );
}

#[test]
fn dates_print_as_iso_dates_or_date_times() {
    assert_eq!(text(date(45366.0)).as_deref(), Some("2024-03-15"));
    assert_eq!(text(date(45366.5)).as_deref(), Some("2024-03-15T12:00:00"));
    // Float noise just below a whole second rounds to it.
    assert_eq!(
        text(date(45366.5 - 1e-9)).as_deref(),
        Some("2024-03-15T12:00:00")
    );
    assert_eq!(text(date(45_366.999_999_99)).as_deref(), Some("2024-03-16"));
    assert_eq!(text(date(0.75)).as_deref(), Some("18:00:00"));
    let duration = ExcelDateTime::new(1.5, ExcelDateTimeType::TimeDelta, false);
    assert_eq!(text(Data::DateTime(duration)).as_deref(), Some("36:00:00"));
    let date_1904 = ExcelDateTime::new(43904.0, ExcelDateTimeType::DateTime, true);
    assert_eq!(
        text(Data::DateTime(date_1904)).as_deref(),
        Some("2024-03-15")
    );
}

#[test]
fn sheets_are_picked_by_name_case_insensitively_or_by_number() {
    let sheets = ["Kontakte".to_string(), "Notizen".to_string()];
    let pick = |wanted: Option<SheetRef>| pick_sheet(&sheets, wanted.as_ref());
    assert_eq!(pick(None).as_deref(), Some("Kontakte"));
    assert_eq!(pick(Some(SheetRef::Index(2))).as_deref(), Some("Notizen"));
    assert_eq!(pick(Some(SheetRef::Index(0))), None);
    assert_eq!(pick(Some(SheetRef::Index(3))), None);
    assert_eq!(
        pick(Some(SheetRef::Name("notizen".into()))).as_deref(),
        Some("Notizen")
    );
    assert_eq!(pick(Some(SheetRef::Name("Other".into()))), None);
}

#[test]
fn the_sample_workbook_reads_with_typed_cells_as_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
    if !dir.join("kontakte.xlsx").exists() {
        eprintln!("skipped: samples/kontakte.xlsx is not in the crate yet");
        return;
    }
    let mut spec = SourceSpec {
        paths: vec!["kontakte.xlsx".into()],
        header_row: 1,
        ..SourceSpec::default()
    };
    let table = read(&spec, &dir).unwrap();
    for column in [
        "email",
        "first_name",
        "last_name",
        "birthday",
        "signup",
        "phone",
        "zip",
        "tags",
    ] {
        assert!(
            table.columns.iter().any(|c| c == column),
            "{column} missing in {:?}",
            table.columns
        );
    }
    assert!(table.frame.height() > 0);
    assert_eq!(table.dialect, REJECTS_DIALECT);
    let column = |name: &str| -> Vec<String> {
        let c = table.frame.column(name).unwrap().str().unwrap();
        (0..c.len())
            .filter_map(|i| c.get(i))
            .map(String::from)
            .collect()
    };
    let is_date = |s: &str| s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-';
    assert!(
        column("birthday").iter().all(|s| is_date(s)),
        "{:?}",
        column("birthday")
    );
    assert!(
        column("signup")
            .iter()
            .all(|s| is_date(&s[..10.min(s.len())]) && (s.len() == 10 || s.len() == 19)),
        "{:?}",
        column("signup")
    );
    assert!(
        column("phone")
            .iter()
            .all(|s| s.bytes().all(|b| b.is_ascii_digit() || b == b'+')),
        "{:?}",
        column("phone")
    );
    assert!(
        column("zip").iter().any(|s| s.starts_with('0')),
        "{:?}",
        column("zip")
    );
    let rows = table.frame.column(ROW_COL).unwrap().u32().unwrap();
    assert_eq!(rows.get(0), Some(2));
    assert_eq!(
        table.frame.column(FILE_COL).unwrap().u32().unwrap().get(0),
        Some(0)
    );
    assert_eq!(read_columns(&spec, &dir).unwrap(), table.columns);

    spec.sheets = vec![SheetRef::Name("Notizen".into())];
    assert!(read(&spec, &dir).is_ok());
    spec.sheets = vec![SheetRef::Name("Fehlt".into())];
    let err = read(&spec, &dir).err().unwrap();
    assert!(matches!(err, SourceError::SheetNotFound { .. }));
    assert!(
        err.to_string().ends_with(
            "sheet \"Fehlt\" not found (sheets: Kontakte, Notizen); set `sheet` to one of them"
        ),
        "{err}"
    );
}
