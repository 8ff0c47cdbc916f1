//! JSON lines: one object per row, keys in column order, typed values:
//! - `id`, `group_id`, `points`, prices and quantities: numbers;
//! - `number` attributes: numbers (a whole number without a fraction, as
//!   `12`, else as `12.5`); one whose text is not a number keeps its text,
//!   an empty one is `null`;
//! - `date` attributes: `"YYYY-MM-DD"` strings, `null` when empty;
//! - timestamps: ISO 8601 UTC strings (`"2024-02-01T13:45:20Z"`, the
//!   default) or Unix seconds (`timestamps = "unix"`), `null` for never;
//! - `active`: a boolean; `tags`: an array of strings;
//! - other text: strings as they are (an empty one `""`).

use super::{ByteFile, Chunk, Encode, Layout, WriteError};
use crate::export::columns::{Cell, Kind, iso};
use crate::pipeline::export::Timestamps;
use serde_json::Value;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

pub(super) struct JsonlEncoder {
    /// Each column's key, written once: `"name":`.
    keys: Vec<Vec<u8>>,
    kinds: Vec<Kind>,
    timestamps: Timestamps,
}

/// Numbers up to this are written without a fraction when they have none
/// (2^53: every whole number up to it is exact in a double).
const WHOLE: f64 = 9_007_199_254_740_992.0;

pub(super) fn create(path: &Path, layout: Layout) -> Result<ByteFile, WriteError> {
    let keys = layout
        .names
        .iter()
        .map(|n| {
            let mut key = serde_json::to_vec(n).map_err(|e| WriteError(e.to_string()))?;
            key.push(b':');
            Ok(key)
        })
        .collect::<Result<_, WriteError>>()?;
    let encoder = Arc::new(JsonlEncoder {
        keys,
        kinds: layout.kinds,
        timestamps: layout.timestamps,
    });
    Ok(ByteFile::new(
        BufWriter::new(File::create(path)?),
        encoder,
        "JSON lines",
    ))
}

impl JsonlEncoder {
    fn value(&self, cell: &Cell, kind: Kind) -> Value {
        match cell {
            Cell::Text(s) if s.trim().is_empty() && matches!(kind, Kind::Number | Kind::Date) => {
                Value::Null
            }
            Cell::Text(s) if kind == Kind::Number => match super::number(s) {
                Some(n) if n.fract() == 0.0 && n.abs() <= WHOLE => Value::from(n as i64),
                Some(n) => Value::from(n),
                None => Value::String(s.to_string()),
            },
            Cell::Text(s) => Value::String(s.to_string()),
            Cell::Tags(tags) => {
                Value::Array(tags.iter().map(|t| Value::String(t.to_string())).collect())
            }
            Cell::Int(n) => n.map_or(Value::Null, Value::from),
            Cell::Float(f) => Value::from(*f),
            Cell::Bool(b) => Value::Bool(*b),
            Cell::Time(None) => Value::Null,
            Cell::Time(Some(t)) => match self.timestamps {
                Timestamps::Iso => Value::String(iso(*t)),
                Timestamps::Unix => Value::from(*t),
            },
        }
    }
}

impl Encode for JsonlEncoder {
    fn encode(&self, rows: &[Vec<Cell<'_>>]) -> Result<Chunk, WriteError> {
        let mut out = Vec::new();
        for row in rows {
            // Written by hand so keys stay in column order (serde_json sorts maps).
            out.push(b'{');
            let kinds = self
                .kinds
                .iter()
                .copied()
                .chain(std::iter::repeat(Kind::Text));
            for (i, ((key, cell), kind)) in self.keys.iter().zip(row).zip(kinds).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(key);
                serde_json::to_writer(&mut out, &self.value(cell, kind))
                    .map_err(|e| WriteError(e.to_string()))?;
            }
            out.extend_from_slice(b"}\n");
        }
        Ok(Chunk::Bytes(out))
    }
}
