//! Looking at CSV text before parsing it: which delimiter it uses, and whether its exporter
//! put spaces before opening quotes (`foo@x.de, "Smith, J"`), which an RFC 4180 parser reads
//! as literal quotes and splits at the comma inside them.
//!
//! Both scans follow the quoting rule of the `csv` crate: a `"` opens a quoted field only at
//! the start of a field (here also after spaces, the non-RFC case), `""` inside quotes is a
//! quote, and a `"` inside an unquoted field is text.

/// Delimiter candidates in order of preference when they tie.
const CANDIDATES: [u8; 4] = [b',', b';', b'\t', b'|'];
/// Lines (records) looked at, from the header row on.
const SAMPLE_LINES: usize = 20;

/// The delimiter whose count per line (outside quotes) is non-zero and the same on the most
/// of the first 20 non-blank lines from `header_row` on: for each candidate, the most common
/// non-zero count is found and the lines having exactly that count are its score. The
/// highest score wins; ties go to `,` then `;` then TAB then `|`; with no candidate at all
/// (a one-column file) the answer is `,`.
pub(crate) fn sniff_delimiter(text: &str, header_row: u64) -> u8 {
    let lines = sample_counts(text.as_bytes(), header_row);
    let mut best = (0, b',');
    for (k, &candidate) in CANDIDATES.iter().enumerate() {
        let score = consistency(lines.iter().map(|counts| counts[k]));
        if score > best.0 {
            best = (score, candidate);
        }
    }
    best.1
}

/// Whether `text`, a file's first bytes, holds every line [`sniff_delimiter`]
/// looks at: then it answers for the prefix what it would for the file.
pub(crate) fn sample_is_complete(text: &str, header_row: u64) -> bool {
    sample_counts(text.as_bytes(), header_row).len() >= SAMPLE_LINES
}

/// [`has_space_before_quote`] fed a file's bytes piece by piece (the
/// encodings read this way keep `"`, spaces, tabs, line ends and an ASCII
/// delimiter as the same single bytes).
pub(crate) struct SpaceBeforeQuote {
    delimiter: u8,
    /// Since the last delimiter or line end (or the start) only pads came.
    boundary: bool,
    pads: usize,
    pub found: bool,
}

impl SpaceBeforeQuote {
    pub(crate) fn new(delimiter: u8) -> Self {
        SpaceBeforeQuote {
            delimiter,
            boundary: true,
            pads: 0,
            found: false,
        }
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'"' {
                self.found |= self.boundary && self.pads > 0;
                self.boundary = false;
            } else if b == b'\n' || b == b'\r' || b == self.delimiter {
                (self.boundary, self.pads) = (true, 0);
            } else if is_pad(b, self.delimiter) {
                self.pads += usize::from(self.boundary);
            } else {
                self.boundary = false;
            }
        }
    }
}

/// How many lines share the most common non-zero count (the larger count on a tie).
fn consistency(counts: impl Iterator<Item = usize> + Clone) -> usize {
    let mut best = (0, 0);
    for count in counts.clone().filter(|&c| c > 0) {
        let lines = counts.clone().filter(|&c| c == count).count();
        if (lines, count) > best {
            best = (lines, count);
        }
    }
    best.0
}

/// Per non-blank line: how often each candidate occurs outside quotes. Lines above the header
/// row (title lines) are skipped; a blank line counts as a line for that, as it is a row.
fn sample_counts(bytes: &[u8], header_row: u64) -> Vec<[usize; 4]> {
    let mut lines = Vec::new();
    let mut counts = [0usize; 4];
    let mut line = 1u64;
    let mut blank = true;
    let mut in_quotes = false;
    let mut field_start = true;
    let mut i = 0;
    while i < bytes.len() && lines.len() < SAMPLE_LINES {
        let b = bytes[i];
        i += 1;
        if in_quotes {
            if b == b'"' {
                if bytes.get(i) == Some(&b'"') {
                    i += 1;
                } else {
                    in_quotes = false;
                }
            }
            continue;
        }
        match b {
            b'\n' | b'\r' => {
                if b == b'\r' && bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
                if !blank && line >= header_row {
                    lines.push(counts);
                }
                (counts, line, blank, field_start) = ([0; 4], line + 1, true, true);
            }
            b'"' if field_start => (in_quotes, blank) = (true, false),
            b' ' => {}
            _ => {
                blank = false;
                field_start = false;
                if let Some(k) = CANDIDATES.iter().position(|&c| c == b) {
                    counts[k] += 1;
                    field_start = true;
                }
            }
        }
    }
    if !blank && line >= header_row && lines.len() < SAMPLE_LINES {
        lines.push(counts);
    }
    lines
}

/// Spaces and tabs that may stand between a delimiter and a quote (never the delimiter
/// itself).
fn is_pad(b: u8, delimiter: u8) -> bool {
    (b == b' ' || b == b'\t') && b != delimiter
}

