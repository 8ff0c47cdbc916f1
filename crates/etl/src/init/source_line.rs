//! The draft's `source` line: the paths relative to the pipeline, and the dialect the
//! sample was read with.

use super::render::{string, strings};
use super::{Options, Writer, consent, sample};
use crate::source::SourceFormat;
use std::path::Path;

/// The `source` line: the paths relative to the pipeline, and the dialect found.
pub(super) fn source_lines(w: &mut Writer, opts: &Options, sample: &sample::Sample) {
    let paths: Vec<String> = opts
        .sources
        .iter()
        .map(|s| relative(s, &opts.base, opts.out_dir.as_deref()))
        .collect();
    let mut keys: Vec<String> = vec![if paths.len() == 1 {
        format!("path = {}", string(&paths[0]))
    } else {
        format!("paths = {}", strings(&paths))
    }];
    let mut found: Vec<String> = Vec::new();
    if sample.format == SourceFormat::Csv {
        let delimiter = match sample.delimiter {
            b'\t' => "tab".to_string(),
            d => char::from(d).to_string(),
        };
        keys.push(format!("delimiter = {}", string(&delimiter)));
        keys.push(format!("encoding = {}", string(sample.encoding.as_str())));
        found.push(format!(
            "delimiter \"{delimiter}\", encoding {}",
            sample.encoding.as_str()
        ));
        if sample.encoding_guessed {
            w.look_at(format!(
                "the encoding was guessed as {}: if names or other text look wrong in the preview of `check`, set `encoding` in `source` to the file's real encoding",
                sample.encoding.as_str()
            ));
        }
    }
    if sample.header_row > 1 {
        let row = sample.header_row;
        keys.push(format!("header_row = {row}"));
        if sample.no_header {
            found.push(format!(
                "the data from row {row} (rows above it are titles)"
            ));
            w.look_at(format!(
                "the data starts on row {row}: rows above it are skipped"
            ));
        } else {
            found.push(format!(
                "the header on row {row} (rows above it are titles)"
            ));
            w.look_at(format!(
                "the header sits on row {row}: rows above it are skipped"
            ));
        }
    }
    if sample.no_header {
        keys.push("header = false".into());
        let columns = match sample.columns.as_slice() {
            [] | [_] => "column_1".to_string(),
            [first, .., last] => format!("{first} to {last}"),
        };
        found.push(format!(
            "no header row: the first row is data, columns are {columns}"
        ));
        w.look_at(format!(
            "the file has no header row (its first row holds an address): header = false reads that row as data and names the columns {columns}; if the file does have a header, remove header = false"
        ));
    }
    if sample.sheets.len() > 1
        && let Some(sheet) = &sample.sheet
    {
        keys.push(format!("sheet = {}", string(sheet)));
        found.push(format!(
            "sheet \"{sheet}\" of {}",
            consent::quoted(&sample.sheets)
        ));
        w.look_at(format!(
            "the workbook has sheets {}: only \"{sheet}\" is read (sheets = [\"*\"] reads every one of the same layout)",
            consent::quoted(&sample.sheets)
        ));
    }
    if sample.short_rows > 0 {
        keys.push("pad_short_rows = true".into());
        found.push(format!(
            "{} row(s) with fewer fields than the header, padded",
            sample.short_rows
        ));
        w.look_at(format!(
            "{} row(s) have fewer fields than the header: they are padded with empty fields; a field missing in the middle shifts the others, so check them in the rejects and the preview of `check`",
            sample.short_rows
        ));
    }
    if sample.long_rows > 0 {
        w.look_at(format!(
            "{} row(s) have more fields than the header: they will be rejected",
            sample.long_rows
        ));
    }
    if !found.is_empty() {
        w.comment(&format!("The file's dialect: {}.", found.join("; ")));
        w.decided(format!("dialect: {}", found.join("; ")));
    }
    w.line(&format!("source = {{ {} }}", keys.join(", ")));
}

/// `source` as the pipeline names it: relative to the pipeline's folder when written to a
/// file (absolute when it lies elsewhere), as given on standard output.
fn relative(source: &str, base: &Path, out_dir: Option<&Path>) -> String {
    let Some(out_dir) = out_dir.filter(|_| !crate::remote::is_remote_entry(source)) else {
        return source.to_string();
    };
    let full = base.join(source);
    let (Ok(dir), Some(parent), Some(name)) =
        (out_dir.canonicalize(), full.parent(), full.file_name())
    else {
        return full.display().to_string();
    };
    let Ok(parent) = parent.canonicalize() else {
        return full.display().to_string();
    };
    let full = parent.join(name);
    match full.strip_prefix(&dir) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => full.display().to_string(),
    }
}
