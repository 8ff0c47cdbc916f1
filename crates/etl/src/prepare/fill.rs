//! `fill_down`: exports that write an order's own fields (address, currency, date) on its
//! first line only leave them empty on the order's other lines. Before mapping, each empty
//! cell of those columns takes the first value found on a row with the same key, so every
//! line knows its buyer. Rows without a key are left alone; no cell with a value changes.
//!
//! A key's first value may come after some of its empty rows, many chunks later: a source
//! read in chunks is read once before ([`first_fills`]), noting per key the first value of
//! each column ([`FirstFills`], in a [`FirstValues`] store: memory, then disk past
//! `LISTPIPE_SPILL_AFTER` keys), and each chunk is filled from it ([`FirstFills::fill`]) as
//! a table read whole is filled from itself ([`fill_down`]).

use super::first_values::{FirstValues, Values};
use super::{Budget, PrepareError};
use crate::pipeline::{FillDown, ImportStep};
use crate::source::Table;
use listpipe_base::hash::Key128;
use polars::prelude::*;
use std::collections::HashMap;
use std::path::Path;

/// A cell with a value: blank text is empty, as no value.
fn value(cell: Option<&str>) -> Option<&str> {
    cell.filter(|v| !v.trim().is_empty())
}

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
            if let (Some(k), Some(v)) = (key, value(cell)) {
                first.entry(k.trim()).or_insert(v);
            }
        }
        let filled: StringChunked = keys
            .iter()
            .zip(cells.iter())
            .map(|(key, cell)| match value(cell) {
                Some(v) => Some(v),
                None => key.and_then(|k| first.get(k.trim()).copied()),
            })
            .collect();
        let filled = filled.with_name(column.as_str().into());
        table.frame.with_column(filled.into_column())?;
    }
    Ok(())
}

/// The first value of each `fill_down` column per key, over a whole source read in chunks
/// (see the module).
pub(super) struct FirstFills {
    spec: FillDown,
    keys: Key128,
    values: FirstValues,
}

/// Reads the step's source once in chunks of the budget's rows, noting the first value of
/// each of its `fill_down` columns per key (none without `fill_down`).
pub(super) fn first_fills(
    step: &ImportStep,
    base_dir: &Path,
    budget: Budget,
) -> Result<Option<FirstFills>, PrepareError> {
    let Some(spec) = &step.fill_down else {
        return Ok(None);
    };
    let mut fills = FirstFills {
        spec: spec.clone(),
        keys: Key128::default(),
        values: FirstValues::new(budget.spill_after),
    };
    super::read_chunks(&step.source, base_dir, budget.chunk_rows, &mut |table| {
        fills.note(&table)?;
        Ok(true)
    })?;
    Ok(Some(fills))
}

/// A chunk's keys (None: no key) and the cells of each `fill_down` column (None: absent).
type KeysAndCells<'t> = (Vec<Option<u128>>, Vec<Option<&'t StringChunked>>);

impl FirstFills {
    /// The table's `within` cells as keys (trimmed, as [`fill_down`] keys them), and its
    /// `fill_down` columns (None: absent); None without the `within` column.
    fn columns<'t>(&self, table: &'t Table) -> Option<KeysAndCells<'t>> {
        let within = table.frame.column(&self.spec.within).ok()?.str().ok()?;
        let keys = within
            .iter()
            .map(|k| k.map(|k| self.keys.of(k.trim())))
            .collect();
        let columns = self
            .spec
            .columns
            .iter()
            .map(|c| table.frame.column(c).ok().and_then(|c| c.str().ok()))
            .collect();
        Some((keys, columns))
    }

    /// Notes a chunk of the source, in source order, after every chunk before it.
    fn note(&mut self, table: &Table) -> Result<(), PrepareError> {
        let Some((keys, columns)) = self.columns(table) else {
            return Ok(());
        };
        let rows = keys.iter().enumerate().filter_map(|(i, key)| {
            let row: Values = columns
                .iter()
                .map(|c| c.and_then(|c| value(c.get(i))))
                .collect();
            Some(((*key)?, row))
        });
        self.values.note(rows)
    }

    /// Fills a chunk's empty cells in place from the first values noted: what
    /// [`fill_down`] makes of the same rows in the whole source.
    pub(super) fn fill(&self, table: &mut Table) -> Result<(), PrepareError> {
        let Some((keys, columns)) = self.columns(table) else {
            return Ok(());
        };
        let asked: Vec<u128> = keys.iter().flatten().copied().collect();
        let held = self.values.held(&asked)?;
        let mut firsts: Vec<Option<Values>> = Vec::with_capacity(keys.len());
        for key in &keys {
            firsts.push(match key {
                Some(k) => held.get(*k)?,
                None => None,
            });
        }
        let mut filled = Vec::new();
        for (j, (name, cells)) in self.spec.columns.iter().zip(&columns).enumerate() {
            let Some(cells) = cells else {
                continue;
            };
            let column: StringChunked = cells
                .iter()
                .zip(&firsts)
                .map(|(cell, first)| {
                    value(cell).or_else(|| first.as_ref().and_then(|f| f.get(j).copied().flatten()))
                })
                .collect();
            filled.push(column.with_name(name.as_str().into()).into_column());
        }
        for column in filled {
            table.frame.with_column(column)?;
        }
        Ok(())
    }
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
