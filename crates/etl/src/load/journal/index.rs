//! What an earlier run's journal recorded, by row, for `--resume`: the last
//! event of each row key (`done` with its body's hash, `start`, `unsent`),
//! which is all a resume asks ([`Recorded::prior`]).
//!
//! Bounded memory, as the target's index ([`super::super::held`]): each row
//! is a 128-bit key of its (file, row, email) and a few bytes, in memory up
//! to a budget of rows (`LISTPIPE_SPILL_AFTER`, [`crate::spill::SPILL_AFTER`]
//! by default); the row past it moves every entry to a [`Spill`] on disk,
//! and the rest of the journal goes there too. Before, a resume read every
//! line into memory and built two maps keyed by the whole row key (a 300k-
//! row run killed at 60% resumed at 293 MB against the run's own 209 MB).
//! The events are appended in the journal's order and the last one answers.
//!
//! A chunk asks for its rows once ([`Recorded::chunk`]): spilled, on a
//! blocking thread, never on the async threads carrying requests.

use super::{Prior, RowKey};
use crate::spill::{Spill, SpillError};
use listpipe_base::hash::{FastMap, Key128};
use std::sync::{Arc, Mutex};

/// Entries moved to the spill per transaction.
const MOVE_BATCH: usize = 16_384;

/// The last event of a row, encoded: its kind, then a `done`'s hash.
const DONE: u8 = b'd';
const START: u8 = b's';
const UNSENT: u8 = b'u';

/// A row's last event as the journal recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Last(Vec<u8>);

impl Last {
    /// What the recorded event means for the row sent now with `hash`.
    pub fn prior(&self, hash: &str) -> Prior {
        match self.0.split_first() {
            Some((&DONE, h)) if h == hash.as_bytes() => Prior::Confirmed,
            // Never sent (a stop came first): as if no run had started it.
            Some((&UNSENT, _)) => Prior::New,
            // Confirmed with another body, or sent and never confirmed:
            // either way the target decides.
            _ => Prior::InFlight,
        }
    }

    /// Whether a run may have sent the row (only then does a resume need
    /// the row's hash).
    pub fn sent(&self) -> bool {
        self.0.first() != Some(&UNSENT)
    }
}

/// The rows an earlier run recorded (see the module's doc).
pub(super) struct Recorded {
    keys: Key128,
    budget: usize,
    memory: FastMap<u128, Last>,
    /// Every entry once the budget was passed (`memory` is then empty).
    spill: Option<Arc<Mutex<Spill>>>,
    /// Entries for the spill, written in batches.
    pending: Vec<(u128, Vec<u8>)>,
}

impl Recorded {
    /// An empty index keeping `budget` rows in memory at most (at least one).
    pub(super) fn new(budget: usize) -> Recorded {
        Recorded {
            keys: Key128::default(),
            budget: budget.max(1),
            memory: FastMap::default(),
            spill: None,
            pending: Vec::new(),
        }
    }

    fn key(&self, key: &RowKey) -> u128 {
        self.keys.of(&format!("{}\t{}\t{}", key.0, key.1, key.2))
    }

