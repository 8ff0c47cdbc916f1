//! Prepare: from a source [`Table`] to the rows that will be sent, and the
//! rows that will not (rejects, with row number, field and reason). Runs
//! offline, so `listpipe check` shows exactly what `run` would send.
//!
//! Values are mapped column by column into a polars frame of text columns
//! named by [`col`]; rows with any error leave as rejects; duplicates of the
//! normalised email are resolved as the step says ([`dedupe`]).

mod blacklist;
mod columns;
mod condition;
pub mod consent;
pub mod dedupe;
pub mod domains;
mod fill;
pub mod mangled;
mod orders;
pub mod reasons;
mod rows;
pub mod tags;
pub mod time;
pub mod value;

use crate::hash::FastSet;
use crate::pipeline::{ImportStep, ReceiverField};
use crate::source::{self, FILE_COL, ROW_COL, RejectRow, Table};
pub use blacklist::prepare_blacklist;
pub use columns::RejectLookup;
pub use orders::OrderLines;
use polars::prelude::*;
pub use reasons::RejectExample;
pub use rows::PreparedRows;

use columns::{Errors, attribute_columns, keep_mask, map_column, reject_rows};
use orders::{map_orders, prepare_joined_orders};
use std::collections::BTreeMap;
use std::path::Path;

/// Names of the prepared frame's columns.
pub mod col {
    use crate::pipeline::ReceiverField;
    pub const TAGS: &str = "tags";
    pub fn field(f: ReceiverField) -> String {
        f.as_str().to_string()
    }
    pub fn global(name: &str) -> String {
        format!("g:{name}")
    }
    pub fn group(name: &str) -> String {
        format!("a:{name}")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error("internal data error: {0}")]
    Frame(#[from] PolarsError),
}

/// Counts for the run report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PrepareStats {
    pub rows_read: u64,
    /// Rows left out by the step's `only_if` (not rejects: they were not meant for it).
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// Rejected rows by reason (`invalid email`, `missing email`, `invalid birthday`, `wrong number of fields`...).
    pub rejected: BTreeMap<String, u64>,
    /// The first rejected row of each reason in `rejected`, for the summaries.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reject_examples: BTreeMap<String, RejectExample>,
    pub duplicates: u64,
    pub tags_changed: u64,
    /// Order lines read (from the receiver rows or the orders source).
    pub orders_read: u64,
    /// Order lines that will be sent with their receivers.
    pub orders_accepted: u64,
    pub orders_rejected: u64,
    /// Rows with fewer fields than the header, padded with empty ones (`pad_short_rows`).
    #[serde(skip_serializing_if = "is_zero")]
    pub padded: u64,
    /// Text-like columns holding numbers Excel wrote in scientific notation (warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mangled_numbers: Vec<mangled::MangledNumbers>,
    /// Valid addresses at a domain one letter off a big provider (warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domain_typos: Vec<domains::DomainTypo>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PrepareStats {
    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }

    /// Counts a rejected row under `category`, keeping the first one as its example.
    pub fn count_reject(&mut self, category: &str, example: RejectExample) {
        *self.rejected.entry(category.to_string()).or_default() += 1;
        self.reject_examples
            .entry(category.to_string())
            .or_insert(example);
    }
}

/// Rejected rows and how to write them back in the input's dialect.
pub struct Rejects {
    pub columns: Vec<String>,
    pub dialect: source::Dialect,
    pub multi_file: bool,
    /// A byte order mark before the (UTF-8) text.
    pub bom: bool,
    pub rows: Vec<RejectRow>,
}

impl Rejects {
    /// `bom`: the step's `rejects_bom`; None follows the source.
    fn new(table: &Table, bom: Option<bool>) -> Self {
        Rejects {
            columns: table.columns.clone(),
            dialect: table.dialect.clone(),
            multi_file: table.files.len() > 1,
            bom: bom.unwrap_or_else(|| table.dialect.has_bom()),
            rows: Vec::new(),
        }
    }

    pub fn write(&self, path: &Path) -> Result<(), source::SourceError> {
        source::write_rejects(
            path,
            &self.columns,
            &self.dialect,
            self.multi_file,
            self.bom,
            &self.rows,
        )
    }
}

