//! What the target's group holds, by address, for the diff of a step: the
//! [`TargetIndex`]. A re-import compares every row with it, mirror mode
//! plans its removals from it.
//!
//! Bounded memory: entries are kept under 128-bit keys of the lower-case
//! address ([`Key128`]), never the address, in memory up to a budget of
//! receivers (`LISTPIPE_SPILL_AFTER`, [`crate::spill::TARGET_SPILL_AFTER`] by
//! default). In memory each receiver is its key and encoded bytes
//! ([`Held::encode`], about 100 bytes with a few attributes, tags and
//! orders) in one arena, found through a 4-byte offset in a hash table:
//! 125 bytes a receiver in all on the bench's 1M re-import. Before, a map
//! of `Held` values cost a 128-byte slot, twice over while the map grew
//! (the re-import of 1M rows peaked at 760 MiB), then a map of key and
//! offset beside a fixed 96-byte head cost 237 bytes a receiver. The
//! receiver past the budget moves every entry to a [`Spill`] on disk, and
//! the rest of the group goes there too: a group of ten million costs the
//! spill's page cache, not two gigabytes.
//! The budget is counted in receivers read, never sized from what the
//! server says the group holds.
//!
//! A chunk of rows asks for its receivers once ([`TargetIndex::chunk`]): in
//! memory a hash lookup and a decode per row; spilled, one indexed SELECT per
//! row, done before the chunk's rows are decided, on a blocking thread
//! ([`TargetIndex::chunk_off_thread`]): never on the async threads that
//! carry the requests in flight.
//!
//! A receiver read twice (the group changed between two page reads) is
//! held as last read, as a map insert would; in the spill both are kept and
//! the last one answers.

use super::LoadError;
use super::diff::Held;
use crate::spill::{Spill, SpillError};
use hashbrown::HashTable;
use listpipe_base::hash::Key128;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Bytes of one slot of the in-memory table: an offset, a control byte.
const TABLE_SLOT: usize = std::mem::size_of::<u32>() + 1;

/// Bytes before a receiver's encoding in the arena: its key and length.
const ENTRY_HEAD: usize = 16 + 4;

/// Entries moved to the spill per transaction when the budget is passed.
const MOVE_BATCH: usize = 16_384;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Spill(#[from] SpillError),
    #[error("temporary spill file in {path}: a receiver written there could not be read back")]
    Damaged { path: PathBuf },
    /// The thread looking a chunk up ended without an answer (a bug).
    #[error("temporary spill file in {path}: its lookup ended without an answer: {reason}")]
    Lost { path: PathBuf, reason: String },
}

impl From<IndexError> for LoadError {
    /// The spill is the run's own scratch: a failure (most often a full
    /// `TMPDIR`) stops the run naming the file, like any state it writes.
    fn from(e: IndexError) -> LoadError {
        let (path, message) = match &e {
            IndexError::Spill(e) => e.dir_and_reason(),
            IndexError::Damaged { path } | IndexError::Lost { path, .. } => {
                (path.clone(), e.to_string())
            }
        };
        LoadError::Output {
            path,
            message: format!(
                "{message} (the temporary file of a large group's receivers: set TMPDIR to a folder with room)"
            ),
        }
    }
}

/// The receivers of one group, by address (see the module's doc).
pub struct TargetIndex {
    keys: Key128,
    /// Receivers kept in memory at most.
    budget: usize,
    /// Where each receiver's entry starts in `arena`, found by its key
    /// (whose low 64 bits, already a hash, are the table's hash).
    memory: HashTable<u32>,
    /// Each receiver as its 16-byte key, a 4-byte length (little-endian)
    /// and its [`Held::encode`] bytes, one after another; a receiver read
    /// twice leaves its first entry unused here. Kept under 4 GiB, so that
    /// an offset is 4 bytes: past that, the index spills.
    arena: Vec<u8>,
    /// Every entry once the budget was passed (`memory` is then empty).
    /// Behind a mutex because a SQLite connection is not `Sync`; only one
    /// chunk asks at a time, so it is never contended.
    /// Shared with the blocking thread that looks a chunk up in it.
    spill: Option<Arc<Mutex<Spill>>>,
}

/// The receivers the target holds for the rows of one chunk, by row.
pub struct ChunkHeld(Vec<Option<Held>>);

impl ChunkHeld {
    /// The receiver the target holds for row `i` of the chunk.
    pub fn get(&self, i: usize) -> Option<&Held> {
        self.0.get(i).and_then(Option::as_ref)
    }
}

