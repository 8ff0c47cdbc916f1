//! Reading a large CSV file in windows of a few megabytes instead of whole,
//! so memory holds a window and a chunk of rows, not the file.
//!
//! What `csv.rs` decides from the whole text is decided first: the encoding
//! (BOM, else whether every byte is valid UTF-8, else the detector's guess
//! from the first megabyte, as `encoding::decode` guesses for a whole file)
//! and whether spaces stand before quotes, in one pass over the bytes; the
//! delimiter and line ending from the first megabyte. Then each window is
//! decoded, by one decoder for the whole file (a character cut by a window's
//! end is finished by the next window's bytes), and parsed by the same
//! [`Rows`] as a whole file, a record that reaches the window's end being
//! read again, whole, in the next one. A
//! file this path cannot read the same way (UTF-16, old-Mac line ends,
//! spaces before quotes to strip, a first megabyte too short to sniff, a
//! zip member) is read whole, as before. A gzip or zstd file is read through
//! its decoder, twice (the pass, then the windows), never decompressed whole.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use encoding_rs::Decoder;

use super::builder::TableBuilder;
use super::compressed::{self, Compression};
use super::csv::{self, Carry, Member, Rows, broken_quote_reason, empty_or_beyond, excel_sep_line};
use super::encoding::{self, Guess, UTF8_BOM};
use super::sniff::{self, SpaceBeforeQuote};
use super::{Dialect, LineEnding, SourceError, SourceFormat, SourceSpec, TextEncoding};

/// Files larger than this are read in windows; smaller ones whole.
pub(super) const STREAM_ABOVE: u64 = 16 << 20;
/// Bytes read per window (a window grows when one record is longer).
pub(super) const WINDOW: usize = 4 << 20;
/// The first bytes, for the dialect.
const PREFIX: usize = 1 << 20;
// The encoding is guessed from these first bytes, as from a file read whole.
const _: () = assert!(PREFIX >= encoding::GUESS_SCAN);

/// How the file will be read, decided before its rows are.
pub(super) struct Plan {
    dialect: Dialect,
    /// A UTF-8 byte order mark to skip.
    bom: bool,
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> SourceError + '_ {
    move |e| compressed::read_error(path, e)
}

/// Reads a CSV file (or zip member) into the table: a large file in
/// windows when it can be, anything else whole (`csv::read_file`).
pub(super) fn read_file(
    path: &Path,
    member: &Member,
    spec: &SourceSpec,
    table: &mut TableBuilder<'_>,
) -> Result<Dialect, SourceError> {
    let large = std::fs::metadata(path).is_ok_and(|m| m.len() > STREAM_ABOVE);
    if member.is_none()
        && large
        && let Some(plan) = plan(path, spec)?
    {
        return read(path, spec, plan, WINDOW, table);
    }
    csv::read_file(path, member, spec, table)
}

