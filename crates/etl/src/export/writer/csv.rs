//! CSV: any one-byte delimiter, UTF-8 (optionally with a byte order mark,
//! so Excel opens it as UTF-8) or Windows-1252, quoting where needed or
//! everywhere. Characters Windows-1252 lacks become `?` (encoding_rs would
//! write an HTML entity, which would silently change the data).

use super::{ByteFile, Chunk, Encode, Layout, Sink, WriteError, text};
use crate::export::columns::Cell;
use crate::pipeline::export::{CsvEncoding, Quoting, Timestamps};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// Rows to CSV bytes, header or not: the same quoting and encoding.
pub(super) struct CsvEncoder {
    delimiter: u8,
    quoting: Quoting,
    encoding: CsvEncoding,
    timestamps: Timestamps,
    /// Tags are joined with this.
    tags_separator: String,
}

/// Opens the file: the byte order mark if asked for, then the header.
pub(super) fn create(path: &Path, layout: Layout) -> Result<ByteFile, WriteError> {
    let mut out = BufWriter::new(File::create(path)?);
    if layout.csv.bom && layout.csv.encoding == CsvEncoding::Utf8 {
        out.write_all(b"\xEF\xBB\xBF")?;
    }
    let encoder = Arc::new(CsvEncoder {
        delimiter: layout.csv.delimiter,
        quoting: layout.csv.quoting,
        encoding: layout.csv.encoding,
        timestamps: layout.timestamps,
        tags_separator: layout.tags_separator.to_string(),
    });
    let header: Vec<Cell> = layout
        .names
        .iter()
        .map(|n| Cell::Text(Cow::Borrowed(n.as_str())))
        .collect();
    let mut file = ByteFile::new(out, encoder, "CSV");
    file.write(&[header])?;
    Ok(file)
}

/// Windows-1252 bytes, `?` for a character it cannot hold.
pub(super) fn windows_1252(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let (bytes, _, unmappable) = encoding_rs::WINDOWS_1252.encode(c.encode_utf8(&mut buf));
        if unmappable {
            out.push(b'?');
        } else {
            out.extend_from_slice(&bytes);
        }
    }
    out
}

fn csv_error(e: csv::Error) -> WriteError {
    WriteError(e.to_string())
}

impl Encode for CsvEncoder {
    fn encode(&self, rows: &[Vec<Cell<'_>>]) -> Result<Chunk, WriteError> {
        let (encoding, timestamps) = (self.encoding, self.timestamps);
        let mut out = csv::WriterBuilder::new()
            .delimiter(self.delimiter)
            .quote_style(match self.quoting {
                Quoting::Necessary => csv::QuoteStyle::Necessary,
                Quoting::Always => csv::QuoteStyle::Always,
            })
            .from_writer(Vec::new());
        for row in rows {
            let record = row.iter().map(|c| {
                let text = text(c, timestamps, &self.tags_separator);
                match (encoding, text) {
                    (CsvEncoding::Utf8, Cow::Borrowed(s)) => Cow::Borrowed(s.as_bytes()),
                    (CsvEncoding::Utf8, Cow::Owned(s)) => Cow::Owned(s.into_bytes()),
                    (CsvEncoding::Windows1252, s) => Cow::Owned(windows_1252(&s)),
                }
            });
            out.write_record(record).map_err(csv_error)?;
        }
        let bytes = out
            .into_inner()
            .map_err(|e| WriteError(e.error().to_string()))?;
        Ok(Chunk::Bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::export::CsvOptions;

    fn write(opts: CsvOptions, rows: &[Vec<Cell<'_>>]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let layout = Layout {
            names: vec!["email".into(), "city".into(), "registered".into()],
            kinds: vec![],
            timestamps: Timestamps::Iso,
            csv: &opts,
            tags_separator: ",",
        };
        let mut sink = Box::new(create(&path, layout).unwrap());
        sink.write(rows).unwrap();
        sink.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    fn row(city: &str) -> Vec<Cell<'_>> {
        vec![
            Cell::Text("a@example.com".into()),
            Cell::Text(city.into()),
            Cell::Time(Some(1_706_745_600)),
        ]
    }

    #[test]
    fn windows_1252_semicolons_and_quotes_everywhere() {
        let opts = CsvOptions {
            delimiter: b';',
            encoding: CsvEncoding::Windows1252,
            bom: false,
            quoting: Quoting::Always,
        };
        let bytes = write(opts, &[row("Görlitz ☃")]);
        assert_eq!(
            bytes,
            b"\"email\";\"city\";\"registered\"\n\"a@example.com\";\"G\xF6rlitz ?\";\"2024-02-01T00:00:00Z\"\n"
        );
    }

    #[test]
    fn utf8_with_a_byte_order_mark_quotes_only_what_needs_it() {
        let opts = CsvOptions {
            bom: true,
            ..Default::default()
        };
        let bytes = write(opts, &[row("Halle, Saale")]);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "\u{feff}email,city,registered\na@example.com,\"Halle, Saale\",2024-02-01T00:00:00Z\n"
        );
    }
}
