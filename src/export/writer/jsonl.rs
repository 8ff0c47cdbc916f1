//! JSON lines: one object per row, keys in column order, typed values
//! (numbers, booleans, timestamps as ISO strings or Unix seconds, `null`
//! for an empty timestamp).

use super::{ByteFile, Chunk, Encode, Layout, WriteError};
use crate::export::columns::{Cell, iso};
use crate::pipeline::export::Timestamps;
use serde_json::Value;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

pub struct JsonlEncoder {
    /// Each column's key, written once: `"name":`.
    keys: Vec<Vec<u8>>,
    timestamps: Timestamps,
}

pub fn create(path: &Path, layout: Layout) -> Result<ByteFile, WriteError> {
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
        timestamps: layout.timestamps,
    });
    Ok(ByteFile::new(
        BufWriter::new(File::create(path)?),
        encoder,
        "JSON lines",
    ))
}

impl JsonlEncoder {
    fn value(&self, cell: &Cell) -> Value {
        match cell {
            Cell::Text(s) => Value::String(s.to_string()),
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
            for (i, (key, cell)) in self.keys.iter().zip(row).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(key);
                serde_json::to_writer(&mut out, &self.value(cell))
                    .map_err(|e| WriteError(e.to_string()))?;
            }
            out.extend_from_slice(b"}\n");
        }
        Ok(Chunk::Bytes(out))
    }
}