impl TargetIndex {
    /// An empty index keeping `budget` receivers in memory at most (at
    /// least one).
    pub fn new(budget: usize) -> TargetIndex {
        TargetIndex {
            keys: Key128::default(),
            budget: budget.max(1),
            memory: HashTable::new(),
            arena: Vec::new(),
            spill: None,
        }
    }

    /// The key of an address: of its lower-case form, as the group is read.
    fn key(&self, email: &str) -> u128 {
        key_of(&self.keys, email)
    }

    /// How this index keys an address, to key a page's receivers on
    /// another thread ([`TargetIndex::extend`]).
    pub fn keys(&self) -> Key128 {
        self.keys.clone()
    }

    /// Whether the entries are on disk.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Adds receivers (a page of the group), each under the key of its
    /// address ([`key_of`] with [`TargetIndex::keys`]) and encoded
    /// ([`Held::encode`]): made where the page is decoded, on another
    /// thread.
    pub fn extend(
        &mut self,
        entries: impl IntoIterator<Item = (u128, Vec<u8>)>,
    ) -> Result<(), IndexError> {
        let mut to_spill: Vec<(u128, Vec<u8>)> = Vec::new();
        for (key, bytes) in entries {
            if self.spill.is_none() {
                if self.keep(key, &bytes) {
                    continue;
                }
                self.move_to_spill()?;
            }
            to_spill.push((key, bytes));
        }
        if let Some(spill) = self.spill.as_mut().filter(|_| !to_spill.is_empty()) {
            let mut spill = spill.lock().unwrap_or_else(|p| p.into_inner());
            spill.extend(to_spill.iter().map(|(k, v)| (*k, v.as_slice())))?;
        }
        Ok(())
    }

    /// Keeps a receiver in memory, in place of one read before under the
    /// same key; false when that would pass the budget (or the arena's 4
    /// GiB): the index must spill.
    fn keep(&mut self, key: u128, bytes: &[u8]) -> bool {
        let at = self.arena.len();
        if at + ENTRY_HEAD + bytes.len() > u32::MAX as usize {
            return false;
        }
        let (at32, len) = (at as u32, bytes.len() as u32);
        let arena = &self.arena;
        let same = |&o: &u32| key_at(arena, o) == key;
        if let Some(slot) = self.memory.find_mut(key as u64, same) {
            *slot = at32;
        } else if self.memory.len() < self.budget {
            self.memory
                .insert_unique(key as u64, at32, |&o| key_at(arena, o) as u64);
        } else {
            return false;
        }
        self.arena.extend_from_slice(&key.to_le_bytes());
        self.arena.extend_from_slice(&len.to_le_bytes());
        self.arena.extend_from_slice(bytes);
        true
    }

    /// Moves every entry held in memory to a new spill, a transaction per
    /// batch.
    fn move_to_spill(&mut self) -> Result<(), IndexError> {
        let mut spill = Spill::new()?;
        let memory = std::mem::take(&mut self.memory);
        let arena = std::mem::take(&mut self.arena);
        let mut entries = memory.into_iter();
        loop {
            let batch: Vec<(u128, &[u8])> = entries
                .by_ref()
                .take(MOVE_BATCH)
                .map(|at| (key_at(&arena, at), stored(&arena, at)))
                .collect();
            if batch.is_empty() {
                break;
            }
            spill.extend(batch)?;
        }
        tracing::debug!(target: log_target!(), budget = self.budget, dir = %spill.dir().display(), "target index spilled to disk");
        self.spill = Some(Arc::new(Mutex::new(spill)));
        Ok(())
    }

    /// How many receivers the group holds (distinct addresses).
    pub fn len(&self) -> Result<usize, IndexError> {
        match &self.spill {
            None => Ok(self.memory.len()),
            Some(spill) => {
                let spill = spill.lock().unwrap_or_else(|p| p.into_inner());
                Ok(usize::try_from(spill.keys()?).unwrap_or(usize::MAX))
            }
        }
    }

    /// The receiver the group holds at `email`.
    pub fn get(&self, email: &str) -> Result<Option<Held>, IndexError> {
        let key = self.key(email);
        match &self.spill {
            None => self.in_memory(key),
            Some(spill) => {
                let spill = spill.lock().unwrap_or_else(|p| p.into_inner());
                spilled(&spill, key)
            }
        }
    }

    /// The receivers the group holds for a chunk's addresses, by row.
    pub fn chunk(&self, emails: &[String]) -> Result<ChunkHeld, IndexError> {
        let held = match &self.spill {
            None => emails
                .iter()
                .map(|e| self.in_memory(self.key(e)))
                .collect::<Result<_, _>>()?,
            Some(spill) => {
                let keys: Vec<u128> = emails.iter().map(|e| self.key(e)).collect();
                looked_up(spill, &keys)?
            }
        };
        Ok(ChunkHeld(held))
    }

