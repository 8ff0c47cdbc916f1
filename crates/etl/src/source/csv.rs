//! Reading delimited text: the file is read once, decoded to UTF-8 once, and parsed by the
//! `csv` crate in one pass, each record streamed into the table builder through one reused
//! `StringRecord`.
//!
//! Row numbers are the ones a spreadsheet shows when it opens the file: every record is one
//! row (a quoted field spanning lines included) and a blank line is a row too. The `csv`
//! crate skips blank lines and counts physical lines, so a record's row is its first line
//! minus the newlines inside the quoted fields of the records before it.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use ::csv::{ReaderBuilder, StringRecord};

use super::builder::{self, Fields, Header, TableBuilder};
use super::compressed::{self, Compression};
use super::encoding;
use super::quotes::{self, QuoteEnd};
use super::sniff;
use super::zipped;
use super::{Dialect, SourceError, SourceFormat, SourceSpec};

/// How much of a file [`read_header`] reads first; the whole file only if the header does
/// not end within it.
const HEADER_PREFIX: u64 = 1 << 20;
// The detector reads the first bytes: the header's read must hold all it reads, to guess
// as the whole file's does.
const _: () = assert!(HEADER_PREFIX as usize >= encoding::GUESS_SCAN);

/// A zip member to read instead of the file at `path`: the archive and the member's name.
pub(crate) type Member = Option<(PathBuf, String)>;

/// Reads a CSV file (or zip member) into the table, whole; returns its
/// dialect. (`stream::read_file` reads large files in windows.)
pub(crate) fn read_file(
    path: &Path,
    member: &Member,
    spec: &SourceSpec,
    table: &mut TableBuilder<'_>,
) -> Result<Dialect, SourceError> {
    let bytes = read_bytes(path, member, None)?;
    let (text, dialect) = prepare(&bytes, path, spec, false)?;
    let mut rows = Rows::new(&text, dialect.delimiter, path, spec);
    let header = find_header(&mut rows, spec)?.ok_or_else(|| empty_or_beyond(&rows, spec, path))?;
    let columns = table.start_file(path.to_path_buf(), &header, dialect.clone());
    while let Some(row) = rows.next()? {
        match rows.broken.take() {
            None => table.push_row(&columns, row, &rows.record)?,
            Some(quote) => {
                let (column, reason) = broken_quote_reason(&quote, &header, row, spec);
                table.push_reject(&columns, row, &rows.record, reason, column)?;
            }
        }
    }
    Ok(dialect)
}

/// The reject reason of a row whose quote ran away, and the column where it opened.
pub(super) fn broken_quote_reason(
    quote: &BrokenQuote,
    header: &Header,
    row: u64,
    spec: &SourceSpec,
) -> (String, String) {
    let column = header
        .names
        .get(quote.field)
        .cloned()
        .unwrap_or_else(|| format!("column_{}", quote.field + 1));
    let how = match quote.end {
        QuoteEnd::TooLong => format!(
            "did not close within {} lines (it closed after {}; raise `max_quoted_lines` if a field really is that long)",
            spec.max_quoted_lines(),
            quote.covered
        ),
        QuoteEnd::MidField => format!(
            "never closes: the next quote, {} lines down, opens a field of its own",
            quote.covered - 1
        ),
        QuoteEnd::EndOfFile => format!(
            "never closes: it ran to the end of the file, over {} lines",
            quote.covered
        ),
    };
    let reason = format!(
        "the quote opened in column \"{column}\" (field {}) of row {row} {how}; the row is rejected and the lines after it are read as rows",
        quote.field + 1
    );
    (column, reason)
}

/// The header only, from the first megabyte when the header ends within it.
pub(crate) fn read_header(
    path: &Path,
    member: &Member,
    spec: &SourceSpec,
) -> Result<Header, SourceError> {
    let prefix = read_bytes(path, member, Some(HEADER_PREFIX))?;
    let truncated = prefix.len() as u64 >= HEADER_PREFIX;
    if truncated {
        let (text, dialect) = prepare(&prefix, path, spec, true)?;
        let mut rows = Rows::new(&text, dialect.delimiter, path, spec);
        if let Some(header) = find_header(&mut rows, spec)?
            && rows.position() < text.len()
        {
            return Ok(header);
        }
    }
    let bytes = if truncated {
        read_bytes(path, member, None)?
    } else {
        prefix
    };
    let (text, dialect) = prepare(&bytes, path, spec, false)?;
    let mut rows = Rows::new(&text, dialect.delimiter, path, spec);
    match find_header(&mut rows, spec)? {
        Some(header) => Ok(header),
        None => Err(empty_or_beyond(&rows, spec, path)),
    }
}

