//! Parquet through polars: each page becomes a typed DataFrame and one row
//! group (polars' batched writer), so the file grows page by page and
//! memory stays flat. Types, each with its Parquet logical type so that a
//! warehouse reads it without hints:
//! - `id`, `group_id`, `points`, quantities: Int64;
//! - timestamps (`registered`, `activated`, ... and an order's `stamp`):
//!   Datetime(ms, UTC) (`TIMESTAMP(isAdjustedToUTC, MILLIS)`), whatever
//!   `timestamps` says (that is for the text formats);
//! - `date` attributes: Date; `number` attributes and prices: Float64;
//! - `active`: Boolean; `tags`: List(String); everything else String.
//!
//! Empty is null, never an empty string: a timestamp of 0 ("never"), an
//! empty attribute, and a `number`/`date` attribute whose text is not one
//! (the text stays readable in the CSV and JSON lines exports).

use super::{Chunk, Encode, Layout, Sink, WriteError, unexpected};
use crate::export::columns::{Cell, Kind};
use polars::prelude::*;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

pub(super) struct ParquetSink {
    writer: polars::io::parquet::write::BatchedWriter<File>,
    encoder: Arc<ParquetEncoder>,
    file: File,
}

/// Rows to a typed DataFrame (one row group).
pub(super) struct ParquetEncoder {
    names: Vec<String>,
    kinds: Vec<Kind>,
}

fn polars_error(e: PolarsError) -> WriteError {
    WriteError(e.to_string())
}

fn dtype(kind: Kind) -> DataType {
    match kind {
        Kind::Text => DataType::String,
        Kind::Int => DataType::Int64,
        Kind::Time => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
        Kind::Date => DataType::Date,
        Kind::Float | Kind::Number => DataType::Float64,
        Kind::Bool => DataType::Boolean,
        Kind::Tags => DataType::List(Box::new(DataType::String)),
    }
}

/// Days from 1970-01-01 (Parquet's DATE).
fn days(date: chrono::NaiveDate) -> i32 {
    (date - chrono::NaiveDate::default()).num_days() as i32
}

/// A cell's text, `None` when empty.
fn text_of<'a>(cell: Option<&'a Cell<'_>>) -> Option<&'a str> {
    match cell {
        Some(Cell::Text(s)) if !s.is_empty() => Some(s.as_ref()),
        _ => None,
    }
}

impl ParquetSink {
    pub(super) fn create(path: &Path, layout: Layout) -> Result<Self, WriteError> {
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
                Kind::Text => Column::new(name, cells.map(text_of).collect::<Vec<_>>()),
                Kind::Int => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Int(n)) => *n,
                            _ => None,
                        })
                        .collect::<Vec<Option<i64>>>(),
                ),
                Kind::Time => Column::new(
                    name,
                    cells
                        .map(|c| match c {
                            Some(Cell::Time(t)) => t.and_then(|t| t.checked_mul(1000)),
                            _ => None,
                        })
                        .collect::<Vec<Option<i64>>>(),
                )
                .cast(&dtype(Kind::Time))
                .map_err(polars_error)?,
                Kind::Date => Column::new(
                    name,
                    cells
                        .map(|c| text_of(c).and_then(super::date).map(days))
                        .collect::<Vec<Option<i32>>>(),
                )
                .cast(&DataType::Date)
                .map_err(polars_error)?,
                Kind::Number => Column::new(
                    name,
                    cells
                        .map(|c| text_of(c).and_then(super::number))
                        .collect::<Vec<Option<f64>>>(),
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
                Kind::Tags => {
                    let mut list = ListStringChunkedBuilder::new(name, rows.len(), rows.len());
                    for c in cells {
                        match c {
                            Some(Cell::Tags(tags)) => {
                                list.append_values_iter(tags.iter().map(|t| t.as_ref()))
                            }
                            _ => list.append_null(),
                        }
                    }
                    list.finish().into_series().into_column()
                }
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
