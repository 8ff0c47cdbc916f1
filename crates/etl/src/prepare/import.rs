//! An import step's source, prepared chunk by chunk: each chunk of the
//! source is mapped, checked and deduplicated against every chunk before
//! it, then handed on and dropped, so memory holds a chunk and a compact
//! set of the addresses kept, not the input.
//!
//! `dedupe = "last"` (the row kept depends on rows later on), `dedupe =
//! "merge"` (the row kept fills its empty values from rows later on),
//! `mirror` (its guard counts the whole source before anything is written)
//! and orders on the receiver rows (a duplicate row's order lines join the
//! receiver kept, maybe chunks earlier) read the source twice
//! ([`super::first_pass`]): the first read finds each address's last valid
//! row, its merged values, every address of the source, or its order
//! lines, compactly; the second is the chunked prepare below, deciding
//! with it. `fill_down` (a key's first value may come later) is read once
//! before any of these ([`super::fill::first_fills`]), as every later read
//! checks the rows filled.
//!
//! A PostgreSQL query that would have to be read more than once is read as
//! one chunk, as a whole: two queries may not see the same rows in the
//! same order.

use super::columns::{keep_mask, reject_rows};
use super::first_pass::{FirstPass, Wanted, first_pass};
use super::joined::JoinedOrders;
use super::joined::OrderRejects;
use super::last_rows::LastRows;
use super::merged_rows::MergedRows;
use super::order_merge;
use super::orders::{self, RowOrders};
use super::row_checks::{Checked, check_rows};
use super::{Budget, PrepareError, PrepareStats, dedupe, domains, fill, mangled};
use crate::key_store::KeyStore;
use crate::pipeline::{Dedupe, ImportStep, ReceiverField};
use crate::source::{self, FILE_COL, ROW_COL, RejectRow, Table, Workbook};
use listpipe_base::hash::Key128;
use polars::prelude::*;
use std::path::Path;
use std::sync::Arc;

pub(super) use super::orders::OrderLines;

/// One chunk of the source, prepared.
pub struct ImportChunk {
    /// The chunk's rows as read: a row the target refuses later is written
    /// back to the rejects file from here.
    pub table: Table,
    /// One row per receiver to send: `__file`, `__row`, then the mapped
    /// columns (see [`col`]), none of them an address kept before.
    pub frame: DataFrame,
    /// Row number and address of each row dropped as a duplicate.
    pub duplicates: Vec<(u64, String)>,
    /// The orders of the chunk's receivers, by normalised email.
    pub orders: Arc<OrderLines>,
    /// The chunk's rejected rows, in the order of the rejects file (its
    /// format: [`crate::source::RejectsFormat::of`] the chunk's `table`).
    pub rejects: Vec<RejectRow>,
    /// Mirror mode, the first chunk: every address the source holds, valid
    /// or not, normalised (see [`super::row_checks::Checked::addresses`]).
    pub source_addresses: Option<KeyStore>,
}

/// What the whole source came to, once every chunk is prepared.
pub struct ImportSummary {
    pub stats: PrepareStats,
    pub order_rejects: Option<OrderRejects>,
    pub workbooks: Vec<Workbook>,
}

/// A whole source prepared as one chunk (for `check`-like uses and tests).
pub struct PreparedImport {
    pub chunk: ImportChunk,
    pub summary: ImportSummary,
}

/// Maps, validates and deduplicates one import step's source, whole: the
/// budget's `chunk_rows` is not used, its `spill_after` is.
pub fn prepare_import(
    step: &ImportStep,
    base_dir: &Path,
    budget: Budget,
) -> Result<PreparedImport, PrepareError> {
    let mut whole = None;
    let budget = budget.with_chunk_rows(usize::MAX);
    let summary = import_chunks(step, base_dir, budget, &mut |c| {
        whole = Some(c);
        true
    })?;
    let chunk = whole.ok_or(PrepareError::Stopped)?;
    Ok(PreparedImport { chunk, summary })
}

