//! Parquet through polars: each page becomes a typed DataFrame and one row
//! group (polars' batched writer), so the file grows page by page and
//! memory stays flat. Types: strings for text and identifiers, Int64 for
//! points, quantities and timestamps (Unix seconds; null when never set,
//! whatever `timestamps` says, since an integer column is the typed form),
//! Float64 for prices, Boolean for `active`.

use super::{Layout, Sink, WriteError};
use crate::export::columns::{Cell, Kind};
use polars::prelude::*;
use std::fs::File;
use std::path::Path;

pub struct ParquetSink {
    writer: polars::io::parquet::write::BatchedWriter<File>,
    names: Vec<String>,
    kinds: Vec<Kind>,
    file: File,
}

fn polars_error(e: PolarsError) -> WriteError {
    WriteError(e.to_string())
}

fn dtype(kind: Kind) -> DataType {
    match kind {
        Kind::Text => DataType::String,
        Kind::Int | Kind::Time => DataType::Int64,
        Kind::Float => DataType::Float64,
        Kind::Bool => DataType::Boolean,
    }
}

impl ParquetSink {
    pub fn create(path: &Path, layout: Layout) -> Result<Self, WriteError> {
        let file = File::create(path)?;
        let schema: Schema = layout
            .names
            .iter()
            .zip(&layout.kinds)
            .map(|(n, k)| Field::new(n.as_str().into(), dtype(*k)))
            .collect();
        let writer = ParquetWriter::new(file.try_clone()?)
            .with_compression(ParquetCompression::Zstd(None))
            .batched(&schema)
            .map_err(polars_error)?;
        Ok(ParquetSink {
            writer,
            names: layout.names,
            kinds: layout.kinds,
            file,
        })
    }

    fn frame(&self, rows: &[Vec<Cell<'_>>]) -> Result<DataFrame, WriteError> {
        let mut columns = Vec::with_capacity(self.names.len());
        for (i, (name, kind)) in self.names.iter().zip(&self.kinds).enumerate() {
            let name: PlSmallStr = name.as_str().into();
            let cells = rows.iter().map(|r| r.get(i));
            let column = match kind {
                Kind::Text => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Text(s)) => s.as_ref(),
                            _ => "",
                        })
                        .collect::<Vec<_>>(),
                ),
                Kind::Int | Kind::Time => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Int(n)) | Some(Cell::Time(n)) => *n,
                            _ => None,
                        })
                        .collect::<Vec<Option<i64>>>(),
                ),
                Kind::Float => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Float(f)) => Some(*f),
                            _ => None,
                        })
                        .collect::<Vec<Option<f64>>>(),
                ),
                Kind::Bool => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Bool(b)) => Some(*b),
                            _ => None,
                        })
                        .collect::<Vec<Option<bool>>>(),
                ),
            };
            columns.push(column);
        }
        DataFrame::new(rows.len(), columns).map_err(polars_error)
    }
}

impl Sink for ParquetSink {
    fn write(&mut self, rows: &[Vec<Cell<'_>>]) -> Result<(), WriteError> {
        if rows.is_empty() {
            return Ok(());
        }
        let frame = self.frame(rows)?;
        self.writer.write_batch(&frame).map_err(polars_error)
    }

    fn finish(self: Box<Self>) -> Result<(), WriteError> {
        self.writer.finish().map_err(polars_error)?;
        // The batched writer owns a buffered clone of the handle and flushes
        // it on finish; syncing the original reaches the same file.
        drop(self.writer);
        self.file.sync_all()?;
        Ok(())
    }
}
