//! `json_attributes = "attributes"`: a column holding a JSON object per row (listmonk's
//! `attributes`, `{"city": "Bengaluru", "projects": 3}`) is spread into one global
//! attribute per key, instead of one text attribute holding the whole object.
//!
//! The keys and their types are what the column holds: it is read once when the pipeline
//! is loaded (a local source only, as `other_columns` needs), and each key becomes a
//! plain attribute mapping, so later stages see nothing new. Decision: a key whose every
//! value is a JSON number is a `number` attribute, every other key `text` (`true`, a
//! string, or a nested value written as JSON); a key named like an attribute the step
//! maps already is refused rather than shadowed.

use super::parse::Parser;
use super::reader::Table;
use super::step_columns::attribute_name;
use super::*;
use crate::source;
use listpipe_api::AttributeType;
use std::collections::HashMap;

/// A column holding a JSON object per row (listmonk's `attributes`), spread into one
/// global attribute per key; the keys were found reading the column when the pipeline
/// was loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonAttributes {
    pub column: String,
    /// The keys, in the order first found.
    pub keys: Vec<String>,
}

impl JsonAttributes {
    /// The prepared table's column holding `key`'s values (text; a nested value as JSON).
    pub fn key_column(&self, key: &str) -> String {
        format!("{}\u{1f}{key}", self.column)
    }

    /// The prepared table's column holding why a row's cell is not a JSON object.
    pub fn error_column(&self) -> String {
        format!("{}\u{1f}", self.column)
    }
}

/// Rows per chunk of the read that finds the keys.
const CHUNK_ROWS: usize = 65_536;

impl Parser<'_> {
    /// `json_attributes`: the column's keys as mappings added to `global_attributes`.
    pub(super) fn json_attributes(
        &mut self,
        t: &Table,
        src: Option<usize>,
        global_attributes: &mut Vec<AttributeMapping>,
    ) -> Option<JsonAttributes> {
        let column = t.str(&mut self.ctx, "json_attributes")?;
        let span = column.span();
        self.check_column(src, &column);
        let column = column.into_inner();
        let (spec, _) = self.sources.get(src?)?.clone();
        if crate::remote::is_remote(&spec) {
            self.ctx.error(
                span,
                "`json_attributes` reads the column's keys when the pipeline is loaded, and a URL source is downloaded only when the step runs; map its keys by name instead",
            );
            return None;
        }
        // An unreadable source or a missing column is reported by the column check.
        let found = keys_of(&spec, &self.base_dir, &column).unwrap_or_default();
        let mut keys = Vec::new();
        let json = JsonAttributes {
            column: column.clone(),
            keys: Vec::new(),
        };
        for (key, kind) in found {
            let name = attribute_name(&key);
            if let Some(taken) = global_attributes.iter().find(|a| a.name == name) {
                let how = match &taken.mapping.from {
                    ValueFrom::Column(c) if c.starts_with(&json.error_column()) => {
                        "another key of the column".to_string()
                    }
                    _ => "[import.global_attributes]".to_string(),
                };
                self.ctx.error(
                    span.clone(),
                    format!(
                        "the key \"{key}\" of column \"{column}\" would be the global attribute `{name}`, which {how} sets already; rename one of them"
                    ),
                );
                continue;
            }
            global_attributes.push(AttributeMapping {
                name,
                kind,
                mapping: Mapping {
                    from: ValueFrom::Column(json.key_column(&key)),
                    trim: true,
                    decimal: '.',
                    ..Default::default()
                },
            });
            keys.push(key);
        }
        Some(JsonAttributes { keys, ..json })
    }
}

/// The keys of the JSON objects in `column`, in the order first found, with the type
/// their values make: number when every value is a number, else text.
fn keys_of(
    spec: &source::SourceSpec,
    base_dir: &Path,
    column: &str,
) -> Result<Vec<(String, AttributeType)>, source::SourceError> {
    let mut keys: Vec<(String, AttributeType)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    source::read_chunks(spec, base_dir, CHUNK_ROWS, &mut |table| {
        let Ok(cells) = table.frame.column(column).and_then(|c| c.str()) else {
            return Ok(());
        };
        for cell in cells.iter().flatten() {
            let Ok(serde_json::Value::Object(object)) = serde_json::from_str(cell) else {
                continue;
            };
            for (key, value) in object {
                if value.is_null() {
                    continue;
                }
                let kind = if value.is_number() {
                    AttributeType::Number
                } else {
                    AttributeType::Text
                };
                match index.get(&key) {
                    Some(&i) => {
                        if kind != keys[i].1 {
                            keys[i].1 = AttributeType::Text;
                        }
                    }
                    None => {
                        index.insert(key.clone(), keys.len());
                        keys.push((key, kind));
                    }
                }
            }
        }
        Ok(())
    })?;
    Ok(keys)
}