/// Reads and prepares an import step's source in chunks of the budget's
/// `chunk_rows` rows (the whole source at once when the step needs it whole;
/// see the module), handing each to `each` as it is ready. `each` answering
/// false stops the read ([`PrepareError::Stopped`]).
pub fn import_chunks(
    step: &ImportStep,
    base_dir: &Path,
    budget: Budget,
    each: &mut dyn FnMut(ImportChunk) -> bool,
) -> Result<ImportSummary, PrepareError> {
    let chunk_rows = budget.chunk_rows;
    // One way of keying addresses for the receivers kept and the orders.
    let keys = Key128::default();
    let joined = match step
        .orders
        .as_ref()
        .and_then(|o| Some((o, o.source.as_ref()?)))
    {
        Some((spec, source)) => Some(JoinedOrders::read(
            spec,
            source,
            base_dir,
            keys.clone(),
            step.rejects_bom,
            budget.with_chunk_rows(chunk_rows.min(source::CHUNK_ROWS)),
        )?),
        None => None,
    };
    // One chunk asked for (`prepare_import`) decides itself: no first read.
    let whole = needs_whole(step) || chunk_rows == usize::MAX;
    // `fill_down` read in chunks: a read of its own before any other, as
    // every later read checks rows filled.
    let fills = if whole {
        None
    } else {
        fill::first_fills(step, base_dir, budget)?
    };
    // The steps a chunk read cannot decide alone read the source twice.
    let wanted = Wanted {
        last: !whole && step.dedupe == Dedupe::Last,
        merged: !whole && step.dedupe == Dedupe::Merge,
        addresses: !whole && step.mirror.is_some(),
        orders: !whole && inline_orders(step),
    };
    let first = if wanted.any() {
        first_pass(step, base_dir, budget, wanted, fills.as_ref())?
    } else {
        FirstPass::default()
    };
    let mut preparer = Preparer {
        step,
        base_dir,
        stats: PrepareStats::default(),
        chunks: 0,
        files: 0,
        workbooks: Vec::new(),
        kept: KeyStore::new(keys, budget.spill_after),
        last: first.last,
        merged: first.merged,
        addresses: first.addresses,
        row_orders: first.orders,
        spill_after: budget.spill_after,
        joined,
        fills,
    };
    let rows = if whole { usize::MAX } else { chunk_rows };
    super::read_chunks(&step.source, base_dir, rows, &mut |table| {
        Ok(each(preparer.chunk(table)?))
    })?;
    preparer.finish()
}

/// Whether the step's source is read as one chunk: a query the step would
/// read more than once (see the module).
fn needs_whole(step: &ImportStep) -> bool {
    // A query cannot be read twice the same way (see `first_pass`).
    let more_than_once = step.dedupe != Dedupe::First
        || step.mirror.is_some()
        || step.fill_down.is_some()
        || inline_orders(step);
    more_than_once && step.source.postgres.is_some()
}

/// Whether the step's orders are on its receiver rows (no source of their own).
fn inline_orders(step: &ImportStep) -> bool {
    step.orders.as_ref().is_some_and(|o| o.source.is_none())
}

struct Preparer<'s> {
    step: &'s ImportStep,
    base_dir: &'s Path,
    stats: PrepareStats,
    /// Chunks prepared.
    chunks: usize,
    /// Files and workbooks read so far (each chunk knows the ones before it).
    files: usize,
    workbooks: Vec<Workbook>,
    /// Every address kept so far (normalised): duplicates across chunks.
    kept: KeyStore,
    /// `dedupe = "last"` read twice: the row kept of each address.
    last: Option<LastRows>,
    /// `dedupe = "merge"` read twice: the merged values of each address.
    merged: Option<MergedRows>,
    /// Mirror mode read twice: the source's addresses, for the first chunk.
    addresses: Option<KeyStore>,
    /// Orders on the receiver rows read twice: every valid row's line.
    row_orders: Option<RowOrders>,
    /// Keys held in memory at most by a set made here.
    spill_after: usize,
    joined: Option<JoinedOrders>,
    /// `fill_down` read in chunks: the first values of each key (read
    /// whole, a chunk fills from itself).
    fills: Option<fill::FirstFills>,
}

