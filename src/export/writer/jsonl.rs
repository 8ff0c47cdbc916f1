//! JSON lines: one object per row, keys in column order, typed values
//! (numbers, booleans, timestamps as ISO strings or Unix seconds, `null`
//! for an empty timestamp).

use super::{Chunk, Encode, Layout, Sink, WriteError, unexpected};
use crate::export::columns::{Cell, iso};
use crate::pipeline::export::Timestamps;
use serde_json::Value;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

pub struct JsonlSink {
    out: BufWriter<File>,
    encoder: Arc<JsonlEncoder>,
}

pub struct JsonlEncoder {
    /// Each column's key, written once: `"name":`.
    keys: Vec<Vec<u8>>,
    timestamps: Timestamps,
}

impl JsonlSink {
    pub fn create(path: &Path, layout: Layout) -> Result<Self, WriteError> {
        let keys = layout
            .names
            .iter()
            .map(|n| {
                let mut key = serde_json::to_vec(n).map_err(|e| WriteError(e.to_string()))?;
                key.push(b':');
                Ok(key)
            })
            .collect::<Result<_, WriteError>>()?;
        Ok(JsonlSink {
            out: BufWriter::new(File::create(path)?),
            encoder: Arc::new(JsonlEncoder {
                keys,
                timestamps: layout.timestamps,
            }),
        })
    }
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

impl Sink for JsonlSink {
    fn encoder(&self) -> Arc<dyn Encode> {
        self.encoder.clone()
    }

    fn write_chunk(&mut self, chunk: Chunk) -> Result<(), WriteError> {
        match chunk {
            Chunk::Bytes(b) => Ok(self.out.write_all(&b)?),
            _ => Err(unexpected("JSON lines")),
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), WriteError> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(())
    }
}