pub struct PreparedImport {
    /// The source as read, for writing failed rows back as they were.
    pub table: Table,
    /// One row per receiver to send: `__file`, `__row`, then the mapped columns.
    pub frame: DataFrame,
    pub rejects: Rejects,
    /// Row number and address of each row dropped as a duplicate.
    pub duplicates: Vec<(u64, String)>,
    /// Orders by normalised email.
    pub orders: OrderLines,
    pub order_rejects: Option<Rejects>,
    pub stats: PrepareStats,
}

pub struct PreparedBlacklist {
    pub table: Table,
    /// Address (or `*@domain`) and comment, deduplicated, in file order.
    pub entries: Vec<(String, String)>,
    /// The file index and row number of each entry.
    pub rows: Vec<(u32, u64)>,
    pub rejects: Rejects,
    pub stats: PrepareStats,
}

/// Maps, validates and deduplicates one import step's source.
pub fn prepare_import(step: &ImportStep, base_dir: &Path) -> Result<PreparedImport, PrepareError> {
    let table = source::read(&step.source, base_dir)?;
    prepare_import_table(step, table, base_dir)
}

pub fn prepare_import_table(
    step: &ImportStep,
    mut owned: Table,
    base_dir: &Path,
) -> Result<PreparedImport, PrepareError> {
    if let Some(spec) = &step.fill_down {
        fill::fill_down(&mut owned, spec)?;
    }
    let table = &owned;
    let height = table.frame.height();
    let mut stats = PrepareStats {
        rows_read: (height + table.ragged.len()) as u64,
        padded: table.padded,
        mangled_numbers: mangled::find(step, table)?,
        ..Default::default()
    };
    let mut errors = Errors::default();
    let mut columns: Vec<Column> = vec![
        table.frame.column(FILE_COL)?.clone(),
        table.frame.column(ROW_COL)?.clone(),
    ];
    let mut email_by_row = StringChunked::full_null("email".into(), height);
    for (field, m) in &step.fields {
        let ca = map_column(
            table,
            m,
            field.kind(),
            field.as_str(),
            *field == ReceiverField::Email,
            &mut errors,
        )?;
        if *field == ReceiverField::Email {
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
            let (tags, changed) = tags::row_tags(spec, &cells);
            stats.tags_changed += changed as u64;
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

    stats.domain_typos = domains::find(&table.frame, &email_by_row)?;
    let mut rejects = Rejects::new(table, step.rejects_bom);
    rejects.rows = reject_rows(table, &errors, &mut stats)?;
    let mask = keep_mask(height, &errors);
    let frame = DataFrame::new(height, columns)?.filter(&mask)?;
    let duplicates = dedupe::dropped_rows(&frame, step.dedupe)?;
    let frame = dedupe::dedupe(frame, step.dedupe)?;
    stats.duplicates = duplicates.len() as u64;

    let emails: FastSet<String> = frame
        .column(&col::field(ReceiverField::Email))?
        .str()?
        .iter()
        .flatten()
        .map(str::to_string)
        .collect();
    let mut orders = OrderLines::default();
    let mut order_rejects = None;
    if let Some(mut row_orders) = row_orders {
        // Rows dropped as duplicates keep their order lines (the receiver is one).
        let kept = (0..height)
            .filter(|&i| mask.get(i) == Some(true))
            .filter_map(|i| Some((i, email_by_row.get(i)?)));
        let n = row_orders.assign(kept);
        stats.orders_read += n;
        stats.orders_accepted += n;
        orders = row_orders;
    } else if let Some((spec, source_spec)) = step
        .orders
        .as_ref()
        .and_then(|o| Some((o, o.source.as_ref()?)))
    {
        let table = source::read(source_spec, base_dir)?;
        let (o, r) = prepare_joined_orders(spec, &table, &emails, step.rejects_bom, &mut stats)?;
        orders = o;
        order_rejects = Some(r);
    }
    Ok(PreparedImport {
        table: owned,
        frame,
        rejects,
        duplicates,
        orders,
        order_rejects,
        stats,
    })
}