/// The plan for reading `path` in windows, or `None` when it must be read
/// whole (see the module).
pub(super) fn plan(path: &Path, spec: &SourceSpec) -> Result<Option<Plan>, SourceError> {
    let mut file = compressed::open(path, Compression::from_path(path))?;
    let mut prefix = Vec::with_capacity(PREFIX);
    (&mut file)
        .take(PREFIX as u64)
        .read_to_end(&mut prefix)
        .map_err(io_error(path))?;
    let detected = match spec.encoding {
        Some(TextEncoding::Utf8) if prefix.starts_with(UTF8_BOM) => {
            Some(sure(TextEncoding::Utf8Bom))
        }
        Some(e) => Some(sure(e)),
        None => encoding::detect_by_bytes(&prefix, path)?.map(sure),
    };
    if matches!(
        detected.map(|d| d.encoding),
        Some(TextEncoding::Utf16Le | TextEncoding::Utf16Be)
    ) {
        return Ok(None);
    }
    // Not UTF-8 already in the first bytes: the detector's guess from them, as
    // `encoding::decode` makes it for the file read whole. (Valid so far: the
    // pass over every byte below decides.)
    let mut utf8 = Utf8Check::default();
    let prefix_checked = detected.is_none();
    let detected = match detected {
        None => {
            utf8.feed(&prefix);
            let cut_at_end = prefix.len() < PREFIX && !utf8.pending.is_empty();
            (utf8.invalid.is_some() || cut_at_end).then(|| encoding::guess(&prefix))
        }
        d => d,
    };
    let bom = prefix.starts_with(UTF8_BOM)
        && matches!(
            detected.map(|d| d.encoding),
            None | Some(TextEncoding::Utf8 | TextEncoding::Utf8Bom)
        );
    let body = &prefix[if bom { 3 } else { 0 }..];
    // Only ASCII characters matter to the dialect. In UTF-8 and the single-byte
    // encodings every ASCII byte is one, and a lossy reading of the first bytes
    // sees them as any decoding would; a multi-byte encoding's second byte can
    // be an ASCII one (`|` in Shift_JIS), so that one decodes them.
    let head: Cow<'_, str> = match detected.map(|d| d.encoding) {
        Some(e @ (TextEncoding::Windows1252 | TextEncoding::Legacy(_))) => {
            let mut decoder = e.encoding().new_decoder_without_bom_handling();
            let mut head = String::new();
            encoding::decode_append(&mut decoder, body, &mut head, prefix.len() < PREFIX);
            Cow::Owned(head)
        }
        _ => String::from_utf8_lossy(body),
    };
    let line_ending = match head.bytes().position(|b| b == b'\n' || b == b'\r') {
        None => return Ok(None),
        Some(i) if head.as_bytes()[i] == b'\r' && head.as_bytes().get(i + 1) != Some(&b'\n') => {
            return Ok(None);
        }
        Some(i) if head.as_bytes()[i] == b'\r' => LineEnding::Crlf,
        Some(_) => LineEnding::Lf,
    };
    let (named, head) = match excel_sep_line(&head) {
        Some((d, len)) => (Some(d), &head[len..]),
        None => (None, &head[..]),
    };
    let delimiter = match spec.delimiter.or(named) {
        Some(d) => d,
        // The first bytes answer as the file does when they hold the lines
        // the sniffer looks at, or are the whole file.
        None if prefix.len() < PREFIX || sniff::sample_is_complete(head, spec.header_row()) => {
            sniff::sniff_delimiter(head, spec.header_row())
        }
        None => return Ok(None),
    };
    if !delimiter.is_ascii() {
        return Ok(None);
    }
    // One pass over every byte: UTF-8 validity (when the encoding is not
    // known yet, or named UTF-8), spaces before quotes. The first bytes were
    // checked for UTF-8 above.
    let mut spaces = SpaceBeforeQuote::new(delimiter);
    spaces.feed(&prefix);
    let check_utf8 = matches!(
        detected.map(|d| d.encoding),
        None | Some(TextEncoding::Utf8 | TextEncoding::Utf8Bom)
    );
    if check_utf8 && !prefix_checked {
        utf8.feed(&prefix);
    }
    let mut block = Vec::with_capacity(PREFIX);
    loop {
        block.clear();
        if (&mut file)
            .take(PREFIX as u64)
            .read_to_end(&mut block)
            .map_err(io_error(path))?
            == 0
        {
            break;
        }
        spaces.feed(&block);
        if check_utf8 {
            utf8.feed(&block);
        }
    }
    if spaces.found {
        return Ok(None);
    }
    let Guess { encoding, guessed } = match (detected, utf8.invalid_at()) {
        (None, None) => sure(TextEncoding::Utf8),
        // Invalid further on: guessed from the first bytes, as for the whole file.
        (None, Some(_)) => {
            let guess = encoding::guess(&prefix);
            if !guess.encoding.encoding().is_single_byte() {
                // The head was sniffed as UTF-8: only a single-byte encoding is
                // sure to show its ASCII alike. Rare; read whole.
                return Ok(None);
            }
            guess
        }
        (Some(d), None) => d,
        (Some(_), Some(offset)) if check_utf8 => {
            return Err(SourceError::InvalidUtf8 {
                file: path.to_path_buf(),
                offset,
            });
        }
        (Some(d), Some(_)) => d,
    };
    Ok(Some(Plan {
        dialect: Dialect {
            format: SourceFormat::Csv,
            delimiter,
            encoding,
            encoding_guessed: guessed,
            line_ending,
        },
        bom,
    }))
}

