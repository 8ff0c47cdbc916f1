//! The source stage: the files a pipeline step names (CSV or spreadsheet exports from other
//! tools) become one polars table of cell text, plus the rows that could not be read as rows.
//!
//! Everything about bytes ends here: encodings and BOMs (`encoding`), delimiters and
//! non-RFC quoting (`sniff`), CSV parsing and row numbers (`csv`), sheets and cell types
//! (`xlsx`), the union of several files (`builder`), zip archives of CSV files (`zipped`),
//! gzip and zstd files (`compressed`), Parquet (`parquet`) and JSON lines (`jsonl`), and a
//! PostgreSQL query (`postgres`), which names no file at all. Later stages see column names and cell
//! text only, and send bad rows back through `rejects` in the input's own dialect.

mod builder;
mod compressed;
mod csv;
mod encoding;
mod error;
mod files;
mod jsonl;
mod parquet;
mod postgres;
mod quotes;
mod reject_spool;
mod rejects;
mod rejects_file;
mod sniff;
mod stream;
mod xlsx;
mod zipped;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use polars::prelude::DataFrame;

pub use encoding::TextEncoding;
pub use error::SourceError;
pub use postgres::{PgSource, PgUrl};
pub use quotes::DEFAULT_MAX_QUOTED_LINES;
pub use reject_spool::RejectSpool;
pub use rejects::{RENDER_BUFFER, RejectRow, RejectsFormat};
pub use rejects_file::RejectsFile;

pub use builder::Repeated;
use builder::TableBuilder;
use files::Input;

/// Name of the internal column holding the index into [`Table::files`].
pub const FILE_COL: &str = "__file";
/// Name of the internal column holding a row's number in its file, as a user sees it.
pub const ROW_COL: &str = "__row";

/// What a pipeline step says about its input (built by the pipeline parser).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceSpec {
    /// One or more paths or glob patterns, relative to `base_dir` given to [`read`].
    pub paths: Vec<String>,
    /// None: by extension (.csv .txt .tsv -> Csv; .xlsx .xlsm .xlsb .xls .ods -> Spreadsheet),
    /// under a compression suffix (.gz .zst) if there is one.
    pub format: Option<SourceFormat>,
    /// CSV delimiter; None: sniffed among `,` `;` TAB `|` from the first lines (outside quotes).
    pub delimiter: Option<u8>,
    /// None: detected (BOM -> UTF-8/UTF-16LE/UTF-16BE; NULs -> UTF-16; else valid UTF-8;
    /// else the legacy encoding chardetng guesses, Windows-1252 for Western European text).
    pub encoding: Option<TextEncoding>,
    /// 1-based row holding the column names (default 1; 0 also means 1). Rows above it are
    /// skipped; if it is blank, the first non-blank row below it is the header.
    pub header_row: usize,
    /// The file has no header row (`header = false`): the row at `header_row` is the first
    /// data row, and the columns are named `column_1`, `column_2`, ... (as empty header
    /// cells are) for that row's fields.
    pub no_header: bool,
    /// Spreadsheet sheets read as one source (they share a layout); empty: the first sheet.
    pub sheets: Vec<SheetRef>,
    /// Rows with fewer fields than the header get empty ones instead of being rejected.
    pub pad_short_rows: bool,
    /// A quoted field spanning more lines than this is taken for a quote that never
    /// closed; 0: [`DEFAULT_MAX_QUOTED_LINES`].
    pub max_quoted_lines: u64,
    /// A PostgreSQL query read instead of files (`paths` is then empty).
    pub postgres: Option<PgSource>,
}

impl SourceSpec {
    /// The header row, 1-based, with the derived `Default` (0) read as the first row.
    fn header_row(&self) -> u64 {
        self.header_row.max(1) as u64
    }

    /// The quoted-field line limit, with the derived `Default` (0) read as the default.
    fn max_quoted_lines(&self) -> u64 {
        match self.max_quoted_lines {
            0 => DEFAULT_MAX_QUOTED_LINES,
            n => n,
        }
    }
}

/// How a file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// Delimited text (CSV, TSV, semicolon-separated, ...).
    Csv,
    /// A workbook calamine reads: xlsx, xlsm, xlsb, xls, ods.
    Spreadsheet,
    /// Apache Parquet.
    Parquet,
    /// One JSON object per line (JSON lines, NDJSON).
    JsonLines,
}

