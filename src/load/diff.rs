//! What an import row sends: the difference between the row and the
//! receiver the target holds.

use crate::api::{Order, Receiver, ReceiverInput};
use crate::pipeline::ReceiverField;
use std::collections::HashSet;

/// Reduces `input` to what differs from `have`, with the names of what
/// differs; `None` when nothing does.
pub fn changes(
    mut input: ReceiverInput,
    have: &Receiver,
) -> Option<(ReceiverInput, Vec<&'static str>)> {
    let mut changed: Vec<&'static str> = Vec::new();
    let mut check = |name: &'static str, same: bool| {
        if !same {
            changed.push(name);
        }
    };
    check(
        "registered",
        input.registered.is_none_or(|v| v == have.registered),
    );
    check(
        "activated",
        input.activated.is_none_or(|v| v == have.activated),
    );
    check(
        "deactivated",
        input.deactivated.is_none_or(|v| v == have.deactivated),
    );
    check(
        "imported",
        input.imported.is_none_or(|v| v == have.imported),
    );
    check("bounced", input.bounced.is_none_or(|v| v == have.bounced));
    check("points", input.points.is_none_or(|v| v == have.points));
    check(
        "source",
        input.source.as_ref().is_none_or(|v| *v == have.source),
    );
    check(
        "last_ip",
        input.last_ip.as_ref().is_none_or(|v| *v == have.last_ip),
    );
    check(
        "last_location",
        input
            .last_location
            .as_ref()
            .is_none_or(|v| *v == have.last_location),
    );
    check(
        "last_client",
        input
            .last_client
            .as_ref()
            .is_none_or(|v| *v == have.last_client),
    );
    check(
        "attributes",
        input
            .attributes
            .iter()
            .flatten()
            .all(|(k, v)| have.attributes.get(k) == Some(v)),
    );
    check(
        "global_attributes",
        input
            .global_attributes
            .iter()
            .flatten()
            .all(|(k, v)| have.global_attributes.get(k) == Some(v)),
    );
    let have_tags: HashSet<&str> = have.tags.iter().flatten().map(String::as_str).collect();
    check(
        "tags",
        input
            .tags
            .iter()
            .flatten()
            .all(|t| have_tags.contains(t.as_str())),
    );
    // Only orders the target lacks (or holds differently) are sent.
    if let Some(orders) = input.orders.take() {
        let have_orders = have.orders.as_deref().unwrap_or_default();
        let new: Vec<Order> = orders
            .into_iter()
            .filter(|o| !have_orders.iter().any(|h| same_order(h, o)))
            .collect();
        check("orders", new.is_empty());
        input.orders = (!new.is_empty()).then_some(new);
    }
    (!changed.is_empty()).then_some((input, changed))
}

fn same_order(a: &Order, b: &Order) -> bool {
    a.order_id == b.order_id
        && a.product_id == b.product_id
        && a.product == b.product
        && (a.price - b.price).abs() < 1e-9
        && a.currency == b.currency
        && a.quantity == b.quantity
        && a.mailing_id == b.mailing_id
        && (b.stamp == 0 || a.stamp == b.stamp)
}

/// Leaves field `f` out of a receiver body.
pub fn clear(input: &mut ReceiverInput, f: ReceiverField) {
    match f {
        ReceiverField::Registered => input.registered = None,
        ReceiverField::Activated => input.activated = None,
        ReceiverField::Deactivated => input.deactivated = None,
        ReceiverField::Imported => input.imported = None,
        ReceiverField::Bounced => input.bounced = None,
        _ => {}
    }
}
