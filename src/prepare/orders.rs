//! Orders: mapped from the receiver rows, or read from their own source and
//! joined to the import by email.

use super::columns::{Errors, map_column, reject_rows};
use super::{PrepareError, PrepareStats, Rejects};
use crate::api::Order;
use crate::hash::{Key128, KeySet};
use crate::pipeline::{OrderField, OrdersSpec, ValueKind};
use crate::source::{RejectRow, SourceSpec, Table};
use polars::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// Separates the fields of a line in [`OrderLines::text`].
const UNIT: char = '\u{1f}';

/// Order lines as one text of their mapped fields, and an index from each
/// address's 128-bit key to its lines: a line costs its text and 32 bytes
/// of index, not a struct of strings or a copy of its address. [`Order`]s
/// are made when a receiver's body is.
#[derive(Default)]
pub struct OrderLines {
    keys: Key128,
    /// Every line's fields in [`OrderField::ALL`] order, each ended by [`UNIT`].
    text: String,
    /// Where each line ends in `text`.
    ends: Vec<usize>,
    /// (address key, line), sorted by [`OrderLines::seal`].
    index: Vec<(u128, u32)>,
}

impl OrderLines {
    fn with_keys(keys: Key128) -> Self {
        OrderLines {
            keys,
            ..Default::default()
        }
    }

    /// The orders of `email`, in file order.
    pub fn of(&self, email: &str) -> Option<Vec<Order>> {
        let key = self.keys.of(email);
        let from = self.index.partition_point(|(k, _)| *k < key);
        let lines: Vec<Order> = self.index[from..]
            .iter()
            .take_while(|(k, _)| *k == key)
            .map(|&(_, line)| self.order(line as usize))
            .collect();
        (!lines.is_empty()).then_some(lines)
    }

    /// Order lines in all.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn order(&self, line: usize) -> Order {
        let start = if line == 0 { 0 } else { self.ends[line - 1] };
        let mut fields = self.text[start..self.ends[line]].split(UNIT);
        let mut next = || fields.next().unwrap_or("");
        let (order_id, product_id, product, price, currency, quantity, mailing_id, stamp) = (
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
        );
        Order {
            order_id: order_id.to_string(),
            product_id: product_id.to_string(),
            product: product.to_string(),
            price: price.parse().unwrap_or(0.0),
            currency: currency.to_string(),
            // An order line without a quantity is one item.
            quantity: quantity.parse().unwrap_or(1),
            mailing_id: mailing_id.to_string(),
            stamp: stamp.parse().unwrap_or(0),
        }
    }

    /// Gives each row in `rows` (row index in `mapped`, address) its order,
    /// if it has one; answers how many did.
    fn add<'a>(
        &mut self,
        mapped: &MappedOrders,
        rows: impl Iterator<Item = (usize, &'a str)>,
    ) -> u64 {
        let mut added = 0;
        for (i, email) in rows {
            if !mapped.has_order(i) {
                continue;
            }
            for f in OrderField::ALL {
                self.text.push_str(mapped.value(f, i));
                self.text.push(UNIT);
            }
            self.index
                .push((self.keys.of(email), self.ends.len() as u32));
            self.ends.push(self.text.len());
            added += 1;
        }
        added
    }

    /// Ready for [`OrderLines::of`]: the index sorted (lines of one address
    /// stay in file order).
    fn seal(mut self) -> Self {
        self.index.sort_unstable();
        self.index.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.text.shrink_to_fit();
        self
    }
}

/// One table's order fields, mapped and checked.
pub(super) struct MappedOrders(Vec<(OrderField, StringChunked)>);

impl MappedOrders {
    fn value(&self, f: OrderField, i: usize) -> &str {
        self.0
            .iter()
            .find(|(c, _)| *c == f)
            .and_then(|(_, ca)| ca.get(i))
            .unwrap_or("")
    }

    /// Whether row `i` holds an order (it has an order id).
    fn has_order(&self, i: usize) -> bool {
        !self.value(OrderField::OrderId, i).is_empty()
    }
}

/// The order fields of every row, mapped and checked (errors by row).
pub(super) fn map_orders(
    table: &Table,
    spec: &OrdersSpec,
    errors: &mut Errors,
) -> Result<MappedOrders, PrepareError> {
    let mut cols = Vec::new();
    for (field, m) in &spec.fields {
        cols.push((
            *field,
            map_column(table, m, field.kind(), field.as_str(), false, errors)?,
        ));
    }
    Ok(MappedOrders(cols))
}

/// The orders of the receiver rows of one (whole) table: `rows` are the
/// row indices kept and their addresses. Answers the lines and their count.
pub(super) fn row_orders<'a>(
    mapped: &MappedOrders,
    rows: impl Iterator<Item = (usize, &'a str)>,
) -> (Arc<OrderLines>, u64) {
    let mut lines = OrderLines::default();
    let n = lines.add(mapped, rows);
    (Arc::new(lines.seal()), n)
}