    /// [`TargetIndex::chunk`] for the async writer: a spilled index is asked
    /// on a blocking thread (up to a chunk of SQLite lookups, which on an
    /// async thread stalled every request in flight, issue 41).
    pub async fn chunk_off_thread(&self, emails: &[String]) -> Result<ChunkHeld, IndexError> {
        let Some(spill) = &self.spill else {
            return self.chunk(emails);
        };
        let keys: Vec<u128> = emails.iter().map(|e| self.key(e)).collect();
        let spill = spill.clone();
        let dir = {
            let s = spill.lock().unwrap_or_else(|p| p.into_inner());
            s.dir().to_path_buf()
        };
        tokio::task::spawn_blocking(move || looked_up(&spill, &keys))
            .await
            .map_err(|e| IndexError::Lost {
                path: dir,
                reason: e.to_string(),
            })?
            .map(ChunkHeld)
    }

    /// Bytes the entries held in memory take: the arena's and the table's
    /// slots (an offset and a control byte each, free slots counted).
    pub fn memory_bytes(&self) -> usize {
        self.arena.len() + self.memory.capacity() * 8 / 7 * TABLE_SLOT
    }

    fn in_memory(&self, key: u128) -> Result<Option<Held>, IndexError> {
        let same = |&o: &u32| key_at(&self.arena, o) == key;
        let Some(&at) = self.memory.find(key as u64, same) else {
            return Ok(None);
        };
        // The arena is this process's own memory: bytes that do not decode
        // are a bug, reported as a damaged store rather than a panic.
        Held::decode(stored(&self.arena, at))
            .map(Some)
            .ok_or(IndexError::Damaged {
                path: PathBuf::from("memory"),
            })
    }
}

/// The key of an address under `keys`: of its lower-case form, as the
/// group is read.
pub(super) fn key_of(keys: &Key128, email: &str) -> u128 {
    if email.chars().any(char::is_uppercase) {
        keys.of(&email.to_lowercase())
    } else {
        keys.of(email)
    }
}

/// The key of the entry at `at` in `arena`.
fn key_at(arena: &[u8], at: u32) -> u128 {
    let at = at as usize;
    arena
        .get(at..at + 16)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u128::from_le_bytes)
}

/// The bytes of the receiver stored at `at` in `arena` (after its key and
/// length).
fn stored(arena: &[u8], at: u32) -> &[u8] {
    let at = at as usize + 16;
    let len = arena
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b: [u8; 4]| u32::from_le_bytes(b) as usize);
    arena.get(at + 4..at + 4 + len).unwrap_or_default()
}

/// The receivers under `keys`, by position, from the spill. Asked in key
/// order, so that lookups next to each other in the index are asked one
/// after another.
fn looked_up(spill: &Mutex<Spill>, keys: &[u128]) -> Result<Vec<Option<Held>>, IndexError> {
    let spill = spill.lock().unwrap_or_else(|p| p.into_inner());
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by_key(|&i| keys[i]);
    let mut held = vec![None; keys.len()];
    for i in order {
        held[i] = spilled(&spill, keys[i])?;
    }
    Ok(held)
}

