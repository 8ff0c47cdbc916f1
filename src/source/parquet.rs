//! Parquet files (`.parquet`, or `format = "parquet"`): what warehouses and data lakes
//! export. Read with polars a slice of [`SLICE_ROWS`] rows at a time (polars decodes only
//! the row groups a slice touches), each value cast to its text, pushed through the table
//! builder like a CSV row.
//!
//! Decisions: the values are polars' text for them (numbers as stored, dates ISO,
//! datetimes `YYYY-MM-DD hh:mm:ss[.fff]`, booleans `true`/`false`, null as an empty cell);
//! a column polars cannot cast to text (a list or struct) makes the file an error naming
//! the column. Row numbers are those of a CSV export with its header line: the first row
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
