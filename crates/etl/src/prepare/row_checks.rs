//! The mapping and checks of an import chunk's rows, in one place: the
//! prepare of each chunk runs them, and so does the first read of a source
//! read twice ([`super::first_pass`]), so "valid" means the same in both
//! reads.

use super::columns::{Errors, attribute_columns, map_column};
use super::orders::{MappedOrders, map_orders};
use super::{PrepareError, PrepareStats, col, json_cells, tags};
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
use crate::source::{FILE_COL, ROW_COL, Table};
use polars::prelude::*;

/// A chunk's rows mapped and checked.
pub(super) struct Checked {
    /// `__file`, `__row`, then the mapped columns (see [`col`]), a row per
    /// row of the table.
    pub(super) columns: Vec<Column>,
    /// The normalised address of each row (null where it is missing or invalid).
    pub(super) email_by_row: StringChunked,
    /// The problems of each row: a row with any is rejected.
    pub(super) errors: Errors,
    /// Orders on the receiver rows, mapped (their errors are in `errors`).
    pub(super) row_orders: Option<MappedOrders>,
}

impl Checked {
    /// The valid rows as (normalised address, file index, row number), in
    /// table order.
    pub(super) fn valid_rows<'a>(
        &'a self,
        table: &'a Table,
    ) -> Result<impl Iterator<Item = (&'a str, u32, u32)> + 'a, PrepareError> {
        let files = table.frame.column(FILE_COL)?.u32()?;
        let rows = table.frame.column(ROW_COL)?.u32()?;
        let errors = &self.errors.0;
        Ok((0..table.frame.height())
            .filter(move |i| !errors.contains_key(i))
            .map(move |i| {
                (
                    self.email_by_row.get(i).unwrap_or(""),
                    files.get(i).unwrap_or(0),
                    rows.get(i).unwrap_or(0),
                )
            }))
    }

    /// Every address the chunk holds, valid or not, as mirror mode counts
    /// them: each valid row's normalised address, and the email column's
    /// raw cells trimmed and lower-cased (a receiver whose row is still
    /// there but rejected this time, a bad date say, must not be removed).
    pub(super) fn addresses(
        &self,
        step: &ImportStep,
        table: &Table,
    ) -> Result<Vec<String>, PrepareError> {
        let mut all: Vec<String> = self
            .valid_rows(table)?
            .map(|(e, _, _)| e.to_string())
            .collect();
        let column = step.fields.iter().find_map(|(f, m)| match (f, &m.from) {
            (ReceiverField::Email, ValueFrom::Column(c)) => Some(c.as_str()),
            _ => None,
        });
        if let Some(Ok(cells)) = column.map(|c| table.frame.column(c).and_then(|c| c.str())) {
            all.extend(cells.iter().flatten().map(|e| e.trim().to_lowercase()));
        }
        Ok(all)
    }
}

/// Maps and checks the rows of `table` as `step` says; the tags changed are
/// counted in `stats`.
pub(super) fn check_rows(
    step: &ImportStep,
    table: &Table,
    stats: &mut PrepareStats,
) -> Result<Checked, PrepareError> {
    // The keys of a JSON-object column, spread into columns of their own.
    let spread;
    let table = match &step.json_attributes {
        Some(spec) => {
            spread = json_cells::spread(table, spec)?;
            &spread
        }
        None => table,
    };
    let height = table.frame.height();
    let mut errors = Errors::default();
    if let Some(spec) = &step.json_attributes {
        json_cells::add_errors(table, spec, &mut errors)?;
    }
    let mut columns: Vec<Column> = vec![
        table.frame.column(FILE_COL)?.clone(),
        table.frame.column(ROW_COL)?.clone(),
    ];
    let mut email_by_row = StringChunked::full_null("email".into(), height);
    for (field, m) in &step.fields {
        let is_email = *field == ReceiverField::Email;
        let ca = map_column(
            table,
            m,
            field.kind(),
            field.as_str(),
            is_email,
            &mut errors,
        )?;
        if is_email {
            email_by_row = ca.clone();
        }
        columns.push(ca.into_column());
    }
    columns.extend(attribute_columns(
        table,
        &step.global_attributes,
        col::global,
        &mut errors,
    )?);
    columns.extend(attribute_columns(
        table,
        &step.attributes,
        col::group,
        &mut errors,
    )?);
    if let Some(spec) = &step.tags {
        let cols: Vec<&StringChunked> = spec
            .columns
            .iter()
            .map(|c| table.frame.column(c).and_then(|c| c.str()))
            .collect::<Result<_, _>>()?;
        let mut joined: Vec<Option<String>> = Vec::with_capacity(height);
        for i in 0..height {
            let cells: Vec<Option<&str>> = cols.iter().map(|c| c.get(i)).collect();
            let (tags, changes) = tags::row_tags(spec, &cells);
            stats.tags_changed += changes.normalised as u64;
            stats.tags_trimmed += changes.trimmed as u64;
            stats.tags_mapped += changes.mapped as u64;
            stats.tags_dropped += changes.dropped as u64;
            joined.push((!tags.is_empty()).then(|| tags.join(&tags::JOIN.to_string())));
        }
        let mut ca: StringChunked = joined.into_iter().collect();
        ca.rename(col::TAGS.into());
        columns.push(ca.into_column());
    }
    // Orders on the receiver rows: mapped per row, errors reject the row.
    let row_orders = match &step.orders {
        Some(o) if o.source.is_none() => Some(map_orders(table, o, &mut errors)?),
        _ => None,
    };
    Ok(Checked {
        columns,
        email_by_row,
        errors,
        row_orders,
    })
}
