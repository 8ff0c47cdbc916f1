//! Where the rows of a joined orders source wait for their receivers: in
//! memory up to a budget of rows, then in a [`Spill`] on disk, so a source
//! of fifteen million order lines costs a temporary file, not gigabytes.
//!
//! Each row with a valid address is one entry under its address's 128-bit
//! key: its row index among the source's rows (for the orphan rejects), then
//! its line's fields (none when the row holds no order), in one byte value
//! that is the same in memory and on disk. A key's entries come back in the
//! order they were added, which is file order.

use crate::spill::{Spill, SpillError};
use std::borrow::Cow;

/// Separates the fields of an order line, in the store and in
/// [`super::orders::OrderLines`]' text.
pub(super) const UNIT: char = '\u{1f}';

/// Entries one after another in one arena, with an index by key.
#[derive(Default)]
pub(super) struct Entries {
    /// Each entry's value: the row index (8 bytes, little-endian), then
    /// each field of its line ended by [`UNIT`].
    bytes: Vec<u8>,
    /// Where each entry ends in `bytes`.
    ends: Vec<usize>,
    /// (address key, entry): in entry order until [`Store::seal`] sorts it.
    index: Vec<(u128, u32)>,
}

impl Entries {
    /// Adds the row `row` under `key`, with its line's `fields` (none: the
    /// row holds no order).
    pub(super) fn push<'a>(&mut self, key: u128, row: u64, fields: impl Iterator<Item = &'a str>) {
        self.bytes.extend_from_slice(&row.to_le_bytes());
        for field in fields {
            self.bytes.extend_from_slice(field.as_bytes());
            self.bytes
                .extend_from_slice(UNIT.encode_utf8(&mut [0; 4]).as_bytes());
        }
        self.index.push((key, self.ends.len() as u32));
        self.ends.push(self.bytes.len());
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    fn value(&self, entry: usize) -> &[u8] {
        let start = entry.checked_sub(1).map_or(0, |e| self.ends[e]);
        &self.bytes[start..self.ends[entry]]
    }

    /// Every entry with its key, in the order of the index (entry order
    /// before sealing).
    fn iter(&self) -> impl Iterator<Item = (u128, &[u8])> {
        self.index
            .iter()
            .map(|&(key, entry)| (key, self.value(entry as usize)))
    }

    fn append(&mut self, other: Entries) {
        let (offset, base) = (self.bytes.len(), self.ends.len() as u32);
        self.bytes.extend_from_slice(&other.bytes);
        self.ends.extend(other.ends.iter().map(|end| end + offset));
        self.index
            .extend(other.index.iter().map(|&(key, entry)| (key, entry + base)));
    }
}

/// The entries of a whole source: in memory until they pass the budget,
/// then all of them in a spill.
pub(super) enum Store {
    Memory(Entries),
    Spilled(Spill),
}

impl Default for Store {
    fn default() -> Self {
        Store::Memory(Entries::default())
    }
}

impl Store {
    /// Adds a chunk's entries. Past `spill_after` entries in all, every
    /// entry held so far moves to a spill, and every later one goes there.
    pub(super) fn append(&mut self, chunk: Entries, spill_after: usize) -> Result<(), SpillError> {
        if let Store::Memory(held) = self {
            // An entry is numbered by a u32 in memory.
            if held.len() + chunk.len() <= spill_after.min(u32::MAX as usize) {
                held.append(chunk);
                return Ok(());
            }
            let mut spill = Spill::new()?;
            spill.extend(held.iter())?;
            tracing::debug!(target: log_target!(),
                entries = held.len(),
                "order lines past the memory budget: spilled"
            );
            *self = Store::Spilled(spill);
        }
        if let Store::Spilled(spill) = self {
            spill.extend(chunk.iter())?;
        }
        Ok(())
    }

    /// Ready for [`Store::for_each`] once every entry is in.
    pub(super) fn seal(&mut self) {
        if let Store::Memory(held) = self {
            // Entries of one key stay in entry order (the entry breaks ties).
            held.index.sort_unstable();
            held.index.shrink_to_fit();
            held.ends.shrink_to_fit();
            held.bytes.shrink_to_fit();
        }
    }

    /// Each entry under `key` in the order added: its row index and its
    /// line's text (empty: the row holds no order).
    pub(super) fn for_each(
        &self,
        key: u128,
        mut each: impl FnMut(u64, &str),
    ) -> Result<(), SpillError> {
        let mut entry = |value: &[u8]| {
            // Every value starts with its row index (see `Entries::push`).
            if let Some((row, text)) = value.split_first_chunk::<8>() {
                // Text written from a `&str`: borrowed, never replaced.
                let text: Cow<'_, str> = String::from_utf8_lossy(text);
                each(u64::from_le_bytes(*row), &text);
            }
        };
        match self {
            Store::Memory(held) => {
                let from = held.index.partition_point(|(k, _)| *k < key);
                held.index[from..]
                    .iter()
                    .take_while(|(k, _)| *k == key)
                    .for_each(|&(_, e)| entry(held.value(e as usize)));
                Ok(())
            }
            Store::Spilled(spill) => spill.for_each(key, entry),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries for keys 1 and 2 alternating, `n` of them from row `from`,
    /// every third without an order.
    fn chunk(from: u64, n: u64) -> Entries {
        let mut e = Entries::default();
        for row in from..from + n {
            let line = format!("O{row}");
            let fields = (row % 3 != 0).then_some([line.as_str(), "9.5"]);
            e.push(
                (1 + u128::from(row % 2)) << 100,
                row,
                fields.into_iter().flatten(),
            );
        }
        e
    }

    fn entries(store: &Store, key: u128) -> Vec<(u64, String)> {
        let mut got = Vec::new();
        store
            .for_each(key, |row, text| got.push((row, text.to_string())))
            .unwrap();
        got
    }

    #[test]
    fn entries_come_back_in_file_order_whether_held_in_memory_or_spilled() {
        let mut answers = Vec::new();
        for spill_after in [usize::MAX, 10, 5, 1] {
            let mut store = Store::default();
            for from in [0, 4, 8] {
                store.append(chunk(from, 4), spill_after).unwrap();
            }
            store.seal();
            assert_eq!(
                matches!(store, Store::Spilled(_)),
                spill_after < 12,
                "a budget of {spill_after}"
            );
            answers.push([entries(&store, 1 << 100), entries(&store, 2 << 100)]);
        }
        let [even, odd] = &answers[0];
        assert_eq!(
            even[..3],
            [
                (0, String::new()),
                (2, "O2\u{1f}9.5\u{1f}".into()),
                (4, "O4\u{1f}9.5\u{1f}".into())
            ]
        );
        assert_eq!(odd.len() + even.len(), 12);
        assert!(answers.iter().all(|a| *a == answers[0]));
        assert!(entries(&Store::default(), 1 << 100).is_empty());
    }
}