impl SourceFormat {
    /// The format an extension stands for (case-insensitive): a file named
    /// directly or a zip member alike.
    pub(crate) fn from_path(path: &Path) -> Option<SourceFormat> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "csv" | "txt" | "tsv" => Some(SourceFormat::Csv),
            "xlsx" | "xlsm" | "xlsb" | "xls" | "ods" => Some(SourceFormat::Spreadsheet),
            "parquet" => Some(SourceFormat::Parquet),
            "jsonl" | "ndjson" => Some(SourceFormat::JsonLines),
            _ => None,
        }
    }
}

/// Which sheet of a workbook to read.
#[derive(Debug, Clone, PartialEq)]
pub enum SheetRef {
    /// By name (exact; a unique case-insensitive match is accepted too).
    Name(String),
    /// 1-based
    Index(usize),
    /// Every sheet (`sheet = "*"`).
    All,
}

/// The sheets of one workbook, for `check` to name.
#[derive(Debug, Clone, PartialEq)]
pub struct Workbook {
    pub file: PathBuf,
    /// Every sheet, in workbook order.
    pub sheets: Vec<String>,
    /// The sheets read, in the order read.
    pub read: Vec<String>,
}

/// How lines end in a text file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// `\r\n` (Windows, Excel, RFC 4180); also chosen for old-Mac `\r`-only files.
    Crlf,
    /// `\n`
    Lf,
}

/// How the input was written, so rejects go back in the same dialect.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialect {
    pub format: SourceFormat,
    pub delimiter: u8,
    pub encoding: TextEncoding,
    /// The encoding is the detector's guess, which the file's bytes did not settle (few
    /// non-ASCII characters, or ones several encodings read as text): [`Dialect::encoding_note`].
    pub encoding_guessed: bool,
    pub line_ending: LineEnding,
}

impl Dialect {
    /// What to tell a user of a guessed encoding (`check`, `init`); none when it is sure.
    pub fn encoding_note(&self) -> Option<String> {
        self.encoding_guessed.then(|| {
            let name = self.encoding.as_str();
            format!(
                "the encoding was guessed as {name}; if the text looks wrong, set encoding = \"...\" in the source to the file's real encoding (encoding = \"{name}\" keeps this one)"
            )
        })
    }
}

/// A row that could not become a table row (wrong number of fields, a quote that never
/// closes).
#[derive(Debug, Clone, PartialEq)]
pub struct RawReject {
    /// Index into [`Table::files`].
    pub file: usize,
    pub row_number: u64,
    /// Every field of the row as read.
    pub values: Vec<String>,
    pub reason: String,
    /// What the summaries count it under: [`WRONG_FIELD_COUNT`], [`UNCLOSED_QUOTE`] or
    /// [`NUL_IN_FIELD`].
    pub category: &'static str,
    /// The column the problem is in, when it is in one (where a quote opened).
    pub column: Option<String>,
}

/// The reject category of a row with too few or too many fields.
pub const WRONG_FIELD_COUNT: &str = "wrong number of fields";
/// The reject category of a row whose quoted field never closes.
pub const UNCLOSED_QUOTE: &str = "unterminated quote";
/// The reject category of a row with a NUL byte in a field.
pub const NUL_IN_FIELD: &str = "NUL byte in a field";

/// Everything a source held.
#[derive(Debug)]
pub struct Table {
    /// The column names in file order (trimmed, BOM stripped; an empty name becomes
    /// `column_N`; a name written more than once is numbered in every copy, `Phone_1`,
    /// `Phone_2`; the names of the two internal columns
    /// are treated as taken).
    pub columns: Vec<String>,
    /// One nullable String column per name in `columns` (exact cell text; an empty cell is
    /// null), plus [`FILE_COL`] (u32: index into `files`) and [`ROW_COL`] (u32: the row number
    /// in its file as a user sees it: one row per record, a multi-line quoted field is one
    /// row and a blank line is a row, as in a spreadsheet).
    pub frame: DataFrame,
    pub files: Vec<PathBuf>,
    /// Rows with too few or too many fields ("row has 8 fields, the header has 9").
    pub ragged: Vec<RawReject>,
    /// The column names of each file, in `files` order: which file has which column
    /// (a Mailchimp unsubscribed export is the file with `UNSUB_TIME`).
    pub file_columns: Vec<Vec<String>>,
    /// The dialect of the first file.
    pub dialect: Dialect,
    /// Short rows padded with empty fields (`pad_short_rows`).
    pub padded: u64,
    /// The workbooks read, with their sheets.
    pub workbooks: Vec<Workbook>,
    /// The names a file's header holds more than once (each copy numbered), for the
    /// files started in this chunk.
    pub repeated_headers: Vec<(PathBuf, Repeated)>,
}

