//! `dedupe = "last"` over a source read in chunks: the row kept of each
//! address depends on rows further on, so a first read of the source notes,
//! for each normalised address, its last valid row ([`LastRows::note`]),
//! and the second, the usual chunked prepare, keeps a row iff it is its
//! address's ([`LastRows::kept`]).
//!
//! Compact: a 128-bit key of the address ([`Key128`]) and the row's file
//! index and row number packed in 8 bytes, in memory up to a budget of
//! addresses (`LISTPIPE_SPILL_AFTER`), then every entry moves to a
//! [`Spill`], where a later row of an address is added after the earlier
//! ones and the last one answers ([`Spill::last`]).

use crate::spill::{Spill, SpillError};
use listpipe_base::hash::{FastMap, FastSet, Key128};

/// The last valid row of each address (see the module).
pub(super) struct LastRows {
    keys: Key128,
    budget: usize,
    memory: FastMap<u128, u64>,
    spill: Option<Spill>,
}

/// A row as one number: its file index in the high half, its row number in
/// the low one.
fn pack(file: u32, row: u32) -> u64 {
    (u64::from(file) << 32) | u64::from(row)
}

impl LastRows {
    /// None noted yet; `budget` addresses in memory at most.
    pub(super) fn new(budget: usize) -> Self {
        LastRows {
            keys: Key128::default(),
            budget,
            memory: FastMap::default(),
            spill: None,
        }
    }

    /// Notes valid rows, in source order, as (address, file, row number):
    /// each one is its address's kept row until a later one comes.
    pub(super) fn note<'a>(
        &mut self,
        rows: impl Iterator<Item = (&'a str, u32, u32)>,
    ) -> Result<(), SpillError> {
        let rows = rows.map(|(a, file, row)| (self.keys.of(a), pack(file, row)));
        match &mut self.spill {
            None => {
                self.memory.extend(rows);
                if self.memory.len() > self.budget {
                    self.move_to_disk()?;
                }
                Ok(())
            }
            Some(spill) => {
                let rows: Vec<(u128, [u8; 8])> =
                    rows.map(|(k, at)| (k, at.to_le_bytes())).collect();
                spill.extend(rows.iter().map(|(k, at)| (*k, &at[..])))
            }
        }
    }

    /// For each row of a chunk (address, file, row number): whether it is
    /// its address's kept row. A row never noted is not kept.
    pub(super) fn kept<'a>(
        &self,
        rows: impl Iterator<Item = (&'a str, u32, u32)>,
    ) -> Result<Vec<bool>, SpillError> {
        let rows: Vec<(u128, u64)> = rows
            .map(|(a, file, row)| (self.keys.of(a), pack(file, row)))
            .collect();
        let Some(spill) = &self.spill else {
            return Ok(rows
                .iter()
                .map(|(k, at)| self.memory.get(k) == Some(at))
                .collect());
        };
        // Each address of the chunk asked once, in key order (neighbours in
        // the index one after another).
        let mut keys: Vec<u128> = rows
            .iter()
            .map(|(k, _)| *k)
            .collect::<FastSet<u128>>()
            .into_iter()
            .collect();
        keys.sort_unstable();
        let mut last = FastMap::default();
        for k in keys {
            if let Some(v) = spill.last(k)?
                && let Ok(bytes) = <[u8; 8]>::try_from(v.as_slice())
            {
                last.insert(k, u64::from_le_bytes(bytes));
            }
        }
        Ok(rows.iter().map(|(k, at)| last.get(k) == Some(at)).collect())
    }

    fn move_to_disk(&mut self) -> Result<(), SpillError> {
        let mut spill = Spill::new()?;
        let memory = std::mem::take(&mut self.memory);
        let rows: Vec<(u128, [u8; 8])> = memory
            .into_iter()
            .map(|(k, at)| (k, at.to_le_bytes()))
            .collect();
        spill.extend(rows.iter().map(|(k, at)| (*k, &at[..])))?;
        tracing::debug!(target: log_target!(),
            budget = self.budget,
            "the last row of each address moved to a temporary file"
        );
        self.spill = Some(spill);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_row_of_each_address_is_kept_in_memory_and_on_disk() {
        // 5,000 rows of 3,001 addresses over two files: the later rows of an
        // address come in later chunks.
        let rows: Vec<(String, u32, u32)> = (0..5_000u32)
            .map(|i| (format!("{}@x.de", i % 3_001), i / 2_500, i % 2_500 + 2))
            .collect();
        let answers = |budget: usize, chunk: usize| {
            let mut last = LastRows::new(budget);
            for part in rows.chunks(chunk) {
                last.note(part.iter().map(|(a, f, r)| (a.as_str(), *f, *r)))
                    .unwrap();
            }
            let mut out = Vec::new();
            for part in rows.chunks(chunk) {
                out.extend(
                    last.kept(part.iter().map(|(a, f, r)| (a.as_str(), *f, *r)))
                        .unwrap(),
                );
            }
            (out, last.spill.is_some())
        };
        let (whole, spilled) = answers(usize::MAX, rows.len());
        assert!(!spilled);
        let want: Vec<bool> = (0..5_000).map(|i| i + 3_001 >= 5_000).collect();
        assert_eq!(whole, want);
        assert_eq!(whole.iter().filter(|k| **k).count(), 3_001);
        for (budget, chunk) in [(1, 7), (10, 1_000), (2_000, 333)] {
            let (out, spilled) = answers(budget, chunk);
            assert!(spilled, "budget {budget}");
            assert_eq!(out, whole, "budget {budget}, chunks of {chunk}");
        }
    }
}
