//! Assembling the table as rows stream in: header names made usable, the union of the
//! files' columns by name, one string builder per column fed row by row (no copy of the
//! whole file as rows), and rows that do not fit their header kept as ragged rejects.
//!
//! The fit rule, shared by CSV and spreadsheets: a row may have more fields than the header
//! when the extra ones are empty (the trailing `;` Excel leaves), and fewer when the missing
//! ones are unnamed trailing columns (a header ending in `;`). Anything else is ragged: with
//! a field missing or added in the middle the columns would shift, so the row is not guessed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use polars::prelude::{Column, DataFrame, IntoColumn, StringChunkedBuilder};

use super::{Dialect, FILE_COL, ROW_COL, RawReject, SourceError, Table, Workbook};

/// A row's fields, however the reader holds them.
pub(crate) trait Fields {
    fn count(&self) -> usize;
    /// The field's text; `None` past the end or for an empty spreadsheet cell.
    fn field(&self, i: usize) -> Option<&str>;
}

impl Fields for ::csv::StringRecord {
    fn count(&self) -> usize {
        self.len()
    }
    fn field(&self, i: usize) -> Option<&str> {
        self.get(i)
    }
}

impl Fields for [Option<String>] {
    fn count(&self) -> usize {
        self.len()
    }
    fn field(&self, i: usize) -> Option<&str> {
        self.get(i).and_then(Option::as_deref)
    }
}

impl Fields for [Option<&str>] {
    fn count(&self) -> usize {
        self.len()
    }
    fn field(&self, i: usize) -> Option<&str> {
        self.get(i).copied().flatten()
    }
}

/// Why a row of `count` fields does not fit a header of `width`: a short row names
/// `pad_short_rows`, the option that reads its missing trailing fields as empty.
fn field_count_reason(count: usize, width: usize, short: bool) -> String {
    let hint = if short {
        "; if the missing fields are empty ones at the end, set pad_short_rows = true in the source"
    } else {
        ""
    };
    format!("row has {count} fields, the header has {width}{hint}")
}

/// Whether a row holds nothing but whitespace: skipped, neither a table row nor ragged.
pub(crate) fn is_blank(fields: &(impl Fields + ?Sized)) -> bool {
    (0..fields.count()).all(|i| fields.field(i).is_none_or(|f| f.trim().is_empty()))
}

/// A file's header made into column names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Header {
    pub names: Vec<String>,
    /// Fields up to the last one with a name in the file: rows need at least this many.
    pub named: usize,
    /// The names present more than once, in the order they first appear.
    pub repeated: Vec<Repeated>,
}

/// A header name present more than once in one file: a mapping naming it is
/// refused (which column would it read?), and each copy is reachable by the
/// name it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeated {
    /// The name as the file writes it (trimmed).
    pub name: String,
    /// Each copy: its 1-based field position, and its column name (`Phone_1`, `Phone_2`).
    pub columns: Vec<(usize, String)>,
}

impl Repeated {
    /// What `check` and the run's summary say of it, for the file `file`:
    /// `"Phone" is a header 2 times in contacts.csv: read as "Phone_1" (column 2) and
    /// "Phone_2" (column 4)`.
    pub fn describe(&self, file: &std::path::Path) -> String {
        let file = file.file_name().map_or_else(
            || file.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let copies: Vec<String> = self
            .columns
            .iter()
            .map(|(at, name)| format!("\"{name}\" (column {at})"))
            .collect();
        let copies = match copies.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => copies.join(""),
        };
        format!(
            "\"{}\" is a header {} times in {file}: read as {copies}",
            self.name,
            self.columns.len()
        )
    }
}

/// Trimmed, BOM stripped; an empty name becomes `column_N` (N its 1-based position). A name
/// present more than once is numbered in every copy, `Phone_1`, `Phone_2` in file order
/// (a number the file already uses as a name is skipped), and listed in
/// [`Header::repeated`]; one of the internal column names gets `_2`.
///
/// Linear in the number of columns: each name's next number is remembered, so a header of
/// 100,000 copies of one name is numbered without searching from `_1` again each time.
pub(crate) fn header(raw: &(impl Fields + ?Sized)) -> Header {
    let trimmed: Vec<&str> = (0..raw.count())
        .map(|i| {
            raw.field(i)
                .unwrap_or("")
                .trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
        })
        .collect();
    let named = trimmed
        .iter()
        .rposition(|name| !name.is_empty())
        .map_or(0, |i| i + 1);
    let bases: Vec<String> = trimmed
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if name.is_empty() {
                format!("column_{}", i + 1)
            } else {
                (*name).to_string()
            }
        })
        .collect();
    let mut copies: HashMap<&str, usize> = HashMap::with_capacity(bases.len());
    for base in &bases {
        *copies.entry(base.as_str()).or_default() += 1;
    }
    let internal = |name: &str| name == FILE_COL || name == ROW_COL;
    let single = |name: &str| copies.get(name) == Some(&1) && !internal(name);
    // Names present once keep them, whatever comes before: numbering skips them.
    let mut taken: HashSet<String> = [FILE_COL, ROW_COL].map(String::from).into();
    taken.extend(bases.iter().filter(|b| single(b.as_str())).cloned());
    let mut next: HashMap<&str, usize> = HashMap::new();
    let mut repeated: Vec<Repeated> = Vec::new();
    let mut repeated_at: HashMap<&str, usize> = HashMap::new();
    let mut names = Vec::with_capacity(bases.len());
    for (i, base) in bases.iter().enumerate() {
        if single(base.as_str()) {
            names.push(base.clone());
            continue;
        }
        let n = next
            .entry(base.as_str())
            .or_insert(if internal(base.as_str()) { 2 } else { 1 });
        let mut unique = format!("{base}_{n}");
        *n += 1;
        while !taken.insert(unique.clone()) {
            unique = format!("{base}_{n}");
            *n += 1;
        }
        if copies.get(base.as_str()).is_some_and(|&c| c > 1) {
            let at = *repeated_at.entry(base.as_str()).or_insert_with(|| {
                repeated.push(Repeated {
                    name: base.clone(),
                    columns: Vec::new(),
                });
                repeated.len() - 1
            });
            repeated[at].columns.push((i + 1, unique.clone()));
        }
        names.push(unique);
    }
    Header {
        names,
        named,
        repeated,
    }
}

