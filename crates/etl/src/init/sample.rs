//! The first rows of the sources, read exactly as `run` reads them (the source stage's
//! sniffing of encodings, delimiters and sheets), plus the dialect choices `run` cannot
//! make alone: the header row when titles sit above it, whether there is a header row at
//! all, and whether short rows need padding. The rest of `init` looks at these rows only.

use super::InitError;
use crate::source::{self, SourceFormat, SourceSpec, TextEncoding};
use std::path::{Path, PathBuf};

/// Rows looked at: enough to see every value pattern of an export, few enough to stay fast
/// on a file of millions of rows.
pub(super) const SAMPLE_ROWS: usize = 5_000;

/// Rows above the header `init` looks through for the real header.
const MAX_HEADER_ROW: usize = 12;

/// What the first rows showed.
#[derive(Debug, Clone)]
pub(super) struct Sample {
    pub columns: Vec<String>,
    /// Per column, its cells in row order (None: empty).
    pub cells: Vec<Vec<Option<String>>>,
    pub rows: usize,
    pub format: SourceFormat,
    pub delimiter: u8,
    pub encoding: TextEncoding,
    /// The encoding is the detector's guess, which the bytes did not settle.
    pub encoding_guessed: bool,
    pub header_row: usize,
    /// The file has no header row (its first row held an address): the row at `header_row`
    /// is data, and the columns are `column_1`, `column_2`, ...
    pub no_header: bool,
    /// Rows with fewer fields than the header, in the sample (before padding).
    pub short_rows: usize,
    /// Rows with more fields than the header: rejected by `run` whatever the pipeline says.
    pub long_rows: usize,
    /// The sheets of the first workbook, and the one read.
    pub sheets: Vec<String>,
    pub sheet: Option<String>,
    pub files: Vec<PathBuf>,
}

impl Sample {
    /// The non-empty cells of column `i`, trimmed.
    pub(super) fn values(&self, i: usize) -> impl Iterator<Item = &str> {
        self.cells[i]
            .iter()
            .filter_map(|c| c.as_deref())
            .map(str::trim)
            .filter(|v| !v.is_empty() && !is_placeholder(v))
    }

    /// The placeholders for "nothing" the sample holds, as spelled there.
    pub(super) fn placeholders(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        for column in &self.cells {
            for v in column.iter().flatten() {
                let v = v.trim();
                if is_placeholder(v) && !found.iter().any(|f| f == v) {
                    found.push(v.to_string());
                }
            }
        }
        found
    }
}

/// Whether a cell stands for "nothing" ([`super::rules::NULL_PLACEHOLDERS`]).
pub(super) fn is_placeholder(v: &str) -> bool {
    super::rules::NULL_PLACEHOLDERS
        .iter()
        .any(|p| p.eq_ignore_ascii_case(v.trim()))
}

/// The spec `init` reads with (and writes): the paths and the dialect found so far.
pub(super) fn spec(paths: &[String], header_row: usize, pad: bool, no_header: bool) -> SourceSpec {
    SourceSpec {
        paths: paths.to_vec(),
        header_row,
        no_header,
        pad_short_rows: pad,
        ..SourceSpec::default()
    }
}

/// Reads the first [`SAMPLE_ROWS`] rows of `paths` (relative to `base`), finding the header
/// row, or that there is none.
pub(super) fn read(paths: &[String], base: &Path) -> Result<Sample, InitError> {
    let first = read_at(paths, base, 1, false)?;
    let chosen = if names_an_address(&first) || !looks_misplaced(&first) {
        first
    } else {
        // Titles above the header: the header is the first row below that names most
        // columns and leaves the fewest rows ragged.
        let mut best = first;
        for row in 2..=MAX_HEADER_ROW {
            // Past the last row the read fails: nothing further down.
            let Ok(candidate) = read_at(paths, base, row, false) else {
                break;
            };
            if header_score(&candidate) > header_score(&best) {
                best = candidate;
            }
        }
        best
    };
    // A header is a name, never an address: a "header" holding one is the first data row
    // of a file without a header row (a Medium member list: one address a line).
    if names_an_address(&chosen) {
        return read_at(paths, base, chosen.header_row, true);
    }
    Ok(chosen)
}

/// Whether a cell of the header read is an email address.
fn names_an_address(s: &Sample) -> bool {
    !s.no_header && s.columns.iter().any(|c| super::columns::is_address(c))
}

/// A header that names few of the columns the rows have: titles above the real header.
fn looks_misplaced(s: &Sample) -> bool {
    let unnamed = s.columns.iter().filter(|c| is_unnamed(c)).count();
    let ragged = s.short_rows + s.long_rows;
    s.columns.len() <= 1 && s.rows > 0
        || ragged > 0 && ragged * 2 > s.rows
        || unnamed * 2 > s.columns.len()
        || s.long_rows * 2 > s.rows.max(1)
}

fn is_unnamed(column: &str) -> bool {
    column
        .strip_prefix("column_")
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// How much a header row looks like one: named columns, rows that fit it.
fn header_score(s: &Sample) -> i64 {
    let named = s.columns.iter().filter(|c| !is_unnamed(c)).count() as i64;
    let fitting = s.rows as i64;
    let ragged = (s.short_rows + s.long_rows) as i64;
    named * 1_000 + fitting - 10 * ragged
}

/// A stand-in error that stops the read after the first chunk; never shown.
fn enough() -> source::SourceError {
    source::SourceError::NoPaths
}

fn read_at(
    paths: &[String],
    base: &Path,
    header_row: usize,
    no_header: bool,
) -> Result<Sample, InitError> {
    let spec = spec(paths, header_row, false, no_header);
    let mut got: Option<source::Table> = None;
    let result = source::read_chunks(&spec, base, SAMPLE_ROWS, &mut |t| {
        if got.is_none() {
            got = Some(t);
        }
        Err(enough())
    });
    let table = match (result, got) {
        (_, Some(t)) => t,
        (Err(e), None) => return Err(InitError::Source(e)),
        (Ok(()), None) => return Err(InitError::Source(source::SourceError::NoPaths)),
    };
    let columns = table.columns.clone();
    let rows = table.frame.height();
    let cells = columns
        .iter()
        .map(|c| {
            table
                .frame
                .column(c)
                .and_then(|col| col.str().cloned())
                .map(|ca| ca.iter().map(|v| v.map(str::to_string)).collect())
                .unwrap_or_else(|_| vec![None; rows])
        })
        .collect();
    let width = columns.len();
    let short_rows = table
        .ragged
        .iter()
        .filter(|r| r.category == source::WRONG_FIELD_COUNT && r.values.len() < width)
        .count();
    let long_rows = table
        .ragged
        .iter()
        .filter(|r| r.category == source::WRONG_FIELD_COUNT && r.values.len() > width)
        .count();
    let (sheets, sheet) = match table.workbooks.first() {
        Some(w) => (w.sheets.clone(), w.read.first().cloned()),
        None => (Vec::new(), None),
    };
    Ok(Sample {
        columns,
        cells,
        rows,
        format: table.dialect.format,
        delimiter: table.dialect.delimiter,
        encoding: table.dialect.encoding,
        encoding_guessed: table.dialect.encoding_guessed,
        header_row,
        no_header,
        short_rows,
        long_rows,
        sheets,
        sheet,
        files: table.files.clone(),
    })
}
