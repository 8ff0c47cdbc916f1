//! Column-wise mapping of a source table: each mapping's values cleaned and
//! converted into one text column, errors collected by row, and the rows
//! with errors turned into reject lines carrying their raw values.

use super::condition::RowTest;
use super::reasons::{self, RejectExample};
use super::time::{ColumnHint, Times};
use super::value::{self, Unsent};
use super::{PrepareError, PrepareStats};
use crate::pipeline::{AttributeMapping, Mapping, ValueFrom, ValueKind};
use crate::source::{FILE_COL, ROW_COL, RejectRow, Table};
use polars::prelude::*;
use std::collections::BTreeMap;

/// One problem of a row: the field, the reason, and the category the report counts it
/// under (`missing email`, `invalid birthday`).
pub(super) struct RowError {
    pub(super) field: String,
    pub(super) reason: String,
    category: String,
    /// The raw value, for the summary's example (empty for a missing value).
    value: Option<String>,
}

/// The errors found in a table, by row index; the addresses trimmed of
/// spaces or tabs at their ends (counted, as every change to a value is); and
/// the values left out (`ambiguous = "omit"`) by field.
#[derive(Default)]
pub(super) struct Errors(
    pub(super) BTreeMap<usize, Vec<RowError>>,
    pub(super) u64,
    pub(super) LeftOut,
);

/// The values of each field left out as the formats read them two ways
/// (`ambiguous = "omit"`): how many, and what the first reads as.
#[derive(Default)]
pub(super) struct LeftOut(BTreeMap<String, (u64, String)>);

impl LeftOut {
    fn add(&mut self, field: &str, what: String) {
        match self.0.get_mut(field) {
            Some((n, _)) => *n += 1,
            None => {
                self.0.insert(field.to_string(), (1, what));
            }
        }
    }

    /// Counted into `stats`, each field's first example kept.
    pub(super) fn count_into(&self, stats: &mut PrepareStats) {
        for (field, (n, what)) in &self.0 {
            stats.count_left_out(field, *n, what);
        }
    }
}

impl Errors {
    pub(super) fn add(&mut self, row: usize, field: &str, value: &str, reason: String) {
        let category = if reason.starts_with("missing") {
            reason.clone()
        } else {
            format!("invalid {field}")
        };
        self.push(row, field, reason, category, Some(value));
    }

    /// A required value that is empty, with the step's own reason when it gives one.
    fn add_missing(&mut self, row: usize, field: &str, reason: Option<&str>) {
        let category = format!("missing {field}");
        let reason = reason.map_or_else(|| category.clone(), str::to_string);
        self.push(row, field, reason, category, None);
    }

    fn push(
        &mut self,
        row: usize,
        field: &str,
        reason: String,
        category: String,
        value: Option<&str>,
    ) {
        self.0.entry(row).or_default().push(RowError {
            field: field.to_string(),
            reason,
            category,
            value: value.map(reasons::cut),
        });
    }
}

/// Reads a mapping's values: the column, the first non-empty of several, or the constant
/// on every row.
fn raw_values<'a>(
    table: &'a Table,
    m: &'a Mapping,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>, PrepareError> {
    let n = table.frame.height();
    Ok(match &m.from {
        ValueFrom::Column(c) => Box::new(table.frame.column(c)?.str()?.iter()),
        ValueFrom::FirstOf(cs) => {
            // Columns a preset names may be absent from this file: they are empty.
            let cols: Vec<&StringChunked> = cs
                .iter()
                .filter_map(|c| table.frame.column(c).ok().and_then(|c| c.str().ok()))
                .collect();
            Box::new((0..n).map(move |i| {
                cols.iter()
                    .filter_map(|c| c.get(i))
                    .find(|v| !v.trim().is_empty())
            }))
        }
        ValueFrom::Constant(v) => Box::new(std::iter::repeat_n(Some(v.as_str()), n)),
    })
}

