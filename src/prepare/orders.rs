//! Orders: mapped from the receiver rows, or read from their own source and
//! joined to the import by email.

use super::columns::{Errors, map_column, reject_rows};
use super::{PrepareError, PrepareStats, Rejects};
use crate::api::Order;
use crate::hash::{FastMap, FastSet};
use crate::pipeline::{OrderField, OrdersSpec, ValueKind};
use crate::source::Table;
use polars::prelude::*;

/// One `Option<Order>` per row (None where the row has no order id).
pub(super) fn map_orders(
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
                // An order line without a quantity is one item.
                quantity: get(OrderField::Quantity, i).parse().unwrap_or(1),
                mailing_id: get(OrderField::MailingId, i),
                stamp: get(OrderField::Stamp, i).parse().unwrap_or(0),
            })
        })
        .collect())
}

/// Orders from their own source, joined to the import by email. An order
/// whose address is not among the step's receivers is rejected.
pub(super) fn prepare_joined_orders(
    spec: &OrdersSpec,
    table: &Table,
    emails: &FastSet<String>,
    stats: &mut PrepareStats,
) -> Result<(FastMap<String, Vec<Order>>, Rejects), PrepareError> {
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
    stats.orders_read += (table.frame.height() + table.ragged.len()) as u64;
    let mut out: FastMap<String, Vec<Order>> = FastMap::default();
    for (i, (email, order)) in by_row.iter().zip(orders).enumerate() {
        if let (Some(email), Some(order), false) = (email, order, errors.0.contains_key(&i)) {
            stats.orders_accepted += 1;
            out.entry(email.to_string()).or_default().push(order);
        }
    }
    Ok((out, rejects))
}