/// Rows per chunk when a source is read in chunks: enough for polars to
/// work in bulk, few enough that a chunk is a few megabytes.
pub const CHUNK_ROWS: usize = 65_536;

/// Reads every file the spec names into one table (columns united by name).
pub fn read(spec: &SourceSpec, base_dir: &Path) -> Result<Table, SourceError> {
    let mut whole = None;
    read_chunks(spec, base_dir, usize::MAX, &mut |t| {
        whole = Some(t);
        Ok(())
    })?;
    whole.ok_or(SourceError::NoPaths)
}

/// Reads the files the spec names as tables of `chunk_rows` rows at most
/// (table rows and ragged rows together), handed to `each` in file order as
/// they are read: memory holds one chunk, not the input. Every chunk has
/// every column of every file (one a file lacks is empty); the last chunk,
/// maybe empty, carries every workbook read. An error from `each` stops
/// the read and is returned.
pub fn read_chunks(
    spec: &SourceSpec,
    base_dir: &Path,
    chunk_rows: usize,
    each: &mut dyn FnMut(Table) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    if let Some(query) = &spec.postgres {
        let mut table = TableBuilder::new(false, chunk_rows, &[], each);
        postgres::read(query, &mut table)?;
        return table.finish();
    }
    let inputs = files::resolve(spec, base_dir)?;
    // One chunk needs no columns ahead; several must agree on them, so
    // with more than one file (or sheet) the headers are read first.
    let several = inputs.len() > 1 || spec.sheets.len() > 1 || spec.sheets.contains(&SheetRef::All);
    let columns = if chunk_rows < usize::MAX && several {
        union_of_headers(&inputs, spec)?.columns
    } else {
        Vec::new()
    };
    let mut table = TableBuilder::new(spec.pad_short_rows, chunk_rows, &columns, each);
    for Input {
        path,
        format,
        member,
    } in inputs
    {
        let dialect = match format {
            SourceFormat::Csv => stream::read_file(&path, &member, spec, &mut table)?,
            SourceFormat::Spreadsheet => xlsx::read_file(&path, spec, &mut table)?,
            SourceFormat::Parquet => parquet::read_file(&path, &mut table)?,
            SourceFormat::JsonLines => jsonl::read_file(&path, &mut table)?,
        };
        tracing::debug!(target: log_target!(),
            file = %path.display(),
            encoding = dialect.encoding.as_str(),
            encoding_guessed = dialect.encoding_guessed,
            delimiter = %char::from(dialect.delimiter).escape_default(),
            "source file read"
        );
    }
    table.finish()
}

/// Only the header (for the pipeline checker to validate column mappings before reading
/// everything): the union of the files' column names, named as [`read`] names them.
pub fn read_columns(spec: &SourceSpec, base_dir: &Path) -> Result<Vec<String>, SourceError> {
    read_headers(spec, base_dir).map(|h| h.columns)
}

/// A source's header: its columns, and the names a file writes more than once.
#[derive(Debug, Default)]
pub struct Headers {
    /// The union of the files' column names, named as [`read`] names them.
    pub columns: Vec<String>,
    /// Each name present more than once in one file (or sheet), with that file.
    pub repeated: Vec<(PathBuf, Repeated)>,
}

/// [`read_columns`], with the repeated names (for the checker to refuse a mapping that
/// names one: which copy would it read?).
pub fn read_headers(spec: &SourceSpec, base_dir: &Path) -> Result<Headers, SourceError> {
    if let Some(query) = &spec.postgres {
        return Ok(Headers {
            columns: postgres::read_header(query)?,
            repeated: Vec::new(),
        });
    }
    union_of_headers(&files::resolve(spec, base_dir)?, spec)
}