fn sure(encoding: TextEncoding) -> Guess {
    Guess {
        encoding,
        guessed: false,
    }
}

/// UTF-8 validity of bytes fed piece by piece.
#[derive(Default)]
struct Utf8Check {
    /// Bytes before `pending`.
    seen: usize,
    /// The start of a character cut at the end of the last piece.
    pending: Vec<u8>,
    invalid: Option<usize>,
}

impl Utf8Check {
    fn feed(&mut self, bytes: &[u8]) {
        if self.invalid.is_some() {
            return;
        }
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(bytes);
        match std::str::from_utf8(&joined) {
            Ok(_) => self.seen += joined.len(),
            Err(e) if e.error_len().is_none() => {
                self.seen += e.valid_up_to();
                self.pending = joined[e.valid_up_to()..].to_vec();
            }
            Err(e) => self.invalid = Some(self.seen + e.valid_up_to()),
        }
    }

    /// Where the first invalid byte is (a character cut by the end of the
    /// file is one).
    fn invalid_at(&self) -> Option<usize> {
        self.invalid
            .or_else(|| (!self.pending.is_empty()).then_some(self.seen))
    }
}

/// Reads the file window by window into the table; `window`: bytes read per
/// window.
pub(super) fn read(
    path: &Path,
    spec: &SourceSpec,
    plan: Plan,
    window: usize,
    table: &mut TableBuilder<'_>,
) -> Result<Dialect, SourceError> {
    let Plan { dialect, bom } = plan;
    let mut file = compressed::open(path, Compression::from_path(path))?;
    if bom {
        let mut skip = [0u8; 3];
        file.read_exact(&mut skip).map_err(io_error(path))?;
    }
    let mut text = String::new();
    let mut decoder = WindowDecoder::new(dialect.encoding);
    let mut block = Vec::with_capacity(window);
    let mut eof = false;
    let mut first = true;
    let mut carry = Carry::default();
    let mut columns = None;
    loop {
        // Fill: at least one more block, so a record longer than a window
        // gets the room it needs.
        let want = text.len() + window;
        // The first window holds the first line whole (Excel's `sep=` line).
        while (text.len() < want || (first && !text.contains('\n'))) && !eof {
            block.clear();
            let n = (&mut file)
                .take(window as u64)
                .read_to_end(&mut block)
                .map_err(io_error(path))?;
            eof = n == 0;
            decoder.decode(&block, &mut text, eof);
        }
        if first {
            first = false;
            if let Some((_, len)) = excel_sep_line(&text) {
                text.drain(..len);
            }
        }
        let mut rows = Rows::window(&text, dialect.delimiter, path, spec, carry, eof);
        while let Some(row) = rows.next()? {
            if columns.is_none() {
                if row < spec.header_row() {
                    continue;
                }
                let header = csv::header_of(rows.record(), spec);
                columns = Some((
                    table.start_file(path.to_path_buf(), &header, dialect.clone()),
                    header,
                ));
                // Without a header row, the row that gave the width is the first data row.
                if !spec.no_header {
                    continue;
                }
            }
            let Some((file_columns, header)) = &columns else {
                continue;
            };
            match rows.broken.take() {
                None => table.push_row(file_columns, row, rows.record())?,
                Some(quote) => {
                    let (column, reason) = broken_quote_reason(&quote, header, row, spec);
                    table.push_reject(file_columns, row, rows.record(), reason, column)?;
                }
            }
        }
        match rows.cut {
            Some(cut) => {
                carry = rows.carry(cut, carry.lines);
                text.drain(..cut);
            }
            None if columns.is_none() => return Err(empty_or_beyond(&rows, spec, path)),
            None => return Ok(dialect),
        }
    }
}

