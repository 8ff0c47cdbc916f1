//! Text encodings: which one a file is in, turning its bytes into UTF-8 once before parsing,
//! and turning text back into the same kind of bytes when rejects are written.
//!
//! Detection, when the step does not name an encoding: a BOM decides (UTF-8, UTF-16LE,
//! UTF-16BE); else NUL bytes mean UTF-16 without BOM (by where the NULs sit) or not text at
//! all; else valid UTF-8 is UTF-8; else Firefox's detector (chardetng) guesses the legacy
//! encoding (Windows-1252 for a German or Western European Excel's "CSV", Shift_JIS,
//! GBK, Big5, EUC-KR, windows-1251, ...) from the lines of the first megabyte that hold
//! non-ASCII bytes, the same bytes whether the file is read whole, in windows or only for
//! its header ([`guess`]). A guess the evidence does not settle is marked as one
//! (`Dialect::encoding_guessed`), for `check` and `init` to say so. Latin-1 is read as
//! Windows-1252 (its superset, as browsers do).

use std::borrow::Cow;
use std::path::Path;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{
    BIG5, Decoder, EUC_KR, Encoding, REPLACEMENT, SHIFT_JIS, UTF_8, UTF_16BE, UTF_16LE,
    WINDOWS_874, WINDOWS_1252, X_USER_DEFINED,
};

use super::{LineEnding, SourceError};

pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const UTF16LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16BE_BOM: &[u8] = b"\xFE\xFF";
/// How far to look for NUL bytes and spreadsheet signatures.
const SNIFF_BYTES: usize = 4096;
/// How far into a file the detector looks for lines with non-ASCII bytes. Every way of
/// reading a file has at least these first bytes at hand (or the whole, shorter, file), so
/// every way guesses alike: `csv::read_header`'s prefix and `stream`'s are as long.
pub(crate) const GUESS_SCAN: usize = 1 << 20;
/// How many bytes of such lines the detector reads: about a thousand rows of names, more
/// than it needs. It reads about 4 MB/s (it weighs 27 encodings at every byte), so this
/// and its two halves again ([`guess`]) take some 30 ms.
const GUESS_SAMPLE: usize = 64 << 10;

/// A text file's character encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    Utf8,
    /// UTF-8 starting with a byte order mark (as Excel writes "CSV UTF-8").
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    Windows1252,
    /// Another legacy encoding: Shift_JIS (CP932), EUC-JP, ISO-2022-JP, GBK, gb18030, Big5,
    /// EUC-KR, windows-1250 to 1258 (but 1252), windows-874, ISO-8859-2 to 16, KOI8-R,
    /// KOI8-U, IBM866, macintosh, x-mac-cyrillic. Never one of the encodings the variants
    /// above stand for: it is made by [`TextEncoding::parse`], [`TextEncoding::from_encoding`]
    /// or detection, which keep to that.
    Legacy(&'static Encoding),
}

impl TextEncoding {
    /// The names [`TextEncoding::parse`] accepts, for error messages (by family; the other
    /// WHATWG labels of these encodings are accepted too).
    pub const CHOICES: &'static str = "utf-8, utf-8-bom, utf-16, utf-16le, utf-16be, \
        windows-1252, latin-1, windows-1250 to windows-1258, windows-874, \
        iso-8859-2 to iso-8859-16, koi8-r, koi8-u, ibm866, x-mac-cyrillic, macintosh, \
        shift_jis (cp932), euc-jp, iso-2022-jp, gbk, gb18030, big5, euc-kr";

