//! `dedupe = "merge"` over a source read in chunks: the row kept of an
//! address is its first valid one, but its empty cells fill from valid rows
//! further on, so a first read of the source notes, for each normalised
//! address, the merged values of the mapped columns ([`MergedRows::note`]):
//! for each column the first non-empty value in row order among the
//! address's valid rows, as [`super::dedupe::dedupe`] merges a frame read
//! whole. The second read, the usual chunked prepare, keeps the first
//! valid row of each address (as `first` does) and takes its values from
//! here ([`MergedRows::fill`]).
//!
//! Compact: a 128-bit key of the address ([`Key128`]) and the values
//! encoded as one byte string ([`encode`]), in memory up to a budget of
//! addresses (`LISTPIPE_SPILL_AFTER`), then every entry moves to a
//! [`Spill`]. A later row changes an address's values only where a column
//! is still empty: on disk that is a read-modify-write, a new version
//! added after the old ones, and the last one answers ([`Spill::last`]),
//! as the target's receivers read twice are kept (`load/held.rs`).
//!
//! Merging is associative (earlier values win, later ones fill the
//! gaps), so each chunk is merged on its own first and then once into
//! what is held: one lookup per address of a chunk, not per row.

use super::PrepareError;
use crate::hash::{FastMap, Key128};
use crate::pipeline::ReceiverField;
use crate::source::{FILE_COL, ROW_COL};
use crate::spill::{Spill, SpillError};
use polars::prelude::*;

/// The merged values of each address (see the module).
pub struct MergedRows {
    keys: Key128,
    budget: usize,
    memory: FastMap<u128, Box<[u8]>>,
    spill: Option<Spill>,
}

/// One address's values, a cell per merged column (`None`: empty).
type Values<'a> = Vec<Option<&'a str>>;

/// The columns merged: every column of the prepared frame but the address
/// (the key) and the row's file and number (those of the row kept).
fn merged_columns(frame: &DataFrame) -> Vec<&Column> {
    let email = ReceiverField::Email.as_str();
    frame
        .columns()
        .iter()
        .filter(|c| ![email, FILE_COL, ROW_COL].contains(&c.name().as_str()))
        .collect()
}

/// The frame's addresses and its merged columns as text.
fn text_columns(frame: &DataFrame) -> Result<(&StringChunked, Vec<&StringChunked>), PrepareError> {
    let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
    let columns = merged_columns(frame)
        .into_iter()
        .map(|c| c.str())
        .collect::<PolarsResult<_>>()?;
    Ok((emails, columns))
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

impl MergedRows {
    /// None noted yet; `budget` addresses in memory at most.
    pub fn new(budget: usize) -> Self {
        MergedRows {
            keys: Key128::default(),
            budget,
            memory: FastMap::default(),
            spill: None,
        }
    }

    /// Notes a chunk's valid rows, prepared (`__file`, `__row`, then the
    /// mapped columns), in source order, after every chunk before it.
    pub fn note(&mut self, frame: &DataFrame) -> Result<(), PrepareError> {
        let (emails, columns) = text_columns(frame)?;
        // The chunk merged on its own, each address in the order it came.
        let mut order: Vec<u128> = Vec::new();
        let mut chunk: FastMap<u128, Values> = FastMap::default();
        for i in 0..frame.height() {
            let key = self.keys.of(emails.get(i).unwrap_or(""));
            let row: Values = columns.iter().map(|c| c.get(i)).collect();
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
        // Each address asked once, in key order (neighbours in the index
        // one after another); a new version only where a value changed.
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

    /// The kept rows of a chunk (each the first valid row of its address,
    /// prepared as [`MergedRows::note`] saw them) with the merged values of
    /// their addresses: a cell the row has is the address's first value
    /// already, an empty one takes the first value a later row has. A row
    /// whose address was never noted keeps its own values.
    pub fn fill(&self, mut frame: DataFrame) -> Result<DataFrame, PrepareError> {
        let (emails, columns) = text_columns(&frame)?;
        let keys: Vec<u128> = emails
            .iter()
            .map(|e| self.keys.of(e.unwrap_or("")))
            .collect();
        let spilled: FastMap<u128, Vec<u8>> = match &self.spill {
            None => FastMap::default(),
            Some(spill) => {
                let mut sorted = keys.clone();
                sorted.sort_unstable();
                sorted.dedup();
                let mut found = FastMap::default();
                for k in sorted {
                    if let Some(v) = spill.last(k)? {
                        found.insert(k, v);
                    }
                }
                found
            }
        };
        let mut rows: Vec<Values> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let held = match &self.spill {
                None => self.memory.get(key).map(|v| &v[..]),
                Some(_) => spilled.get(key).map(Vec::as_slice),
            };
            let own: Values = columns.iter().map(|c| c.get(i)).collect();
            rows.push(match held {
                None => own,
                Some(bytes) => {
                    let values = decode(bytes).ok_or_else(|| damaged(self.spill.as_ref()))?;
                    if values.len() != own.len() {
                        return Err(damaged(self.spill.as_ref()));
                    }
                    values
                }
            });
        }
        let filled: Vec<Column> = columns
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let ca: StringChunked = rows.iter().map(|r| r[j]).collect();
                ca.with_name(c.name().clone()).into_column()
            })
            .collect();
        for c in filled {
            frame.with_column(c)?;
        }
        Ok(frame)
    }

    /// Whether the values are on disk.
    #[cfg(test)]
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    fn move_to_disk(&mut self) -> Result<(), SpillError> {
        let mut spill = Spill::new()?;
        let memory = std::mem::take(&mut self.memory);
        spill.extend(memory.iter().map(|(k, v)| (*k, &v[..])))?;
        tracing::debug!(
            budget = self.budget,
            "the merged values of each address moved to a temporary file"
        );
        self.spill = Some(spill);
        Ok(())
    }
}