/// Orders from their own source, joined to the import by email: read chunk
/// by chunk and mapped before the receivers (a receiver is sent with its
/// orders), keeping each line's fields and not its source row; an order
/// whose address is not among the step's receivers is rejected once every
/// receiver is known ([`JoinedOrders::finish`]), its row read again then.
pub(super) struct JoinedOrders {
    source: SourceSpec,
    /// How the source's address column is mapped.
    email: crate::pipeline::Mapping,
    pub(super) lines: Arc<OrderLines>,
    /// Every row with a valid address: its address key and its index among
    /// the source's rows.
    addressed: Vec<(u128, u64)>,
    /// Rows refused while mapping.
    rejected: Vec<RejectRow>,
    stats: PrepareStats,
    rejects: Option<Rejects>,
    files: usize,
    /// Rows per chunk, both reads alike.
    chunk_rows: usize,
}

impl JoinedOrders {
    /// Reads and maps the orders source; `keys` makes the same address keys
    /// as the step's receivers (see [`KeySet::with_keys`]).
    pub(super) fn read(
        spec: &OrdersSpec,
        source: &SourceSpec,
        base_dir: &Path,
        keys: Key128,
        rejects_bom: Option<bool>,
        chunk_rows: usize,
    ) -> Result<Self, PrepareError> {
        let mut lines = OrderLines::with_keys(keys.clone());
        let email_mapping = spec.email.clone().unwrap_or_default();
        let mut joined = JoinedOrders {
            source: source.clone(),
            email: email_mapping.clone(),
            lines: Arc::default(),
            addressed: Vec::new(),
            rejected: Vec::new(),
            stats: PrepareStats::default(),
            rejects: None,
            files: 0,
            chunk_rows,
        };
        let mut seen_rows = 0u64;
        super::read_chunks(source, base_dir, chunk_rows, &mut |table| {
            let mut errors = Errors::default();
            let by_row = map_column(
                &table,
                &email_mapping,
                ValueKind::Email,
                "email",
                true,
                &mut errors,
            )?;
            let mapped = map_orders(&table, spec, &mut errors)?;
            let valid: Vec<(usize, &str)> = by_row
                .iter()
                .enumerate()
                .filter(|(i, _)| !errors.0.contains_key(i))
                .filter_map(|(i, e)| Some((i, e?)))
                .collect();
            for &(i, e) in &valid {
                joined.addressed.push((keys.of(e), seen_rows + i as u64));
            }
            lines.add(&mapped, valid.into_iter());
            joined.stats.orders_read += (table.frame.height() + table.ragged.len()) as u64;
            let rows = reject_rows(&table, &errors, &mut joined.stats)?;
            joined.rejected.extend(rows);
            joined
                .rejects
                .get_or_insert_with(|| Rejects::new(&table, rejects_bom));
            joined.files = table.files.len();
            seen_rows += table.frame.height() as u64;
            Ok(true)
        })?;
        joined.lines = Arc::new(lines.seal());
        Ok(joined)
    }

    /// The rejects, once `receivers` holds every address the step sends.
    pub(super) fn finish(
        mut self,
        receivers: &KeySet,
        base_dir: &Path,
        stats: &mut PrepareStats,
    ) -> Result<Rejects, PrepareError> {
        let mut accepted = 0;
        let lines = &self.lines;
        for (key, _) in &lines.index {
            accepted += u64::from(receivers.contains_key(*key));
        }
        let mut orphans: Vec<u64> = self
            .addressed
            .iter()
            .filter(|(key, _)| !receivers.contains_key(*key))
            .map(|(_, row)| *row)
            .collect();
        orphans.sort_unstable();
        if !orphans.is_empty() {
            self.reject_orphans(&orphans, base_dir)?;
        }
        let mut rejects = self.rejects.take().ok_or(PrepareError::Stopped)?;
        rejects.multi_file = self.files > 1;
        self.rejected
            .sort_by(|a, b| (&a.file, a.row_number).cmp(&(&b.file, b.row_number)));
        rejects.rows = self.rejected;
        stats.orders_rejected += self.stats.rejected_total();
        stats.orders_read += self.stats.orders_read;
        stats.orders_accepted += accepted;
        Ok(rejects)
    }

    /// Reads the source again for the rows at `orphans` (sorted indices):
    /// their rejects, "no receiver with the address".
    fn reject_orphans(&mut self, orphans: &[u64], base_dir: &Path) -> Result<(), PrepareError> {
        let mut seen_rows = 0u64;
        let (email, rejected, stats) = (&self.email, &mut self.rejected, &mut self.stats);
        super::read_chunks(&self.source, base_dir, self.chunk_rows, &mut |mut table| {
            let height = table.frame.height() as u64;
            let from = orphans.partition_point(|&r| r < seen_rows);
            let here: Vec<usize> = orphans[from..]
                .iter()
                .take_while(|&&r| r < seen_rows + height)
                .map(|&r| (r - seen_rows) as usize)
                .collect();
            seen_rows += height;
            if here.is_empty() {
                return Ok(true);
            }
            // The mapping's own errors and the ragged rows were counted
            // on the first read.
            let by_row = map_column(
                &table,
                email,
                ValueKind::Email,
                "email",
                true,
                &mut Errors::default(),
            )?;
            let mut errors = Errors::default();
            for i in here.iter().copied() {
                if let Some(e) = by_row.get(i) {
                    errors.add(
                        i,
                        "email",
                        e,
                        format!("no receiver with the address \"{e}\" in this import"),
                    );
                }
            }
            table.ragged.clear();
            rejected.extend(reject_rows(&table, &errors, stats)?);
            Ok(true)
        })
    }
}
