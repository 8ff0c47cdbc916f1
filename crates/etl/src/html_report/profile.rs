//! A profile of a step's mapped columns for the HTML report (issue 60): fill
//! rate, distinct values, the most frequent values and, for dates, the range.
//!
//! Memory is bounded whatever the input: each column keeps a HyperLogLog of
//! [`HLL_REGISTERS`] bytes for its distinct values, a space-saving top-k of at
//! most [`TOP_CAPACITY`] values (each cut to [`VALUE_CHARS`] characters), its
//! smallest and largest value, and counts. At most [`MAX_COLUMNS`] columns are
//! profiled; never is a column's whole set of values held.

use polars::prelude::{DataFrame, DataType};
use std::hash::{Hash, Hasher};

/// Registers of each HyperLogLog: 2^11, a standard error of about 2.3%.
pub const HLL_REGISTERS: usize = 1 << HLL_BITS;
const HLL_BITS: u32 = 11;
/// Values tracked by the top-k; the page shows the first [`TOP_SHOWN`]. More
/// than shown, so a value that arrives late still has room to climb.
pub const TOP_CAPACITY: usize = 32;
pub const TOP_SHOWN: usize = 5;
/// A value longer than this is cut (a free-text column's values are not kept whole).
pub const VALUE_CHARS: usize = 60;
/// Columns profiled per step; a wider frame's later columns are left out.
pub const MAX_COLUMNS: usize = 64;

/// The profile of one step's prepared rows, column by column.
#[derive(Debug, Clone, Default)]
pub struct StepProfile {
    pub columns: Vec<ColumnProfile>,
    /// Columns past [`MAX_COLUMNS`], not profiled.
    pub columns_left_out: usize,
}

/// One column's sketches.
#[derive(Debug, Clone)]
pub struct ColumnProfile {
    pub name: String,
    /// Whether the column holds dates or timestamps (its range is shown):
    /// a polars date type, or every value written as an ISO date
    /// (`YYYY-MM-DD…`), as prepared dates are (they are sent as text).
    pub temporal: bool,
    pub rows: u64,
    /// Rows with a value (not null, not empty).
    pub filled: u64,
    hll: Vec<u8>,
    /// Space-saving counters: value, count, overestimate.
    top: Vec<(String, u64, u64)>,
    pub min: Option<String>,
    pub max: Option<String>,
}

impl ColumnProfile {
    fn new(name: &str) -> ColumnProfile {
        ColumnProfile {
            name: name.to_string(),
            temporal: true,
            rows: 0,
            filled: 0,
            hll: vec![0; HLL_REGISTERS],
            top: Vec::new(),
            min: None,
            max: None,
        }
    }

    fn add(&mut self, value: Option<&str>) {
        self.rows += 1;
        let Some(v) = value.filter(|v| !v.is_empty()) else {
            return;
        };
        self.filled += 1;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        v.hash(&mut h);
        let hash = h.finish();
        // The first bits choose the register; the rank is the position of
        // the first 1 in the rest.
        let register = (hash >> (64 - HLL_BITS)) as usize;
        let rest = (hash << HLL_BITS) | (1 << (HLL_BITS - 1));
        let rank = (rest.leading_zeros() + 1) as u8;
        if let Some(r) = self.hll.get_mut(register) {
            *r = (*r).max(rank);
        }
        self.temporal &= iso_date(v);
        let v = cut(v);
        if self.temporal {
            // ISO dates and timestamps order as text.
            if self.min.as_deref().is_none_or(|m| v.as_str() < m) {
                self.min = Some(v.clone());
            }
            if self.max.as_deref().is_none_or(|m| v.as_str() > m) {
                self.max = Some(v.clone());
            }
        }
        self.count_top(v);
    }

    /// Space-saving (Metwally et al.): a new value past the capacity takes
    /// the place of the least counted, inheriting its count as overestimate.
    fn count_top(&mut self, v: String) {
        if let Some(e) = self.top.iter_mut().find(|e| e.0 == v) {
            e.1 += 1;
            return;
        }
        if self.top.len() < TOP_CAPACITY {
            self.top.push((v, 1, 0));
            return;
        }
        if let Some(least) = self.top.iter_mut().min_by_key(|e| e.1) {
            let floor = least.1;
            *least = (v, floor + 1, floor);
        }
    }

