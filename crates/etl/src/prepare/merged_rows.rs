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
//! Compact: a 128-bit key of the address ([`Key128`]) and its values in a
//! [`FirstValues`] store (in memory up to `LISTPIPE_SPILL_AFTER` addresses,
//! then on disk). An empty cell here is a missing one: `""` counts as a
//! value, as in the merge of a frame read whole.

use super::PrepareError;
use super::first_values::{FirstValues, Values};
use crate::pipeline::ReceiverField;
use crate::source::{FILE_COL, ROW_COL};
use listpipe_base::hash::Key128;
use polars::prelude::*;

/// The merged values of each address (see the module).
pub(super) struct MergedRows {
    keys: Key128,
    values: FirstValues,
}

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

impl MergedRows {
    /// None noted yet; `budget` addresses in memory at most.
    pub(super) fn new(budget: usize) -> Self {
        MergedRows {
            keys: Key128::default(),
            values: FirstValues::new(budget),
        }
    }

    /// Notes a chunk's valid rows, prepared (`__file`, `__row`, then the
    /// mapped columns), in source order, after every chunk before it.
    pub(super) fn note(&mut self, frame: &DataFrame) -> Result<(), PrepareError> {
        let (emails, columns) = text_columns(frame)?;
        let keys = &self.keys;
        self.values.note((0..frame.height()).map(|i| {
            let key = keys.of(emails.get(i).unwrap_or(""));
            let row: Values = columns.iter().map(|c| c.get(i)).collect();
            (key, row)
        }))
    }

    /// The kept rows of a chunk (each the first valid row of its address,
    /// prepared as [`MergedRows::note`] saw them) with the merged values of
    /// their addresses: a cell the row has is the address's first value
    /// already, an empty one takes the first value a later row has. A row
    /// whose address was never noted keeps its own values.
    pub(super) fn fill(&self, mut frame: DataFrame) -> Result<DataFrame, PrepareError> {
        let (emails, columns) = text_columns(&frame)?;
        let keys: Vec<u128> = emails
            .iter()
            .map(|e| self.keys.of(e.unwrap_or("")))
            .collect();
        let held = self.values.held(&keys)?;
        let mut rows: Vec<Values> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let own: Values = columns.iter().map(|c| c.get(i)).collect();
            rows.push(match held.get(*key)? {
                None => own,
                Some(values) => {
                    if values.len() != own.len() {
                        return Err(super::first_values::damaged(None));
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
    pub(super) fn is_spilled(&self) -> bool {
        self.values.is_spilled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