    /// Case-insensitive; `utf8`, `latin1`, `iso-8859-1` and `cp1252` are accepted too;
    /// `utf-16` means little-endian (what Windows writes); any other WHATWG label of an
    /// encoding (`shift_jis`, `sjis`, `euc-jp`, `gbk`, `big5`, `euc-kr`, `windows-1251`,
    /// `koi8-r`, `iso-8859-2`, ...), and the Windows code pages `cp932`, `cp936`, `cp949`,
    /// `cp950` and `cp874`.
    pub fn parse(s: &str) -> Option<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let name = lower.replace('_', "-");
        Some(match name.as_str() {
            "utf-8" | "utf8" => Self::Utf8,
            "utf-8-bom" | "utf8-bom" | "utf-8-sig" => Self::Utf8Bom,
            "utf-16" | "utf16" | "utf-16le" | "utf16le" => Self::Utf16Le,
            "utf-16be" | "utf16be" => Self::Utf16Be,
            "windows-1252" | "windows1252" | "cp1252" | "latin-1" | "latin1" | "iso-8859-1"
            | "iso8859-1" => Self::Windows1252,
            // Windows' names of its code pages that are no WHATWG labels.
            "cp932" | "shiftjis" => Self::Legacy(SHIFT_JIS),
            "cp949" | "euckr" => Self::Legacy(EUC_KR),
            "cp950" => Self::Legacy(BIG5),
            "cp936" => Self::Legacy(encoding_rs::GBK),
            "cp874" => Self::Legacy(WINDOWS_874),
            "eucjp" => Self::Legacy(encoding_rs::EUC_JP),
            _ => {
                return Encoding::for_label(lower.as_bytes())
                    .or_else(|| Encoding::for_label(name.as_bytes()))
                    .and_then(Self::from_encoding);
            }
        })
    }

    /// The variant standing for one of encoding_rs's encodings; none for the two no file
    /// is written in (`replacement`, `x-user-defined`).
    pub fn from_encoding(encoding: &'static Encoding) -> Option<Self> {
        Some(if encoding == UTF_8 {
            Self::Utf8
        } else if encoding == UTF_16LE {
            Self::Utf16Le
        } else if encoding == UTF_16BE {
            Self::Utf16Be
        } else if encoding == WINDOWS_1252 {
            Self::Windows1252
        } else if encoding == REPLACEMENT || encoding == X_USER_DEFINED {
            return None;
        } else {
            Self::Legacy(encoding)
        })
    }

    /// encoding_rs's encoding (UTF-8 for both UTF-8 variants).
    pub fn encoding(self) -> &'static Encoding {
        match self {
            Self::Utf8 | Self::Utf8Bom => UTF_8,
            Self::Utf16Le => UTF_16LE,
            Self::Utf16Be => UTF_16BE,
            Self::Windows1252 => WINDOWS_1252,
            Self::Legacy(encoding) => encoding,
        }
    }

    /// The canonical name, lower case, which [`TextEncoding::parse`] reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf8Bom => "utf-8-bom",
            Self::Utf16Le => "utf-16le",
            Self::Utf16Be => "utf-16be",
            Self::Windows1252 => "windows-1252",
            Self::Legacy(encoding) => lower_case_name(encoding),
        }
    }
}

