//! Text encodings: which one a file is in, turning its bytes into UTF-8 once before parsing,
//! and turning text back into the same kind of bytes when rejects are written.
//!
//! Detection, when the step does not name an encoding: a BOM decides (UTF-8, UTF-16LE,
//! UTF-16BE); else NUL bytes mean UTF-16 without BOM (by where the NULs sit) or not text at
//! all; else valid UTF-8 is UTF-8; else Windows-1252, the encoding of "CSV" saved by a
//! German or Western European Excel, which decodes every byte. Latin-1 is read as
//! Windows-1252 (its superset, as browsers do).

use std::borrow::Cow;
use std::path::Path;

use encoding_rs::{UTF_16BE, UTF_16LE, WINDOWS_1252};

use super::{LineEnding, SourceError};

pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const UTF16LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16BE_BOM: &[u8] = b"\xFE\xFF";
/// How far to look for NUL bytes and spreadsheet signatures.
const SNIFF_BYTES: usize = 4096;

/// A text file's character encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    Utf8,
    /// UTF-8 starting with a byte order mark (as Excel writes "CSV UTF-8").
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    Windows1252,
}

impl TextEncoding {
    /// The names [`TextEncoding::parse`] accepts, for error messages.
    pub const CHOICES: &'static str =
        "utf-8, utf-8-bom, utf-16, utf-16le, utf-16be, windows-1252, latin-1";

    /// Case-insensitive; `utf8`, `latin1`, `iso-8859-1` and `cp1252` are accepted too;
    /// `utf-16` means little-endian (what Windows writes).
    pub fn parse(s: &str) -> Option<Self> {
        let name = s.trim().to_ascii_lowercase().replace('_', "-");
        Some(match name.as_str() {
            "utf-8" | "utf8" => Self::Utf8,
            "utf-8-bom" | "utf8-bom" | "utf-8-sig" => Self::Utf8Bom,
            "utf-16" | "utf16" | "utf-16le" | "utf16le" => Self::Utf16Le,
            "utf-16be" | "utf16be" => Self::Utf16Be,
            "windows-1252" | "windows1252" | "cp1252" | "latin-1" | "latin1" | "iso-8859-1"
            | "iso8859-1" => Self::Windows1252,
            _ => return None,
        })
    }

    /// The canonical name, one of [`TextEncoding::CHOICES`].
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf8Bom => "utf-8-bom",
            Self::Utf16Le => "utf-16le",
            Self::Utf16Be => "utf-16be",
            Self::Windows1252 => "windows-1252",
        }
    }
}

/// A file's text, BOM removed, and the encoding it was in.
pub(crate) struct Decoded<'a> {
    pub encoding: TextEncoding,
    pub text: Cow<'a, str>,
}

/// Decodes a whole file (or, when `truncated`, its first bytes: a character cut at the end
/// is then dropped instead of being an error).
pub(crate) fn decode<'a>(
    bytes: &'a [u8],
    explicit: Option<TextEncoding>,
    file: &Path,
    truncated: bool,
) -> Result<Decoded<'a>, SourceError> {
    let encoding = match explicit {
        Some(TextEncoding::Utf8) if bytes.starts_with(UTF8_BOM) => TextEncoding::Utf8Bom,
        Some(encoding) => encoding,
        None => match detect_by_bytes(bytes, file)? {
            Some(encoding) => encoding,
            // No BOM, no NULs: UTF-8 if it is valid, else Windows-1252.
            None => {
                return Ok(match decode_utf8(bytes, truncated) {
                    Ok(text) => Decoded {
                        encoding: TextEncoding::Utf8,
                        text: Cow::Borrowed(text),
                    },
                    Err(_) => Decoded {
                        encoding: TextEncoding::Windows1252,
                        text: WINDOWS_1252.decode_without_bom_handling(bytes).0,
                    },
                });
            }
        },
    };
    let text = match encoding {
        TextEncoding::Utf8 | TextEncoding::Utf8Bom => {
            let bom = if bytes.starts_with(UTF8_BOM) { 3 } else { 0 };
            match decode_utf8(&bytes[bom..], truncated) {
                Ok(text) => Cow::Borrowed(text),
                Err(offset) => {
                    return Err(SourceError::InvalidUtf8 {
                        file: file.to_path_buf(),
                        offset: bom + offset,
                    });
                }
            }
        }
        TextEncoding::Windows1252 => WINDOWS_1252.decode_without_bom_handling(bytes).0,
        TextEncoding::Utf16Le | TextEncoding::Utf16Be => {
            let (codec, bom) = if encoding == TextEncoding::Utf16Le {
                (UTF_16LE, UTF16LE_BOM)
            } else {
                (UTF_16BE, UTF16BE_BOM)
            };
            let mut body = bytes.strip_prefix(bom).unwrap_or(bytes);
            if truncated {
                body = &body[..body.len() & !1];
            }
            let (text, had_errors) = codec.decode_without_bom_handling(body);
            if had_errors && !truncated {
                return Err(SourceError::InvalidUtf16 {
                    file: file.to_path_buf(),
                    encoding,
                });
            }
            Cow::Owned(text.into_owned())
        }
    };
    Ok(Decoded { encoding, text })
}

