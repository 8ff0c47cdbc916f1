//! JSON lines (`.jsonl`, `.ndjson`, or `format = "jsonl"`): one JSON object per line, what
//! event pipelines and many APIs export. Read line by line with serde_json, never whole.
//!
//! Decisions:
//! - Objects may differ in their keys, so the file is read twice: first for the union of
//!   the keys (in order of first appearance: the header), then for the rows. Memory holds
//!   a line and a chunk either way, and a line that is not a JSON object is found in the
//!   first pass, before a row is handed on: the whole file is refused, naming the line.
//! - Values as text: strings as they are, numbers as written in the file, `true`/`false`,
//!   null (or a missing key) as an empty cell, arrays and objects as compact JSON.
//! - Row numbers are line numbers (a JSON-lines file has no header line); blank lines are
//!   skipped, as in CSV.
//!
//! The hand-written part is only the visitor keeping an object's keys in file order
//! (serde_json's own map sorts them unless the whole crate is built with `preserve_order`).

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::builder::{TableBuilder, header, is_blank};
use super::parquet::TEXT_DIALECT;
use super::{Dialect, SourceError};

/// One line's object, its keys in file order.
struct Record(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Record;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    fields.push(entry);
                }
                Ok(Record(fields))
            }
        }
        d.deserialize_map(InOrder)
    }
}

/// Each non-blank line's number and object, in order.
fn records(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(u64, Record), SourceError>>, SourceError> {
    let io_error = |source| SourceError::Io {
        file: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let path = path.to_path_buf();
    Ok(BufReader::new(file)
        .lines()
        .enumerate()
        .filter_map(move |(i, line)| {
            let number = i as u64 + 1;
            let line = match line {
                Ok(line) => line,
                Err(source) => {
                    return Some(Err(SourceError::Io {
                        file: path.clone(),
                        source,
                    }));
                }
            };
            let text = line.trim_start_matches('\u{feff}').trim();
            if text.is_empty() {
                return None;
            }
            Some(
                serde_json::from_str::<Record>(text)
                    .map(|r| (number, r))
                    .map_err(|e| SourceError::Data {
                        file: path.clone(),
                        message: format!(
                            "line {number} is not a JSON object ({e}); each line of a JSON-lines file holds one object, such as {{\"email\": \"ann@example.com\"}}"
                        ),
                    }),
            )
        }))
}

/// Every key of the file, in order of first appearance (the first pass).
fn keys(path: &Path) -> Result<Vec<String>, SourceError> {
    let mut keys: Vec<String> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for record in records(path)? {
        let (_, Record(fields)) = record?;
        for (key, _) in fields {
            if !seen.contains_key(&key) {
                seen.insert(key.clone(), keys.len());
                keys.push(key);
            }
        }
    }
    if keys.is_empty() {
        return Err(SourceError::Empty {
            file: path.to_path_buf(),
        });
    }
    Ok(keys)
}

/// The file's column names, as [`read_file`] names them.
pub(crate) fn read_header(path: &Path) -> Result<Vec<String>, SourceError> {
    let cells: Vec<Option<String>> = keys(path)?.into_iter().map(Some).collect();
    Ok(header(cells.as_slice()).names)
}

/// Reads the file into the table (the second pass); returns the rejects dialect.
pub(crate) fn read_file(path: &Path, table: &mut TableBuilder) -> Result<Dialect, SourceError> {
    let keys = keys(path)?;
    let position: HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let cells: Vec<Option<String>> = keys.iter().cloned().map(Some).collect();
    let columns = table.start_file(path.to_path_buf(), &header(cells.as_slice()), TEXT_DIALECT);
    let mut row: Vec<Option<String>> = vec![None; keys.len()];
    for record in records(path)? {
        let (number, Record(fields)) = record?;
        row.iter_mut().for_each(|cell| *cell = None);
        for (key, value) in fields {
            if let Some(&i) = position.get(key.as_str()) {
                row[i] = text(value);
            }
        }
        if !is_blank(row.as_slice()) {
            table.push_row(&columns, number, row.as_slice())?;
        }
    }
    Ok(TEXT_DIALECT)
}

/// A value's text (see the module).
fn text(value: Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        nested @ (Value::Array(_) | Value::Object(_)) => Some(nested.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_file_order_and_values_become_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(
            &path,
            "{\"zeta\": 1, \"email\": \"a@x.de\", \"tags\": [\"x\", \"y\"]}\n\n{\"email\": null, \"vip\": true}\n",
        )
        .unwrap();
        assert_eq!(
            read_header(&path).unwrap(),
            ["zeta", "email", "tags", "vip"]
        );
        assert_eq!(text(serde_json::json!(1.5)).as_deref(), Some("1.5"));
        assert_eq!(text(serde_json::json!(["x"])).as_deref(), Some("[\"x\"]"));
    }

    #[test]
    fn a_line_that_is_not_an_object_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, "{\"email\": \"a@x.de\"}\n[1, 2]\n").unwrap();
        let err = read_header(&path).unwrap_err().to_string();
        assert!(err.contains("line 2 is not a JSON object"), "{err}");
    }
}