/// The one decoder of a file read in windows: a character cut by a window's
/// end waits in it for the rest.
enum WindowDecoder {
    /// The plan checked the bytes are valid: the start of a character cut
    /// at the end.
    Utf8(Vec<u8>),
    Legacy(Decoder),
}

impl WindowDecoder {
    fn new(encoding: TextEncoding) -> Self {
        match encoding {
            TextEncoding::Windows1252 | TextEncoding::Legacy(_) => {
                WindowDecoder::Legacy(encoding.encoding().new_decoder_without_bom_handling())
            }
            _ => WindowDecoder::Utf8(Vec::new()),
        }
    }

    /// Appends `bytes` decoded to `text`; `last`: the file ends after them.
    fn decode(&mut self, bytes: &[u8], text: &mut String, last: bool) {
        match self {
            WindowDecoder::Legacy(decoder) => encoding::decode_append(decoder, bytes, text, last),
            WindowDecoder::Utf8(undecoded) => {
                undecoded.extend_from_slice(bytes);
                let valid = match std::str::from_utf8(undecoded) {
                    Ok(s) => s.len(),
                    Err(e) => e.valid_up_to(),
                };
                text.push_str(&String::from_utf8_lossy(&undecoded[..valid]));
                undecoded.drain(..valid);
            }
        }
    }
}

/// The file of a one-file spec read in windows of `window` bytes, as
/// `source::read` would give it; `None` when the file is read whole.
#[cfg(test)]
pub(crate) fn read_in_windows(
    spec: &SourceSpec,
    base_dir: &Path,
    window: usize,
) -> Option<Result<super::Table, SourceError>> {
    let path = base_dir.join(spec.paths.first()?);
    let csv = spec
        .format
        .or_else(|| SourceFormat::from_path(&compressed::inner_name(&path)))
        == Some(SourceFormat::Csv);
    if !csv || spec.paths.len() > 1 || super::zipped::is_zip(&path) {
        return None;
    }
    let plan = match plan(&path, spec) {
        Ok(Some(p)) => p,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    let mut whole = None;
    let mut sink = |t| {
        whole = Some(t);
        Ok(())
    };
    let result = (|| {
        let mut table = TableBuilder::new(spec.pad_short_rows, usize::MAX, &[], &mut sink);
        read(&path, spec, plan, window, &mut table)?;
        table.finish()
    })();
    Some(result.map(|()| whole.expect("a table")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_gzip_file_read_in_windows_through_its_decoder_equals_the_plain_file_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("email;name;note\r\n");
        for i in 0..2_000 {
            text.push_str(&format!(
                "u{i}@x.de;Jörg {i};\"line one\r\nline two;\"\"quoted\"\"\"\r\n"
            ));
        }
        std::fs::write(dir.path().join("plain.csv"), &text).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        std::fs::write(dir.path().join("packed.csv.gz"), gz.finish().unwrap()).unwrap();
        let spec = |name: &str| SourceSpec {
            paths: vec![name.to_string()],
            ..SourceSpec::default()
        };
        let whole = super::super::read(&spec("plain.csv"), dir.path()).unwrap();
        assert_eq!(whole.frame.height(), 2_000);
        for window in [7, 4096] {
            let windowed = read_in_windows(&spec("packed.csv.gz"), dir.path(), window)
                .expect("read in windows")
                .unwrap();
            assert_eq!(windowed.frame, whole.frame);
            assert_eq!(windowed.dialect, whole.dialect);
        }
    }
}