/// The text, or the offset of the first invalid byte.
fn decode_utf8(bytes: &[u8], truncated: bool) -> Result<&str, usize> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        // A character cut by the prefix limit: keep what is complete.
        Err(e) if truncated && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).map_err(|e| e.valid_up_to())
        }
        Err(e) => Err(e.valid_up_to()),
    }
}

/// The encoding a BOM or NUL bytes show; `None` when only UTF-8 validity can tell.
pub(crate) fn detect_by_bytes(
    bytes: &[u8],
    file: &Path,
) -> Result<Option<TextEncoding>, SourceError> {
    if bytes.starts_with(UTF8_BOM) {
        return Ok(Some(TextEncoding::Utf8Bom));
    }
    if bytes.starts_with(UTF16LE_BOM) {
        return Ok(Some(TextEncoding::Utf16Le));
    }
    if bytes.starts_with(UTF16BE_BOM) {
        return Ok(Some(TextEncoding::Utf16Be));
    }
    // Zip (xlsx, ods) and OLE (xls) signatures: a workbook saved under a .csv name.
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"\xD0\xCF\x11\xE0") {
        return Err(SourceError::SpreadsheetAsText {
            file: file.to_path_buf(),
        });
    }
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(offset) = head.iter().position(|&b| b == 0) {
        // UTF-16 without BOM: ASCII text has a NUL in every other byte.
        let pairs = head.len() / 2;
        let odd = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
        let even = head.iter().step_by(2).filter(|&&b| b == 0).count();
        if pairs > 0 && odd * 10 >= pairs * 4 && even * 10 < pairs {
            return Ok(Some(TextEncoding::Utf16Le));
        }
        if pairs > 0 && even * 10 >= pairs * 4 && odd * 10 < pairs {
            return Ok(Some(TextEncoding::Utf16Be));
        }
        if is_binary(head) {
            return Err(SourceError::NotText {
                file: file.to_path_buf(),
                offset,
            });
        }
        // A NUL or two in text (a cell an export tool wrote badly): the file is read,
        // and the rows holding one are rejected, each with its reason (`builder`).
    }
    Ok(None)
}

/// Whether the head of a file that has a NUL is binary rather than text with a stray NUL
/// in a cell: more than one byte in 30 a control character other than tab, line feed,
/// form feed and carriage return. Text exports hold none or a handful; random or packed
/// bytes hold about one in ten.
fn is_binary(head: &[u8]) -> bool {
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r'))
        .count();
    controls * 30 > head.len()
}

