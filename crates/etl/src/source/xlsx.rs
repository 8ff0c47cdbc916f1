//! Reading spreadsheets (xlsx, xlsm, xlsb, xls, ods) through calamine: picking the sheet, and
//! turning each cell into the text a user sees in it, so phone numbers, zip codes and dates
//! survive as written rather than as `4.9e12`, `1234` or `45366`.
//!
//! Row numbers are the sheet's own (row 1 is the sheet's first row even when the used range
//! starts lower). The table is as wide as the header or the rightmost non-empty cell, so a
//! spreadsheet row is never ragged: a value under no name lands in a `column_N`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use calamine::{Data, ExcelDateTime, Range, Reader, open_workbook_auto};
use chrono::{Datelike, NaiveDateTime, TimeDelta, Timelike};

use super::builder::{self, Header, TableBuilder};
use super::{
    Dialect, LineEnding, SheetRef, SourceError, SourceFormat, SourceSpec, TextEncoding, Workbook,
};

/// Rejects of a spreadsheet go to a CSV that Excel opens with umlauts intact: UTF-8 with a
/// BOM, comma, CRLF.
const REJECTS_DIALECT: Dialect = Dialect {
    format: SourceFormat::Spreadsheet,
    delimiter: b',',
    encoding: TextEncoding::Utf8Bom,
    encoding_guessed: false,
    line_ending: LineEnding::Crlf,
};

/// Reads the chosen sheets of a workbook into the table; returns the rejects dialect. With
/// several sheets each is a file of its own in the table (`book.xlsx[2025]`), so rejects
/// and row numbers say which sheet; an empty sheet among several is passed over.
pub(crate) fn read_file(
    path: &Path,
    spec: &SourceSpec,
    table: &mut TableBuilder<'_>,
) -> Result<Dialect, SourceError> {
    let (mut workbook, names, chosen) = open(path, spec)?;
    let several = chosen.len() > 1;
    let mut cells: Vec<Option<String>> = Vec::new();
    for name in &chosen {
        let range = sheet_range(&mut workbook, path, name)?;
        let sheet = match SheetRows::new(&range, spec, path) {
            Err(SourceError::Empty { .. }) if several => continue,
            other => other?,
        };
        let file = if several {
            sheet_path(path, name)
        } else {
            path.to_path_buf()
        };
        let columns = table.start_file(file, &sheet.header, REJECTS_DIALECT);
        for (row_number, row) in sheet.data_rows(&range) {
            cells.clear();
            cells.extend(row.iter().take(sheet.width).map(cell_text));
            if !builder::is_blank(cells.as_slice()) {
                table.push_row(&columns, row_number, cells.as_slice())?;
            }
        }
    }
    table.add_workbook(Workbook {
        file: path.to_path_buf(),
        sheets: names,
        read: chosen,
    });
    Ok(REJECTS_DIALECT)
}

/// How rejects and messages name one sheet of a workbook read with others.
fn sheet_path(path: &Path, sheet: &str) -> PathBuf {
    PathBuf::from(format!("{}[{sheet}]", path.display()))
}

/// The column names of the chosen sheets (united by name, in one pass: a set
/// of the names seen, not a search of the list per column), and each sheet's
/// repeated names under the sheet's path.
pub(crate) fn read_header(path: &Path, spec: &SourceSpec) -> Result<super::Headers, SourceError> {
    let (mut workbook, _, chosen) = open(path, spec)?;
    let several = chosen.len() > 1;
    let mut names: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut repeated = Vec::new();
    for name in &chosen {
        let range = sheet_range(&mut workbook, path, name)?;
        let header = match SheetRows::new(&range, spec, path) {
            Err(SourceError::Empty { .. }) if several => continue,
            other => other?.header,
        };
        let at = if several {
            sheet_path(path, name)
        } else {
            path.to_path_buf()
        };
        repeated.extend(header.repeated.into_iter().map(|r| (at.clone(), r)));
        for column in header.names {
            if seen.insert(column.clone()) {
                names.push(column);
            }
        }
    }
    Ok(super::Headers {
        columns: names,
        repeated,
    })
}