/// The last receiver written under `key` (see the module's doc).
fn spilled(spill: &Spill, key: u128) -> Result<Option<Held>, IndexError> {
    let mut last: Option<Option<Held>> = None;
    spill.for_each(key, |bytes| last = Some(Held::decode(bytes)))?;
    match last {
        None => Ok(None),
        Some(Some(held)) => Ok(Some(held)),
        Some(None) => Err(IndexError::Damaged {
            path: spill.dir().to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listpipe_api::{Receiver, ReceiverRow};

    fn receiver(i: usize, points: i64) -> (String, Held) {
        let email = format!("User{i}@Example.com");
        let r = Receiver {
            email: email.clone(),
            points,
            registered: 1_700_000_000 + i as i64,
            tags: Some(vec![format!("t{}", i % 3)]),
            ..Default::default()
        };
        (email, Held::from(&ReceiverRow::from(&r)))
    }

    /// The group of `n` receivers, the first read twice (the second time
    /// with other points), into an index of `budget`.
    fn index(n: usize, budget: usize) -> TargetIndex {
        let mut index = TargetIndex::new(budget);
        let pages: Vec<(String, Held)> = (0..n)
            .map(|i| receiver(i, 1))
            .chain([receiver(0, 2)])
            .collect();
        let keys = index.keys();
        for page in pages.chunks(3) {
            index
                .extend(page.iter().map(|(e, h)| (key_of(&keys, e), h.encode())))
                .unwrap();
        }
        index
    }

    #[test]
    fn the_index_answers_the_same_in_memory_and_spilled() {
        let n = 20;
        let asked: Vec<String> = (0..n + 5).map(|i| format!("user{i}@example.com")).collect();
        let answers = |index: &TargetIndex| {
            let by_row: Vec<Option<Held>> = {
                let chunk = index.chunk(&asked).unwrap();
                (0..asked.len()).map(|i| chunk.get(i).cloned()).collect()
            };
            let one_by_one: Vec<Option<Held>> =
                asked.iter().map(|e| index.get(e).unwrap()).collect();
            assert_eq!(by_row, one_by_one);
            (index.len().unwrap(), by_row)
        };
        let memory = index(n, 1_000);
        assert!(!memory.is_spilled());
        let (len, held) = answers(&memory);
        assert_eq!(len, n);
        assert_eq!(held.iter().flatten().count(), n);
        // Read twice: the last read answers.
        assert_eq!(held[0], Some(receiver(0, 2).1));
        assert_eq!(held[1], Some(receiver(1, 1).1));
        assert_eq!(
            memory.get("USER3@example.COM").unwrap(),
            Some(receiver(3, 1).1)
        );
        for budget in [1, 7, n - 1] {
            let spilled = index(n, budget);
            assert!(spilled.is_spilled(), "budget {budget}");
            assert_eq!(answers(&spilled), (len, held.clone()), "budget {budget}");
        }
    }

    #[test]
    fn a_receiver_in_memory_costs_its_key_its_encoded_bytes_and_a_table_slot() {
        let n = 50_000;
        let index = index(n, 100_000);
        assert!(!index.is_spilled());
        let encoded = receiver(1, 1).1.encode().len();
        // Five stamps (one set), points, no texts, four ends, one tag: the
        // fixed layout before took 104 bytes.
        assert!(encoded <= 24, "{encoded} bytes encoded");
        let stored = ENTRY_HEAD + encoded;
        // A map of `Held` values cost a slot of 128 bytes a receiver, a map
        // of key and offset 33, 2.3 slots a receiver just after it grew.
        const { assert!(TABLE_SLOT <= 5) };
        let per_receiver = index.memory_bytes() as f64 / n as f64;
        assert!(
            per_receiver <= stored as f64 + 2.3 * TABLE_SLOT as f64,
            "{per_receiver} bytes a receiver, {stored} stored"
        );
    }

    /// Times at which a task beside the lookup ran (a request in flight
    /// needs the same: a turn of the runtime), while `lookup` ran for at
    /// least 100 ms: the longest wait between two turns, and the time.
    async fn turns_during<F: std::future::Future<Output = ()>>(
        mut lookup: impl FnMut() -> F,
    ) -> (std::time::Duration, std::time::Duration) {
        use std::time::{Duration, Instant};
        let turns = Arc::new(Mutex::new(Vec::new()));
        let t = turns.clone();
        let beside = tokio::spawn(async move {
            loop {
                t.lock().unwrap().push(Instant::now());
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(100) {
            lookup().await;
        }
        let took = start.elapsed();
        beside.abort();
        let mut times: Vec<Instant> = turns.lock().unwrap().clone();
        times.retain(|t| *t >= start);
        times.insert(0, start);
        times.push(start + took);
        let longest = times.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        (longest, took)
    }

    #[tokio::test]
    async fn requests_in_flight_keep_their_turns_while_a_spilled_chunk_is_looked_up() {
        let n = 5_000;
        let index = index(n, 1);
        assert!(index.is_spilled());
        let asked: Vec<String> = (0..n).map(|i| format!("user{i}@example.com")).collect();
        let (index, asked) = (&index, &asked);
        // On the async thread (as before), nothing else runs meanwhile.
        let (longest, took) = turns_during(|| async move {
            assert!(index.chunk(asked).unwrap().get(n - 1).is_some());
        })
        .await;
        assert!(longest * 4 > took, "{longest:?} of {took:?}");
        // Off it, the task beside takes its turns all along.
        let (longest, took) = turns_during(|| async move {
            let chunk = index.chunk_off_thread(asked).await.unwrap();
            assert!(chunk.get(n - 1).is_some());
        })
        .await;
        assert!(longest * 4 < took, "{longest:?} of {took:?}");
    }

    #[test]
    fn a_group_within_the_budget_stays_in_memory() {
        let index = index(10, 10);
        assert!(!index.is_spilled());
        assert_eq!(index.len().unwrap(), 10);
    }
}