fn read_bytes(path: &Path, member: &Member, limit: Option<u64>) -> Result<Vec<u8>, SourceError> {
    if let Some((archive, name)) = member {
        return zipped::read_member(archive, name, limit);
    }
    if let Some(compression) = Compression::from_path(path) {
        return compressed::read(path, compression, limit);
    }
    let io_error = |source| SourceError::Io {
        file: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let mut bytes = Vec::new();
    match limit {
        Some(limit) => file.take(limit).read_to_end(&mut bytes),
        None => (&file).read_to_end(&mut bytes),
    }
    .map_err(io_error)?;
    if bytes.is_empty() {
        return Err(SourceError::Empty {
            file: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Decodes the text and settles the dialect: line ending, delimiter (given or sniffed), and
/// the non-RFC spaces before quotes removed when there are any.
fn prepare<'a>(
    bytes: &'a [u8],
    path: &Path,
    spec: &SourceSpec,
    truncated: bool,
) -> Result<(Cow<'a, str>, Dialect), SourceError> {
    let decoded = encoding::decode(bytes, spec.encoding, path, truncated)?;
    let (line_ending, mut text) = encoding::line_ending(decoded.text);
    let mut named = None;
    if let Some((delimiter, line_len)) = excel_sep_line(&text) {
        named = Some(delimiter);
        text = match text {
            Cow::Borrowed(t) => Cow::Borrowed(&t[line_len..]),
            Cow::Owned(t) => Cow::Owned(t[line_len..].to_string()),
        };
    }
    let delimiter = spec
        .delimiter
        .or(named)
        .unwrap_or_else(|| sniff::sniff_delimiter(&text, spec.header_row()));
    if sniff::has_space_before_quote(&text, delimiter) {
        text = Cow::Owned(sniff::strip_space_around_quotes(&text, delimiter));
    }
    let dialect = Dialect {
        format: SourceFormat::Csv,
        delimiter,
        encoding: decoded.encoding,
        encoding_guessed: decoded.guessed,
        line_ending,
    };
    Ok((text, dialect))
}

/// Excel's `sep=;` first line: the delimiter and the line's length. Excel hides the line, so
/// it is not a row here either.
pub(super) fn excel_sep_line(text: &str) -> Option<(u8, usize)> {
    let rest = text.strip_prefix("sep=")?;
    let delimiter = *rest
        .as_bytes()
        .first()
        .filter(|b| b.is_ascii() && !b.is_ascii_whitespace())?;
    let after = &rest[1..];
    let newline = if after.starts_with("\r\n") {
        2
    } else if after.is_empty() || after.starts_with('\n') {
        usize::from(!after.is_empty())
    } else {
        return None;
    };
    Some((delimiter, "sep=".len() + 1 + newline))
}

/// Skips the rows above the header row; the first non-blank row from there is the header.
/// Without a header row (`no_header`) that row is the first data row: it names the columns
/// by its field count only, and the next [`Rows::next`] reads it again, as a row.
pub(super) fn find_header(
    rows: &mut Rows<'_>,
    spec: &SourceSpec,
) -> Result<Option<Header>, SourceError> {
    while let Some(row) = rows.next()? {
        if row >= spec.header_row() {
            if spec.no_header {
                rows.again = true;
            }
            return Ok(Some(header_of(&rows.record, spec)));
        }
    }
    Ok(None)
}

/// The header the first row at the header row makes: its names; or, for a file without a
/// header row (`no_header`), `column_1`, `column_2`, ... for its fields, named as empty
/// header cells are, the rows needing the fields up to its last non-empty one (as a header
/// ending in unnamed cells does).
pub(super) fn header_of(first: &(impl Fields + ?Sized), spec: &SourceSpec) -> Header {
    if !spec.no_header {
        return builder::header(first);
    }
    let unnamed: Vec<Option<&str>> = vec![None; first.count()];
    let mut header = builder::header(unnamed.as_slice());
    header.named = (0..first.count())
        .rposition(|i| first.field(i).is_some_and(|f| !f.trim().is_empty()))
        .map_or(0, |i| i + 1);
    header
}

pub(super) fn empty_or_beyond(rows: &Rows<'_>, spec: &SourceSpec, path: &Path) -> SourceError {
    if rows.last_row == 0 {
        SourceError::Empty {
            file: path.to_path_buf(),
        }
    } else {
        SourceError::HeaderBeyondEnd {
            file: path.to_path_buf(),
            header_row: spec.header_row(),
            last_row: rows.last_row,
        }
    }
}

/// The non-blank records of a text with their row numbers. The text is the
/// whole file, or one window of it (`stream.rs`): then a record reaching the
/// window's end may be cut, and is left for the next window instead.
pub(super) struct Rows<'t> {
    reader: ::csv::Reader<&'t [u8]>,
    text: &'t [u8],
    delimiter: u8,
    record: StringRecord,
    path: &'t Path,
    /// Newlines inside quoted fields of the records read so far.
    embedded: u64,
    /// The row number of the last non-blank record read (0 before the first).
    last_row: u64,
    /// Where the reader's input starts in `text`, and the lines before it: after a quote
    /// that never closed, a new reader starts on the line after the one where it opened.
    base_byte: usize,
    base_line: u64,
    max_quoted_lines: u64,
    /// The quote that did not close in the record just read (then `record` holds that
    /// record's opening line read with the quote as text).
    pub(super) broken: Option<BrokenQuote>,
    /// The text ends where the file does (false: a window with more to come).
    last: bool,
    /// In a window: where the record that reached its end starts (the next
    /// window starts there).
    pub(super) cut: Option<usize>,
    /// The next [`Rows::next`] gives the record just read again (the first row of a file
    /// without a header row, read by [`find_header`] for its width).
    again: bool,
}

/// What a window's rows hand on to the next window's.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Carry {
    /// Lines before the window's text.
    pub lines: u64,
    pub embedded: u64,
    pub last_row: u64,
}

/// A row whose quoted field ran away (see `quotes`).
pub(crate) struct BrokenQuote {
    pub field: usize,
    pub covered: u64,
    pub end: QuoteEnd,
}

fn reader(text: &[u8], delimiter: u8, quoting: bool) -> ::csv::Reader<&[u8]> {
    ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .quoting(quoting)
        .delimiter(delimiter)
        .from_reader(text)
}

impl<'t> Rows<'t> {
    fn new(text: &'t str, delimiter: u8, path: &'t Path, spec: &SourceSpec) -> Self {
        Self::window(text, delimiter, path, spec, Carry::default(), true)
    }

    /// The rows of a window of the file, going on from where the window
    /// before left (`carry`); `last`: the window ends where the file does.
    pub(super) fn window(
        text: &'t str,
        delimiter: u8,
        path: &'t Path,
        spec: &SourceSpec,
        carry: Carry,
        last: bool,
    ) -> Self {
        Rows {
            reader: reader(text.as_bytes(), delimiter, true),
            text: text.as_bytes(),
            delimiter,
            record: StringRecord::new(),
            path,
            embedded: carry.embedded,
            last_row: carry.last_row,
            base_byte: 0,
            base_line: carry.lines,
            max_quoted_lines: spec.max_quoted_lines(),
            broken: None,
            last,
            cut: None,
            again: false,
        }
    }

    /// What the next window's rows go on from, when it starts at `cut`.
    pub(super) fn carry(&self, cut: usize, lines_before_window: u64) -> Carry {
        let newlines = self.text[..cut].iter().filter(|&&b| b == b'\n').count();
        Carry {
            lines: lines_before_window + newlines as u64,
            embedded: self.embedded,
            last_row: self.last_row,
        }
    }

    pub(super) fn record(&self) -> &StringRecord {
        &self.record
    }

    /// Byte offset where the next record starts.
    fn position(&self) -> usize {
        usize::try_from(self.reader.position().byte())
            .map_or(usize::MAX, |b| b.saturating_add(self.base_byte))
    }

    /// Reads the next non-blank record into `self.record`; returns its row number.
    pub(super) fn next(&mut self) -> Result<Option<u64>, SourceError> {
        // The record is still in `record`, and its quote (if one ran away) in `broken`.
        if std::mem::take(&mut self.again) {
            return Ok(Some(self.last_row));
        }
        self.broken = None;
        loop {
            let line_before = self.reader.position().line();
            let start = self.position();
            let more = self
                .reader
                .read_record(&mut self.record)
                .map_err(|e| SourceError::Csv {
                    file: self.path.to_path_buf(),
                    row: self.last_row + 1,
                    message: e.to_string(),
                })?;
            // In a window, a record reaching its end may go on in the
            // next one: it is read again there, whole.
            if !self.last && (!more || self.position() >= self.text.len()) {
                self.cut = Some(start);
                return Ok(None);
            }
            if !more {
                return Ok(None);
            }
            let after = self.reader.position();
            // One line advanced: no newline inside the record, none skipped before it.
            let embedded = if after.line().saturating_sub(line_before) > 1 {
                self.record
                    .as_slice()
                    .bytes()
                    .filter(|&b| b == b'\n')
                    .count() as u64
            } else {
                0
            };
            // The reader has counted the record's terminating `\n` (not yet the one of a
            // `\r\n`, which it takes when the next record starts).
            let end = self.position();
            let ends_in_lf = end > 0 && self.text.get(end - 1) == Some(&b'\n');
            let first_line =
                (self.base_line + after.line()).saturating_sub(embedded + u64::from(ends_in_lf));
            let row = first_line.saturating_sub(self.embedded);
            // A blank line is skipped; a record holding a quoted field (`""`) was
            // written as a value, even an empty one, and is a row like any other.
            let quoted = self
                .text
                .get(start..end)
                .is_some_and(|raw| raw.contains(&b'"'));
            if builder::is_blank(&self.record) && !quoted {
                self.embedded += embedded;
                continue;
            }
            let at_end = end >= self.text.len();
            if (embedded > 0 || at_end)
                && let Some(row) = self.restart_after_runaway(start, end, at_end, line_before)
            {
                self.last_row = row;
                return Ok(Some(row));
            }
            self.embedded += embedded;
            self.last_row = row;
            return Ok(Some(row));
        }
    }

    /// When the record in `text[start..end]` holds a quote that ran away: keeps its opening
    /// line (read with quotes as text) in `record`, and starts reading again on the line
    /// after it, so the lines the quote swallowed are rows again. Returns the row's number.
    fn restart_after_runaway(
        &mut self,
        start: usize,
        end: usize,
        at_end: bool,
        line_before: u64,
    ) -> Option<u64> {
        let slice = self.text.get(start..end)?;
        // Blank lines the reader skipped before the record belong to no record.
        let skipped = slice
            .iter()
            .take_while(|&&b| b == b'\n' || b == b'\r')
            .count();
        let r = quotes::find_runaway(
            &slice[skipped..],
            self.delimiter,
            self.max_quoted_lines,
            at_end,
        )?;
        // The quoted field's newlines are no record's: the lines are read again as rows.
        let first_line = self.base_line
            + line_before
            + slice[..skipped].iter().filter(|&&b| b == b'\n').count() as u64;
        let row = first_line.saturating_sub(self.embedded);
        let record_start = start + skipped;
        let line_end = record_start + r.line_end;
        let opening = &self.text[record_start..line_end];
        let mut literal = reader(opening, self.delimiter, false);
        let mut fields = StringRecord::new();
        self.record.clear();
        // Cannot fail: a reader over text already read and checked (a
        // `&str`), with no I/O under it.
        while literal.read_record(&mut fields).unwrap_or(false) {
            for f in fields.iter() {
                self.record.push_field(f);
            }
        }
        // The lines from the record's first to the quote's are this one row.
        self.embedded += r.lines_before;
        self.base_line = first_line + r.lines_before;
        self.base_byte = line_end;
        self.reader = reader(&self.text[line_end..], self.delimiter, true);
        self.broken = Some(BrokenQuote {
            field: r.field,
            covered: r.covered,
            end: r.end,
        });
        Some(row)
    }
}

#[cfg(test)]
#[path = "csv_tests.rs"]
pub(crate) mod tests;
