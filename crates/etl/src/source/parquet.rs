//! Parquet files (`.parquet`, or `format = "parquet"`): what warehouses and data lakes
//! export. Read with polars a slice of [`SLICE_ROWS`] rows at a time (polars decodes only
//! the row groups a slice touches), each value cast to its text, pushed through the table
//! builder like a CSV row.
//!
//! Decisions: the values are polars' text for them (whole numbers as stored, dates ISO,
//! datetimes `YYYY-MM-DD hh:mm:ss[.fff]`, booleans `true`/`false`, null as an empty cell),
//! except three a typed export writes: a UTC timestamp (`TIMESTAMP(isAdjustedToUTC)`) is
//! ISO 8601 UTC (`2024-02-01T13:45:20Z`, fractions of a second dropped), a float is its
//! shortest text (`12`, `12.5`: a `number` attribute reads back as it was written), and a
//! list of strings is a JSON array (`["a","b"]`, which a tags column splits into its
//! items). A column polars cannot cast to text (another list or a struct) makes the file
//! an error naming the column. Row numbers are those of a CSV export with its header line: the first row
//! is row 2.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;

use super::builder::{TableBuilder, header, is_blank};
use super::{Dialect, LineEnding, SourceError, SourceFormat, TextEncoding};

/// Rows read per slice of the file.
const SLICE_ROWS: usize = 65_536;

/// Rejects of a Parquet file are a plain UTF-8 CSV with its columns.
pub(crate) const TEXT_DIALECT: Dialect = Dialect {
    format: SourceFormat::Csv,
    delimiter: b',',
    encoding: TextEncoding::Utf8,
    encoding_guessed: false,
    line_ending: LineEnding::Lf,
};

fn data_error(path: &Path, e: impl std::fmt::Display) -> SourceError {
    SourceError::Data {
        file: path.to_path_buf(),
        message: format!("not a readable Parquet file ({e})"),
    }
}

fn open(path: &Path) -> Result<ParquetReader<File>, SourceError> {
    let file = File::open(path).map_err(|source| SourceError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    Ok(ParquetReader::new(file))
}

/// The file's column names, as [`read_file`] names them.
pub(crate) fn read_header(path: &Path) -> Result<Vec<String>, SourceError> {
    let mut reader = open(path)?;
    let schema = reader.schema().map_err(|e| data_error(path, e))?;
    let cells: Vec<Option<String>> = schema.iter_names().map(|n| Some(n.to_string())).collect();
    Ok(header(cells.as_slice()).names)
}

/// Reads the file into the table, a slice at a time; returns the rejects dialect.
pub(crate) fn read_file(path: &Path, table: &mut TableBuilder) -> Result<Dialect, SourceError> {
    let mut reader = open(path)?;
    let metadata = reader
        .get_metadata()
        .map_err(|e| data_error(path, e))?
        .clone();
    let names = read_header(path)?;
    let cells: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
    let columns = table.start_file(path.to_path_buf(), &header(cells.as_slice()), TEXT_DIALECT);
    let rows = metadata.num_rows;
    let mut offset = 0;
    while offset < rows {
        let len = SLICE_ROWS.min(rows - offset);
        let mut slice = open(path)?;
        slice.set_metadata(metadata.clone());
        let frame = slice
            .with_slice(Some((offset, len)))
            .finish()
            .map_err(|e| data_error(path, e))?;
        let texts = frame
            .columns()
            .iter()
            .map(|c| {
                if let Some(texts) = typed_text(c) {
                    return Ok(texts);
                }
                let cast = c.cast(&DataType::String).map_err(|_| SourceError::Data {
                    file: path.to_path_buf(),
                    message: format!(
                        "column \"{}\" holds {} values, which have no text form; select or flatten it before exporting",
                        c.name(),
                        c.dtype()
                    ),
                })?;
                cast.str()
                    .cloned()
                    .map_err(|e| data_error(path, e))
            })
            .collect::<Result<Vec<StringChunked>, SourceError>>()?;
        let mut row: Vec<Option<&str>> = vec![None; texts.len()];
        for i in 0..frame.height() {
            for (cell, text) in row.iter_mut().zip(&texts) {
                *cell = text.get(i);
            }
            if !is_blank(row.as_slice()) {
                let number = (offset + i + 2) as u64;
                table.push_row(&columns, number, row.as_slice())?;
            }
        }
        offset += len;
    }
    Ok(TEXT_DIALECT)
}

/// The text of the columns a typed export writes (see the module), `None` for
/// the others (cast to text by polars).
fn typed_text(c: &Column) -> Option<StringChunked> {
    let name = c.name().clone();
    match c.dtype() {
        DataType::Datetime(unit, Some(tz)) if tz.as_str() == "UTC" => {
            let per_second = match unit {
                TimeUnit::Milliseconds => 1_000,
                TimeUnit::Microseconds => 1_000_000,
                TimeUnit::Nanoseconds => 1_000_000_000,
            };
            let values = c.datetime().ok()?.physical().clone();
            Some(
                values
                    .iter()
                    .map(|v| v.map(|v| listpipe_api::time::iso(v.div_euclid(per_second))))
                    .collect::<StringChunked>()
                    .with_name(name),
            )
        }
        DataType::Float64 => Some(
            c.f64()
                .ok()?
                .iter()
                .map(|v| v.map(|v| v.to_string()))
                .collect::<StringChunked>()
                .with_name(name),
        ),
        DataType::List(inner) if **inner == DataType::String => Some(
            c.list()
                .ok()?
                .amortized_iter()
                .map(|v| {
                    let items = v?;
                    let items: Vec<&str> = items.as_ref().str().ok()?.iter().flatten().collect();
                    serde_json::to_string(&items).ok()
                })
                .collect::<StringChunked>()
                .with_name(name),
        ),
        _ => None,
    }
}
