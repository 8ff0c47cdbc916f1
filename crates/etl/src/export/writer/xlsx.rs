//! XLSX through rust_xlsxwriter in constant-memory mode (rows go to a temp
//! file as they come, so memory stays flat): timestamps as real date-time
//! cells (or numbers, with `timestamps = "unix"`), `date` attributes as date
//! cells (`yyyy-mm-dd`), `number` attributes, ids and points as numbers (a
//! `number` attribute whose text is not a number stays text), zip codes and
//! every other text as text cells (so `01067` keeps its zero), `active` as
//! a boolean, tags joined as CSV joins them; the header row is bold and frozen.

use super::{Chunk, Encode, Layout, Sink, WriteError, unexpected};
use crate::export::columns::{Cell, Kind};
use crate::pipeline::export::Timestamps;
use rust_xlsxwriter::{ExcelDateTime, Format, Workbook, XlsxError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most rows a sheet holds, the header included.
const MAX_ROWS: u32 = 1_048_576;

pub(super) struct XlsxSink {
    workbook: Workbook,
    path: PathBuf,
    timestamps: Timestamps,
    date: Format,
    day: Format,
    kinds: Vec<Kind>,
    tags_separator: String,
    next_row: u32,
}

fn xlsx_error(e: XlsxError) -> WriteError {
    WriteError(e.to_string())
}

impl XlsxSink {
    pub(super) fn create(path: &Path, layout: Layout) -> Result<Self, WriteError> {
        let mut workbook = Workbook::new();
        let bold = Format::new().set_bold();
        let sheet = workbook
            .add_worksheet_with_constant_memory()
            .map_err(xlsx_error)?;
        sheet.set_name("export").map_err(xlsx_error)?;
        for (col, (name, kind)) in layout.names.iter().zip(&layout.kinds).enumerate() {
            let col = col as u16;
            sheet
                .write_string_with_format(0, col, name, &bold)
                .map_err(xlsx_error)?;
            let width = match kind {
                Kind::Time if layout.timestamps == Timestamps::Iso => 20.0,
                _ => (name.chars().count() as f64 + 2.0).max(10.0),
            };
            sheet.set_column_width(col, width).map_err(xlsx_error)?;
        }
        sheet.set_freeze_panes(1, 0).map_err(xlsx_error)?;
        Ok(XlsxSink {
            workbook,
            path: path.to_path_buf(),
            timestamps: layout.timestamps,
            date: Format::new().set_num_format("yyyy-mm-dd hh:mm:ss"),
            day: Format::new().set_num_format("yyyy-mm-dd"),
            kinds: layout.kinds,
            tags_separator: layout.tags_separator.to_string(),
            next_row: 1,
        })
    }
}

/// The workbook numbers the rows as it writes them, so a page's cells are
/// only copied out of the page here.
struct XlsxEncoder;

impl Encode for XlsxEncoder {
    fn encode(&self, rows: &[Vec<Cell<'_>>]) -> Result<Chunk, WriteError> {
        Ok(Chunk::Rows(
            rows.iter()
                .map(|r| r.iter().map(Cell::to_owned_cell).collect())
                .collect(),
        ))
    }
}

impl Sink for XlsxSink {
    fn encoder(&self) -> Arc<dyn Encode> {
        Arc::new(XlsxEncoder)
    }

    fn write_chunk(&mut self, chunk: Chunk) -> Result<(), WriteError> {
        let Chunk::Rows(rows) = chunk else {
            return Err(unexpected("XLSX"));
        };
        if self.next_row as usize + rows.len() > MAX_ROWS as usize {
            return Err(WriteError(format!(
                "an XLSX sheet holds at most {} rows; export to CSV, Parquet or JSON lines instead",
                MAX_ROWS - 1
            )));
        }
        let sheet = self.workbook.worksheet_from_index(0).map_err(xlsx_error)?;
        for row in rows {
            let r = self.next_row;
            for (c, cell) in row.iter().enumerate() {
                let kind = self.kinds.get(c).copied().unwrap_or(Kind::Text);
                let c = c as u16;
                match cell {
                    Cell::Text(s) if s.is_empty() => continue,
                    Cell::Text(s) if kind == Kind::Number => match super::number(s) {
                        Some(n) => sheet.write_number(r, c, n).map(|_| ()),
                        None => sheet.write_string(r, c, s.as_ref()).map(|_| ()),
                    },
                    Cell::Text(s) if kind == Kind::Date => match super::date(s) {
                        Some(d) => sheet.write_date_with_format(r, c, d, &self.day).map(|_| ()),
                        None => sheet.write_string(r, c, s.as_ref()).map(|_| ()),
                    },
                    Cell::Tags(tags) if tags.is_empty() => continue,
                    Cell::Tags(tags) => sheet
                        .write_string(r, c, tags.join(&self.tags_separator))
                        .map(|_| ()),
                    Cell::Text(s) => sheet.write_string(r, c, s.as_ref()).map(|_| ()),
                    Cell::Int(Some(n)) => sheet.write_number(r, c, *n as f64).map(|_| ()),
                    Cell::Float(f) => sheet.write_number(r, c, *f).map(|_| ()),
                    Cell::Bool(b) => sheet.write_boolean(r, c, *b).map(|_| ()),
                    Cell::Int(None) | Cell::Time(None) => continue,
                    Cell::Time(Some(t)) => match self.timestamps {
                        Timestamps::Unix => sheet.write_number(r, c, *t as f64).map(|_| ()),
                        Timestamps::Iso => {
                            let when = ExcelDateTime::from_timestamp(*t).map_err(xlsx_error)?;
                            sheet
                                .write_datetime_with_format(r, c, &when, &self.date)
                                .map(|_| ())
                        }
                    },
                }
                .map_err(xlsx_error)?;
            }
            self.next_row += 1;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), WriteError> {
        self.workbook.save(&self.path).map_err(xlsx_error)
    }
}