/// Where one file's fields go in the table.
pub(crate) struct FileColumns {
    file: usize,
    width: usize,
    named: usize,
    /// Per table column: the field index in this file, if the file has that column.
    slots: Vec<Option<usize>>,
}

/// Where finished chunks go; an error stops the read (the reader's consumer
/// gave up, or failed).
pub(crate) type ChunkSink<'a> = dyn FnMut(Table) -> Result<(), SourceError> + 'a;

pub(crate) struct TableBuilder<'a> {
    /// Rows (table rows and ragged rejects) per chunk handed to `sink`.
    chunk_rows: usize,
    sink: &'a mut ChunkSink<'a>,
    columns: Vec<String>,
    index: HashMap<String, usize>,
    builders: Vec<StringChunkedBuilder>,
    file_col: Vec<u32>,
    row_col: Vec<u32>,
    ragged: Vec<RawReject>,
    files: Vec<PathBuf>,
    file_columns: Vec<Vec<String>>,
    dialect: Option<Dialect>,
    /// `pad_short_rows`: a row with fewer fields than its header gets empty ones.
    pad_short_rows: bool,
    padded: u64,
    workbooks: Vec<Workbook>,
    /// Names a file's header holds more than once, since the last chunk.
    repeated: Vec<(PathBuf, Repeated)>,
}

impl<'a> TableBuilder<'a> {
    /// A builder handing every `chunk_rows` rows to `sink` as a [`Table`]
    /// of its own (with every column named in `columns`, and the files and
    /// workbooks seen so far); the last, maybe short, chunk on [`finish`].
    ///
    /// [`finish`]: TableBuilder::finish
    pub(super) fn new(
        pad_short_rows: bool,
        chunk_rows: usize,
        columns: &[String],
        sink: &'a mut ChunkSink<'a>,
    ) -> Self {
        let mut builder = TableBuilder {
            chunk_rows: chunk_rows.max(1),
            sink,
            columns: Vec::new(),
            index: HashMap::new(),
            builders: Vec::new(),
            file_col: Vec::new(),
            row_col: Vec::new(),
            ragged: Vec::new(),
            files: Vec::new(),
            file_columns: Vec::new(),
            dialect: None,
            pad_short_rows,
            padded: 0,
            workbooks: Vec::new(),
            repeated: Vec::new(),
        };
        for name in columns {
            builder.add_column(name);
        }
        builder
    }

    fn add_column(&mut self, name: &str) {
        if self.index.contains_key(name) {
            return;
        }
        let rows_so_far = self.row_col.len();
        let mut builder = StringChunkedBuilder::new(name.into(), rows_so_far);
        for _ in 0..rows_so_far {
            builder.append_null();
        }
        self.index.insert(name.to_string(), self.columns.len());
        self.columns.push(name.to_string());
        self.builders.push(builder);
    }

    /// Notes which sheets a workbook has and which were read, for `check`.
    pub(super) fn add_workbook(&mut self, workbook: Workbook) {
        self.workbooks.push(workbook);
    }

    /// Keeps a row that could not be read as a row (a quote that never closed).
    pub(super) fn push_reject(
        &mut self,
        file: &FileColumns,
        row_number: u64,
        fields: &(impl Fields + ?Sized),
        reason: String,
        column: String,
    ) -> Result<(), SourceError> {
        self.ragged.push(RawReject {
            file: file.file,
            row_number,
            values: (0..fields.count())
                .map(|i| fields.field(i).unwrap_or("").to_string())
                .collect(),
            reason,
            category: super::UNCLOSED_QUOTE,
            column: Some(column),
        });
        self.full()
    }