    /// Distinct values, estimated (HyperLogLog with the linear-counting
    /// correction for small sets, which is exact enough below a few thousand).
    pub fn distinct(&self) -> u64 {
        let m = HLL_REGISTERS as f64;
        let zeros = self.hll.iter().filter(|r| **r == 0).count();
        let sum: f64 = self.hll.iter().map(|r| 2f64.powi(-i32::from(*r))).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let estimate = if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        (estimate.round() as u64).min(self.filled)
    }

    /// The most frequent values, most first, with their counts (an upper
    /// bound when the column held more than [`TOP_CAPACITY`] values) and
    /// whether the count is exact.
    pub fn top(&self) -> Vec<(&str, u64, bool)> {
        let mut top: Vec<_> = self
            .top
            .iter()
            .map(|(v, n, over)| (v.as_str(), *n, *over == 0))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        top.truncate(TOP_SHOWN);
        top
    }
}

/// `YYYY-MM-DD`, maybe followed by a time.
fn iso_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() >= 10
        && b.iter().take(10).enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

fn cut(v: &str) -> String {
    if v.chars().count() <= VALUE_CHARS {
        return v.to_string();
    }
    let head: String = v.chars().take(VALUE_CHARS).collect();
    format!("{head}…")
}

impl StepProfile {
    /// Adds a chunk's prepared rows. Internal columns (`__file`, `__row`)
    /// are not profiled; a column that cannot be read as text is skipped.
    pub fn add_frame(&mut self, frame: &DataFrame) {
        for column in frame.columns() {
            let name = column.name().as_str();
            if name.starts_with("__") {
                continue;
            }
            let Ok(text) = column.cast(&DataType::String) else {
                continue;
            };
            let Ok(values) = text.str() else {
                continue;
            };
            let i = match self.columns.iter().position(|c| c.name == name) {
                Some(i) => i,
                None if self.columns.len() < MAX_COLUMNS => {
                    self.columns.push(ColumnProfile::new(name));
                    self.columns.len() - 1
                }
                None => {
                    self.columns_left_out += 1;
                    continue;
                }
            };
            if let Some(p) = self.columns.get_mut(i) {
                values.iter().for_each(|v| p.add(v));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn counts_fill_distinct_and_top_values_in_bounded_space() {
        let mut p = ColumnProfile::new("city");
        for i in 0..10_000u64 {
            let v = if i % 2 == 0 {
                "Berlin".to_string()
            } else {
                format!("c{i}")
            };
            p.add(Some(&v));
        }
        p.add(None);
        p.add(Some(""));
        assert_eq!((p.rows, p.filled), (10_002, 10_000));
        let d = p.distinct() as f64;
        assert!((4_700.0..5_300.0).contains(&d), "{d}");
        assert_eq!(p.top().first().map(|t| t.0), Some("Berlin"));
        assert!(p.top.len() <= TOP_CAPACITY);
        assert!(!p.temporal);
    }

    #[test]
    fn dates_keep_their_range_and_small_sets_count_exactly() {
        let frame = df!(
            "__row" => [2u32, 3, 4],
            "birthday" => [Some("1990-05-01"), None, Some("1980-01-02")],
        )
        .unwrap_or_default();
        let frame = frame
            .lazy()
            .with_column(col("birthday").cast(DataType::Date))
            .collect()
            .unwrap_or_default();
        let mut s = StepProfile::default();
        s.add_frame(&frame);
        assert_eq!(s.columns.len(), 1);
        let b = &s.columns[0];
        assert!(b.temporal);
        assert_eq!(b.min.as_deref(), Some("1980-01-02"));
        assert_eq!(b.max.as_deref(), Some("1990-05-01"));
        assert_eq!((b.filled, b.distinct()), (2, 2));
    }
}
