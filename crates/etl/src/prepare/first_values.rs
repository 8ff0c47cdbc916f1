//! The first non-empty value of each of a fixed list of columns, per
//! 128-bit key, over rows noted in source order: the store behind
//! `dedupe = "merge"` read in chunks ([`super::merged_rows`], keyed by the
//! address) and `fill_down` read in chunks ([`super::fill`], keyed by the
//! `within` cell). Each caller decides what an empty cell is (`None` here)
//! and what a key is.
//!
//! Compact: the values of a key encoded as one byte string ([`encode`]), in
//! memory up to a budget of keys (`LISTPIPE_SPILL_AFTER`), then every entry
//! moves to a [`Spill`]. A later row changes a key's values only where a
//! column is still empty: on disk that is a read-modify-write, a new
//! version added after the old ones, and the last one answers
//! ([`Spill::last`]), as the target's receivers read twice are kept
//! (`load/held.rs`).
//!
//! Taking the first value is associative (earlier values win, later ones
//! fill the gaps), so each chunk is merged on its own first and then once
//! into what is held: one lookup per key of a chunk, not per row.

use super::PrepareError;
use crate::spill::{Spill, SpillError};
use listpipe_base::hash::FastMap;

/// One key's values, a cell per column (`None`: empty).
pub(super) type Values<'a> = Vec<Option<&'a str>>;

/// The first values of each key (see the module).
pub(super) struct FirstValues {
    budget: usize,
    memory: FastMap<u128, Box<[u8]>>,
    spill: Option<Spill>,
}

/// What a store holds for a chunk's keys, looked up at once
/// ([`FirstValues::held`]).
pub(super) struct Held<'s> {
    store: &'s FirstValues,
    /// With the values on disk: the ones read for the chunk's keys.
    spilled: FastMap<u128, Vec<u8>>,
}

impl Held<'_> {
    /// The values held for `key`, if it was noted (and asked for).
    pub(super) fn get(&self, key: u128) -> Result<Option<Values<'_>>, PrepareError> {
        let bytes = match &self.store.spill {
            None => self.store.memory.get(&key).map(|v| &v[..]),
            Some(_) => self.spilled.get(&key).map(Vec::as_slice),
        };
        bytes
            .map(|b| decode(b).ok_or_else(|| damaged(self.store.spill.as_ref())))
            .transpose()
    }
}

