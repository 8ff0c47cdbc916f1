//! Prepare: from a source [`Table`] to the rows that will be sent, and the
//! rows that will not (rejects, with row number, field and reason). Runs
//! offline, so `listpipe check` shows exactly what `run` would send.
//!
//! Values are mapped column by column into a polars frame of text columns
//! named by [`col`]; rows with any error leave as rejects; duplicates of the
//! normalised email are resolved as the step says ([`dedupe`]).

pub mod dedupe;
mod rows;
pub mod tags;
pub mod time;
pub mod value;

use crate::api::Order;
use crate::pipeline::{
    AttributeMapping, BlacklistStep, ImportStep, Mapping, OrderField, OrdersSpec, ReceiverField,
    ValueFrom, ValueKind,
};
use crate::source::{self, FILE_COL, ROW_COL, RejectRow, Table};
use polars::prelude::*;
pub use rows::PreparedRows;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// Names of the prepared frame's columns.
pub mod col {
    use crate::pipeline::ReceiverField;
    pub const TAGS: &str = "tags";
    pub fn field(f: ReceiverField) -> String {
        f.as_str().to_string()
    }
    pub fn global(name: &str) -> String {
        format!("g:{name}")
    }
    pub fn group(name: &str) -> String {
        format!("a:{name}")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error("internal data error: {0}")]
    Frame(#[from] PolarsError),
}

/// Counts for the run report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PrepareStats {
    pub rows_read: u64,
    /// Rejected rows by reason (`invalid email`, `missing email`, `invalid birthday`, `wrong number of fields`...).
    pub rejected: BTreeMap<String, u64>,
    pub duplicates: u64,
    pub tags_changed: u64,
    pub orders_read: u64,
    pub orders_rejected: u64,
}

impl PrepareStats {
    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }
}

/// Rejected rows and how to write them back in the input's dialect.
pub struct Rejects {
    pub columns: Vec<String>,
    pub dialect: source::Dialect,
    pub multi_file: bool,
    pub rows: Vec<RejectRow>,
}

impl Rejects {
    fn new(table: &Table) -> Self {
        Rejects {
            columns: table.columns.clone(),
            dialect: table.dialect.clone(),
            multi_file: table.files.len() > 1,
            rows: Vec::new(),
        }
    }

    pub fn write(&self, path: &Path) -> Result<(), source::SourceError> {
        source::write_rejects(
            path,
            &self.columns,
            &self.dialect,
            self.multi_file,
            &self.rows,
        )
    }
}

pub struct PreparedImport {
    /// The source as read, for writing failed rows back as they were.
    pub table: Table,
    /// One row per receiver to send: `__file`, `__row`, then the mapped columns.
    pub frame: DataFrame,
    pub rejects: Rejects,
    /// Row number and address of each row dropped as a duplicate.
    pub duplicates: Vec<(u64, String)>,
    /// Orders by normalised email.
    pub orders: HashMap<String, Vec<Order>>,
    pub order_rejects: Option<Rejects>,
    pub stats: PrepareStats,
}

pub struct PreparedBlacklist {
    pub table: Table,
    /// Address (or `*@domain`) and comment, deduplicated, in file order.
    pub entries: Vec<(String, String)>,
    /// The file index and row number of each entry.
    pub rows: Vec<(u32, u64)>,
    pub rejects: Rejects,
    pub stats: PrepareStats,
}

/// The errors found in a table, by row index.
#[derive(Default)]
struct Errors(BTreeMap<usize, Vec<(String, String)>>);

impl Errors {
    fn add(&mut self, row: usize, field: &str, reason: String) {
        self.0
            .entry(row)
            .or_default()
            .push((field.to_string(), reason));
    }
}

/// Reads a mapping's values: the column, or the constant on every row.
fn raw_values<'a>(
    table: &'a Table,
    m: &'a Mapping,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>, PrepareError> {
    let n = table.frame.height();
    Ok(match &m.from {
        ValueFrom::Column(c) => Box::new(table.frame.column(c)?.str()?.iter()),
        ValueFrom::Constant(v) => Box::new(std::iter::repeat_n(Some(v.as_str()), n)),
    })
}

