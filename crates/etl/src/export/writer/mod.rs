//! The writers, one per format, behind two small traits: a page's rows are
//! encoded ([`Encode`], on any thread, several pages at once) into a
//! [`Chunk`], and the chunks go to the file in page order ([`Sink`]), so
//! memory stays flat however large the export. Each writer keeps the column
//! kinds its format can hold.

mod csv;
mod jsonl;
mod parquet;
mod xlsx;

use super::columns::{Cell, Kind};
use crate::pipeline::ExportFormat;
use crate::pipeline::export::{CsvOptions, Timestamps};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// A writer failed: the message names the cause (the path is added by the caller).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WriteError(pub String);

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError(e.to_string())
    }
}

/// A page's rows as its format holds them, ready to be written.
pub enum Chunk {
    /// CSV and JSON lines: the file's bytes.
    Bytes(Vec<u8>),
    /// Parquet: one row group.
    Frame(polars::prelude::DataFrame),
    /// XLSX: the cells, which the workbook numbers as it writes them.
    Rows(Vec<Vec<Cell<'static>>>),
}

/// Turns rows into a [`Chunk`]. It holds no file, so pages are encoded on
/// several threads while their sink writes the chunks before in order.
pub trait Encode: Send + Sync {
    fn encode(&self, rows: &[Vec<Cell<'_>>]) -> Result<Chunk, WriteError>;
}

/// Where chunks go.
pub trait Sink: Send {
    /// The encoder of this sink's chunks.
    fn encoder(&self) -> Arc<dyn Encode>;
    /// Writes the next chunk (one page) in order.
    fn write_chunk(&mut self, chunk: Chunk) -> Result<(), WriteError>;
    /// Writes what is buffered and closes the file.
    fn finish(self: Box<Self>) -> Result<(), WriteError>;
    /// Encodes rows here and writes them.
    fn write(&mut self, rows: &[Vec<Cell<'_>>]) -> Result<(), WriteError> {
        let chunk = self.encoder().encode(rows)?;
        self.write_chunk(chunk)
    }
}

/// A chunk of another format's: a bug, not the data's fault.
fn unexpected(format: &str) -> WriteError {
    WriteError(format!("internal error: a chunk not encoded for {format}"))
}

/// A file of bytes (CSV, JSON lines): each chunk appended as it comes.
pub struct ByteFile {
    out: BufWriter<File>,
    encoder: Arc<dyn Encode>,
    /// The format's name, for a chunk of another's.
    format: &'static str,
}

impl ByteFile {
    fn new(out: BufWriter<File>, encoder: Arc<dyn Encode>, format: &'static str) -> Self {
        ByteFile {
            out,
            encoder,
            format,
        }
    }
}

impl Sink for ByteFile {
    fn encoder(&self) -> Arc<dyn Encode> {
        self.encoder.clone()
    }

    fn write_chunk(&mut self, chunk: Chunk) -> Result<(), WriteError> {
        match chunk {
            Chunk::Bytes(b) => Ok(self.out.write_all(&b)?),
            _ => Err(unexpected(self.format)),
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), WriteError> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(())
    }
}

/// The header and types every writer is opened with.
pub struct Layout<'a> {
    pub names: Vec<String>,
    pub kinds: Vec<Kind>,
    pub timestamps: Timestamps,
    pub csv: &'a CsvOptions,
    /// CSV joins a receiver's tags with this (the typed formats keep a list).
    pub tags_separator: &'a str,
}

/// Opens a writer of `format` on `path` (the temporary name) and writes the header.
pub fn open(
    format: ExportFormat,
    path: &Path,
    layout: Layout,
) -> Result<Box<dyn Sink>, WriteError> {
    Ok(match format {
        ExportFormat::Csv => Box::new(csv::create(path, layout)?),
        ExportFormat::Jsonl => Box::new(jsonl::create(path, layout)?),
        ExportFormat::Parquet => Box::new(parquet::ParquetSink::create(path, layout)?),
        ExportFormat::Xlsx => Box::new(xlsx::XlsxSink::create(path, layout)?),
    })
}

/// A cell as text (CSV): timestamps as the step says, empty for none, tags
/// joined with `tags_separator`. A text cell is borrowed, not copied: most
/// of an export's cells are text.
pub fn text<'a>(cell: &'a Cell<'_>, timestamps: Timestamps, tags_separator: &str) -> Cow<'a, str> {
    match cell {
        Cell::Text(s) => Cow::Borrowed(s.as_ref()),
        Cell::Int(Some(n)) => Cow::Owned(n.to_string()),
        Cell::Int(None) | Cell::Time(None) => Cow::Borrowed(""),
        Cell::Float(f) => Cow::Owned(f.to_string()),
        Cell::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Cell::Time(Some(t)) => match timestamps {
            Timestamps::Iso => Cow::Owned(super::columns::iso(*t)),
            Timestamps::Unix => Cow::Owned(t.to_string()),
        },
        Cell::Tags(tags) => Cow::Owned(tags.join(tags_separator)),
    }
}

/// A `number` attribute's text as a number: `None` when empty or not a
/// finite number (the typed formats then write null, JSON lines the text).
pub fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A `date` attribute's text (`YYYY-MM-DD`, as imports store it) as a date.
pub fn date(text: &str) -> Option<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()
}
