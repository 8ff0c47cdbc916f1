//! Writing rejected rows back as a file the user can fix and feed in again: the input's own
//! delimiter, line ending and column order with `row_number`, `field` and `reason` appended,
//! so it opens in the same tool the export came from.
//!
//! Decision: the text is always UTF-8, whatever the input's encoding (a Windows-1252 or
//! UTF-16 source is transcoded): the reasons listpipe adds hold characters Windows-1252
//! cannot, and one encoding is what scripts reading rejects expect. A BOM (for Excel, which
//! reads BOM-less UTF-8 as the local code page) follows the input unless the step says
//! (`rejects_bom`): see [`Dialect::has_bom`].

use std::path::Path;

use ::csv::{Terminator, WriterBuilder};

use super::encoding;
use super::{Dialect, LineEnding, SourceError, SourceFormat, TextEncoding};

impl Dialect {
    /// Whether the input started with a byte order mark (or is a spreadsheet, whose
    /// rejects are for Excel): its rejects file gets one unless the step says otherwise.
    pub fn has_bom(&self) -> bool {
        self.format == SourceFormat::Spreadsheet
            || matches!(
                self.encoding,
                TextEncoding::Utf8Bom | TextEncoding::Utf16Le | TextEncoding::Utf16Be
            )
    }
}

/// One rejected row, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectRow {
    /// The input file, shown when the table came from several files.
    pub file: Option<String>,
    /// In `table_columns` order; `None` is an empty cell. A ragged row may hold more values
    /// than there are columns: the extra ones are written after `reason`, not dropped.
    pub values: Vec<Option<String>>,
    pub row_number: u64,
    pub field: String,
    pub reason: String,
}

/// Writes rejected rows back in the input's dialect: same delimiter, line ending and column
/// order, with `row_number`, `field`, `reason` appended (and `file` before them when the
/// table came from more than one file), as UTF-8 with a BOM when `bom`. The dialect of a
/// spreadsheet input is a comma-separated CSV. The file is written through
/// [`crate::state_file`] (a temporary file renamed when complete), so a crash never leaves
/// half a file under the real name. Creates parent directories.
pub fn write_rejects(
    path: &Path,
    table_columns: &[String],
    dialect: &Dialect,
    multi_file: bool,
    bom: bool,
    rows: &[RejectRow],
) -> Result<(), SourceError> {
    let write_error = |source| SourceError::Write {
        file: path.to_path_buf(),
        source,
    };
    let text = render(table_columns, dialect, multi_file, rows).map_err(write_error)?;
    let bom: &[u8] = if bom { encoding::UTF8_BOM } else { b"" };
    let bytes = [bom, text.as_bytes()].concat();
    crate::state_file::write(path, &bytes, crate::state_file::Access::Shared)
        .map_err(|e| write_error(e.source))
}

