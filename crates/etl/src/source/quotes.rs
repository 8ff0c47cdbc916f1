//! Quoted fields that run away: a `"` that opens a field and never closes swallows the rest
//! of the file into that one field, and a CSV parser reports one long ragged row. Here a
//! record is scanned again to find where such a quote opened (the field and the line) and how
//! many lines it covered, so the reader can reject that row alone and read the lines after
//! it as rows again.
//!
//! The scan follows the quoting rule of the `csv` crate (as `sniff` does): a `"` opens a
//! quoted field only at the start of a field, `""` inside quotes is a quote, and a `"` inside
//! an unquoted field is text.

/// Quoted fields spanning more lines than this are taken for a quote that never closed,
/// unless the source sets `max_quoted_lines`.
pub const DEFAULT_MAX_QUOTED_LINES: u64 = 1_000;

/// A quoted field that did not close in time, found in one record's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runaway {
    /// 0-based index of the field whose quote opened.
    pub field: usize,
    /// Byte offset (in the scanned text) of the start of the line where the quote opened.
    pub line_start: usize,
    /// Byte offset just past the end of that line (its `\n` included when it has one).
    pub line_end: usize,
    /// Newlines between the start of the record and the line where the quote opened.
    pub lines_before: u64,
    /// Lines the quoted field covered, from its opening line on.
    pub covered: u64,
    pub end: QuoteEnd,
}

/// How a runaway quote ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuoteEnd {
    /// It never closed: the field ran to the end of the file.
    EndOfFile,
    /// It closed after more lines than allowed.
    TooLong,
    /// It closed on a later line in the middle of a field (`...,"next`): the quote that
    /// closed it opened another field.
    MidField,
}

/// Scans one record's text (as the `csv` crate read it) for a quoted field that stays open
/// to the end of `record` (`at_end`: the record ends the file) or spans more than
/// `max_lines` lines.
pub(crate) fn find_runaway(
    record: &[u8],
    delimiter: u8,
    max_lines: u64,
    at_end: bool,
) -> Option<Runaway> {
    let mut field = 0;
    let mut field_start = true;
    let mut newlines = 0u64;
    let mut line_start = 0;
    // The open quote: its field, the start of its line, the newlines before it, and the
    // newlines seen inside it so far.
    let mut open: Option<(usize, usize, u64, u64)> = None;
    let mut i = 0;
    while i < record.len() {
        let b = record[i];
        i += 1;
        if let Some((f, start, before, inside)) = open.as_mut() {
            match b {
                b'"' if record.get(i) == Some(&b'"') => i += 1,
                b'"' => {
                    let (f, start, before, covered) = (*f, *start, *before, *inside + 1);
                    if covered > max_lines {
                        return Some(runaway(
                            record,
                            f,
                            start,
                            before,
                            covered,
                            QuoteEnd::TooLong,
                        ));
                    }
                    // A closing quote is followed by a delimiter or the end of the line; one
                    // followed by text on a later line was the opening quote of another field.
                    let next = record.get(i).copied();
                    let ends_field = matches!(next, None | Some(b'\n' | b'\r'))
                        || next == Some(delimiter)
                        || next == Some(b'"');
                    if covered > 1 && !ends_field {
                        return Some(runaway(
                            record,
                            f,
                            start,
                            before,
                            covered,
                            QuoteEnd::MidField,
                        ));
                    }
                    open = None;
                    field_start = false;
                }
                b'\n' => {
                    *inside += 1;
                    newlines += 1;
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if field_start => {
                open = Some((field, line_start, newlines, 0));
                field_start = false;
            }
            b'\n' => {
                newlines += 1;
                line_start = i;
                field_start = true;
            }
            b if b == delimiter => {
                field += 1;
                field_start = true;
            }
            b'\r' => {}
            _ => field_start = false,
        }
    }
    let (f, start, before, inside) = open?;
    // Lines covered: the opening one and each one begun after a newline inside the quote
    // (a final newline of the file begins none).
    let covered = inside + 1 - u64::from(record.ends_with(b"\n"));
    (at_end || covered > max_lines)
        .then(|| runaway(record, f, start, before, covered, QuoteEnd::EndOfFile))
}

fn runaway(
    record: &[u8],
    field: usize,
    line_start: usize,
    lines_before: u64,
    covered: u64,
    end: QuoteEnd,
) -> Runaway {
    let line_end = record[line_start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(record.len(), |n| line_start + n + 1);
    Runaway {
        field,
        line_start,
        line_end,
        lines_before,
        covered,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_open_at_the_end_of_the_file_is_found_with_its_field_and_lines() {
        let r = find_runaway(b"\"y@x.de,open\nz@x.de,ok\nw@x.de,ok\n", b',', 1000, true).unwrap();
        assert_eq!(
            r,
            Runaway {
                field: 0,
                line_start: 0,
                line_end: 13,
                lines_before: 0,
                covered: 3,
                end: QuoteEnd::EndOfFile
            }
        );
    }

    #[test]
    fn a_closed_multi_line_field_is_not_a_runaway() {
        assert_eq!(find_runaway(b"a,\"x\ny\",b\n", b',', 1000, true), None);
        assert_eq!(find_runaway(b"a,b\"c,d\n", b',', 1000, true), None);
        assert_eq!(
            find_runaway(b"a,\"x \"\"q\"\" y\"\n", b',', 1000, true),
            None
        );
    }

    #[test]
    fn a_quote_spanning_more_lines_than_allowed_is_a_runaway_even_when_it_closes() {
        let r = find_runaway(b"a;\"1\n2\n3\";b\n", b';', 2, false).unwrap();
        assert_eq!(
            (r.field, r.covered, r.end, r.line_end),
            (1, 3, QuoteEnd::TooLong, 5)
        );
        assert_eq!(find_runaway(b"a;\"1\n2\n3\";b\n", b';', 3, false), None);
    }

    #[test]
    fn a_quote_closed_by_the_opening_quote_of_a_field_lines_later_is_a_runaway() {
        let r = find_runaway(b"\"y,open\nz,ok\nw,\"two\n", b',', 1000, false).unwrap();
        assert_eq!(
            (r.field, r.covered, r.end, r.line_end),
            (0, 3, QuoteEnd::MidField, 8)
        );
    }

    #[test]
    fn an_open_quote_in_the_middle_of_the_file_within_the_limit_is_left_alone() {
        assert_eq!(find_runaway(b"\"open\nb\n", b',', 1000, false), None);
    }
}
