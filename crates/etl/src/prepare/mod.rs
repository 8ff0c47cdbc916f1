//! Prepare: from a source [`Table`] to the rows that will be sent, and the
//! rows that will not (rejects, with row number, field and reason). Runs
//! offline, so `listpipe check` shows exactly what `run` would send.
//!
//! Values are mapped column by column into a polars frame of text columns
//! named by [`col`]; rows with any error leave as rejects; duplicates of the
//! normalised email are resolved as the step says ([`dedupe`]).
//!
//! Decision: a chunk's rejects travel with the chunk (`rejects` of
//! [`ImportChunk`] and [`BlacklistChunk`]) and the consumer writes them
//! ([`crate::source::RejectsFile`]): preparing stays free of files, so
//! `check` and `run` share it, and no stage holds more rejects than a
//! chunk's.

mod blacklist;
mod budget;
mod columns;
mod condition;
pub mod consent;
pub mod dedupe;
pub mod domains;
mod fill;
#[cfg(test)]
mod fill_tests;
mod first_pass;
mod first_values;
mod import;
mod joined;
mod json_cells;
mod last_rows;
pub mod mangled;
mod merged_rows;
mod order_merge;
mod order_store;
mod orders;
pub mod reasons;
mod row_checks;
mod rows;
pub mod tags;
/// Dates and timestamps as the contract reads them (shared with the server).
pub use listpipe_api::time;
#[cfg(test)]
mod two_pass_tests;
pub mod value;

use crate::source::{self, Table};
pub use blacklist::{BlacklistChunk, BlacklistSummary, blacklist_chunks};
pub use budget::Budget;
pub use columns::RejectLookup;
pub use import::{ImportChunk, ImportSummary, PreparedImport, import_chunks, prepare_import};
pub use joined::OrderRejects;
pub use orders::OrderLines;
use polars::prelude::*;
pub use reasons::RejectExample;
pub use rows::PreparedRows;

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
    Frame(PolarsError),
    /// A column the step maps is not in the source: only a source read at run time
    /// (a URL) gets here, a local one is checked when the pipeline is loaded.
    #[error(
        "the source has no column the step names ({0}); check the step's column names against the source's header"
    )]
    MissingColumn(String),
    /// The temporary file of order lines past the memory budget failed (a
    /// full disk, a `TMPDIR` that cannot be written).
    #[error(transparent)]
    Spill(#[from] crate::spill::SpillError),
    /// The rows' consumer stopped taking chunks (its step failed or stopped).
    #[error("stopped before the end of the source")]
    Stopped,
}

impl From<PolarsError> for PrepareError {
    fn from(e: PolarsError) -> Self {
        match e {
            PolarsError::ColumnNotFound(name) => PrepareError::MissingColumn(name.to_string()),
            e => PrepareError::Frame(e),
        }
    }
}

/// Reads `spec` in chunks of `rows` through `each`, which answers whether to
/// go on; an error of `each` stops the read and is the answer, as is a stop
/// ([`PrepareError::Stopped`]).
pub(crate) fn read_chunks(
    spec: &source::SourceSpec,
    base_dir: &Path,
    rows: usize,
    each: &mut dyn FnMut(Table) -> Result<bool, PrepareError>,
) -> Result<(), PrepareError> {
    let mut failed = None;
    let read = source::read_chunks(spec, base_dir, rows, &mut |table| match each(table) {
        Ok(true) => Ok(()),
        Ok(false) => Err(source::SourceError::Stopped),
        Err(e) => {
            failed = Some(e);
            Err(source::SourceError::Stopped)
        }
    });
    match (read, failed) {
        (_, Some(e)) => Err(e),
        (Err(source::SourceError::Stopped), None) => Err(PrepareError::Stopped),
        (Err(e), None) => Err(e.into()),
        (Ok(()), None) => Ok(()),
    }
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
    /// Values left out by field (`registered`, `birthday`): dates or times the
    /// listed formats read differently, with `ambiguous = "omit"`. Their
    /// cells count as empty; the rows are sent.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub values_left_out: BTreeMap<String, u64>,
    /// What the first value left out of each field reads as (`"5/6/2012
    /// 15:53" is 2012-06-05 or 2012-05-06`), for the summaries.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub left_out_examples: BTreeMap<String, String>,
    pub duplicates: u64,
    pub tags_changed: u64,
    /// Order lines read (from the receiver rows or the orders source).
    pub orders_read: u64,
    /// Order lines that will be sent with their receivers.
    pub orders_accepted: u64,
    pub orders_rejected: u64,
    /// Addresses whose cell had spaces or tabs at its ends, dropped (the only
    /// trimming an address gets: a line break is refused).
    #[serde(skip_serializing_if = "is_zero")]
    pub addresses_trimmed: u64,
    /// Order lines folded into an earlier line of the same order and product
    /// for the same receiver (`duplicate_lines` of `[import.orders]`).
    #[serde(skip_serializing_if = "is_zero")]
    pub order_lines_merged: u64,
    /// The `duplicate_lines` that merged them.
    #[serde(skip)]
    pub duplicate_lines: Option<&'static str>,
    /// Header names a file holds more than once, each copy numbered (`Phone_1`, `Phone_2`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeated_headers: Vec<String>,
    /// Rows with fewer fields than the header, padded with empty ones (`pad_short_rows`).
    #[serde(skip_serializing_if = "is_zero")]
    pub padded: u64,
    /// Text-like columns holding numbers Excel wrote in scientific notation (warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mangled_numbers: Vec<mangled::MangledNumbers>,
    /// Valid addresses at a domain one letter off a big provider (warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domain_typos: Vec<domains::DomainTypo>,
    /// Tags shortened by the tags' `trim_start`.
    #[serde(skip_serializing_if = "is_zero")]
    pub tags_trimmed: u64,
    /// Tags spelled anew by the tags' `map`.
    #[serde(skip_serializing_if = "is_zero")]
    pub tags_mapped: u64,
    /// Tags mapped to `""` (or trimmed to nothing): not sent.
    #[serde(skip_serializing_if = "is_zero")]
    pub tags_dropped: u64,
    /// Sheets of the step's workbooks that were not read (`file: sheet`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread_sheets: Vec<String>,
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

    /// Counts `n` values of `field` left out (`ambiguous = "omit"`), keeping
    /// the first one's reading as its example.
    pub fn count_left_out(&mut self, field: &str, n: u64, example: &str) {
        *self.values_left_out.entry(field.to_string()).or_default() += n;
        self.left_out_examples
            .entry(field.to_string())
            .or_insert_with(|| example.to_string());
    }

    /// The examples name their file only when the source had several.
    fn files_read(&mut self, files: usize) {
        if files <= 1 {
            self.reject_examples
                .values_mut()
                .for_each(|e| e.file = None);
        }
    }
}