impl Preparer<'_> {
    fn chunk(&mut self, mut table: Table) -> Result<ImportChunk, PrepareError> {
        let step = self.step;
        match (&self.fills, &step.fill_down) {
            (Some(fills), _) => fills.fill(&mut table)?,
            (None, Some(spec)) => fill::fill_down(&mut table, spec)?,
            (None, None) => {}
        }
        let height = table.frame.height();
        let stats = &mut self.stats;
        stats.rows_read += (height + table.ragged.len()) as u64;
        stats.padded += table.padded;
        stats.repeated_headers.extend(
            table
                .repeated_headers
                .iter()
                .map(|(file, r)| r.describe(file)),
        );
        mangled::merge(&mut stats.mangled_numbers, mangled::find(step, &table)?);
        let checked = check_rows(step, &table, stats)?;
        // Mirror mode's source addresses go with the first chunk: from the
        // first read, or from this chunk when the source is read whole.
        let source_addresses = match (&step.mirror, self.chunks) {
            (Some(_), 0) => Some(match self.addresses.take() {
                Some(all) => all,
                None => {
                    let mut all = KeyStore::new(Key128::default(), self.spill_after);
                    let addresses = checked.addresses(step, &table)?;
                    all.fresh(addresses.iter().map(String::as_str))?;
                    all
                }
            }),
            _ => None,
        };
        let Checked {
            columns,
            email_by_row,
            errors,
            row_orders,
        } = checked;
        domains::merge(
            &mut stats.domain_typos,
            domains::find(&table.frame, &email_by_row)?,
        );
        let rejects = reject_rows(&table, &errors, &mut self.stats)?;
        self.chunks += 1;
        self.files = table.files.len();
        self.workbooks.clone_from(&table.workbooks);
        let mask = keep_mask(height, &errors);
        let frame = DataFrame::new(height, columns)?.filter(&mask)?;
        let (frame, duplicates) = match (step.dedupe, &self.last, &self.merged) {
            (Dedupe::First, _, _) => first_only(frame, &mut self.kept)?,
            (Dedupe::Last, Some(last), _) => last_only(frame, last)?,
            // The first valid row of each address, its values merged.
            (Dedupe::Merge, _, Some(merged)) => {
                let (frame, duplicates) = first_only(frame, &mut self.kept)?;
                (merged.fill(frame)?, duplicates)
            }
            (how, _, _) => {
                let duplicates = dedupe::dropped_rows(&frame, how)?;
                let frame = dedupe::dedupe(frame, how)?;
                let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
                self.kept.fresh(emails.iter().map(|e| e.unwrap_or("")))?;
                (frame, duplicates)
            }
        };
        self.stats.duplicates += duplicates.len() as u64;
        let orders = match (row_orders, &mut self.joined) {
            (Some(mapped), _) => {
                // Rows dropped as duplicates keep their order lines (the receiver is one).
                let kept = (0..height)
                    .filter(|&i| mask.get(i) == Some(true))
                    .filter_map(|i| Some((i, email_by_row.get(i)?)));
                let (lines, n) = match &self.row_orders {
                    // Read twice: the lines of the chunk's receivers, from
                    // every chunk; this chunk's lines counted here.
                    Some(all) => {
                        let n = orders::count_orders(&mapped, kept.map(|(i, _)| i));
                        let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
                        (all.take(emails.iter().map(|e| e.unwrap_or("")))?, n)
                    }
                    None => orders::row_orders(&mapped, kept),
                };
                self.stats.orders_read += n;
                self.stats.orders_accepted += n;
                lines
            }
            (None, Some(j)) => {
                let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
                j.take(emails.iter().map(|e| e.unwrap_or("")))?
            }
            (None, None) => Arc::default(),
        };
        let orders = match &step.orders {
            Some(spec) => {
                let (lines, folded) = order_merge::merge(orders, spec.duplicate_lines);
                if folded > 0 {
                    self.stats.order_lines_merged += folded;
                    self.stats.duplicate_lines = Some(spec.duplicate_lines.as_str());
                }
                lines
            }
            None => orders,
        };
        Ok(ImportChunk {
            table,
            frame,
            duplicates,
            orders,
            rejects,
            source_addresses,
        })
    }

    fn finish(mut self) -> Result<ImportSummary, PrepareError> {
        if self.chunks == 0 {
            return Err(PrepareError::Stopped);
        }
        self.stats.files_read(self.files);
        self.stats.unread_sheets = self.workbooks.iter().flat_map(|w| w.unread()).collect();
        let order_rejects = match self.joined {
            Some(j) => Some(j.finish(self.base_dir, &mut self.stats)?),
            None => None,
        };
        Ok(ImportSummary {
            stats: self.stats,
            order_rejects,
            workbooks: self.workbooks,
        })
    }
}

/// `dedupe = "last"` across chunks: a row is kept iff it is its address's
/// last valid row, as the first read of the source found it.
fn last_only(
    frame: DataFrame,
    last: &LastRows,
) -> Result<(DataFrame, Vec<(u64, String)>), PrepareError> {
    let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
    let files = frame.column(FILE_COL)?.u32()?;
    let rows = frame.column(ROW_COL)?.u32()?;
    let kept = last.kept((0..frame.height()).map(|i| {
        (
            emails.get(i).unwrap_or(""),
            files.get(i).unwrap_or(0),
            rows.get(i).unwrap_or(0),
        )
    }))?;
    let mut duplicates: Vec<(u64, String)> = (0..frame.height())
        .filter(|&i| !kept[i])
        .map(|i| {
            (
                u64::from(rows.get(i).unwrap_or(0)),
                emails.get(i).unwrap_or("").to_string(),
            )
        })
        .collect();
    duplicates.sort();
    let keep: BooleanChunked = kept.into_iter().collect();
    Ok((frame.filter(&keep)?, duplicates))
}

/// `dedupe = "first"` across chunks: a row whose address was kept before,
/// in this chunk or an earlier one, is dropped.
fn first_only(
    frame: DataFrame,
    kept: &mut KeyStore,
) -> Result<(DataFrame, Vec<(u64, String)>), PrepareError> {
    let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
    let rows = frame.column(ROW_COL)?.u32()?;
    let fresh = kept.fresh(emails.iter().map(|e| e.unwrap_or("")))?;
    let mut duplicates: Vec<(u64, String)> = fresh
        .iter()
        .zip(emails.iter().zip(rows.iter()))
        .filter(|(fresh, _)| !**fresh)
        .map(|(_, (e, row))| (u64::from(row.unwrap_or(0)), e.unwrap_or("").to_string()))
        .collect();
    duplicates.sort();
    let keep: BooleanChunked = fresh.into_iter().collect();
    Ok((frame.filter(&keep)?, duplicates))
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
