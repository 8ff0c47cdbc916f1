//! Writing rejected rows back as a file the user can fix and feed in again: the input's own
//! delimiter, line ending and column order with `row_number`, `field` and `reason` appended,
//! so it opens in the same tool the export came from. This file is the format (the one
//! renderer); [`super::rejects_file`] writes it as rows fail, [`super::reject_spool`] sets
//! rows aside on disk until their turn.
//!
//! Decision: the text is always UTF-8, whatever the input's encoding (a UTF-16 source or
//! one in a legacy encoding, Windows-1252, Shift_JIS, GBK, windows-1251, ..., is
//! transcoded): the reasons listpipe adds hold characters a legacy encoding cannot, and
//! one encoding is what scripts reading rejects expect. A BOM (for Excel, which
//! reads BOM-less UTF-8 as the local code page) follows the input unless the step says
//! (`rejects_bom`): see [`Dialect::has_bom`].

use std::io::Write;

use ::csv::{ByteRecord, Terminator, WriterBuilder};

use super::encoding;
use super::{Dialect, LineEnding, SourceFormat, Table, TextEncoding};

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

/// How a table's rejects are written: its columns in order, with `row_number`, `field`,
/// `reason` appended (and `file` before them when the table came from more than one
/// file), in its dialect (a spreadsheet's is a comma-separated CSV), as UTF-8 with a BOM
/// when `bom`.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectsFormat {
    pub columns: Vec<String>,
    pub dialect: Dialect,
    pub multi_file: bool,
    pub bom: bool,
}

impl RejectsFormat {
    /// The format of `table`'s rejects as read so far (a later chunk may know more files);
    /// `bom`: the step's `rejects_bom`, None follows the source.
    pub fn of(table: &Table, bom: Option<bool>) -> Self {
        RejectsFormat {
            columns: table.columns.clone(),
            dialect: table.dialect.clone(),
            multi_file: table.files.len() > 1,
            bom: bom.unwrap_or_else(|| table.dialect.has_bom()),
        }
    }
}

/// Write buffer of a [`Renderer`]: all it holds of the rows it was given.
pub const RENDER_BUFFER: usize = 64 * 1024;

/// The one renderer of rejects files: the BOM and the header when made, then a record per
/// row, through a CSV writer whose buffer ([`RENDER_BUFFER`]) is all it keeps.
pub(super) struct Renderer<W: Write> {
    csv: ::csv::Writer<W>,
    width: usize,
    multi_file: bool,
}

impl<W: Write> Renderer<W> {
    /// Starts the file in `out`: BOM (if the format says) and header.
    pub(super) fn new(mut out: W, format: &RejectsFormat) -> std::io::Result<Self> {
        if format.bom {
            out.write_all(encoding::UTF8_BOM)?;
        }
        let mut renderer = Renderer::headless(out, format);
        let mut header: Vec<&str> = format.columns.iter().map(String::as_str).collect();
        if format.multi_file {
            header.push("file");
        }
        header.extend(["row_number", "field", "reason"]);
        renderer.csv.write_record(&header)?;
        Ok(renderer)
    }

    /// A renderer that writes no BOM and no header (a file continued).
    pub(super) fn headless(out: W, format: &RejectsFormat) -> Self {
        let terminator = match format.dialect.line_ending {
            LineEnding::Crlf => Terminator::CRLF,
            LineEnding::Lf => Terminator::Any(b'\n'),
        };
        let csv = WriterBuilder::new()
            .delimiter(format.dialect.delimiter)
            .terminator(terminator)
            .flexible(true)
            .buffer_capacity(RENDER_BUFFER)
            .from_writer(out);
        Renderer {
            csv,
            width: format.columns.len(),
            multi_file: format.multi_file,
        }
    }

    pub(super) fn row(&mut self, row: &RejectRow) -> std::io::Result<()> {
        let cell = |i: usize| row.values.get(i).and_then(|v| v.as_deref()).unwrap_or("");
        let number = row.row_number.to_string();
        let mut record: Vec<&str> = Vec::with_capacity(row.values.len().max(self.width) + 4);
        record.extend((0..self.width).map(cell));
        if self.multi_file {
            record.push(row.file.as_deref().unwrap_or(""));
        }
        record.push(&number);
        record.push(&row.field);
        record.push(&row.reason);
        record.extend((self.width..row.values.len()).map(cell));
        self.csv.write_record(&record)?;
        Ok(())
    }

    /// A record already rendered once (read back from an earlier file), written again.
    pub(super) fn record(&mut self, record: &ByteRecord) -> std::io::Result<()> {
        self.csv.write_byte_record(record)?;
        Ok(())
    }

    /// Whether records go out with a `file` column.
    pub(super) fn multi_file(&self) -> bool {
        self.multi_file
    }

    /// Where the file's cells end and `file` goes (in the header and every row).
    pub(super) fn width(&self) -> usize {
        self.width
    }

    /// Writes out what the buffer holds; the writer underneath.
    pub(super) fn finish(self) -> std::io::Result<W> {
        self.csv.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::source::RejectsFile;
    use crate::source::csv::tests::{cells, row_numbers, spec};
    use crate::source::{SourceFormat, TextEncoding, read};
    use std::fs;
    use std::path::Path;

    pub(crate) fn dialect(
        delimiter: u8,
        encoding: TextEncoding,
        line_ending: LineEnding,
    ) -> Dialect {
        Dialect {
            format: SourceFormat::Csv,
            delimiter,
            encoding,
            encoding_guessed: false,
            line_ending,
        }
    }

    pub(crate) fn format(columns: &[&str], dialect: Dialect, multi_file: bool) -> RejectsFormat {
        RejectsFormat {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            bom: dialect.has_bom(),
            dialect,
            multi_file,
        }
    }

    /// The whole file in one go, as text (with its BOM).
    pub(crate) fn render(format: &RejectsFormat, rows: &[RejectRow]) -> String {
        let mut out = Renderer::new(Vec::new(), format).unwrap();
        rows.iter().for_each(|r| out.row(r).unwrap());
        String::from_utf8(out.finish().unwrap()).unwrap()
    }

    /// Writes `rows` as a step does, through a [`RejectsFile`].
    fn write(path: &Path, format: RejectsFormat, rows: &[RejectRow]) {
        let mut file = RejectsFile::new(path);
        file.follow(format).unwrap();
        file.write(rows).unwrap();
        assert_eq!(file.finish().unwrap().as_deref(), Some(path));
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
        let rows = [
            row(&[Some("x@"), None], 3),
            row(&[Some("a;b"), Some("Zoë")], 7),
        ];
        let d = dialect(b';', TextEncoding::Utf8Bom, LineEnding::Lf);
        write(&path, format(&["email", "name"], d, false), &rows);
        let bytes = fs::read(&path).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "\u{feff}email;name;row_number;field;reason\nx@;;3;email;not an email address\n\"a;b\";Zoë;7;email;not an email address\n"
        );
        assert_eq!(
            fs::read_dir(dir.path().join("out")).unwrap().count(),
            1,
            "no temporary file is left"
        );
    }

    #[test]
    fn several_files_add_a_file_column_and_extra_values_go_last() {
        let rows = [row(&[Some("x"), Some("extra")], 2)];
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Crlf);
        assert_eq!(
            render(&format(&["email"], d, true), &rows),
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
        write(&out, RejectsFormat::of(&table, Some(false)), &rows);
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
