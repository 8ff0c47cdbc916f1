//! `fill_down`: exports that write an order's own fields (address, currency, date) on its
//! first line only leave them empty on the order's other lines. Before mapping, each empty
//! cell of those columns takes the first value found on a row with the same key, so every
//! line knows its buyer. Rows without a key are left alone; no cell with a value changes.

use super::PrepareError;
use crate::pipeline::FillDown;
use crate::source::Table;
use polars::prelude::*;
use std::collections::HashMap;

/// Fills the step's columns in place (rejects then show the filled values, which is what
/// the row meant).
pub(super) fn fill_down(table: &mut Table, spec: &FillDown) -> Result<(), PrepareError> {
    let Ok(keys) = table
        .frame
        .column(&spec.within)
        .and_then(|c| c.str())
        .cloned()
    else {
        return Ok(());
    };
    for column in &spec.columns {
        let Ok(cells) = table.frame.column(column).and_then(|c| c.str()).cloned() else {
            continue;
        };
        let mut first: HashMap<&str, &str> = HashMap::new();
        for (key, cell) in keys.iter().zip(cells.iter()) {
            if let (Some(k), Some(v)) = (key, cell)
                && !v.trim().is_empty()
            {
                first.entry(k.trim()).or_insert(v);
            }
        }
        let filled: StringChunked = keys
            .iter()
            .zip(cells.iter())
            .map(|(key, cell)| match cell {
                Some(v) if !v.trim().is_empty() => Some(v),
                _ => key.and_then(|k| first.get(k.trim()).copied()),
            })
            .collect();
        let filled = filled.with_name(column.as_str().into());
        table.frame.with_column(filled.into_column())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{self, SourceSpec};

    #[test]
    fn empty_cells_take_the_first_value_of_their_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("o.csv"),
            "Name,Email,Lineitem name\n#1,a@x.de,Cap\n#1,,Mug\n#2,,Tee\n#3,b@x.de,Hat\n#1,,Bag\n,,Loose\n",
        )
        .unwrap();
        let spec = SourceSpec {
            paths: vec!["o.csv".into()],
            ..Default::default()
        };
        let mut table = source::read(&spec, dir.path()).unwrap();
        fill_down(
            &mut table,
            &FillDown {
                within: "Name".into(),
                columns: vec!["Email".into(), "absent".into()],
            },
        )
        .unwrap();
        let emails: Vec<Option<&str>> = table
            .frame
            .column("Email")
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(
            emails,
            [
                Some("a@x.de"),
                Some("a@x.de"),
                None,
                Some("b@x.de"),
                Some("a@x.de"),
                None
            ]
        );
    }
}