/// The line ending of the first line, and the text with old-Mac `\r` endings turned into
/// `\n` (the CSV parser counts lines by `\n`, and row numbers depend on it).
pub(crate) fn line_ending(text: Cow<'_, str>) -> (LineEnding, Cow<'_, str>) {
    let bytes = text.as_bytes();
    match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(i) if bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n') => {
            let text = Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"));
            (LineEnding::Crlf, text)
        }
        Some(i) if bytes[i] == b'\r' => (LineEnding::Crlf, text),
        _ => (LineEnding::Lf, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect_and_decode(bytes: &[u8]) -> (TextEncoding, String) {
        let decoded = decode(bytes, None, Path::new("f.csv"), false).unwrap();
        (decoded.encoding, decoded.text.into_owned())
    }

    #[test]
    fn encoding_names_parse_case_insensitively_with_aliases() {
        assert_eq!(TextEncoding::parse("UTF-8"), Some(TextEncoding::Utf8));
        assert_eq!(TextEncoding::parse("utf8"), Some(TextEncoding::Utf8));
        assert_eq!(
            TextEncoding::parse("utf-8-bom"),
            Some(TextEncoding::Utf8Bom)
        );
        assert_eq!(TextEncoding::parse("UTF-16"), Some(TextEncoding::Utf16Le));
        assert_eq!(TextEncoding::parse("utf-16be"), Some(TextEncoding::Utf16Be));
        for alias in ["windows-1252", "CP1252", "latin-1", "Latin1", "ISO-8859-1"] {
            assert_eq!(TextEncoding::parse(alias), Some(TextEncoding::Windows1252));
        }
        assert_eq!(TextEncoding::parse("ebcdic"), None);
    }

    #[test]
    fn every_canonical_name_parses_back_to_itself() {
        use TextEncoding::*;
        for encoding in [Utf8, Utf8Bom, Utf16Le, Utf16Be, Windows1252] {
            assert_eq!(TextEncoding::parse(encoding.as_str()), Some(encoding));
        }
    }

    #[test]
    fn detection_follows_bom_then_utf8_validity_then_windows_1252() {
        assert_eq!(
            detect_and_decode(b"a,b"),
            (TextEncoding::Utf8, "a,b".into())
        );
        assert_eq!(
            detect_and_decode(b"\xEF\xBB\xBFa;b"),
            (TextEncoding::Utf8Bom, "a;b".into())
        );
        assert_eq!(
            detect_and_decode(b"\xFF\xFEa\0\xFC\0"),
            (TextEncoding::Utf16Le, "a\u{fc}".into())
        );
        assert_eq!(
            detect_and_decode(b"\xFE\xFF\0a\0b"),
            (TextEncoding::Utf16Be, "ab".into())
        );
        assert_eq!(
            detect_and_decode(b"M\xFCller \x80"),
            (TextEncoding::Windows1252, "Müller €".into())
        );
    }

    #[test]
    fn a_stray_nul_in_a_cell_leaves_the_file_text_and_a_binary_file_is_refused() {
        let text = b"email,name,notes\na@example.com,Anna,ok\nb@example.com,Ben,bro\0ken\n";
        assert!(detect_by_bytes(text, Path::new("x.csv")).unwrap().is_none());
        let binary: Vec<u8> = (0..400u32).map(|i| (i * 37 % 251) as u8).collect();
        let err = detect_by_bytes(&binary, Path::new("x.csv")).unwrap_err();
        assert!(
            matches!(err, SourceError::NotText { offset: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn utf16_without_bom_is_recognised_by_its_nul_bytes() {
        let bytes: Vec<u8> = "email,name\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(detect_and_decode(&bytes).0, TextEncoding::Utf16Le);
    }

    #[test]
    fn binary_and_zip_files_are_refused_as_text() {
        let err = decode(
            b"\x01\x02\0\0\xff\0\0\0\x07",
            None,
            Path::new("x.csv"),
            false,
        );
        assert_eq!(
            err.err().unwrap().to_string(),
            "x.csv is not text (NUL byte at byte 2); if it is a spreadsheet, name it .xlsx, .xls or .ods or set format = \"xlsx\" (or \"xls\", \"ods\")"
        );
        let err = decode(b"PK\x03\x04rest", None, Path::new("x.csv"), false);
        assert!(matches!(err, Err(SourceError::SpreadsheetAsText { .. })));
    }

    #[test]
    fn invalid_bytes_under_explicit_utf8_name_the_file_and_offset() {
        let err = decode(
            b"ab\xFCc",
            Some(TextEncoding::Utf8),
            Path::new("in.csv"),
            false,
        );
        assert_eq!(
            err.err().unwrap().to_string(),
            "in.csv: invalid UTF-8 at byte 2; set encoding to the file's real encoding (utf-8, utf-8-bom, utf-16, utf-16le, utf-16be, windows-1252, latin-1), for example encoding = \"windows-1252\""
        );
    }

    #[test]
    fn a_character_cut_by_a_prefix_read_is_dropped_not_an_error() {
        let decoded = decode(b"ab\xC3", Some(TextEncoding::Utf8), Path::new("f"), true).unwrap();
        assert_eq!(decoded.text, "ab");
    }

    #[test]
    fn old_mac_line_endings_become_newlines() {
        let (ending, text) = line_ending(Cow::Borrowed("a\rb\r"));
        assert_eq!((ending, text.as_ref()), (LineEnding::Crlf, "a\nb\n"));
        assert_eq!(line_ending(Cow::Borrowed("a\r\nb")).0, LineEnding::Crlf);
        assert_eq!(line_ending(Cow::Borrowed("a\nb")).0, LineEnding::Lf);
        assert_eq!(line_ending(Cow::Borrowed("a")).0, LineEnding::Lf);
    }
}