/// Maps one value column: cleaned, converted, errors recorded by row.
fn map_column(
    table: &Table,
    m: &Mapping,
    kind: ValueKind,
    field: &str,
    required: bool,
    errors: &mut Errors,
) -> Result<StringChunked, PrepareError> {
    let condition: Option<(&StringChunked, &Vec<String>)> = match &m.only_if {
        Some(c) => Some((table.frame.column(&c.column)?.str()?, &c.equals)),
        None => None,
    };
    let mut out: Vec<Option<String>> = Vec::with_capacity(table.frame.height());
    for (i, raw) in raw_values(table, m)?.enumerate() {
        let applies = condition
            .is_none_or(|(ca, eq)| ca.get(i).is_some_and(|v| eq.iter().any(|e| e == v.trim())));
        let cleaned = if applies { value::clean(m, raw) } else { None };
        out.push(match cleaned {
            None => {
                if required {
                    errors.add(i, field, format!("missing {field}"));
                }
                None
            }
            Some(v) => match value::convert(kind, m, &v) {
                Ok(v) => Some(v),
                Err(reason) => {
                    errors.add(i, field, reason);
                    None
                }
            },
        });
    }
    let mut ca: StringChunked = out.into_iter().collect();
    ca.rename(field.into());
    Ok(ca)
}

