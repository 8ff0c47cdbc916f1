//! Orders: the order lines a chunk's receivers are sent with, and their
//! fields mapped from a table (the receiver rows, or an orders source of
//! its own, joined to the receivers in [`super::joined`]).
//!
//! Orders on the receiver rows of a source read in chunks: a receiver is
//! sent with the lines of every valid row of its address, wherever they
//! are in the file (a duplicate row's lines join the receiver kept, maybe
//! chunks earlier). A first read notes every valid row's line under its
//! address ([`RowOrders::note`], in an order [`Store`]: memory, then disk
//! past `LISTPIPE_SPILL_AFTER` lines); each chunk's receivers then take
//! theirs ([`RowOrders::take`]), as receivers take a joined source's.

use super::PrepareError;
use super::columns::{Errors, map_column};
use super::order_store::{Entries, Store, UNIT};
use crate::pipeline::{OrderField, OrdersSpec};
use crate::source::Table;
use listpipe_api::Order;
use listpipe_base::hash::Key128;
use polars::prelude::*;
use std::sync::Arc;

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
    pub(super) fn with_keys(keys: Key128) -> Self {
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
        let mut fields = self.text_of(line).split(UNIT);
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
            for field in mapped.fields(i) {
                self.text.push_str(field);
                self.text.push(UNIT);
            }
            self.index
                .push((self.keys.of(email), self.ends.len() as u32));
            self.ends.push(self.text.len());
            added += 1;
        }
        added
    }

    /// The address keys this index uses.
    pub(super) fn keys(&self) -> &Key128 {
        &self.keys
    }

    /// Each address key's lines (their texts, fields ended by [`UNIT`]), in key order and,
    /// within a key, in file order.
    pub(super) fn groups(&self) -> impl Iterator<Item = (u128, Vec<&str>)> {
        self.index.chunk_by(|a, b| a.0 == b.0).map(|run| {
            (
                run[0].0,
                run.iter().map(|&(_, l)| self.text_of(l as usize)).collect(),
            )
        })
    }

    fn text_of(&self, line: usize) -> &str {
        let start = if line == 0 { 0 } else { self.ends[line - 1] };
        &self.text[start..self.ends[line]]
    }

    /// Adds a line under an address key: `text` is its fields in
    /// [`OrderField::ALL`] order, each ended by [`UNIT`].
    pub(super) fn push(&mut self, key: u128, text: &str) {
        self.text.push_str(text);
        self.index.push((key, self.ends.len() as u32));
        self.ends.push(self.text.len());
    }

    /// Ready for [`OrderLines::of`]: the index sorted (lines of one address
    /// stay in file order).
    pub(super) fn seal(mut self) -> Self {
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

    /// Row `i`'s fields in [`OrderField::ALL`] order.
    pub(super) fn fields(&self, i: usize) -> impl Iterator<Item = &str> {
        OrderField::ALL.into_iter().map(move |f| self.value(f, i))
    }

    /// Whether row `i` holds an order (it has an order id).
    pub(super) fn has_order(&self, i: usize) -> bool {
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

/// Every valid receiver row's order line under its address, from a first
/// read of the source (see the module).
pub(super) struct RowOrders {
    keys: Key128,
    store: Store,
    spill_after: usize,
}

impl RowOrders {
    /// None noted yet; `spill_after` lines in memory at most.
    pub(super) fn new(spill_after: usize) -> Self {
        RowOrders {
            keys: Key128::default(),
            store: Store::default(),
            spill_after,
        }
    }

    /// Notes a chunk's lines: `rows` are its valid rows (index in `mapped`,
    /// normalised address), in source order, after every chunk before it.
    pub(super) fn note<'a>(
        &mut self,
        mapped: &MappedOrders,
        rows: impl Iterator<Item = (usize, &'a str)>,
    ) -> Result<(), PrepareError> {
        let mut entries = Entries::default();
        for (i, email) in rows.filter(|(i, _)| mapped.has_order(*i)) {
            // The row index is the joined source's, for its orphans: none here.
            entries.push(self.keys.of(email), 0, mapped.fields(i));
        }
        self.store.append(entries, self.spill_after)?;
        Ok(())
    }

    /// Ready for [`RowOrders::take`] once every chunk is noted.
    pub(super) fn seal(&mut self) {
        self.store.seal();
    }

    /// The order lines of a chunk's receivers (`emails`, normalised, each
    /// once in the whole import), each address's in file order.
    pub(super) fn take<'a>(
        &self,
        emails: impl Iterator<Item = &'a str>,
    ) -> Result<Arc<OrderLines>, PrepareError> {
        lines_of(&self.store, &self.keys, emails, |_| {})
    }
}

/// The order lines `store` holds for a chunk's receivers (`emails`,
/// normalised), each address's in file order; `row` is told the row index
/// of every entry read, with or without a line. Asked in key order:
/// neighbours in the index, and in a spill's pages.
pub(super) fn lines_of<'a>(
    store: &Store,
    keys: &Key128,
    emails: impl Iterator<Item = &'a str>,
    mut row: impl FnMut(u64),
) -> Result<Arc<OrderLines>, PrepareError> {
    let mut wanted: Vec<u128> = emails.map(|e| keys.of(e)).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut lines = OrderLines::with_keys(keys.clone());
    for key in wanted {
        store.for_each(key, |at, text| {
            row(at);
            if !text.is_empty() {
                lines.push(key, text);
            }
        })?;
    }
    Ok(Arc::new(lines.seal()))
}

/// How many of `rows` (row index in `mapped`) hold an order.
pub(super) fn count_orders(mapped: &MappedOrders, rows: impl Iterator<Item = usize>) -> u64 {
    rows.filter(|&i| mapped.has_order(i)).count() as u64
}
