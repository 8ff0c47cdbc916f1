//! The ways reading a source can fail. Each message names the file (and row or byte when
//! known) and says what the user can change; bad rows are not errors (see `RawReject`).

use std::io;
use std::path::PathBuf;

use super::TextEncoding;

/// A source that cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("the source names no files: set `paths` to one or more files or glob patterns")]
    NoPaths,

    #[error("no files match \"{pattern}\" (looked in {dir}); check the pattern in `paths`")]
    NoMatch { pattern: String, dir: PathBuf },

    #[error("invalid glob pattern \"{pattern}\": {message}")]
    BadPattern { pattern: String, message: String },

    #[error("{} does not exist; check the path in `source`", .file.display())]
    NotFound { file: PathBuf },

    #[error("cannot read {}: {source}", .file.display())]
    Io { file: PathBuf, source: io::Error },

    #[error(
        "{}: cannot tell the format from the file name; set `format` to `csv`, `xlsx`, `xls`, `ods`, `parquet` or `jsonl`",
        .file.display()
    )]
    UnknownFormat { file: PathBuf },

    #[error(
        "{} is empty (no rows, not even a header); export the list again or remove the file from `paths`",
        .file.display()
    )]
    Empty { file: PathBuf },

    #[error(
        "{}: invalid UTF-8 at byte {offset}; set encoding to the file's real encoding ({}), for example encoding = \"windows-1252\"",
        .file.display(), TextEncoding::CHOICES
    )]
    InvalidUtf8 { file: PathBuf, offset: usize },

    #[error(
        "{} is not valid {} text; set encoding to the file's real encoding ({})",
        .file.display(), .encoding.as_str(), TextEncoding::CHOICES
    )]
    InvalidUtf16 {
        file: PathBuf,
        encoding: TextEncoding,
    },

    #[error(
        "{} is not text (NUL byte at byte {offset}); if it is a spreadsheet, name it .xlsx, .xls or .ods or set format = \"xlsx\" (or \"xls\", \"ods\")",
        .file.display()
    )]
    NotText { file: PathBuf, offset: usize },

    #[error(
        "{} is a spreadsheet, not CSV text; name it .xlsx (or .xls) or set format = \"xlsx\" (or \"xls\")",
        .file.display()
    )]
    SpreadsheetAsText { file: PathBuf },

    #[error(
        "{} is not a spreadsheet ({message}); for CSV text set format = \"csv\"",
        .file.display()
    )]
    NotSpreadsheet { file: PathBuf, message: String },

    #[error("{}: sheet {sheet} not found (sheets: {sheets}); set `sheet` to one of them", .file.display())]
    SheetNotFound {
        file: PathBuf,
        /// `"Name"` quoted, or `number N`.
        sheet: String,
        /// The workbook's sheet names, comma-separated.
        sheets: String,
    },

    #[error("{}: cannot read sheet \"{sheet}\": {message}", .file.display())]
    Sheet {
        file: PathBuf,
        sheet: String,
        message: String,
    },

    #[error("{}: row {row}: {message}", .file.display())]
    Csv {
        file: PathBuf,
        row: u64,
        message: String,
    },

    #[error(
        "header row {header_row} is beyond the end of {} (its last row is {last_row}); lower header_row",
        .file.display()
    )]
    HeaderBeyondEnd {
        file: PathBuf,
        header_row: u64,
        last_row: u64,
    },

    #[error("{} is not a readable zip archive ({message}); unpack it and name the CSV files in `paths`", .file.display())]
    Archive { file: PathBuf, message: String },

    #[error(
        "{} unpacks to more than {limit_gib} GiB; unpack it yourself and name the CSV file in `paths`",
        .file.display()
    )]
    ArchiveMemberTooLarge { file: PathBuf, limit_gib: u64 },

    #[error(
        "{} holds no CSV file; export the list again as CSV, or name the CSV files themselves in `paths`",
        .file.display()
    )]
    NoCsvInArchive { file: PathBuf },

    #[error(
        "{} is not a readable {compression} file ({message}); check the file, or compress it again",
        .file.display()
    )]
    Compressed {
        file: PathBuf,
        compression: &'static str,
        message: String,
    },

    #[error(
        "{} is a compressed spreadsheet; a workbook is compressed already: unpack it and name the workbook in `paths`",
        .file.display()
    )]
    CompressedSpreadsheet { file: PathBuf },

    /// JSON lines and Parquet are read from their own files: only delimited
    /// text is read through gzip or zstd (a Parquet file compresses its
    /// columns itself).
    #[error(
        "{} is compressed {format}; only delimited text (CSV, TSV) is read through gzip or zstd: unpack it and name the {format} file in `paths`",
        .file.display()
    )]
    CompressedFormat { file: PathBuf, format: &'static str },

    #[error("cannot write {}: {source}", .file.display())]
    Write { file: PathBuf, source: io::Error },

    #[error("internal error assembling the table: {message}")]
    Frame { message: String },

    /// A PostgreSQL query source failed: `source_name` is its URL without the password.
    #[error("{source_name}: {message}")]
    Postgres {
        source_name: String,
        message: String,
    },

    /// A Parquet or JSON-lines file that cannot be read.
    #[error("{}: {message}", .file.display())]
    Data { file: PathBuf, message: String },

    /// The chunks' consumer stopped taking them (see `read_chunks`).
    #[error("the read was stopped before the end of the source")]
    Stopped,
}
