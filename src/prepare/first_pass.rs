//! The first of two reads of a source, for the steps whose chunks cannot
//! be decided from the rows before them alone, done before the first chunk
//! is handed on: `dedupe = "last"` needs the row kept of each address
//! ([`LastRows`]), mirror mode every address the source holds (its guard
//! refuses before anything is written, so the removals are planned with
//! the first chunk). The read maps and checks each chunk as the second one
//! will ([`check_rows`]), keeps what it needs and drops the chunk; it
//! counts nothing and rejects nothing, the second read does.
//!
//! A source read twice must read the same both times: files, and URLs and
//! objects (downloaded to a file before the step). A PostgreSQL query is
//! read once, whole (see `needs_whole` in [`super::import`]): two queries
//! may see different rows, or the same ones in another order.

use super::last_rows::LastRows;
use super::row_checks::check_rows;
use super::{Budget, PrepareError, PrepareStats};
use crate::hash::Key128;
use crate::key_store::KeyStore;
use crate::pipeline::ImportStep;
use std::path::Path;

/// What the first read found.
#[derive(Default)]
pub(super) struct FirstPass {
    /// The last valid row of each address, when asked.
    pub(super) last: Option<LastRows>,
    /// Every address of the source, valid or not, when asked (mirror mode).
    pub(super) addresses: Option<KeyStore>,
}

/// Reads the step's source once in chunks of the budget's rows, noting the
/// last row of each address when `last` and every address when `addresses`.
pub(super) fn first_pass(
    step: &ImportStep,
    base_dir: &Path,
    budget: Budget,
    last: bool,
    addresses: bool,
) -> Result<FirstPass, PrepareError> {
    let mut found = FirstPass {
        last: last.then(|| LastRows::new(budget.spill_after)),
        addresses: addresses.then(|| KeyStore::new(Key128::default(), budget.spill_after)),
    };
    super::read_chunks(&step.source, base_dir, budget.chunk_rows, &mut |table| {
        // Counted by the second read, not this one.
        let mut uncounted = PrepareStats::default();
        let checked = check_rows(step, &table, &mut uncounted)?;
        if let Some(last) = &mut found.last {
            last.note(checked.valid_rows(&table)?)?;
        }
        if let Some(all) = &mut found.addresses {
            let addresses = checked.addresses(step, &table)?;
            all.fresh(addresses.iter().map(String::as_str))?;
        }
        Ok(true)
    })?;
    Ok(found)
}