/// Values that do not decode: written by this module, so never expected;
/// reported as a spill that failed (a damaged temporary file), not a panic.
fn damaged(spill: Option<&Spill>) -> PrepareError {
    let dir = spill.map_or_else(std::env::temp_dir, |s| s.dir().to_path_buf());
    PrepareError::Spill(SpillError::Io {
        dir,
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "merged values written there could not be read back",
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
    fn the_first_value_of_each_column_is_kept_in_memory_and_on_disk() {
        // 900 rows of 301 addresses: a's name comes on its first row, its
        // city only on its third, 602 rows later.
        let n = 900;
        let email: Vec<String> = (0..n).map(|i| format!("{}@x.de", i % 301)).collect();
        let name: Vec<Option<String>> = (0..n)
            .map(|i| (i % 2 == 0).then(|| format!("N{i}")))
            .collect();
        let city: Vec<Option<String>> = (0..n)
            .map(|i| (i >= 602).then(|| format!("C{i}")))
            .collect();
        let frame = df!(
            FILE_COL => vec![0u32; n],
            ROW_COL => (0..n as u32).map(|i| i + 2).collect::<Vec<_>>(),
            "email" => email,
            "a:name" => name,
            "a:city" => city,
        )
        .unwrap();
        let firsts = frame.slice(0, 301);
        let answers = |budget: usize, chunk: usize| {
            let mut merged = MergedRows::new(budget);
            let mut at = 0;
            while at < n {
                merged.note(&frame.slice(at as i64, chunk)).unwrap();
                at += chunk;
            }
            (merged.fill(firsts.clone()).unwrap(), merged.is_spilled())
        };
        let (whole, spilled) = answers(usize::MAX, n);
        assert!(!spilled);
        let text = |df: &DataFrame, c: &str, i: usize| {
            df.column(c)
                .unwrap()
                .str()
                .unwrap()
                .get(i)
                .map(str::to_string)
        };
        // Address 1: rows 1 (no name, no city), 302 (N302), 603 (C603).
        assert_eq!(text(&whole, "a:name", 1).as_deref(), Some("N302"));
        assert_eq!(text(&whole, "a:city", 1).as_deref(), Some("C603"));
        assert_eq!(text(&whole, "a:name", 0).as_deref(), Some("N0"));
        // Address 300: rows 300, 601 only: no city.
        assert_eq!(text(&whole, "a:city", 300), None);
        for (budget, chunk) in [(1, 7), (10, 100), (200, 333)] {
            let (out, spilled) = answers(budget, chunk);
            assert!(spilled, "budget {budget}");
            assert!(
                out.equals_missing(&whole),
                "budget {budget}, chunks of {chunk}"
            );
        }
    }

    mod properties {
        use super::super::*;
        use crate::pipeline::Dedupe;
        use crate::prepare::dedupe::dedupe;
        use proptest::prelude::*;

        fn frame(rows: &[(u8, Option<&str>, Option<&str>)]) -> DataFrame {
            let n = rows.len() as u32;
            let emails: Vec<String> = rows.iter().map(|r| format!("{}@x.de", r.0)).collect();
            let city: Vec<Option<&str>> = rows.iter().map(|r| r.1).collect();
            let name: Vec<Option<&str>> = rows.iter().map(|r| r.2).collect();
            df!(
                FILE_COL => vec![0u32; rows.len()],
                ROW_COL => (2..n + 2).collect::<Vec<u32>>(),
                "email" => emails,
                "a:city" => city,
                "a:name" => name,
            )
            .unwrap()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

            /// Noted in chunks, in memory or spilled, the first rows filled
            /// are what `dedupe` merges of the frame read whole.
            #[test]
            fn the_first_rows_filled_are_the_whole_merge(
                rows in prop::collection::vec(
                    (
                        0..4u8,
                        prop::option::of(prop::sample::select(&["x", "y", ""][..])),
                        prop::option::of(prop::sample::select(&["x", "z"][..])),
                    ),
                    0..16,
                ),
                chunk in 1..6usize,
                budget in prop::sample::select(&[1, 2, usize::MAX][..]),
            ) {
                let df = frame(&rows);
                let mut merged = MergedRows::new(budget);
                let mut at = 0;
                while at < df.height() {
                    merged.note(&df.slice(at as i64, chunk)).unwrap();
                    at += chunk;
                }
                let firsts = dedupe(df.clone(), Dedupe::First).unwrap();
                let filled = merged.fill(firsts).unwrap();
                let want = dedupe(df, Dedupe::Merge).unwrap();
                prop_assert!(filled.equals_missing(&want), "{filled:?} {want:?}");
            }
        }
    }
}
