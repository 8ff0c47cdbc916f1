//! `json_attributes`: each cell of the column is read as one JSON object, and its keys'
//! values become columns of their own beside the source's, which the attribute mappings
//! the pipeline made of the keys read like any column. A cell that is not a JSON object
//! rejects its row, with the reason.

use super::PrepareError;
use super::columns::Errors;
use crate::pipeline::JsonAttributes;
use crate::source::Table;
use polars::prelude::*;
use serde_json::Value;

/// The chunk with a column per key of `spec` (and one of the reasons of cells that are
/// not objects) added: a table of its own, the source's cells unchanged.
pub(super) fn spread(table: &Table, spec: &JsonAttributes) -> Result<Table, PrepareError> {
    let height = table.frame.height();
    let mut values: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(height); spec.keys.len()];
    let mut why: Vec<Option<String>> = Vec::with_capacity(height);
    let cells = table.frame.column(&spec.column).and_then(|c| c.str()).ok();
    for i in 0..height {
        let cell = cells
            .and_then(|c| c.get(i))
            .filter(|c| !c.trim().is_empty());
        let object = match cell.map(serde_json::from_str::<Value>) {
            None => None,
            Some(Ok(Value::Object(o))) => Some(o),
            Some(Ok(other)) => {
                why.push(Some(format!(
                    "not a JSON object but {}; json_attributes reads one object per cell, such as {{\"city\": \"Berlin\"}}",
                    kind(&other)
                )));
                None
            }
            Some(Err(e)) => {
                why.push(Some(format!(
                    "not a JSON object ({e}); json_attributes reads one object per cell, such as {{\"city\": \"Berlin\"}}"
                )));
                None
            }
        };
        if why.len() == i {
            why.push(None);
        }
        for (k, out) in spec.keys.iter().zip(values.iter_mut()) {
            out.push(object.as_ref().and_then(|o| o.get(k)).and_then(text));
        }
    }
    let mut frame = table.frame.clone();
    for (k, column) in spec.keys.iter().zip(values) {
        let ca: StringChunked = column.into_iter().collect();
        frame.with_column(ca.with_name(spec.key_column(k).into()).into_column())?;
    }
    let ca: StringChunked = why.into_iter().collect();
    frame.with_column(ca.with_name(spec.error_column().into()).into_column())?;
    Ok(Table {
        columns: table.columns.clone(),
        frame,
        files: table.files.clone(),
        ragged: Vec::new(),
        file_columns: table.file_columns.clone(),
        dialect: table.dialect.clone(),
        padded: table.padded,
        workbooks: table.workbooks.clone(),
        repeated_headers: table.repeated_headers.clone(),
    })
}

/// The rows whose cell is not a JSON object, as errors of the column.
pub(super) fn add_errors(
    table: &Table,
    spec: &JsonAttributes,
    errors: &mut Errors,
) -> Result<(), PrepareError> {
    let why = table.frame.column(&spec.error_column())?.str()?;
    let cells = table.frame.column(&spec.column)?.str()?;
    for (i, reason) in why.iter().enumerate() {
        if let Some(reason) = reason {
            let cell = cells.get(i).unwrap_or("");
            errors.add(
                i,
                &spec.column,
                cell,
                format!("\"{}\" is {reason}", super::reasons::cut(cell)),
            );
        }
    }
    Ok(())
}

/// A key's value as the attribute's text: a string as it is, a number or `true` as JSON
/// writes it, a nested value as JSON; null is no value.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
