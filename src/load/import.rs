//! An import step against the target: resolve the group and attributes,
//! set blocked addresses aside, compare each row with the receiver the
//! target holds, and create or update only what differs, with bounded
//! concurrency. A dry run stops before writing and lists the plan instead.

use super::target::Connected;
use super::{Action, LoadError, PlanRow, WriteOptions, plan, progress_bar, retry};
use crate::api::{Order, Receiver, ReceiverInput};
use crate::pipeline::ImportStep;
use crate::prepare::{PreparedImport, PreparedRows};
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// What an import step did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportOutcome {
    pub group_id: Option<String>,
    pub group_created: bool,
    pub attributes_created: Vec<String>,
    pub blocked: u64,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub retries: u64,
    pub orders_sent: u64,
}

/// Reduces `input` to what differs from `have`; `None` when nothing does.
fn changes(mut input: ReceiverInput, have: &Receiver) -> Option<ReceiverInput> {
    let mut changed = false;
    let mut differs = |same: bool| changed |= !same;
    differs(input.registered.is_none_or(|v| v == have.registered));
    differs(input.activated.is_none_or(|v| v == have.activated));
    differs(input.deactivated.is_none_or(|v| v == have.deactivated));
    differs(input.imported.is_none_or(|v| v == have.imported));
    differs(input.bounced.is_none_or(|v| v == have.bounced));
    differs(input.points.is_none_or(|v| v == have.points));
    differs(input.source.as_ref().is_none_or(|v| *v == have.source));
    differs(input.last_ip.as_ref().is_none_or(|v| *v == have.last_ip));
    differs(
        input
            .last_location
            .as_ref()
            .is_none_or(|v| *v == have.last_location),
    );
    differs(
        input
            .last_client
            .as_ref()
            .is_none_or(|v| *v == have.last_client),
    );
    differs(
        input
            .attributes
            .iter()
            .flatten()
            .all(|(k, v)| have.attributes.get(k) == Some(v)),
    );
    differs(
        input
            .global_attributes
            .iter()
            .flatten()
            .all(|(k, v)| have.global_attributes.get(k) == Some(v)),
    );
    let have_tags: HashSet<&str> = have.tags.iter().flatten().map(String::as_str).collect();
    differs(
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
        differs(new.is_empty());
        input.orders = (!new.is_empty()).then_some(new);
    }
    changed.then_some(input)
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

enum RowResult {
    Done(Action),
    Failed { index: usize, reason: String },
}

/// Runs one import step. Failed rows are added to `prepared.rejects`;
/// dry runs fill `plan`.
pub async fn run(
    conn: &Connected,
    step: &ImportStep,
    prepared: &mut PreparedImport,
    opts: &WriteOptions,
    plan_rows: &mut Vec<PlanRow>,
) -> Result<ImportOutcome, LoadError> {
    let mut out = ImportOutcome::default();
    let group = plan::group(conn, &step.group, step.create_group, opts.dry_run).await?;
    out.group_created =
        matches!(&step.group, crate::pipeline::GroupRef::Name(_)) && group.is_none();
    out.group_id = group.as_ref().map(|g| g.id.to_string());
    out.attributes_created = plan::attributes(
        conn,
        group.as_ref(),
        &step.global_attributes,
        &step.attributes,
        opts.dry_run,
    )
    .await?;

    let frame = prepared.frame.clone();
    let cols = PreparedRows::new(step, &frame).map_err(|e| LoadError::Step(e.to_string()))?;
    let n = frame.height();
    let emails: Vec<String> = (0..n).map(|i| cols.email(i)).collect();
    let blocked = plan::blocked(
        conn,
        group.as_ref(),
        emails.clone(),
        opts.concurrency,
        opts.retries,
    )
    .await?;
    let existing: HashMap<String, Receiver> = match &group {
        Some(g) => plan::existing(conn, g, opts.concurrency, opts.retries).await?,
        None => HashMap::new(),
    };

    let retried = AtomicU64::new(0);
    let orders_sent = AtomicU64::new(0);
    let bar = progress_bar(opts, n as u64, &step.name);
    let gid = group.as_ref().map(|g| g.id);
    let results: Vec<(usize, RowResult)> = futures::stream::iter(0..n)
        .map(|i| {
            let (cols, emails, blocked, existing, retried, orders_sent, orders, bar) = (
                &cols,
                &emails,
                &blocked,
                &existing,
                &retried,
                &orders_sent,
                &prepared.orders,
                &bar,
            );
            async move {
                let email = &emails[i];
                let result = if blocked.contains(email) {
                    RowResult::Done(Action::Blocked)
                } else {
                    let input = cols.input(i, orders.get(email));
                    let (action, body) = match existing.get(email) {
                        None => (Action::Create, Some(input)),
                        Some(have) => match changes(input, have) {
                            Some(diff) => (Action::Update, Some(diff)),
                            None => (Action::Unchanged, None),
                        },
                    };
                    match (body, gid, opts.dry_run) {
                        (Some(body), Some(g), false) => {
                            let sent = body.orders.as_ref().map_or(0, Vec::len) as u64;
                            match write(conn, g, email, action, &body, opts.retries, retried).await
                            {
                                Ok(a) => {
                                    orders_sent.fetch_add(sent, Ordering::Relaxed);
                                    RowResult::Done(a)
                                }
                                Err(reason) => RowResult::Failed { index: i, reason },
                            }
                        }
                        _ => RowResult::Done(action),
                    }
                };
                bar.inc(1);
                (i, result)
            }
        })
        .buffer_unordered(opts.concurrency.max(1))
        .collect()
        .await;
    bar.finish_and_clear();

    let mut failed_rows = Vec::new();
    for (i, r) in results {
        let action = match r {
            RowResult::Done(a) => a,
            RowResult::Failed { index, reason } => {
                failed_rows.push((index, reason.clone()));
                if opts.dry_run {
                    continue;
                }
                Action::Failed
            }
        };
        match action {
            Action::Create => out.created += 1,
            Action::Update => out.updated += 1,
            Action::Unchanged => out.unchanged += 1,
            Action::Blocked => out.blocked += 1,
            Action::Failed => out.failed += 1,
            Action::Invalid | Action::Duplicate => {}
        }
        if opts.dry_run {
            let detail = match action {
                Action::Create if gid.is_none() => "group will be created".to_string(),
                _ => String::new(),
            };
            plan_rows.push(PlanRow {
                row_number: cols.row_number(i),
                email: emails[i].clone(),
                action,
                detail,
            });
        }
    }
    for (index, reason) in failed_rows {
        let (file, row) = (cols.file(index), cols.row_number(index));
        prepared.rejects.rows.push(crate::prepare::reject_for(
            &prepared.table,
            file,
            row,
            "email",
            reason,
        ));
    }
    out.retries = retried.load(Ordering::Relaxed);
    out.orders_sent = orders_sent.load(Ordering::Relaxed);
    Ok(out)
}

/// Sends one receiver. A create that meets an existing address (another
/// writer, or a retried create that had succeeded) becomes an update.
async fn write(
    conn: &Connected,
    g: crate::api::Id,
    email: &str,
    action: Action,
    body: &ReceiverInput,
    retries: u32,
    retried: &AtomicU64,
) -> Result<Action, String> {
    let c = &conn.client;
    if action == Action::Create {
        match retry::retrying(conn, retries, retried, || c.create_receiver(g, body)).await {
            Ok(_) => return Ok(Action::Create),
            Err(e) if e.status() == Some(409) => {}
            Err(e) => return Err(e.server_message()),
        }
    }
    retry::retrying(conn, retries, retried, || c.update_receiver(g, email, body))
        .await
        .map(|_| Action::Update)
        .map_err(|e| e.server_message())
}
