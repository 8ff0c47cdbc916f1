//! Orders: mapped from the receiver rows, or read from their own source and
//! joined to the import by email.

use super::columns::{Errors, map_column, reject_rows};
use super::{PrepareError, PrepareStats, Rejects};
use crate::api::Order;
use crate::hash::{FastMap, KeySet};
use crate::pipeline::{OrderField, OrdersSpec, ValueKind};
use crate::source::Table;
use polars::prelude::*;
use std::sync::Arc;

/// Order lines kept column by column, with the rows of each address: a
/// million lines are a few arrays, not a million structs of five strings.
/// [`Order`]s are made when a receiver's body is.
#[derive(Default)]
pub struct OrderLines {
    cols: Vec<(OrderField, StringChunked)>,
    by_email: FastMap<String, Vec<u32>>,
}

impl OrderLines {
    /// The orders of `email`, in file order.
    pub fn of(&self, email: &str) -> Option<Vec<Order>> {
        let rows = self.by_email.get(email)?;
        Some(
            rows.iter()
                .filter_map(|&i| order_at(&self.cols, i as usize))
                .collect(),
        )
    }
    /// Order lines in all.
    pub fn len(&self) -> usize {
        self.by_email.values().map(Vec::len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.by_email.is_empty()
    }
    /// Row `i` belongs to `email` (when it holds an order).
    fn add(&mut self, email: &str, i: usize) -> bool {
        if !has_order(&self.cols, i) {
            return false;
        }
        match self.by_email.get_mut(email) {
            Some(rows) => rows.push(i as u32),
            None => {
                self.by_email.insert(email.to_string(), vec![i as u32]);
            }
        }
        true
    }
}

type OrderColumns = Vec<(OrderField, StringChunked)>;

fn value(cols: &OrderColumns, f: OrderField, i: usize) -> &str {
    cols.iter()
        .find(|(c, _)| *c == f)
        .and_then(|(_, ca)| ca.get(i))
        .unwrap_or("")
}

/// Whether row `i` holds an order (it has an order id).
fn has_order(cols: &OrderColumns, i: usize) -> bool {
    !value(cols, OrderField::OrderId, i).is_empty()
}

fn order_at(cols: &OrderColumns, i: usize) -> Option<Order> {
    let get = |f| value(cols, f, i).to_string();
    has_order(cols, i).then(|| Order {
        order_id: get(OrderField::OrderId),
        product_id: get(OrderField::ProductId),
        product: get(OrderField::Product),
        price: value(cols, OrderField::Price, i).parse().unwrap_or(0.0),
        currency: get(OrderField::Currency),
        // An order line without a quantity is one item.
        quantity: value(cols, OrderField::Quantity, i).parse().unwrap_or(1),
        mailing_id: get(OrderField::MailingId),
        stamp: value(cols, OrderField::Stamp, i).parse().unwrap_or(0),
    })
}

/// The order fields of every row, mapped and checked (errors by row).
pub(super) fn map_orders(
    table: &Table,
    spec: &OrdersSpec,
    errors: &mut Errors,
) -> Result<OrderLines, PrepareError> {
    let mut cols = Vec::new();
    for (field, m) in &spec.fields {
        cols.push((
            *field,
            map_column(table, m, field.kind(), field.as_str(), false, errors)?,
        ));
    }
    Ok(OrderLines {
        cols,
        ..Default::default()
    })
}

impl OrderLines {
    /// Gives each row in `rows` (row index, address) its order, if it has one;
    /// answers how many did.
    pub(super) fn assign<'a>(&mut self, rows: impl Iterator<Item = (usize, &'a str)>) -> u64 {
        rows.map(|(i, email)| u64::from(self.add(email, i))).sum()
    }
}

/// Orders from their own source, joined to the import by email: read and
/// mapped before the receivers (a receiver is sent with its orders), and
/// an order whose address is not among the step's receivers rejected once
/// every receiver is known ([`JoinedOrders::finish`]).
pub(super) struct JoinedOrders {
    table: Table,
    /// The normalised address of each row (null where it is missing or invalid).
    by_row: StringChunked,
    errors: Errors,
    pub(super) lines: Arc<OrderLines>,
}

impl JoinedOrders {
    pub(super) fn read(spec: &OrdersSpec, table: Table) -> Result<Self, PrepareError> {
        let mut errors = Errors::default();
        let email_mapping = spec.email.clone().unwrap_or_default();
        let by_row = map_column(
            &table,
            &email_mapping,
            ValueKind::Email,
            "email",
            true,
            &mut errors,
        )?;
        let mut lines = map_orders(&table, spec, &mut errors)?;
        let valid = by_row
            .iter()
            .enumerate()
            .filter(|(i, _)| !errors.0.contains_key(i))
            .filter_map(|(i, e)| Some((i, e?)));
        lines.assign(valid);
        Ok(JoinedOrders {
            table,
            by_row,
            errors,
            lines: Arc::new(lines),
        })
    }

    /// The rejects, once `receivers` holds every address the step sends.
    pub(super) fn finish(
        mut self,
        receivers: &KeySet,
        rejects_bom: Option<bool>,
        stats: &mut PrepareStats,
    ) -> Result<Rejects, PrepareError> {
        let mut accepted = 0;
        for (i, email) in self.by_row.iter().enumerate() {
            let Some(e) = email else { continue };
            if self.errors.0.contains_key(&i) {
                continue;
            }
            if receivers.contains(e) {
                accepted += u64::from(has_order(&self.lines.cols, i));
            } else {
                self.errors.add(
                    i,
                    "email",
                    e,
                    format!("no receiver with the address \"{e}\" in this import"),
                );
            }
        }
        let mut order_stats = PrepareStats::default();
        let mut rejects = Rejects::new(&self.table, rejects_bom);
        rejects.rows = reject_rows(&self.table, &self.errors, &mut order_stats)?;
        stats.orders_rejected += order_stats.rejected_total();
        stats.orders_read += (self.table.frame.height() + self.table.ragged.len()) as u64;
        stats.orders_accepted += accepted;
        Ok(rejects)
    }
}