/// Maps one value column: cleaned, converted, errors recorded by row.
pub(super) fn map_column(
    table: &Table,
    m: &Mapping,
    kind: ValueKind,
    field: &str,
    required: bool,
    errors: &mut Errors,
) -> Result<StringChunked, PrepareError> {
    let condition = m.only_if.as_ref().map(|c| RowTest::new(table, c));
    // The column's formats, compiled once for all its cells.
    let times = Times::new(&m.format, m.ambiguous.unwrap_or_default(), m.timezone);
    let dated = matches!(kind, ValueKind::Timestamp | ValueKind::Date);
    // A date column's failures: their reasons name the setting that reads
    // them, decided from the whole column (see `time::ColumnHint`).
    let mut failed: Vec<(usize, String, String, String)> = Vec::new();
    let mut out = StringChunkedBuilder::new(field.into(), table.frame.height());
    for (i, raw) in raw_values(table, m)?.enumerate() {
        let applies = condition.as_ref().is_none_or(|c| c.holds(i));
        let cleaned = match (applies, kind) {
            (false, _) => None,
            // An address loses spaces and tabs at its ends, nothing else: a
            // line break in the cell is refused by `email::parse`, not trimmed.
            (true, ValueKind::Email) => {
                let trimmed = raw.map(|r| (r, listpipe_api::email::trim_ends(r)));
                if let Some((r, t)) = trimmed
                    && m.trim
                    && t.len() != r.len()
                    && !t.is_empty()
                {
                    errors.1 += 1;
                }
                value::clean_with(m, raw, listpipe_api::email::trim_ends)
            }
            (true, _) => value::clean(m, raw),
        };
        match cleaned {
            None => {
                if required {
                    errors.add_missing(i, field, m.missing_reason.as_deref());
                }
                out.append_null();
            }
            Some(v) => {
                let cleaned = dated.then(|| v.to_string());
                match value::convert(kind, m, &times, v) {
                    Ok(v) => out.append_value(v),
                    // Left out: the cell counts as empty (no date is a required value).
                    Err(Unsent::LeftOut(what)) => {
                        errors.2.add(field, what);
                        out.append_null();
                    }
                    Err(Unsent::Rejected(reason)) => {
                        match cleaned {
                            Some(c) => failed.push((i, raw.unwrap_or("").to_string(), c, reason)),
                            None => errors.add(i, field, raw.unwrap_or(""), reason),
                        }
                        out.append_null();
                    }
                }
            }
        }
    }
    if !failed.is_empty() {
        let misses: Vec<&str> = failed.iter().map(|(_, _, c, _)| c.as_str()).collect();
        // The column is read again only when some of its values failed.
        let values: Vec<String> = raw_values(table, m)?
            .filter_map(|raw| value::clean(m, raw).map(|v| v.into_owned()))
            .collect();
        let hint = ColumnHint::new(values.iter().map(String::as_str), &misses, &m.format);
        for (i, raw, cleaned, reason) in failed {
            errors.add(i, field, &raw, hint.decorate(&cleaned, reason));
        }
    }
    Ok(out.finish())
}

pub(super) fn attribute_columns(
    table: &Table,
    attrs: &[AttributeMapping],
    name: fn(&str) -> String,
    errors: &mut Errors,
) -> Result<Vec<Column>, PrepareError> {
    attrs
        .iter()
        .map(|a| {
            let kind = ValueKind::of_attribute(a.kind);
            let mut ca = map_column(table, &a.mapping, kind, &a.name, false, errors)?;
            ca.rename(name(&a.name).into());
            Ok(ca.into_column())
        })
        .collect()
}

