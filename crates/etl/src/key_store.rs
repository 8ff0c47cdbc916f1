//! A set of addresses that grows with the input, in bounded memory: the
//! addresses an import kept so far (`dedupe = "first"` across chunks), the
//! entries a blacklist kept, every address a mirror step's source holds,
//! the ledger lines a compaction has written. 128-bit keys
//! ([`KeySet`], 16 bytes each) in memory up to a budget of keys
//! (`LISTPIPE_SPILL_AFTER`); past it every key moves to a [`Spill`] on disk
//! and memory holds one batch's.
//!
//! Asked a batch at a time ([`KeyStore::fresh`]), so the spill is read one
//! indexed lookup a key, in key order, and written one transaction a batch.

use crate::spill::{Spill, SpillError};
use listpipe_base::hash::{FastSet, Key128, KeySet};

/// The set (see the module).
pub struct KeyStore {
    keys: Key128,
    memory: KeySet,
    budget: usize,
    spill: Option<Spill>,
}

impl KeyStore {
    /// An empty set keeping `budget` keys in memory at most.
    pub fn new(keys: Key128, budget: usize) -> Self {
        KeyStore {
            memory: KeySet::with_keys(keys.clone()),
            keys,
            budget,
            spill: None,
        }
    }

    /// For each address in order: true if it was not in the set before (nor
    /// earlier in this batch); every address is in the set after.
    pub fn fresh<'a>(
        &mut self,
        addresses: impl Iterator<Item = &'a str>,
    ) -> Result<Vec<bool>, SpillError> {
        let Some(spill) = &mut self.spill else {
            let fresh = addresses.map(|a| self.memory.insert(a)).collect();
            if self.memory.len() > self.budget {
                self.move_to_disk()?;
            }
            return Ok(fresh);
        };
        // The batch's first row of each address, then those the spill
        // lacks, asked in key order (neighbours in the index one after
        // another) and written in key order.
        let mut batch = FastSet::default();
        let keys: Vec<u128> = addresses.map(|a| self.keys.of(a)).collect();
        let mut fresh: Vec<bool> = keys.iter().map(|&k| batch.insert(k)).collect();
        let mut firsts: Vec<usize> = (0..keys.len()).filter(|&i| fresh[i]).collect();
        firsts.sort_unstable_by_key(|&i| keys[i]);
        let mut new = Vec::with_capacity(firsts.len());
        for i in firsts {
            fresh[i] = spill.first(keys[i])?.is_none();
            if fresh[i] {
                new.push(keys[i]);
            }
        }
        spill.extend(new.into_iter().map(|k| (k, &[][..])))?;
        Ok(fresh)
    }

    /// Whether `address` is in the set.
    pub fn contains(&self, address: &str) -> Result<bool, SpillError> {
        match &self.spill {
            None => Ok(self.memory.contains(address)),
            Some(spill) => Ok(spill.first(self.keys.of(address))?.is_some()),
        }
    }

    /// Whether the keys are on disk.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    fn move_to_disk(&mut self) -> Result<(), SpillError> {
        let mut spill = Spill::new()?;
        let memory = std::mem::replace(&mut self.memory, KeySet::with_keys(self.keys.clone()));
        spill.extend(memory.into_keys().map(|k| (k, &[][..])))?;
        tracing::debug!(target: log_target!(),
            budget = self.budget,
            "a set of addresses moved to a temporary file"
        );
        self.spill = Some(spill);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_store_answers_the_same_in_memory_and_on_disk() {
        let rows: Vec<String> = (0..5_000).map(|i| format!("{}@x.de", i % 3_001)).collect();
        let keys = Key128::default();
        let answers = |budget: usize, chunk: usize| {
            let mut kept = KeyStore::new(keys.clone(), budget);
            let mut out = Vec::new();
            for part in rows.chunks(chunk) {
                out.extend(kept.fresh(part.iter().map(String::as_str)).unwrap());
            }
            let held = ["0@x.de", "3000@x.de", "3001@x.de", "nobody@x.de"]
                .map(|a| kept.contains(a).unwrap());
            (out, held, kept.is_spilled())
        };
        let (whole, held, spilled) = answers(usize::MAX, rows.len());
        assert!(!spilled);
        assert_eq!(whole.iter().filter(|f| **f).count(), 3_001);
        assert_eq!(held, [true, true, false, false]);
        for (budget, chunk) in [(1, 7), (10, 1_000), (2_000, 333)] {
            let (out, held_too, spilled) = answers(budget, chunk);
            assert!(spilled, "budget {budget}");
            assert_eq!(out, whole, "budget {budget}, chunks of {chunk}");
            assert_eq!(held_too, held, "budget {budget}");
        }
    }
}