fn union_of_headers(inputs: &[Input], spec: &SourceSpec) -> Result<Headers, SourceError> {
    let mut headers = Headers::default();
    let mut seen = HashSet::new();
    for Input {
        path,
        format,
        member,
    } in inputs
    {
        let names = match format {
            SourceFormat::Csv => {
                let header = csv::read_header(path, member, spec)?;
                let at = match member {
                    Some((archive, name)) => {
                        PathBuf::from(format!("{}[{name}]", archive.display()))
                    }
                    None => path.clone(),
                };
                headers
                    .repeated
                    .extend(header.repeated.into_iter().map(|r| (at.clone(), r)));
                header.names
            }
            SourceFormat::Spreadsheet => {
                let sheets = xlsx::read_header(path, spec)?;
                headers.repeated.extend(sheets.repeated);
                sheets.columns
            }
            SourceFormat::Parquet => parquet::read_header(path)?,
            SourceFormat::JsonLines => jsonl::read_header(path)?,
        };
        for name in names {
            if seen.insert(name.clone()) {
                headers.columns.push(name);
            }
        }
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::csv::tests::{cells, row_numbers, some, spec};
    use super::*;

    #[test]
    fn two_files_via_a_glob_with_different_columns_are_united_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("in")).unwrap();
        std::fs::write(
            dir.path().join("in/b.csv"),
            b"email;city\r\nb@x.de;Bonn\r\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("in/a.csv"),
            b"name,email\nA,a@x.de\nA2,a2@x.de\n",
        )
        .unwrap();
        let spec = spec(&["in/*.csv"]);
        let table = read(&spec, dir.path()).unwrap();
        assert_eq!(table.columns, ["name", "email", "city"]);
        assert_eq!(
            cells(&table.frame, "email"),
            some(&["a@x.de", "a2@x.de", "b@x.de"])
        );
        assert_eq!(cells(&table.frame, "name"), some(&["A", "A2", ""]));
        assert_eq!(cells(&table.frame, "city"), some(&["", "", "Bonn"]));
        let files: Vec<u32> = table
            .frame
            .column(FILE_COL)
            .unwrap()
            .u32()
            .unwrap()
            .into_no_null_iter()
            .collect();
        assert_eq!(files, [0, 0, 1]);
        assert_eq!(row_numbers(&table.frame), [2, 3, 2]);
        assert_eq!(
            table.files,
            [dir.path().join("in/a.csv"), dir.path().join("in/b.csv")]
        );
        assert_eq!(table.dialect.delimiter, b',');
        assert_eq!(read_columns(&spec, dir.path()).unwrap(), table.columns);
    }

    #[test]
    fn compressed_files_in_a_glob_read_as_the_text_inside_with_header_reads_too() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"email,name\na@x.de,A\n").unwrap();
        std::fs::write(dir.path().join("a.csv.gz"), gz.finish().unwrap()).unwrap();
        let zst = zstd::encode_all(&b"email\tcity\nb@x.de\tBonn\n"[..], 3).unwrap();
        std::fs::write(dir.path().join("b.tsv.zst"), zst).unwrap();
        let spec = spec(&["*.*"]);
        let table = read(&spec, dir.path()).unwrap();
        assert_eq!(table.columns, ["email", "name", "city"]);
        assert_eq!(cells(&table.frame, "email"), some(&["a@x.de", "b@x.de"]));
        assert_eq!(cells(&table.frame, "city"), some(&["", "Bonn"]));
        assert_eq!(read_columns(&spec, dir.path()).unwrap(), table.columns);
        std::fs::write(dir.path().join("c.xlsx.gz"), b"x").unwrap();
        let err = read(&super::csv::tests::spec(&["c.xlsx.gz"]), dir.path()).unwrap_err();
        assert!(matches!(err, SourceError::CompressedSpreadsheet { .. }));
        // JSON lines and Parquet are refused as clearly, not read as garbage.
        for name in ["d.jsonl.gz", "e.parquet.zst"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
            let err = read(&super::csv::tests::spec(&[name]), dir.path()).unwrap_err();
            assert!(
                matches!(err, SourceError::CompressedFormat { .. }),
                "{name}: {err}"
            );
            assert!(err.to_string().contains("unpack it"), "{err}");
        }
    }

    #[test]
    fn formats_come_from_extensions_in_any_case() {
        assert_eq!(
            SourceFormat::from_path(Path::new("a.CSV")),
            Some(SourceFormat::Csv)
        );
        assert_eq!(
            SourceFormat::from_path(Path::new("a.tsv")),
            Some(SourceFormat::Csv)
        );
        assert_eq!(
            SourceFormat::from_path(Path::new("a.Xlsx")),
            Some(SourceFormat::Spreadsheet)
        );
        assert_eq!(
            SourceFormat::from_path(Path::new("a.ods")),
            Some(SourceFormat::Spreadsheet)
        );
        assert_eq!(
            SourceFormat::from_path(Path::new("a.NDJSON")),
            Some(SourceFormat::JsonLines)
        );
        assert_eq!(
            SourceFormat::from_path(Path::new("a.parquet")),
            Some(SourceFormat::Parquet)
        );
        assert_eq!(SourceFormat::from_path(Path::new("a.dat")), None);
    }
}