/// encoding_rs's name of an encoding in lower case (`Shift_JIS` is `shift_jis`).
fn lower_case_name(encoding: &'static Encoding) -> &'static str {
    match encoding.name() {
        "Big5" => "big5",
        "EUC-JP" => "euc-jp",
        "EUC-KR" => "euc-kr",
        "GBK" => "gbk",
        "IBM866" => "ibm866",
        "ISO-2022-JP" => "iso-2022-jp",
        "ISO-8859-2" => "iso-8859-2",
        "ISO-8859-3" => "iso-8859-3",
        "ISO-8859-4" => "iso-8859-4",
        "ISO-8859-5" => "iso-8859-5",
        "ISO-8859-6" => "iso-8859-6",
        "ISO-8859-7" => "iso-8859-7",
        "ISO-8859-8" => "iso-8859-8",
        "ISO-8859-8-I" => "iso-8859-8-i",
        "ISO-8859-10" => "iso-8859-10",
        "ISO-8859-13" => "iso-8859-13",
        "ISO-8859-14" => "iso-8859-14",
        "ISO-8859-15" => "iso-8859-15",
        "ISO-8859-16" => "iso-8859-16",
        "KOI8-R" => "koi8-r",
        "KOI8-U" => "koi8-u",
        "Shift_JIS" => "shift_jis",
        // gb18030, macintosh, windows-*, x-mac-cyrillic: lower case already.
        name => name,
    }
}

/// A file's text, BOM removed, and the encoding it was in.
pub(crate) struct Decoded<'a> {
    pub encoding: TextEncoding,
    /// The encoding is the detector's guess, which the bytes did not settle.
    pub guessed: bool,
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
    let Guess { encoding, guessed } = match explicit {
        Some(TextEncoding::Utf8) if bytes.starts_with(UTF8_BOM) => {
            Guess::sure(TextEncoding::Utf8Bom)
        }
        Some(encoding) => Guess::sure(encoding),
        None => match detect_by_bytes(bytes, file)? {
            Some(encoding) => Guess::sure(encoding),
            // No BOM, no NULs: UTF-8 if it is valid, else the detector's guess.
            None => match decode_utf8(bytes, truncated) {
                Ok(text) => {
                    return Ok(Decoded {
                        encoding: TextEncoding::Utf8,
                        guessed: false,
                        text: Cow::Borrowed(text),
                    });
                }
                Err(_) => guess(bytes),
            },
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
        // A byte sequence the encoding has no character for becomes U+FFFD, as in a browser.
        TextEncoding::Windows1252 | TextEncoding::Legacy(_) if !truncated => {
            encoding.encoding().decode_without_bom_handling(bytes).0
        }
        TextEncoding::Windows1252 | TextEncoding::Legacy(_) => {
            let mut decoder = encoding.encoding().new_decoder_without_bom_handling();
            let mut text = String::new();
            // Not the last bytes: a character cut at the end waits in the decoder, dropped.
            decode_append(&mut decoder, bytes, &mut text, false);
            Cow::Owned(text)
        }
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
    Ok(Decoded {
        encoding,
        guessed,
        text,
    })
}

/// Appends `bytes` decoded by `decoder` to `text`; `last`: they end the file (a character
/// cut there becomes U+FFFD; else it waits in the decoder for the next bytes).
pub(crate) fn decode_append(decoder: &mut Decoder, bytes: &[u8], text: &mut String, last: bool) {
    let mut rest = bytes;
    loop {
        // Room for the worst case, so one call decodes everything.
        text.reserve(
            decoder
                .max_utf8_buffer_length(rest.len())
                .unwrap_or(rest.len()),
        );
        let (result, read, _) = decoder.decode_to_string(rest, text, last);
        rest = &rest[read..];
        if result == encoding_rs::CoderResult::InputEmpty {
            return;
        }
        // Output full (only if the worst case did not fit in memory): more room, go on.
        text.reserve(rest.len().max(64));
    }
}

/// An encoding, and whether it is the detector's guess rather than a certainty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Guess {
    pub encoding: TextEncoding,
    /// The bytes did not settle it: too few lines with non-ASCII bytes, or halves of them
    /// that point to different encodings, or lines mostly valid UTF-8 in a file that is
    /// not.
    pub guessed: bool,
}

impl Guess {
    fn sure(encoding: TextEncoding) -> Self {
        Guess {
            encoding,
            guessed: false,
        }
    }
}

/// The legacy encoding of a file that is not UTF-8, from its first bytes (at least
/// [`GUESS_SCAN`] of them, or the whole file): chardetng, Firefox's detector, reads the
/// lines of those bytes that hold non-ASCII bytes (up to [`GUESS_SAMPLE`] of them; ASCII
/// lines tell nothing). Deterministic in those first bytes, so a file read whole, in
/// windows, or only for its header is read in the one encoding.
///
/// How sure: chardetng gives no confidence (1.0 removed `guess_assess`, whose flag was
/// always true), so the sample's even and odd lines are guessed again, apart: two halves
/// of the evidence that both point to the same encoding settle it; fewer than two lines,
/// or halves that disagree (ISO-8859-2 against windows-1250 in a few Polish names), leave
/// it a guess.
pub(crate) fn guess(bytes: &[u8]) -> Guess {
    let whole = bytes.len() < GUESS_SCAN;
    let scan = &bytes[..bytes.len().min(GUESS_SCAN)];
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut size = 0;
    // A first line longer than the sample: its start, fed as not ending there.
    let mut cut: Option<&[u8]> = None;
    for line in scan.split_inclusive(|&b| b == b'\n') {
        if !whole && line.last() != Some(&b'\n') {
            // Cut by the end of the scan: the same line is whole in a longer read.
            break;
        }
        if line.is_ascii() {
            continue;
        }
        if size + line.len() > GUESS_SAMPLE {
            if lines.is_empty() {
                cut = Some(&line[..GUESS_SAMPLE]);
            }
            break;
        }
        size += line.len();
        lines.push(line);
    }
    let detect = |parts: &mut dyn Iterator<Item = &[u8]>| {
        let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
        for part in parts {
            detector.feed(part, false);
        }
        if cut.is_none() {
            detector.feed(b"", true);
        }
        detector.guess(None, Utf8Detection::Deny)
    };
    let found = match cut {
        Some(start) => detect(&mut std::iter::once(start)),
        None => detect(&mut lines.iter().copied()),
    };
    let encoding = TextEncoding::from_encoding(found).unwrap_or(TextEncoding::Windows1252);
    // Lines mostly valid UTF-8 in a file that is not (a stray byte somewhere): UTF-8
    // text read as a legacy encoding, mojibake the detector does not see as such. (A
    // legacy encoding's line of names is valid UTF-8 by chance once in a long while.)
    let utf8_lines = lines
        .iter()
        .filter(|l| std::str::from_utf8(l).is_ok())
        .count();
    let utf8_lines = utf8_lines > 0 && utf8_lines * 2 >= lines.len();
    let settled = cut.is_none()
        && lines.len() >= 2
        && !utf8_lines
        && detect(&mut lines.iter().copied().step_by(2)) == found
        && detect(&mut lines.iter().copied().skip(1).step_by(2)) == found;
    Guess {
        encoding,
        guessed: !settled,
    }
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
#[path = "encoding_tests.rs"]
mod legacy_tests;

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
            format!(
                "in.csv: invalid UTF-8 at byte 2; set encoding to the file's real encoding ({}), for example encoding = \"windows-1252\"",
                TextEncoding::CHOICES
            )
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
