//! The first of two reads of a source, for the steps whose chunks cannot
//! be decided from the rows before them alone, done before the first chunk
//! is handed on: `dedupe = "last"` needs the row kept of each address
//! ([`LastRows`]), `dedupe = "merge"` the merged values of each address
//! ([`MergedRows`]), mirror mode every address the source holds (its guard
//! refuses before anything is written, so the removals are planned with
//! the first chunk), orders on the receiver rows every valid row's order
//! line ([`RowOrders`]: a receiver is sent with its address's lines from
//! every chunk). The read maps and checks each chunk as the second one
//! will ([`check_rows`]), on rows filled as the second read fills them
//! (`fill_down`, noted by a read of its own before this one), keeps what
//! it needs and drops the chunk; it counts nothing and rejects nothing,
//! the second read does.
//!
//! A source read twice must read the same both times: files, and URLs and
//! objects (downloaded to a file before the step). A PostgreSQL query is
//! read once, whole (see `needs_whole` in [`super::import`]): two queries
//! may see different rows, or the same ones in another order.

use super::columns::keep_mask;
use super::fill::FirstFills;
use super::last_rows::LastRows;
use super::merged_rows::MergedRows;
use super::orders::RowOrders;
use super::row_checks::check_rows;
use super::{Budget, PrepareError, PrepareStats};
use crate::key_store::KeyStore;
use crate::pipeline::ImportStep;
use crate::source::Table;
use listpipe_base::hash::Key128;
use polars::prelude::DataFrame;
use std::path::Path;

/// What the first read found.
#[derive(Default)]
pub(super) struct FirstPass {
    /// The last valid row of each address, when asked.
    pub(super) last: Option<LastRows>,
    /// The merged values of each address, when asked.
    pub(super) merged: Option<MergedRows>,
    /// Every address of the source, valid or not, when asked (mirror mode).
    pub(super) addresses: Option<KeyStore>,
    /// The order lines of each address, when asked (orders on the receiver rows).
    pub(super) orders: Option<RowOrders>,
}

/// What the first read is asked to note.
#[derive(Default, Clone, Copy)]
pub(super) struct Wanted {
    /// The last valid row of each address (`dedupe = "last"`).
    pub(super) last: bool,
    /// The merged values of each address (`dedupe = "merge"`).
    pub(super) merged: bool,
    /// Every address (mirror mode).
    pub(super) addresses: bool,
    /// The order lines of each address (orders on the receiver rows).
    pub(super) orders: bool,
}

impl Wanted {
    pub(super) fn any(self) -> bool {
        self.last || self.merged || self.addresses || self.orders
    }
}

/// Reads the step's source once in chunks of the budget's rows, noting
/// what `wanted` asks.
pub(super) fn first_pass(
    step: &ImportStep,
    base_dir: &Path,
    budget: Budget,
    wanted: Wanted,
    fills: Option<&FirstFills>,
) -> Result<FirstPass, PrepareError> {
    let Wanted {
        last,
        merged,
        addresses,
        orders,
    } = wanted;
    let mut found = FirstPass {
        last: last.then(|| LastRows::new(budget.spill_after)),
        merged: merged.then(|| MergedRows::new(budget.spill_after)),
        addresses: addresses.then(|| KeyStore::new(Key128::default(), budget.spill_after)),
        orders: orders.then(|| RowOrders::new(budget.spill_after)),
    };
    super::read_chunks(&step.source, base_dir, budget.chunk_rows, &mut |table| {
        found.note(step, fills, table)?;
        Ok(true)
    })?;
    if let Some(orders) = &mut found.orders {
        orders.seal();
    }
    Ok(found)
}

impl FirstPass {
    /// Notes what is asked of one chunk of the source.
    fn note(
        &mut self,
        step: &ImportStep,
        fills: Option<&FirstFills>,
        mut table: Table,
    ) -> Result<(), PrepareError> {
        // Rows checked as the second read checks them: filled first.
        if let Some(fills) = fills {
            fills.fill(&mut table)?;
        }
        // Counted by the second read, not this one.
        let mut uncounted = PrepareStats::default();
        let checked = check_rows(step, &table, &mut uncounted)?;
        if let Some(last) = &mut self.last {
            last.note(checked.valid_rows(&table)?)?;
        }
        if let Some(merged) = &mut self.merged {
            // The valid rows prepared, as the second read filters them.
            let height = table.frame.height();
            let valid = DataFrame::new(height, checked.columns.clone())?
                .filter(&keep_mask(height, &checked.errors))?;
            merged.note(&valid)?;
        }
        if let (Some(orders), Some(mapped)) = (&mut self.orders, &checked.row_orders) {
            // Every valid row's line, a duplicate's too (its receiver is one).
            let emails = &checked.email_by_row;
            let valid = (0..table.frame.height())
                .filter(|i| !checked.errors.0.contains_key(i))
                .filter_map(|i| Some((i, emails.get(i)?)));
            orders.note(mapped, valid)?;
        }
        if let Some(all) = &mut self.addresses {
            let addresses = checked.addresses(step, &table)?;
            all.fresh(addresses.iter().map(String::as_str))?;
        }
        Ok(())
    }
}