/// Whether some `"` follows a delimiter or line start with only spaces between: the cheap
/// test that decides if [`strip_space_around_quotes`] has to copy the text.
pub(crate) fn has_space_before_quote(text: &str, delimiter: u8) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text[from..].find('"') {
        let quote = from + offset;
        let mut start = quote;
        while start > 0 && is_pad(bytes[start - 1], delimiter) {
            start -= 1;
        }
        if start < quote
            && (start == 0
                || matches!(bytes[start - 1], b'\n' | b'\r')
                || bytes[start - 1] == delimiter)
        {
            return true;
        }
        from = quote + 1;
    }
    false
}

/// Drops the spaces between a delimiter (or line start) and an opening quote, and between a
/// closing quote and the next delimiter (or line end), so `a, "Smith, J" ,b` reads as the
/// fields `a`, `Smith, J`, `b`: what the non-RFC exporter meant. Spaces around unquoted
/// fields are kept (cells keep their exact text).
pub(crate) fn strip_space_around_quotes(text: &str, delimiter: u8) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_quotes = false;
    let mut field_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_quotes {
            out.push(b);
            i += 1;
            if b == b'"' {
                if bytes.get(i) == Some(&b'"') {
                    out.push(b'"');
                    i += 1;
                    continue;
                }
                in_quotes = false;
                let mut end = i;
                while end < bytes.len() && is_pad(bytes[end], delimiter) {
                    end += 1;
                }
                let next = bytes.get(end).copied();
                if next.is_none() || next == Some(delimiter) || matches!(next, Some(b'\n' | b'\r'))
                {
                    i = end;
                }
            }
            continue;
        }
        if field_start && is_pad(b, delimiter) {
            let mut end = i;
            while end < bytes.len() && is_pad(bytes[end], delimiter) {
                end += 1;
            }
            if bytes.get(end) == Some(&b'"') {
                i = end;
                continue;
            }
        }
        out.push(b);
        i += 1;
        if b == b'"' && field_start {
            in_quotes = true;
        }
        field_start = b == delimiter || b == b'\n' || b == b'\r';
    }
    // Only ASCII bytes were removed, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_are_chosen_for_a_plain_csv() {
        assert_eq!(sniff_delimiter("email,name\na@x.de,A\nb@x.de,B\n", 1), b',');
    }

    #[test]
    fn semicolons_win_over_commas_that_appear_only_in_some_lines() {
        let text = "email;name;city\na@x.de;Müller, Hans;Köln\nb@x.de;B;Bonn\n";
        assert_eq!(sniff_delimiter(text, 1), b';');
    }

    #[test]
    fn tabs_and_pipes_are_sniffed() {
        assert_eq!(sniff_delimiter("email\tname\na@x.de\tA, B\n", 1), b'\t');
        assert_eq!(sniff_delimiter("email|name|x\na@x.de|A|1\n", 1), b'|');
    }

    #[test]
    fn delimiters_inside_quotes_do_not_count() {
        let text = "a;b\n\"1,2,3\";x\n\"4,\n5,6\";y\n";
        assert_eq!(sniff_delimiter(text, 1), b';');
    }

    #[test]
    fn a_tie_prefers_comma_then_semicolon() {
        assert_eq!(sniff_delimiter("a,b;c\n1,2;3\n", 1), b',');
        assert_eq!(sniff_delimiter("a;b|c\n", 1), b';');
    }

    #[test]
    fn title_lines_above_the_header_row_are_not_sampled() {
        let text = "Export, 2024, all contacts, final\n\nemail;name\na;b\nc;d\n";
        assert_eq!(sniff_delimiter(text, 3), b';');
    }

    #[test]
    fn a_file_without_any_candidate_is_comma_separated() {
        assert_eq!(sniff_delimiter("email\na@x.de\n", 1), b',');
        assert_eq!(sniff_delimiter("", 1), b',');
    }

    #[test]
    fn spaces_before_opening_quotes_are_detected() {
        assert!(has_space_before_quote("a, \"b\"", b','));
        assert!(has_space_before_quote(" \"b\",c", b','));
        assert!(!has_space_before_quote("a,\"b\"\n5\" disk,x", b','));
    }

    #[test]
    fn spaces_around_quoted_fields_are_dropped_and_others_kept() {
        let text =
            "Email, First name\nfoo3@example.com, \"Foo, 3\" , \"Bar \"\"3\"\"\"\r\nx, y \"z\"\n";
        assert_eq!(
            strip_space_around_quotes(text, b','),
            "Email, First name\nfoo3@example.com,\"Foo, 3\",\"Bar \"\"3\"\"\"\r\nx, y \"z\"\n"
        );
    }

    #[test]
    fn a_quoted_field_keeps_its_inner_spaces_and_newlines() {
        let text = "a; \" x ;\n y \"; b\n";
        assert_eq!(
            strip_space_around_quotes(text, b';'),
            "a;\" x ;\n y \"; b\n"
        );
    }
}
