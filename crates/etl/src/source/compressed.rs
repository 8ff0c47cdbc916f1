//! Compressed sources: `customers.csv.gz`, `list.tsv.zst`. Data teams store and ship their
//! exports compressed; naming the compressed file reads the text inside it, and the format
//! comes from the name under the compression suffix (`.csv.gz` is CSV).
//!
//! Decisions: the text is decompressed into memory, as a plain CSV file is read into memory
//! (`csv::read_bytes`), with no cap beyond memory (unlike a zip member, a stream is named by
//! the user, not found inside an archive a service built). A corrupt or truncated stream is
//! a [`SourceError::Compressed`] naming the file, never a panic and never a partial read
//! taken for the whole file. gzip streams made of several members (`cat a.gz b.gz`, pigz)
//! are read to the end, as `gunzip` reads them; so are zstd files of several frames.
//! Spreadsheets are zip archives already: a compressed one is an error saying so.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::SourceError;

/// How a file is compressed, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a file name ends in (`.gz`, `.gzip`, `.zst`, `.zstd`, any case).
    pub(crate) fn from_path(path: &Path) -> Option<Compression> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "gz" | "gzip" => Some(Compression::Gzip),
            "zst" | "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// How messages name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// The name under the compression suffix: `customers.csv.gz` -> `customers.csv`; the name
/// itself when it is not compressed.
pub(crate) fn inner_name(path: &Path) -> PathBuf {
    match Compression::from_path(path) {
        Some(_) => path.with_extension(""),
        None => path.to_path_buf(),
    }
}

/// The decompressed bytes of `path`, at most `limit` of them when given (a header read).
pub(crate) fn read(
    path: &Path,
    compression: Compression,
    limit: Option<u64>,
) -> Result<Vec<u8>, SourceError> {
    let reader = open(path, Some(compression))?;
    let mut bytes = Vec::new();
    match limit {
        Some(limit) => reader.take(limit).read_to_end(&mut bytes),
        None => { reader }.read_to_end(&mut bytes),
    }
    .map_err(|e| read_error(path, e))?;
    if bytes.is_empty() {
        return Err(SourceError::Empty {
            file: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// The bytes of `path` as a reader, decompressed when `compression` says
/// so; map its read errors with [`read_error`].
pub(crate) fn open(
    path: &Path,
    compression: Option<Compression>,
) -> Result<Box<dyn Read>, SourceError> {
    let file = File::open(path).map_err(|source| SourceError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    Ok(match compression {
        None => Box::new(file),
        Some(Compression::Gzip) => Box::new(MultiGzDecoder::new(BufReader::new(file))),
        Some(Compression::Zstd) => {
            Box::new(zstd::stream::read::Decoder::new(file).map_err(|e| read_error(path, e))?)
        }
    })
}

/// A read error of [`open`]'s reader: a corrupt stream for a compressed
/// file, an I/O error for a plain one.
pub(crate) fn read_error(path: &Path, e: std::io::Error) -> SourceError {
    match Compression::from_path(path) {
        Some(compression) => SourceError::Compressed {
            file: path.to_path_buf(),
            compression: compression.as_str(),
            message: e.to_string(),
        },
        None => SourceError::Io {
            file: path.to_path_buf(),
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn compression_and_the_name_under_it_come_from_the_file_name() {
        assert_eq!(
            Compression::from_path(Path::new("a.csv.GZ")),
            Some(Compression::Gzip)
        );
        assert_eq!(
            Compression::from_path(Path::new("a.tsv.zst")),
            Some(Compression::Zstd)
        );
        assert_eq!(Compression::from_path(Path::new("a.csv")), None);
        assert_eq!(inner_name(Path::new("in/a.tsv.gz")), Path::new("in/a.tsv"));
        assert_eq!(inner_name(Path::new("in/a.csv")), Path::new("in/a.csv"));
    }

    #[test]
    fn gzip_of_several_members_and_zstd_read_whole_or_up_to_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("a.csv.gz");
        let mut two = gzip(b"email\na@x.de\n");
        two.extend(gzip(b"b@x.de\n"));
        std::fs::write(&gz, two).unwrap();
        assert_eq!(
            read(&gz, Compression::Gzip, None).unwrap(),
            b"email\na@x.de\nb@x.de\n"
        );
        assert_eq!(read(&gz, Compression::Gzip, Some(5)).unwrap(), b"email");
        let zst = dir.path().join("a.csv.zst");
        std::fs::write(&zst, zstd::encode_all(&b"email\nc@x.de\n"[..], 3).unwrap()).unwrap();
        assert_eq!(
            read(&zst, Compression::Zstd, None).unwrap(),
            b"email\nc@x.de\n"
        );
    }

    #[test]
    fn corrupt_or_truncated_streams_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("cut.csv.gz");
        let whole = gzip("email\na@x.de\n".repeat(100).as_bytes());
        std::fs::write(&gz, &whole[..whole.len() / 2]).unwrap();
        let err = read(&gz, Compression::Gzip, None).unwrap_err().to_string();
        assert!(
            err.contains("cut.csv.gz is not a readable gzip file"),
            "{err}"
        );
        let fake = dir.path().join("fake.csv.gz");
        std::fs::write(&fake, "email\na@x.de\n").unwrap();
        let err = read(&fake, Compression::Gzip, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fake.csv.gz is not a readable gzip file"),
            "{err}"
        );
        let zst = dir.path().join("cut.csv.zst");
        let whole = zstd::encode_all("email\na@x.de\n".repeat(100).as_bytes(), 3).unwrap();
        std::fs::write(&zst, &whole[..whole.len() / 2]).unwrap();
        let err = read(&zst, Compression::Zstd, None).unwrap_err().to_string();
        assert!(
            err.contains("cut.csv.zst is not a readable zstd file"),
            "{err}"
        );
    }
}