/// The reject rows for `errors`, with the raw values of each row.
pub(super) fn reject_rows(
    table: &Table,
    errors: &Errors,
    stats: &mut PrepareStats,
) -> Result<Vec<RejectRow>, PrepareError> {
    let cols: Vec<&StringChunked> = table
        .columns
        .iter()
        .map(|c| table.frame.column(c).and_then(|c| c.str()))
        .collect::<Result<_, _>>()?;
    let rows = table.frame.column(ROW_COL)?.u32()?;
    let files = table.frame.column(FILE_COL)?.u32()?;
    stats.addresses_trimmed += errors.1;
    errors.2.count_into(stats);
    let mut out = Vec::with_capacity(errors.0.len() + table.ragged.len());
    // Examples name their file; the caller forgets it when the source
    // turns out to be one file (`PrepareStats::files_read`).
    let file_name = |f: usize| table.files.get(f).map(|f| f.display().to_string());
    for r in &table.ragged {
        stats.count_reject(
            r.category,
            RejectExample {
                row: r.row_number,
                file: file_name(r.file),
                field: r.column.clone().unwrap_or_default(),
                value: None,
                reason: reasons::cut_reason(&r.reason),
            },
        );
        out.push(RejectRow {
            file: file_name(r.file),
            values: r.values.iter().map(|v| Some(v.clone())).collect(),
            row_number: r.row_number,
            field: r.column.clone().unwrap_or_default(),
            reason: r.reason.clone(),
        });
    }
    for (&i, errs) in &errors.0 {
        let Some(first) = errs.first() else { continue };
        let file = files.get(i).and_then(|f| file_name(f as usize));
        let row_number = rows.get(i).unwrap_or(0) as u64;
        stats.count_reject(
            &first.category,
            RejectExample {
                row: row_number,
                file: file.clone(),
                field: first.field.clone(),
                value: first.value.clone(),
                reason: reasons::cut_reason(&first.reason),
            },
        );
        out.push(RejectRow {
            file,
            values: cols.iter().map(|c| c.get(i).map(str::to_string)).collect(),
            row_number,
            field: errs
                .iter()
                .map(|e| e.field.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            reason: errs
                .iter()
                .map(|e| e.reason.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    out.sort_by_key(|r| (r.file.clone(), r.row_number));
    Ok(out)
}

/// Finds the raw values of rows that fail later, when the target refuses
/// them, for their reject lines. Decision: the table is indexed once by
/// (file, row number), so a step with many failed rows costs one pass, not
/// a scan of the table per failed row.
pub struct RejectLookup<'a> {
    table: &'a Table,
    index: listpipe_base::hash::FastMap<(u32, u32), usize>,
}

impl<'a> RejectLookup<'a> {
    pub fn new(table: &'a Table) -> Self {
        let index = (|| {
            let rows = table.frame.column(ROW_COL).ok()?.u32().ok()?;
            let files = table.frame.column(FILE_COL).ok()?.u32().ok()?;
            Some(
                rows.iter()
                    .zip(files.iter())
                    .enumerate()
                    .filter_map(|(i, (r, f))| Some(((f?, r?), i)))
                    .collect(),
            )
        })()
        .unwrap_or_default();
        RejectLookup { table, index }
    }

    /// The reject line for row `row` of file `file`, with its raw values.
    pub fn reject(&self, file: u32, row: u64, field: &str, reason: String) -> RejectRow {
        let table = self.table;
        let index = u32::try_from(row)
            .ok()
            .and_then(|r| self.index.get(&(file, r)).copied());
        let values = match index {
            Some(i) => table
                .columns
                .iter()
                .map(|c| {
                    table
                        .frame
                        .column(c)
                        .ok()
                        .and_then(|c| c.str().ok()?.get(i).map(str::to_string))
                })
                .collect(),
            None => vec![None; table.columns.len()],
        };
        RejectRow {
            file: table
                .files
                .get(file as usize)
                .map(|f| f.display().to_string()),
            values,
            row_number: row,
            field: field.to_string(),
            reason,
        }
    }
}

pub(super) fn keep_mask(height: usize, errors: &Errors) -> BooleanChunked {
    (0..height).map(|i| !errors.0.contains_key(&i)).collect()
}