/// The text of a cell as the user sees it; `None` for an empty cell.
///
/// Strings as they are; whole floats below 1e15 as integers (`4915112345678`, not
/// `4.9e12` or `12345.0`, since calamine reads integers as floats); other floats rounded to
/// the 15 significant digits Excel shows, in shortest form; dates at midnight as
/// `YYYY-MM-DD`, other date-times as `YYYY-MM-DDTHH:MM:SS`, times of day as `HH:MM:SS`,
/// durations as `H:MM:SS`; booleans as `true`/`false`; errors as their text (`#DIV/0!`).
pub(crate) fn cell_text(cell: &Data) -> Option<String> {
    let text = match cell {
        Data::Empty => return None,
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => s.clone(),
        Data::Int(i) => i.to_string(),
        Data::Float(x) => number_text(*x),
        Data::Bool(b) => b.to_string(),
        Data::DateTime(dt) => datetime_text(dt),
        Data::Error(e) => e.to_string(),
    };
    (!text.is_empty()).then_some(text)
}

fn number_text(x: f64) -> String {
    let whole = |x: f64| x.fract() == 0.0 && x.abs() < 1e15;
    if !x.is_finite() {
        return x.to_string();
    }
    if whole(x) {
        return (x as i64).to_string();
    }
    let x = format!("{x:.14e}").parse::<f64>().unwrap_or(x);
    if whole(x) {
        (x as i64).to_string()
    } else if x.abs() >= 1e21 || x.abs() < 1e-7 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

fn datetime_text(dt: &ExcelDateTime) -> String {
    let serial = dt.as_f64();
    let seconds = (serial * 86_400.0).round();
    if dt.is_duration() {
        let total = seconds.abs() as u64;
        let sign = if seconds < 0.0 { "-" } else { "" };
        return format!(
            "{sign}{}:{:02}:{:02}",
            total / 3600,
            total / 60 % 60,
            total % 60
        );
    }
    if (0.0..1.0).contains(&serial) {
        let total = (seconds as u64).min(86_399);
        return format!(
            "{:02}:{:02}:{:02}",
            total / 3600,
            total / 60 % 60,
            total % 60
        );
    }
    match dt.as_datetime().and_then(round_to_second) {
        Some(t) if t.num_seconds_from_midnight() == 0 => {
            format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day())
        }
        Some(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        None => number_text(serial),
    }
}

/// Serial dates carry float noise (`11:59:59.999`); Excel shows whole seconds.
fn round_to_second(t: NaiveDateTime) -> Option<NaiveDateTime> {
    t.checked_add_signed(TimeDelta::milliseconds(500))?
        .with_nanosecond(0)
}

/// Whether a cell shows anything (without building its text).
fn has_value(cell: &Data) -> bool {
    match cell {
        Data::Empty => false,
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => !s.trim().is_empty(),
        _ => true,
    }
}

type OpenWorkbook = calamine::Sheets<std::io::BufReader<std::fs::File>>;

/// The workbook, its sheet names, and the names of the sheets the spec chooses.
fn open(
    path: &Path,
    spec: &SourceSpec,
) -> Result<(OpenWorkbook, Vec<String>, Vec<String>), SourceError> {
    let workbook = open_workbook_auto(path).map_err(|e| SourceError::NotSpreadsheet {
        file: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let sheets = workbook.sheet_names();
    let chosen =
        pick_sheets(&sheets, &spec.sheets).map_err(|wanted| SourceError::SheetNotFound {
            file: path.to_path_buf(),
            sheet: match wanted {
                Some(SheetRef::Name(name)) => format!("\"{name}\""),
                Some(SheetRef::Index(n)) => format!("number {n}"),
                Some(SheetRef::All) | None => "number 1".to_string(),
            },
            sheets: listpipe_base::cause::listed(&sheets),
        })?;
    Ok((workbook, sheets, chosen))
}

fn sheet_range(
    workbook: &mut OpenWorkbook,
    path: &Path,
    name: &str,
) -> Result<Range<Data>, SourceError> {
    workbook
        .worksheet_range(name)
        .map_err(|e| SourceError::Sheet {
            file: path.to_path_buf(),
            sheet: name.to_string(),
            message: e.to_string(),
        })
}

/// The sheets `wanted` names, in its order, each once; none named: the first sheet. The
/// error is the reference that matches no sheet.
fn pick_sheets(sheets: &[String], wanted: &[SheetRef]) -> Result<Vec<String>, Option<SheetRef>> {
    if wanted.is_empty() {
        return pick_sheet(sheets, None).map(|s| vec![s]).ok_or(None);
    }
    let mut chosen: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for w in wanted {
        let names = match w {
            SheetRef::All if !sheets.is_empty() => sheets.to_vec(),
            _ => vec![pick_sheet(sheets, Some(w)).ok_or_else(|| Some(w.clone()))?],
        };
        for name in names {
            if seen.insert(name.clone()) {
                chosen.push(name);
            }
        }
    }
    Ok(chosen)
}

/// The exact name, else the only case-insensitive match; or the 1-based index.
fn pick_sheet(sheets: &[String], wanted: Option<&SheetRef>) -> Option<String> {
    match wanted {
        None | Some(SheetRef::All) => sheets.first().cloned(),
        Some(SheetRef::Index(n)) => sheets.get(n.checked_sub(1)?).cloned(),
        Some(SheetRef::Name(name)) => sheets.iter().find(|s| *s == name).cloned().or_else(|| {
            let mut folded = sheets
                .iter()
                .filter(|s| s.to_lowercase() == name.to_lowercase());
            match (folded.next(), folded.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        }),
    }
}

/// Where the header and data of a sheet are.
struct SheetRows {
    header: Header,
    /// Index (in the range) of the first data row.
    first_data: usize,
    /// 0-based sheet row of the range's first row.
    top: u64,
    width: usize,
}

impl SheetRows {
    /// The header is the first non-blank row at or below the header row (without a header
    /// row, that row is the first data row and the columns are `column_N`); the width is the
    /// rightmost non-empty cell of any row.
    fn new(range: &Range<Data>, spec: &SourceSpec, path: &Path) -> Result<Self, SourceError> {
        let top = u64::from(range.start().map_or(0, |(row, _)| row));
        let mut header = None;
        let mut last_row = 0;
        let mut width = 0;
        for (i, row) in range.rows().enumerate() {
            let used = row.iter().rposition(has_value);
            let Some(used) = used else { continue };
            width = width.max(used + 1);
            last_row = top + i as u64 + 1;
            if header.is_none() && last_row >= spec.header_row() {
                header = Some(i);
            }
        }
        let Some(header_index) = header else {
            return Err(if last_row == 0 {
                SourceError::Empty {
                    file: path.to_path_buf(),
                }
            } else {
                SourceError::HeaderBeyondEnd {
                    file: path.to_path_buf(),
                    header_row: spec.header_row(),
                    last_row,
                }
            });
        };
        let cells: Vec<Option<String>> = range
            .rows()
            .nth(header_index)
            .map(|row| row.iter().take(width).map(cell_text).collect())
            .unwrap_or_default();
        // Without a header row (`no_header`), that row is the first data row.
        Ok(SheetRows {
            header: super::csv::header_of(cells.as_slice(), spec),
            first_data: header_index + usize::from(!spec.no_header),
            top,
            width,
        })
    }

    /// The rows under the header with their sheet row numbers.
    fn data_rows<'r>(&self, range: &'r Range<Data>) -> impl Iterator<Item = (u64, &'r [Data])> {
        let top = self.top;
        range
            .rows()
            .enumerate()
            .skip(self.first_data)
            .map(move |(i, row)| (top + i as u64 + 1, row))
    }
}

#[cfg(test)]
#[path = "xlsx_tests.rs"]
mod tests;

impl super::Workbook {
    /// The sheets not read, each as `file: sheet`, for the run's summary and report:
    /// rows on a sheet nobody asked for are not imported, and that is said.
    pub fn unread(&self) -> Vec<String> {
        self.sheets
            .iter()
            .filter(|s| !self.read.contains(s))
            .map(|s| format!("{}: {s}", self.file.display()))
            .collect()
    }
}
