//! Title rows above a header (`Report 2024`, an empty line, then the names): the header
//! read from row 1 names none of the mapped columns, and the error would list the title
//! row's `column_N` names once per mapped column. When a lower row holds every missing
//! name, the pipeline is refused once, at the source, with the `header_row` that reads it.

use crate::source::{self, SourceSpec};
use std::path::Path;

/// How far down a header is looked for: title blocks are a few rows.
const LOOKED_AT_ROWS: usize = 20;

/// The row (1-based) below the source's own `header_row` whose names include every one
/// of `missing`, if there is one within the first [`LOOKED_AT_ROWS`] rows.
pub(super) fn lower_header(spec: &SourceSpec, base_dir: &Path, missing: &[&str]) -> Option<usize> {
    // Without a header row no row names columns: every one reads as `column_N`.
    if missing.is_empty() || spec.postgres.is_some() || spec.no_header {
        return None;
    }
    let header_at = |row: usize| {
        let spec = SourceSpec {
            header_row: row,
            ..spec.clone()
        };
        source::read_columns(&spec, base_dir).ok()
    };
    let holds_all = |cols: &[String]| {
        missing
            .iter()
            .all(|m| cols.iter().any(|c| c.as_str() == *m))
    };
    let first = spec.header_row.max(1) + 1;
    let mut row =
        (first..=LOOKED_AT_ROWS).find(|&row| header_at(row).is_some_and(|c| holds_all(&c)))?;
    // A blank row reads as the first non-blank row below it: name the row the names are on.
    let names = header_at(row);
    while row < LOOKED_AT_ROWS && header_at(row + 1) == names {
        row += 1;
    }
    Some(row)
}

/// The error for a source whose mapped columns are on `row`.
pub(super) fn message(spec: &SourceSpec, missing: &[&str], row: usize) -> String {
    let names: Vec<String> = missing.iter().take(5).map(|m| format!("\"{m}\"")).collect();
    let more = match missing.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    let example = match spec.paths.as_slice() {
        [path] => format!(", e.g. source = {{ path = \"{path}\", header_row = {row} }}"),
        _ => String::new(),
    };
    format!(
        "the source's header (row {}) lacks the mapped columns {}{more}; row {row} holds them all: set header_row = {row} in the source{example}",
        spec.header_row.max(1),
        names.join(", "),
    )
}