/// Values as bytes: per cell a 0 (empty), or a 1, the length as 4 bytes
/// little-endian and the text.
fn encode(values: &[Option<&str>]) -> Box<[u8]> {
    let size: usize = values
        .iter()
        .map(|v| 1 + v.map_or(0, |s| 4 + s.len()))
        .sum();
    let mut out = Vec::with_capacity(size);
    for v in values {
        match v {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
    out.into_boxed_slice()
}

/// The values [`encode`] wrote, or None if the bytes are not such values.
fn decode(mut bytes: &[u8]) -> Option<Values<'_>> {
    let mut out = Vec::new();
    while let Some((&tag, rest)) = bytes.split_first() {
        match tag {
            0 => {
                out.push(None);
                bytes = rest;
            }
            1 => {
                let (len, rest) = rest.split_first_chunk::<4>()?;
                let len = u32::from_le_bytes(*len) as usize;
                let text = rest.get(..len)?;
                out.push(Some(std::str::from_utf8(text).ok()?));
                bytes = rest.get(len..)?;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Fills the empty cells of `earlier` from `later`; whether any changed.
fn fill_from<'a>(earlier: &mut Values<'a>, later: &[Option<&'a str>]) -> bool {
    let mut changed = false;
    for (e, l) in earlier.iter_mut().zip(later) {
        if e.is_none() && l.is_some() {
            *e = *l;
            changed = true;
        }
    }
    changed
}

impl FirstValues {
    /// None noted yet; `budget` keys in memory at most.
    pub(super) fn new(budget: usize) -> Self {
        FirstValues {
            budget,
            memory: FastMap::default(),
            spill: None,
        }
    }

    /// Notes a chunk's rows, each a key and its cells, in source order,
    /// after every chunk before it.
    pub(super) fn note<'a>(
        &mut self,
        rows: impl IntoIterator<Item = (u128, Values<'a>)>,
    ) -> Result<(), PrepareError> {
        // The chunk merged on its own, each key in the order it came.
        let mut order: Vec<u128> = Vec::new();
        let mut chunk: FastMap<u128, Values> = FastMap::default();
        for (key, row) in rows {
            match chunk.get_mut(&key) {
                Some(values) => {
                    fill_from(values, &row);
                }
                None => {
                    order.push(key);
                    chunk.insert(key, row);
                }
            }
        }
        let Some(spill) = &mut self.spill else {
            for key in order {
                let Some(later) = chunk.get(&key) else {
                    continue;
                };
                match self.memory.get_mut(&key) {
                    None => {
                        self.memory.insert(key, encode(later));
                    }
                    Some(held) => {
                        let mut values = decode(held).ok_or_else(|| damaged(None))?;
                        if fill_from(&mut values, later) {
                            *held = encode(&values);
                        }
                    }
                }
            }
            if self.memory.len() > self.budget {
                self.move_to_disk()?;
            }
            return Ok(());
        };
        // Each key asked once, in key order (neighbours in the index one
        // after another); a new version only where a value changed.
        order.sort_unstable();
        let mut new: Vec<(u128, Box<[u8]>)> = Vec::new();
        for key in order {
            let Some(later) = chunk.get(&key) else {
                continue;
            };
            match spill.last(key)? {
                None => new.push((key, encode(later))),
                Some(held) => {
                    let mut values = decode(&held).ok_or_else(|| damaged(Some(spill)))?;
                    if fill_from(&mut values, later) {
                        new.push((key, encode(&values)));
                    }
                }
            }
        }
        spill.extend(new.iter().map(|(k, v)| (*k, &v[..])))?;
        Ok(())
    }

    /// What is held for `keys` (a chunk's): on disk, each distinct key is
    /// read once, in key order.
    pub(super) fn held(&self, keys: &[u128]) -> Result<Held<'_>, PrepareError> {
        let mut spilled = FastMap::default();
        if let Some(spill) = &self.spill {
            let mut sorted = keys.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            for k in sorted {
                if let Some(v) = spill.last(k)? {
                    spilled.insert(k, v);
                }
            }
        }
        Ok(Held {
            store: self,
            spilled,
        })
    }

    /// Whether the values are on disk.
    #[cfg(test)]
    pub(super) fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    fn move_to_disk(&mut self) -> Result<(), SpillError> {
        let mut spill = Spill::new()?;
        let memory = std::mem::take(&mut self.memory);
        spill.extend(memory.iter().map(|(k, v)| (*k, &v[..])))?;
        tracing::debug!(target: log_target!(),
            budget = self.budget,
            "the first values of each key moved to a temporary file"
        );
        self.spill = Some(spill);
        Ok(())
    }
}

/// Values that do not decode: written by this module, so never expected;
/// reported as a spill that failed (a damaged temporary file), not a panic.
pub(super) fn damaged(spill: Option<&Spill>) -> PrepareError {
    let dir = spill.map_or_else(std::env::temp_dir, |s| s.dir().to_path_buf());
    PrepareError::Spill(SpillError::Io {
        dir,
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "values written there could not be read back",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_encode_and_decode_with_empty_and_blank_cells() {
        let values = [Some("Köln"), None, Some(""), Some("a,b")];
        let bytes = encode(&values);
        assert_eq!(decode(&bytes), Some(values.to_vec()));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode(&[]), Some(Vec::new()));
        assert_eq!(decode(&[2]), None);
    }

    #[test]
    fn a_key_keeps_its_first_value_of_each_column_in_memory_and_on_disk() {
        for budget in [usize::MAX, 1] {
            let mut store = FirstValues::new(budget);
            store
                .note([(1, vec![None, Some("a")]), (2, vec![Some("b"), None])])
                .unwrap();
            store
                .note([(1, vec![Some("c"), Some("d")]), (1, vec![Some("e"), None])])
                .unwrap();
            assert_eq!(store.is_spilled(), budget == 1);
            let held = store.held(&[1, 2, 3, 1]).unwrap();
            assert_eq!(held.get(1).unwrap(), Some(vec![Some("c"), Some("a")]));
            assert_eq!(held.get(2).unwrap(), Some(vec![Some("b"), None]));
            assert_eq!(held.get(3).unwrap(), None);
        }
    }
}
