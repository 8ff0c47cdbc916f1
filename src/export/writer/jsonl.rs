//! JSON lines: one object per row, keys in column order, typed values
//! (numbers, booleans, timestamps as ISO strings or Unix seconds, `null`
//! for an empty timestamp).

use super::{Layout, Sink, WriteError};
use crate::export::columns::{Cell, iso};
use crate::pipeline::export::Timestamps;
use serde_json::Value;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct JsonlSink {
    out: BufWriter<File>,
    names: Vec<String>,
    timestamps: Timestamps,
}

impl JsonlSink {
    pub fn create(path: &Path, layout: Layout) -> Result<Self, WriteError> {
        Ok(JsonlSink {
            out: BufWriter::new(File::create(path)?),
            names: layout.names,
            timestamps: layout.timestamps,
        })
    }

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

impl Sink for JsonlSink {
    fn write(&mut self, rows: &[Vec<Cell<'_>>]) -> Result<(), WriteError> {
        for row in rows {
            // Written by hand so keys stay in column order (serde_json sorts maps).
            self.out.write_all(b"{")?;
            for (i, (name, cell)) in self.names.iter().zip(row).enumerate() {
                if i > 0 {
                    self.out.write_all(b",")?;
                }
                serde_json::to_writer(&mut self.out, name)
                    .map_err(|e| WriteError(e.to_string()))?;
                self.out.write_all(b":")?;
                let value = self.value(cell);
                serde_json::to_writer(&mut self.out, &value)
                    .map_err(|e| WriteError(e.to_string()))?;
            }
            self.out.write_all(b"}\n")?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), WriteError> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(())
    }
}
