//! A blacklist step against the target: entries the target lacks (or holds
//! with another comment) go to the account blacklist in batches of at most
//! 1,000, or one by one to a group's blocklist. A batch the server refuses
//! is split so one bad entry cannot sink a thousand good ones.

use super::target::Connected;
use super::{Action, BATCH, LoadError, PlanRow, WriteOptions, progress_bar, retry};
use crate::api::blacklist::BlacklistInput;
use crate::pipeline::BlacklistStep;
use crate::prepare::PreparedBlacklist;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BlacklistOutcome {
    pub added: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub retries: u64,
    pub requests: u64,
    /// The largest batch sent (never over 1,000).
    pub largest_batch: u64,
}

pub async fn run(
    conn: &Connected,
    step: &BlacklistStep,
    prepared: &mut PreparedBlacklist,
    opts: &WriteOptions,
    plan_rows: &mut Vec<PlanRow>,
) -> Result<BlacklistOutcome, LoadError> {
    let c = &conn.client;
    let group = match &step.group {
        None => None,
        Some(g) => Some(
            super::plan::group(
                conn,
                g,
                false,
                opts.dry_run,
                opts.retries,
                &AtomicU64::new(0),
            )
            .await?
            .0
            .ok_or_else(|| LoadError::step(format!("the blocklist's {g} does not exist")))?,
        ),
    };
    let existing: HashMap<String, String> = match &group {
        None => c
            .blacklist()
            .await?
            .into_iter()
            .map(|e| (e.email.to_lowercase(), e.comment))
            .collect(),
        Some(g) => c
            .group_blocklist(g.id)
            .await?
            .into_iter()
            .map(|e| (e.email.to_lowercase(), e.comment))
            .collect(),
    };
    let mut out = BlacklistOutcome::default();
    let mut todo: Vec<Item> = Vec::new();
    for ((email, comment), row) in prepared.entries.iter().zip(&prepared.rows) {
        let action = match existing.get(email) {
            None => Action::Create,
            // A group blocklist has no comments to compare.
            Some(_) if group.is_some() => Action::Unchanged,
            Some(have) if have == comment || comment.is_empty() => Action::Unchanged,
            Some(_) => Action::Update,
        };
        if opts.dry_run {
            plan_rows.push(PlanRow {
                row_number: row.1,
                email: email.clone(),
                action,
                detail: String::new(),
            });
        }
        match action {
            Action::Unchanged => out.unchanged += 1,
            _ => todo.push((
                *row,
                BlacklistInput::new(email.clone(), comment.clone()),
                action,
            )),
        }
    }
    if opts.dry_run {
        for (_, _, action) in &todo {
            if *action == Action::Create {
                out.added += 1
            } else {
                out.updated += 1
            }
        }
        return Ok(out);
    }

    let retried = AtomicU64::new(0);
    let bar = progress_bar(opts, todo.len() as u64, &step.name);
    let mut failures: Vec<((u32, u64), String, String)> = Vec::new();
    match &group {
        None => {
            for chunk in todo.chunks(BATCH) {
                if conn.breaker.is_open() {
                    break;
                }
                let (done, failed) =
                    send_batch(conn, chunk, opts.retries, &retried, &mut out).await;
                for (_, _, action) in done {
                    if *action == Action::Create {
                        out.added += 1
                    } else {
                        out.updated += 1
                    }
                }
                failures.extend(failed);
                bar.inc(chunk.len() as u64);
            }
        }
        Some(g) => {
            let results: Vec<_> = futures::stream::iter(todo.iter())
                .map(|(row, item, _)| {
                    let (retried, bar) = (&retried, &bar);
                    let email = item.email.clone().unwrap_or_default();
                    async move {
                        let r = retry::retrying(conn, opts.retries, retried, || {
                            c.add_to_group_blocklist(g.id, &email)
                        })
                        .await;
                        bar.inc(1);
                        (*row, email, r)
                    }
                })
                .buffer_unordered(opts.concurrency.max(1))
                .collect()
                .await;
            for (row, email, r) in results {
                out.requests += 1;
                match r {
                    Ok(_) => out.added += 1,
                    Err(e) => failures.push((row, email, e.server_message())),
                }
            }
        }
    }
    bar.finish_and_clear();
    out.failed = failures.len() as u64;
    out.retries = retried.load(Ordering::Relaxed);
    // The target stopped answering: what failed is not the rows' fault.
    if let Some(stopped) = conn.breaker.stopped() {
        return Err(stopped.into());
    }
    let lookup = crate::prepare::RejectLookup::new(&prepared.table);
    for ((file, row), _email, reason) in failures {
        prepared
            .rejects
            .rows
            .push(lookup.reject(file, row, "email", reason));
    }
    Ok(out)
}

type Item = ((u32, u64), BlacklistInput, Action);

/// Sends one batch; on a refusal (400/413) splits it in halves down to
/// single entries, so only the entries the server refuses fail.
async fn send_batch<'a>(
    conn: &Connected,
    chunk: &'a [Item],
    retries: u32,
    retried: &AtomicU64,
    out: &mut BlacklistOutcome,
) -> (Vec<&'a Item>, Vec<((u32, u64), String, String)>) {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let mut stack: Vec<&'a [Item]> = vec![chunk];
    while let Some(part) = stack.pop() {
        let items: Vec<BlacklistInput> = part.iter().map(|(_, i, _)| i.clone()).collect();
        out.requests += 1;
        out.largest_batch = out.largest_batch.max(items.len() as u64);
        match retry::retrying(conn, retries, retried, || {
            conn.client.blacklist_batch(&items)
        })
        .await
        {
            Ok(_) => done.extend(part.iter()),
            Err(e) if matches!(e.status(), Some(400 | 413)) && part.len() > 1 => {
                let (a, b) = part.split_at(part.len() / 2);
                stack.push(b);
                stack.push(a);
            }
            Err(e) => failed.extend(part.iter().map(|(row, i, _)| {
                (
                    *row,
                    i.email.clone().unwrap_or_default(),
                    e.server_message(),
                )
            })),
        }
    }
    (done, failed)
}