    /// Whether the entries are on disk.
    #[cfg(test)]
    pub(super) fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Whether no row was recorded.
    pub(super) fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.spill.is_none()
    }

    /// Records event `ev` (`done`, `start`, `unsent`) of a row, after those
    /// recorded before.
    pub(super) fn record(&mut self, key: &RowKey, ev: &str, hash: &str) -> Result<(), SpillError> {
        let last = match ev {
            "done" => {
                let mut v = Vec::with_capacity(1 + hash.len());
                v.push(DONE);
                v.extend_from_slice(hash.as_bytes());
                v
            }
            "unsent" => vec![UNSENT],
            // Any other event is a start: the row may have been sent.
            _ => vec![START],
        };
        let k = self.key(key);
        if self.spill.is_none() {
            self.memory.insert(k, Last(last));
            if self.memory.len() > self.budget {
                self.move_to_spill()?;
            }
            return Ok(());
        }
        self.pending.push((k, last));
        if self.pending.len() >= MOVE_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what waits for the spill (call once every event is recorded).
    pub(super) fn flush(&mut self) -> Result<(), SpillError> {
        let Some(spill) = &self.spill else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut spill = spill.lock().unwrap_or_else(|p| p.into_inner());
        spill.extend(self.pending.iter().map(|(k, v)| (*k, v.as_slice())))?;
        self.pending.clear();
        Ok(())
    }

    /// Moves every entry held in memory to a new spill.
    fn move_to_spill(&mut self) -> Result<(), SpillError> {
        let mut spill = Spill::new()?;
        let entries: Vec<(u128, Last)> = self.memory.drain().collect();
        for batch in entries.chunks(MOVE_BATCH) {
            spill.extend(batch.iter().map(|(k, v)| (*k, v.0.as_slice())))?;
        }
        self.memory = FastMap::default();
        tracing::debug!(target: log_target!(), budget = self.budget, "journal index spilled to disk");
        self.spill = Some(Arc::new(Mutex::new(spill)));
        Ok(())
    }

    /// The last event recorded of each row of `rows`, by position; asked of
    /// a spill on a blocking thread.
    pub(super) async fn chunk(&self, rows: &[RowKey]) -> Result<Vec<Option<Last>>, SpillError> {
        if self.is_empty() {
            return Ok(vec![None; rows.len()]);
        }
        let keys: Vec<u128> = rows.iter().map(|r| self.key(r)).collect();
        let Some(spill) = &self.spill else {
            return Ok(keys.iter().map(|k| self.memory.get(k).cloned()).collect());
        };
        let spill = spill.clone();
        let dir = {
            let s = spill.lock().unwrap_or_else(|p| p.into_inner());
            s.dir().to_path_buf()
        };
        tokio::task::spawn_blocking(move || {
            let spill = spill.lock().unwrap_or_else(|p| p.into_inner());
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.sort_unstable_by_key(|&i| keys[i]);
            let mut out = vec![None; keys.len()];
            for i in order {
                out[i] = spill.last(keys[i])?.map(Last);
            }
            Ok(out)
        })
        .await
        .map_err(|e| SpillError::Io {
            dir,
            source: std::io::Error::other(format!(
                "the lookup of a chunk ended without an answer: {e}"
            )),
        })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal's events for 40 rows: every row started, the even ones
    /// confirmed, every fifth given up unsent, row 3 started again.
    fn events() -> Vec<(RowKey, &'static str, String)> {
        let key = |r: u64| (0, r + 2, format!("r{r}@x.de"));
        let mut out = Vec::new();
        for r in 0..40 {
            out.push((key(r), "start", String::new()));
            if r.is_multiple_of(5) {
                out.push((key(r), "unsent", String::new()));
            } else if r.is_multiple_of(2) {
                out.push((key(r), "done", format!("h{r}")));
            }
        }
        out.push((key(3), "done", "h3".into()));
        out.push((key(3), "start", String::new()));
        out
    }

    async fn answers(budget: usize) -> (bool, Vec<Option<Prior>>) {
        let mut index = Recorded::new(budget);
        for (key, ev, hash) in events() {
            index.record(&key, ev, &hash).unwrap();
        }
        index.flush().unwrap();
        let rows: Vec<RowKey> = (0..45).map(|r| (0, r + 2, format!("r{r}@x.de"))).collect();
        let last = index.chunk(&rows).await.unwrap();
        let priors = last
            .iter()
            .enumerate()
            .map(|(r, l)| l.as_ref().map(|l| l.prior(&format!("h{r}"))))
            .collect();
        (index.is_spilled(), priors)
    }

    #[tokio::test]
    async fn a_journal_index_answers_the_same_in_memory_and_spilled() {
        let (spilled, in_memory) = answers(1_000).await;
        assert!(!spilled);
        assert_eq!(in_memory[0], Some(Prior::New), "given up unsent");
        assert_eq!(in_memory[1], Some(Prior::InFlight), "started only");
        assert_eq!(in_memory[2], Some(Prior::Confirmed));
        assert_eq!(in_memory[3], Some(Prior::InFlight), "started again");
        assert_eq!(in_memory[42], None, "never recorded");
        for budget in [1, 7, 39] {
            let (spilled, answered) = answers(budget).await;
            assert!(spilled, "budget {budget}");
            assert_eq!(answered, in_memory, "budget {budget}");
        }
    }
}
