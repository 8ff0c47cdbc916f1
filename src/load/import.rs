//! An import step against the target: resolve the group and attributes,
//! set blocked addresses aside, compare each row with the receiver the
//! target holds, and create or update only what differs, with bounded
//! concurrency. A dry run stops before writing and lists the plan instead.

use super::target::Connected;
use super::{Action, LoadError, PlanRow, WriteOptions, plan, progress_bar, retry};
use crate::api::{Order, Receiver, ReceiverInput};
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
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

/// Reduces `input` to what differs from `have`, with the names of what
/// differs; `None` when nothing does.
fn changes(
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

enum RowResult {
    /// What was done, and for the plan what differs (or why not).
    Done(Action, String),
    Failed {
        index: usize,
        reason: String,
    },
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
    let (group, created) = plan::group(conn, &step.group, step.create_group, opts.dry_run).await?;
    out.group_created = created;
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

    // Timestamps given as `value = "now"` mean "when first imported": they
    // are sent on create only, so a later run does not move them.
    let create_only: Vec<ReceiverField> = step
        .fields
        .iter()
        .filter(|(_, m)| matches!(&m.from, ValueFrom::Constant(v) if v.eq_ignore_ascii_case("now")))
        .map(|(f, _)| *f)
        .collect();
    // Consent is never invented: a step that maps none of the state
    // timestamps creates receivers registered (awaiting activation), not active.
    let consent_unknown = !step.fields.iter().any(|(f, _)| {
        matches!(
            f,
            ReceiverField::Registered | ReceiverField::Activated | ReceiverField::Deactivated
        )
    });
    let run_time = chrono::Utc::now().timestamp();
    let (create_only, consent_unknown) = (&create_only, consent_unknown);
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
                    RowResult::Done(
                        Action::Blocked,
                        "on the blacklist or the group's blocklist".into(),
                    )
                } else {
                    let mut input = cols.input(i, orders.get(email));
                    let (action, body, detail) = match existing.get(email) {
                        None => {
                            if consent_unknown {
                                input.registered = Some(run_time);
                            }
                            (Action::Create, Some(input), String::new())
                        }
                        Some(have) => {
                            create_only.iter().for_each(|f| clear(&mut input, *f));
                            match changes(input, have) {
                                Some((diff, fields)) => {
                                    (Action::Update, Some(diff), fields.join(" "))
                                }
                                None => (Action::Unchanged, None, String::new()),
                            }
                        }
                    };
                    match (body, gid, opts.dry_run) {
                        (Some(body), Some(g), false) => {
                            let sent = body.orders.as_ref().map_or(0, Vec::len) as u64;
                            match write(conn, g, email, action, &body, opts.retries, retried).await
                            {
                                Ok(a) => {
                                    orders_sent.fetch_add(sent, Ordering::Relaxed);
                                    RowResult::Done(a, detail)
                                }
                                Err(reason) => RowResult::Failed { index: i, reason },
                            }
                        }
                        _ => RowResult::Done(action, detail),
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
        let (action, detail) = match r {
            RowResult::Done(a, detail) => (a, detail),
            RowResult::Failed { index, reason } => {
                failed_rows.push((index, reason.clone()));
                (Action::Failed, reason)
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
                Action::Create if gid.is_none() => "the group will be created".to_string(),
                _ => detail,
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

/// Leaves field `f` out of a receiver body.
fn clear(input: &mut ReceiverInput, f: ReceiverField) {
    match f {
        ReceiverField::Registered => input.registered = None,
        ReceiverField::Activated => input.activated = None,
        ReceiverField::Deactivated => input.deactivated = None,
        ReceiverField::Imported => input.imported = None,
        ReceiverField::Bounced => input.bounced = None,
        _ => {}
    }
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
