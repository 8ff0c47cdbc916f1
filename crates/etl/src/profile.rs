//! A profile of a step's mapped columns for the HTML report (issue 60,
//! drawn by [`crate::html_report`]): fill
//! rate, distinct values, the most frequent values and, for dates, the range.
//!
//! Memory is bounded whatever the input: each column keeps a HyperLogLog of
//! [`HLL_REGISTERS`] bytes for its distinct values, a space-saving top-k of at
//! most [`TOP_CAPACITY`] values (each cut to [`VALUE_CHARS`] characters), its
//! smallest and largest value, and counts. At most [`MAX_COLUMNS`] columns are
//! profiled; never is a column's whole set of values held.

use crate::pipeline::{ReceiverField, ValueKind};
use crate::prepare::col;
use polars::prelude::{DataFrame, DataType, StringChunked};
use sketch::{Reservoir, TopK};
use std::collections::BTreeMap;
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

pub mod people;
pub mod sketch;

/// The profile of one step's prepared rows, column by column, and of its
/// people: addresses, the state the mapping gives them, tags, orders.
#[derive(Debug, Clone, Default)]
pub struct StepProfile {
    pub columns: Vec<ColumnProfile>,
    /// Columns past [`MAX_COLUMNS`], not profiled.
    pub columns_left_out: usize,
    pub addresses: people::Addresses,
    pub consent: people::Consent,
    /// The step maps tags (its frame has the tags column).
    pub tags: Option<people::Tags>,
    /// The step sends orders with its receivers.
    pub orders: Option<people::Orders>,
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
    top: TopK,
    pub min: Option<String>,
    pub max: Option<String>,
    /// Dates: values by month (`YYYY-MM`), at most [`MAX_MONTHS`] months.
    pub months: BTreeMap<String, u64>,
    /// Dates in months past [`MAX_MONTHS`], not in `months`.
    pub months_left_out: u64,
    /// Numbers: every value read as one; None once a value did not.
    pub numbers: Option<Reservoir>,
}

/// Months a date column's histogram keeps: two centuries.
pub const MAX_MONTHS: usize = 2400;

impl ColumnProfile {
    fn new(name: &str) -> ColumnProfile {
        ColumnProfile {
            name: name.to_string(),
            temporal: true,
            rows: 0,
            filled: 0,
            hll: vec![0; HLL_REGISTERS],
            top: TopK::new(TOP_CAPACITY),
            min: None,
            max: None,
            months: BTreeMap::new(),
            months_left_out: 0,
            numbers: Some(Reservoir::default()),
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
        if self.temporal && !iso_date(v) {
            self.temporal = false;
            self.months = BTreeMap::new();
        }
        if let Some(numbers) = &mut self.numbers {
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() => numbers.add(x),
                _ => self.numbers = None,
            }
        }
        let v = cut(v);
        if self.temporal {
            // ISO dates and timestamps order as text.
            if self.min.as_deref().is_none_or(|m| v.as_str() < m) {
                self.min = Some(v.clone());
            }
            if self.max.as_deref().is_none_or(|m| v.as_str() > m) {
                self.max = Some(v.clone());
            }
            let month = v.get(..7).unwrap_or_default();
            if let Some(n) = self.months.get_mut(month) {
                *n += 1;
            } else if self.months.len() < MAX_MONTHS {
                self.months.insert(month.to_string(), 1);
            } else {
                self.months_left_out += 1;
            }
        }
        self.top.add(&v);
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
        self.top.top(TOP_SHOWN)
    }

    /// The numbers of a numeric column (not of a date, nor of a column that
    /// is empty).
    pub fn numbers(&self) -> Option<&Reservoir> {
        self.numbers
            .as_ref()
            .filter(|n| n.seen > 0 && !self.temporal)
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
    /// Adds a chunk of an import step: its rows, and its receivers' orders.
    pub fn add_chunk(&mut self, chunk: &crate::prepare::ImportChunk) {
        self.add_frame(&chunk.frame);
        if chunk.orders.is_empty() {
            return;
        }
        let Some(emails) = text_column(&chunk.frame, col::field(ReceiverField::Email).as_str())
        else {
            return;
        };
        let orders = self.orders.get_or_insert_with(Default::default);
        for email in emails.iter().flatten() {
            orders.add(&chunk.orders, email);
        }
    }

    /// What the profile keeps of the people besides the columns.
    fn add_people(&mut self, frame: &DataFrame) {
        let field = |f: ReceiverField| text_column(frame, col::field(f).as_str());
        if let Some(emails) = field(ReceiverField::Email) {
            for email in emails.iter().flatten() {
                self.addresses.add(email);
            }
            let [registered, activated, deactivated] = [
                ReceiverField::Registered,
                ReceiverField::Activated,
                ReceiverField::Deactivated,
            ]
            .map(field);
            // One pass over each column (a lookup per row walks the chunks).
            fn cells(c: &Option<StringChunked>) -> Box<dyn Iterator<Item = Option<&str>> + '_> {
                match c {
                    Some(c) => Box::new(c.iter()),
                    None => Box::new(std::iter::repeat(None)),
                }
            }
            let rows = cells(&registered)
                .zip(cells(&activated))
                .zip(cells(&deactivated));
            for ((r, a), d) in rows.take(emails.len()) {
                self.consent.add(r, a, d);
            }
        }
        if let Some(tags) = text_column(frame, col::TAGS) {
            let t = self.tags.get_or_insert_with(Default::default);
            for cell in tags.iter().flatten() {
                t.add(cell, crate::prepare::tags::JOIN);
            }
        }
    }

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
            // The state fields and other times go as Unix seconds: profiled
            // as the times they are (0 is "no time").
            let stamps =
                ReceiverField::parse(name).is_some_and(|f| f.kind() == ValueKind::Timestamp);
            if let Some(p) = self.columns.get_mut(i) {
                if stamps {
                    values
                        .iter()
                        .for_each(|v| p.add(v.and_then(as_time).as_deref()));
                } else {
                    values.iter().for_each(|v| p.add(v));
                }
            }
        }
        self.add_people(frame);
    }
}

/// Unix seconds as an ISO time (`2024-01-05 00:00:00`); 0 and what is not a
/// number are no time.
fn as_time(v: &str) -> Option<String> {
    let secs: i64 = v.parse().ok().filter(|s| *s != 0)?;
    chrono::DateTime::from_timestamp(secs, 0).map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

/// A column of the frame as text, if it has one of that name.
fn text_column(frame: &DataFrame, name: &str) -> Option<StringChunked> {
    let column = frame.column(name).ok()?;
    let text = column.cast(&DataType::String).ok()?;
    text.str().ok().cloned()
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
        assert!(p.numbers().is_none());
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