/// The rejects file as text, before encoding.
fn render(
    table_columns: &[String],
    dialect: &Dialect,
    multi_file: bool,
    rows: &[RejectRow],
) -> std::io::Result<String> {
    let terminator = match dialect.line_ending {
        LineEnding::Crlf => Terminator::CRLF,
        LineEnding::Lf => Terminator::Any(b'\n'),
    };
    let mut writer = WriterBuilder::new()
        .delimiter(dialect.delimiter)
        .terminator(terminator)
        .flexible(true)
        .from_writer(Vec::new());
    let width = table_columns.len();
    let mut header: Vec<&str> = table_columns.iter().map(String::as_str).collect();
    if multi_file {
        header.push("file");
    }
    header.extend(["row_number", "field", "reason"]);
    writer.write_record(&header)?;
    let mut record: Vec<String> = Vec::with_capacity(header.len());
    for row in rows {
        record.clear();
        let cell = |i: usize| row.values.get(i).cloned().flatten().unwrap_or_default();
        record.extend((0..width).map(cell));
        if multi_file {
            record.push(row.file.clone().unwrap_or_default());
        }
        record.push(row.row_number.to_string());
        record.push(row.field.clone());
        record.push(row.reason.clone());
        record.extend((width..row.values.len()).map(cell));
        writer.write_record(&record)?;
    }
    let bytes = writer.into_inner().map_err(|e| e.into_error())?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::csv::tests::{cells, row_numbers, spec};
    use crate::source::{SourceFormat, TextEncoding, read};
    use std::fs;

    fn dialect(delimiter: u8, encoding: TextEncoding, line_ending: LineEnding) -> Dialect {
        Dialect {
            format: SourceFormat::Csv,
            delimiter,
            encoding,
            line_ending,
        }
    }

    fn row(values: &[Option<&str>], row_number: u64) -> RejectRow {
        RejectRow {
            file: Some("a.csv".into()),
            values: values.iter().map(|v| v.map(String::from)).collect(),
            row_number,
            field: "email".into(),
            reason: "not an email address".into(),
        }
    }

    #[test]
    fn rejects_keep_the_column_order_and_append_row_field_and_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/rejects.csv");
        let columns = ["email".to_string(), "name".to_string()];
        let rows = [
            row(&[Some("x@"), None], 3),
            row(&[Some("a;b"), Some("Zoë")], 7),
        ];
        let d = dialect(b';', TextEncoding::Utf8Bom, LineEnding::Lf);
        write_rejects(&path, &columns, &d, false, d.has_bom(), &rows).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "\u{feff}email;name;row_number;field;reason\nx@;;3;email;not an email address\n\"a;b\";Zoë;7;email;not an email address\n"
        );
        assert!(!dir.path().join("out/rejects.csv.tmp").exists());
    }

    #[test]
    fn several_files_add_a_file_column_and_extra_values_go_last() {
        let columns = ["email".to_string()];
        let rows = [row(&[Some("x"), Some("extra")], 2)];
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Crlf);
        assert_eq!(
            render(&columns, &d, true, &rows).unwrap(),
            "email,file,row_number,field,reason\r\nx,a.csv,2,email,not an email address,extra\r\n"
        );
    }

    #[test]
    fn rejects_of_a_windows_1252_source_are_utf_8_with_its_semicolons_and_crlf_and_read_back_equal()
    {
        let dir = tempfile::tempdir().unwrap();
        let input = b"E-Mail;Name;Ort\r\nm\xFCller@x;M\xFCller;K\xF6ln\r\nok@x.de;\"A;B\";\r\n";
        std::fs::write(dir.path().join("in.csv"), input).unwrap();
        let table = read(&spec(&["in.csv"]), dir.path()).unwrap();
        let rows: Vec<RejectRow> = (0..table.frame.height())
            .map(|i| RejectRow {
                file: None,
                values: table
                    .columns
                    .iter()
                    .map(|c| cells(&table.frame, c)[i].clone())
                    .collect(),
                row_number: u64::from(row_numbers(&table.frame)[i]),
                field: "E-Mail".into(),
                reason: "ungültige Adresse".into(),
            })
            .collect();
        let out = dir.path().join("rejects/in.rejects.csv");
        write_rejects(&out, &table.columns, &table.dialect, false, false, &rows).unwrap();
        assert_eq!(
            String::from_utf8(std::fs::read(&out).unwrap()).unwrap(),
            "E-Mail;Name;Ort;row_number;field;reason\r\nmüller@x;Müller;Köln;2;E-Mail;ungültige Adresse\r\nok@x.de;\"A;B\";;3;E-Mail;ungültige Adresse\r\n"
        );
        let again = read(&spec(&["rejects/in.rejects.csv"]), dir.path()).unwrap();
        assert_eq!(again.dialect.encoding, TextEncoding::Utf8);
        assert_eq!(again.dialect.delimiter, table.dialect.delimiter);
        assert_eq!(again.dialect.line_ending, table.dialect.line_ending);
        assert_eq!(again.columns[..3], table.columns[..]);
        for column in &table.columns {
            assert_eq!(cells(&again.frame, column), cells(&table.frame, column));
        }
    }
}
