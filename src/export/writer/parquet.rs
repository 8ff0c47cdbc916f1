//! Parquet through polars: each page becomes a typed DataFrame and one row
//! group (polars' batched writer), so the file grows page by page and
//! memory stays flat. Types: strings for text and identifiers, Int64 for
//! points, quantities and timestamps (Unix seconds; null when never set,
//! whatever `timestamps` says, since an integer column is the typed form),
//! Float64 for prices, Boolean for `active`.

use super::{Chunk, Encode, Layout, Sink, WriteError, unexpected};
use crate::export::columns::{Cell, Kind};
use polars::prelude::*;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

pub struct ParquetSink {
    writer: polars::io::parquet::write::BatchedWriter<File>,
    encoder: Arc<ParquetEncoder>,
    file: File,
}

/// Rows to a typed DataFrame (one row group).
pub struct ParquetEncoder {
    names: Vec<String>,
    kinds: Vec<Kind>,
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
            encoder: Arc::new(ParquetEncoder {
                names: layout.names,
                kinds: layout.kinds,
            }),
            file,
        })
    }
}

impl Encode for ParquetEncoder {
    fn encode(&self, rows: &[Vec<Cell<'_>>]) -> Result<Chunk, WriteError> {
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
        let frame = DataFrame::new(rows.len(), columns).map_err(polars_error)?;
        Ok(Chunk::Frame(frame))
    }
}

impl Sink for ParquetSink {
    fn encoder(&self) -> Arc<dyn Encode> {
        self.encoder.clone()
    }

    fn write_chunk(&mut self, chunk: Chunk) -> Result<(), WriteError> {
        match chunk {
            Chunk::Frame(f) if f.height() == 0 => Ok(()),
            Chunk::Frame(f) => self.writer.write_batch(&f).map_err(polars_error),
            _ => Err(unexpected("Parquet")),
        }
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