fn attribute_columns(
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
fn reject_rows(
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
    let mut out = Vec::with_capacity(errors.0.len() + table.ragged.len());
    for r in &table.ragged {
        *stats
            .rejected
            .entry("wrong number of fields".into())
            .or_default() += 1;
        out.push(RejectRow {
            file: table.files.get(r.file).map(|f| f.display().to_string()),
            values: r.values.iter().map(|v| Some(v.clone())).collect(),
            row_number: r.row_number,
            field: String::new(),
            reason: r.reason.clone(),
        });
    }
    for (&i, errs) in &errors.0 {
        let (first_field, first_reason) = &errs[0];
        let category = if first_reason.starts_with("missing") {
            first_reason.clone()
        } else {
            format!("invalid {first_field}")
        };
        *stats.rejected.entry(category).or_default() += 1;
        out.push(RejectRow {
            file: files
                .get(i)
                .and_then(|f| table.files.get(f as usize))
                .map(|f| f.display().to_string()),
            values: cols.iter().map(|c| c.get(i).map(str::to_string)).collect(),
            row_number: rows.get(i).unwrap_or(0) as u64,
            field: errs
                .iter()
                .map(|(f, _)| f.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            reason: errs
                .iter()
                .map(|(_, r)| r.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    out.sort_by_key(|r| (r.file.clone(), r.row_number));
    Ok(out)
}

/// The reject line for row `row` of file `file` of `table`, with its raw
/// values (for rows that fail later, when the target refuses them).
pub fn reject_for(table: &Table, file: u32, row: u64, field: &str, reason: String) -> RejectRow {
    let index = (|| {
        let rows = table.frame.column(ROW_COL).ok()?.u32().ok()?;
        let files = table.frame.column(FILE_COL).ok()?.u32().ok()?;
        (0..rows.len()).find(|&i| rows.get(i) == Some(row as u32) && files.get(i) == Some(file))
    })();
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
        file: (table.files.len() > 1)
            .then(|| {
                table
                    .files
                    .get(file as usize)
                    .map(|f| f.display().to_string())
            })
            .flatten(),
        values,
        row_number: row,
        field: field.to_string(),
        reason,
    }
}

fn keep_mask(height: usize, errors: &Errors) -> BooleanChunked {
    (0..height).map(|i| !errors.0.contains_key(&i)).collect()
}

/// Maps, validates and deduplicates one import step's source.
pub fn prepare_import(step: &ImportStep, base_dir: &Path) -> Result<PreparedImport, PrepareError> {
    let table = source::read(&step.source, base_dir)?;
    prepare_import_table(step, table, base_dir)
}

pub fn prepare_import_table(
    step: &ImportStep,
    owned: Table,
    base_dir: &Path,
) -> Result<PreparedImport, PrepareError> {
    let table = &owned;
    let height = table.frame.height();
    let mut stats = PrepareStats {
        rows_read: (height + table.ragged.len()) as u64,
        ..Default::default()
    };
    let mut errors = Errors::default();
    let mut columns: Vec<Column> = vec![
        table.frame.column(FILE_COL)?.clone(),
        table.frame.column(ROW_COL)?.clone(),
    ];
    let mut email_by_row = StringChunked::full_null("email".into(), height);
    for (field, m) in &step.fields {
        let ca = map_column(
            table,
            m,
            field.kind(),
            field.as_str(),
            *field == ReceiverField::Email,
            &mut errors,
        )?;
        if *field == ReceiverField::Email {
            email_by_row = ca.clone();
        }
        columns.push(ca.into_column());
    }
    columns.extend(attribute_columns(
        table,
        &step.global_attributes,
        col::global,
        &mut errors,
    )?);
    columns.extend(attribute_columns(
        table,
        &step.attributes,
        col::group,
        &mut errors,
    )?);
    if let Some(spec) = &step.tags {
        let cols: Vec<&StringChunked> = spec
            .columns
            .iter()
            .map(|c| table.frame.column(c).and_then(|c| c.str()))
            .collect::<Result<_, _>>()?;
        let mut joined: Vec<Option<String>> = Vec::with_capacity(height);
        for i in 0..height {
            let cells: Vec<Option<&str>> = cols.iter().map(|c| c.get(i)).collect();
            let (tags, changed) = tags::row_tags(spec, &cells);
            stats.tags_changed += changed as u64;
            joined.push((!tags.is_empty()).then(|| tags.join(&tags::JOIN.to_string())));
        }
        let mut ca: StringChunked = joined.into_iter().collect();
        ca.rename(col::TAGS.into());
        columns.push(ca.into_column());
    }
    // Orders on the receiver rows: mapped per row, errors reject the row.
    let row_orders = match &step.orders {
        Some(o) if o.source.is_none() => Some(map_orders(table, o, &mut errors)?),
        _ => None,
    };

    let mut rejects = Rejects::new(table);
    rejects.rows = reject_rows(table, &errors, &mut stats)?;
    let mask = keep_mask(height, &errors);
    let frame = DataFrame::new(height, columns)?.filter(&mask)?;
    let duplicates = dedupe::dropped_rows(&frame, step.dedupe)?;
    let frame = dedupe::dedupe(frame, step.dedupe)?;
    stats.duplicates = duplicates.len() as u64;

    let emails: HashSet<String> = frame
        .column(&col::field(ReceiverField::Email))?
        .str()?
        .iter()
        .flatten()
        .map(str::to_string)
        .collect();
    let mut orders: HashMap<String, Vec<Order>> = HashMap::new();
    let mut order_rejects = None;
    if let Some(row_orders) = row_orders {
        for (i, order) in row_orders.into_iter().enumerate() {
            if let (Some(order), Some(true), Some(email)) =
                (order, mask.get(i), email_by_row.get(i))
            {
                stats.orders_read += 1;
                orders.entry(email.to_string()).or_default().push(order);
            }
        }
    } else if let Some((spec, source_spec)) = step
        .orders
        .as_ref()
        .and_then(|o| Some((o, o.source.as_ref()?)))
    {
        let table = source::read(source_spec, base_dir)?;
        let (o, r) = prepare_joined_orders(spec, &table, &emails, &mut stats)?;
        orders = o;
        order_rejects = Some(r);
    }
    Ok(PreparedImport {
        table: owned,
        frame,
        rejects,
        duplicates,
        orders,
        order_rejects,
        stats,
    })
}

/// One `Option<Order>` per row (None where the row has no order id).
fn map_orders(
    table: &Table,
    spec: &OrdersSpec,
    errors: &mut Errors,
) -> Result<Vec<Option<Order>>, PrepareError> {
    let mut cols: Vec<(OrderField, StringChunked)> = Vec::new();
    for (field, m) in &spec.fields {
        cols.push((
            *field,
            map_column(table, m, field.kind(), field.as_str(), false, errors)?,
        ));
    }
    let get = |f: OrderField, i: usize| {
        cols.iter()
            .find(|(c, _)| *c == f)
            .and_then(|(_, ca)| ca.get(i))
            .unwrap_or("")
            .to_string()
    };
    Ok((0..table.frame.height())
        .map(|i| {
            let order_id = get(OrderField::OrderId, i);
            (!order_id.is_empty()).then(|| Order {
                order_id,
                product_id: get(OrderField::ProductId, i),
                product: get(OrderField::Product, i),
                price: get(OrderField::Price, i).parse().unwrap_or(0.0),
                currency: get(OrderField::Currency, i),
                quantity: get(OrderField::Quantity, i).parse().unwrap_or(0),
                mailing_id: get(OrderField::MailingId, i),
                stamp: get(OrderField::Stamp, i).parse().unwrap_or(0),
            })
        })
        .collect())
}

/// Orders from their own source, joined to the import by email. An order
/// whose address is not among the step's receivers is rejected.
fn prepare_joined_orders(
    spec: &OrdersSpec,
    table: &Table,
    emails: &HashSet<String>,
    stats: &mut PrepareStats,
) -> Result<(HashMap<String, Vec<Order>>, Rejects), PrepareError> {
    let mut errors = Errors::default();
    let email_mapping = spec.email.clone().unwrap_or_default();
    let by_row = map_column(
        table,
        &email_mapping,
        ValueKind::Email,
        "email",
        true,
        &mut errors,
    )?;
    let orders = map_orders(table, spec, &mut errors)?;
    for (i, email) in by_row.iter().enumerate() {
        if let Some(e) = email
            && !emails.contains(e)
            && !errors.0.contains_key(&i)
        {
            errors.add(
                i,
                "email",
                format!("no receiver with the address \"{e}\" in this import"),
            );
        }
    }
    let mut order_stats = PrepareStats::default();
    let mut rejects = Rejects::new(table);
    rejects.rows = reject_rows(table, &errors, &mut order_stats)?;
    stats.orders_rejected += order_stats.rejected_total();
    let mut out: HashMap<String, Vec<Order>> = HashMap::new();
    for (i, (email, order)) in by_row.iter().zip(orders).enumerate() {
        if let (Some(email), Some(order), false) = (email, order, errors.0.contains_key(&i)) {
            stats.orders_read += 1;
            out.entry(email.to_string()).or_default().push(order);
        }
    }
    Ok((out, rejects))
}

/// Maps and validates one blacklist step's source.
pub fn prepare_blacklist(
    step: &BlacklistStep,
    base_dir: &Path,
) -> Result<PreparedBlacklist, PrepareError> {
    let table = source::read(&step.source, base_dir)?;
    let height = table.frame.height();
    let mut stats = PrepareStats {
        rows_read: (height + table.ragged.len()) as u64,
        ..Default::default()
    };
    let mut errors = Errors::default();
    let emails = map_column(
        &table,
        &step.email,
        ValueKind::Text,
        "email",
        true,
        &mut errors,
    )?;
    let comments = match &step.comment {
        Some(m) => Some(map_column(
            &table,
            m,
            ValueKind::Text,
            "comment",
            false,
            &mut errors,
        )?),
        None => None,
    };
    let rows = table.frame.column(ROW_COL)?.u32()?;
    let files = table.frame.column(FILE_COL)?.u32()?;
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    let mut kept_rows = Vec::new();
    for (i, email) in emails.iter().enumerate() {
        let Some(email) = email else { continue };
        let normalised = match email.trim().strip_prefix("*@") {
            Some(domain) => value::normalize_email(&format!("x@{domain}"))
                .map(|_| format!("*@{}", domain.to_lowercase())),
            None => value::normalize_email(email),
        };
        match normalised {
            Err(reason) => errors.add(i, "email", reason),
            Ok(e) if !seen.insert(e.clone()) => stats.duplicates += 1,
            Ok(e) => {
                entries.push((
                    e,
                    comments
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .unwrap_or("")
                        .to_string(),
                ));
                kept_rows.push((files.get(i).unwrap_or(0), rows.get(i).unwrap_or(0) as u64));
            }
        }
    }
    let mut rejects = Rejects::new(&table);
    rejects.rows = reject_rows(&table, &errors, &mut stats)?;
    Ok(PreparedBlacklist {
        table,
        entries,
        rows: kept_rows,
        rejects,
        stats,
    })
}
