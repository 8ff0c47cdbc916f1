//! Numbers Excel mangled: a column of ids, phone numbers or zip codes that went through
//! Excel and was saved again holds `7.02255E+12` where the file had `7022551234567`; the
//! digits are gone and no program can bring them back. Such cells are not rejected (the row
//! may be fine otherwise, and the value is what the user has), but the summaries warn with
//! the column, a count and example rows, so the user re-exports the column as text.

use crate::pipeline::{ImportStep, ValueKind};
use crate::source::{ROW_COL, Table};
use polars::prelude::PolarsResult;
use serde::Serialize;
use std::collections::BTreeSet;

/// Example rows a warning lists.
const EXAMPLE_ROWS: usize = 5;

/// One column holding numbers in scientific notation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MangledNumbers {
    pub column: String,
    pub count: u64,
    /// The first rows (as a spreadsheet numbers them) holding such a value.
    pub rows: Vec<u64>,
    /// The first such value.
    pub example: String,
}

impl MangledNumbers {
    /// The warning as the summaries show it.
    pub fn describe(&self) -> String {
        let rows: Vec<String> = self.rows.iter().map(u64::to_string).collect();
        format!(
            "column \"{}\" holds {} number{} in scientific notation (row{} {}{}, e.g. \"{}\"): Excel dropped their digits; export the column as text from the original",
            self.column,
            self.count,
            if self.count == 1 { "" } else { "s" },
            if self.rows.len() == 1 { "" } else { "s" },
            rows.join(", "),
            if self.count as usize > self.rows.len() {
                ", ..."
            } else {
                ""
            },
            self.example
        )
    }
}

/// Whether a column name reads like an id, a phone number or a zip code.
pub fn looks_text_like(name: &str) -> bool {
    const PARTS: &[&str] = &[
        "phone",
        "tel",
        "mobil",
        "handy",
        "fax",
        "zip",
        "plz",
        "postal",
        "postcode",
        "postleitzahl",
        "number",
        "nummer",
    ];
    let lower = name.to_lowercase();
    if PARTS.iter().any(|p| lower.contains(p)) {
        return true;
    }
    // `id`, `Record ID`, `customer_id`, `CustomerId`: an `id` word, not `paid`.
    lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w == "id")
        || name.ends_with("Id")
        || name.ends_with("ID")
}

/// `7.02255E+12`, `1E5`, `-3,5e-2`: digits, an optional fraction, an exponent.
pub fn is_scientific(value: &str) -> bool {
    let v = value.trim();
    let v = v.strip_prefix(['+', '-']).unwrap_or(v);
    let Some((mantissa, exponent)) = v.split_once(['e', 'E']) else {
        return false;
    };
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once(['.', ',']) {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(mantissa),
    };
    mantissa_ok && digits(exponent)
}

/// The source columns of a step that should hold text: mapped to a text value, or named
/// like an id, phone or zip.
fn text_columns(step: &ImportStep, table: &Table) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = table
        .columns
        .iter()
        .filter(|c| looks_text_like(c))
        .cloned()
        .collect();
    let fields = step.fields.iter().map(|(f, m)| (f.kind(), m));
    let attributes = step
        .global_attributes
        .iter()
        .chain(&step.attributes)
        .map(|a| (ValueKind::of_attribute(a.kind), &a.mapping));
    let orders = step
        .orders
        .iter()
        .filter(|o| o.source.is_none())
        .flat_map(|o| o.fields.iter().map(|(f, m)| (f.kind(), m)));
    for (kind, m) in fields.chain(attributes).chain(orders) {
        if kind == ValueKind::Text {
            out.extend(m.from.columns().iter().cloned());
        }
    }
    out
}

/// Every text-like column of `table` holding numbers in scientific notation.
pub fn find(step: &ImportStep, table: &Table) -> PolarsResult<Vec<MangledNumbers>> {
    let rows = table.frame.column(ROW_COL)?.u32()?;
    let mut out = Vec::new();
    for column in text_columns(step, table) {
        let Ok(values) = table.frame.column(&column).and_then(|c| c.str()) else {
            continue;
        };
        let mut found: Option<MangledNumbers> = None;
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v.filter(|v| is_scientific(v)) else {
                continue;
            };
            let f = found.get_or_insert_with(|| MangledNumbers {
                column: column.clone(),
                count: 0,
                rows: Vec::new(),
                example: v.trim().to_string(),
            });
            f.count += 1;
            if f.rows.len() < EXAMPLE_ROWS {
                f.rows.push(u64::from(rows.get(i).unwrap_or(0)));
            }
        }
        out.extend(found);
    }
    Ok(out)
}

/// Adds one chunk's findings to the ones before, as one pass over the whole
/// input would have found them (in column name order).
pub fn merge(into: &mut Vec<MangledNumbers>, more: Vec<MangledNumbers>) {
    for found in more {
        match into.iter_mut().find(|m| m.column == found.column) {
            Some(m) => {
                m.count += found.count;
                let room = EXAMPLE_ROWS.saturating_sub(m.rows.len());
                m.rows.extend(found.rows.into_iter().take(room));
            }
            None => into.push(found),
        }
    }
    into.sort_by(|a, b| a.column.cmp(&b.column));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scientific_notation_is_told_from_plain_numbers_and_text() {
        for v in ["7.02255E+12", "1E5", " -3,5e-2 ", "4.9e12"] {
            assert!(is_scientific(v), "{v}");
        }
        for v in [
            "7022551234567",
            "E12",
            "1.5",
            "Berlin",
            "1e",
            "e5",
            "12E+",
            "0.0.00",
        ] {
            assert!(!is_scientific(v), "{v}");
        }
    }

    #[test]
    fn ids_phones_and_zips_are_recognised_by_name() {
        for name in [
            "Record ID",
            "customer_id",
            "CustomerId",
            "Business Phone",
            "Mobile",
            "PLZ",
            "Zip",
            "Kundennummer",
        ] {
            assert!(looks_text_like(name), "{name}");
        }
        for name in ["email", "paid", "First Name", "Birthday"] {
            assert!(!looks_text_like(name), "{name}");
        }
    }
}
