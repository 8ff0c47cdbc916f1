//! The writers, one per format, behind one small trait: rows arrive a page
//! at a time and go straight to the file, so memory stays flat however
//! large the export. Each writer keeps the column kinds its format can hold.

mod csv;
mod jsonl;
mod parquet;
mod xlsx;

use super::columns::{Cell, Kind};
use crate::pipeline::ExportFormat;
use crate::pipeline::export::{CsvOptions, Timestamps};
use std::borrow::Cow;
use std::path::Path;

/// A writer failed: the message names the cause (the path is added by the caller).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WriteError(pub String);

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError(e.to_string())
    }
}

/// Where rows go.
pub trait Sink: Send {
    /// Writes the next rows (one page) in order.
    fn write(&mut self, rows: &[Vec<Cell<'_>>]) -> Result<(), WriteError>;
    /// Writes what is buffered and closes the file.
    fn finish(self: Box<Self>) -> Result<(), WriteError>;
}

/// The header and types every writer is opened with.
pub struct Layout<'a> {
    pub names: Vec<String>,
    pub kinds: Vec<Kind>,
    pub timestamps: Timestamps,
    pub csv: &'a CsvOptions,
}

/// Opens a writer of `format` on `path` (the temporary name) and writes the header.
pub fn open(
    format: ExportFormat,
    path: &Path,
    layout: Layout,
) -> Result<Box<dyn Sink>, WriteError> {
    Ok(match format {
        ExportFormat::Csv => Box::new(csv::CsvSink::create(path, layout)?),
        ExportFormat::Jsonl => Box::new(jsonl::JsonlSink::create(path, layout)?),
        ExportFormat::Parquet => Box::new(parquet::ParquetSink::create(path, layout)?),
        ExportFormat::Xlsx => Box::new(xlsx::XlsxSink::create(path, layout)?),
    })
}

/// A cell as text (CSV): timestamps as the step says, empty for none. A
/// text cell is borrowed, not copied: most of an export's cells are text.
pub fn text<'a>(cell: &'a Cell<'_>, timestamps: Timestamps) -> Cow<'a, str> {
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
    }
}