    /// Registers a file and its header; columns new to the table start with nulls for the
    /// rows of earlier files.
    pub(super) fn start_file(
        &mut self,
        path: PathBuf,
        header: &Header,
        dialect: Dialect,
    ) -> FileColumns {
        for name in &header.names {
            self.add_column(name);
        }
        let mut slots = vec![None; self.columns.len()];
        for (field, name) in header.names.iter().enumerate() {
            if let Some(&column) = self.index.get(name) {
                slots[column] = Some(field);
            }
        }
        self.repeated
            .extend(header.repeated.iter().map(|r| (path.clone(), r.clone())));
        self.files.push(path);
        self.file_columns.push(header.names.clone());
        self.dialect.get_or_insert(dialect);
        FileColumns {
            file: self.files.len() - 1,
            width: header.names.len(),
            named: header.named,
            slots,
        }
    }

    /// Adds a non-blank data row, or keeps it as ragged if it does not fit its header.
    pub(super) fn push_row(
        &mut self,
        file: &FileColumns,
        row_number: u64,
        fields: &(impl Fields + ?Sized),
    ) -> Result<(), SourceError> {
        let count = fields.count();
        let extra_filled =
            (file.width..count).any(|i| fields.field(i).is_some_and(|f| !f.trim().is_empty()));
        let short = count < file.named;
        if (short && !self.pad_short_rows) || extra_filled {
            self.ragged.push(RawReject {
                file: file.file,
                row_number,
                values: (0..count)
                    .map(|i| fields.field(i).unwrap_or("").to_string())
                    .collect(),
                reason: field_count_reason(count, file.width, short),
                category: super::WRONG_FIELD_COUNT,
                column: None,
            });
            return self.full();
        }
        // A NUL is no text a target stores, and dropping it would change the value
        // unsaid: the row is rejected, the rest of the file read.
        if let Some((i, at)) = (0..count).find_map(|i| {
            let f = fields.field(i)?;
            f.find('\0').map(|at| (i, f[..at].chars().count() + 1))
        }) {
            let column = self.file_columns[file.file]
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("column_{}", i + 1));
            self.ragged.push(RawReject {
                file: file.file,
                row_number,
                values: (0..count)
                    .map(|i| fields.field(i).unwrap_or("").to_string())
                    .collect(),
                reason: format!(
                    "column \"{column}\" holds a NUL byte (U+0000, character {at} of the field), which is not text; the row is rejected, the rest of the file read: remove the NUL from the file to import this row"
                ),
                category: super::NUL_IN_FIELD,
                column: Some(column),
            });
            return self.full();
        }
        // Decision: padding reads a missing trailing field as an empty cell; a row with
        // fields added in the middle cannot be told from one with fields missing at the end,
        // so a long row stays a reject either way.
        self.padded += u64::from(short);
        for (builder, slot) in self.builders.iter_mut().zip(&file.slots) {
            builder.append_option(slot.and_then(|i| fields.field(i)).filter(|f| !f.is_empty()));
        }
        // Columns added by later files are not in `slots` yet: none, as the file is current.
        self.file_col
            .push(u32::try_from(file.file).unwrap_or(u32::MAX));
        self.row_col
            .push(u32::try_from(row_number).unwrap_or(u32::MAX));
        self.full()
    }

    /// Hands the rows so far to the sink when they make a chunk.
    fn full(&mut self) -> Result<(), SourceError> {
        if self.row_col.len() + self.ragged.len() >= self.chunk_rows {
            self.emit()?;
        }
        Ok(())
    }

    /// The rows so far as a table, to the sink; the builders start again.
    fn emit(&mut self) -> Result<(), SourceError> {
        let height = self.row_col.len();
        let mut columns: Vec<Column> = self
            .builders
            .iter_mut()
            .zip(&self.columns)
            .map(|(b, name)| {
                let fresh = StringChunkedBuilder::new(name.as_str().into(), 0);
                std::mem::replace(b, fresh).finish().into_column()
            })
            .collect();
        columns.push(Column::new(
            FILE_COL.into(),
            std::mem::take(&mut self.file_col),
        ));
        columns.push(Column::new(
            ROW_COL.into(),
            std::mem::take(&mut self.row_col),
        ));
        let frame = DataFrame::new(height, columns).map_err(|e| SourceError::Frame {
            message: e.to_string(),
        })?;
        let dialect = self.dialect.clone().ok_or(SourceError::NoPaths)?;
        let table = Table {
            columns: self.columns.clone(),
            frame,
            files: self.files.clone(),
            ragged: std::mem::take(&mut self.ragged),
            file_columns: self.file_columns.clone(),
            dialect,
            padded: std::mem::take(&mut self.padded),
            workbooks: self.workbooks.clone(),
            repeated_headers: std::mem::take(&mut self.repeated),
        };
        (self.sink)(table)
    }

    /// The last chunk (all the rows, when they never filled one), which
    /// also carries every workbook read.
    pub(super) fn finish(mut self) -> Result<(), SourceError> {
        self.emit()
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
