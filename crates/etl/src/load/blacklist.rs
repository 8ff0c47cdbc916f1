//! A blacklist step against the target: entries the target lacks (or holds
//! with another comment) go to the account blacklist in batches of at most
//! 1,000, or one by one to a group's blocklist. A batch the server refuses
//! is split so one bad entry cannot sink a thousand good ones.
//!
//! The source comes in chunks ([`BlacklistChunk`]); what the target holds
//! is read once (its blacklist has no pages) and kept as 128-bit keys of
//! the addresses with a hash of each comment, 32 bytes an entry. Batches
//! span chunks: the entries short of a full batch wait for the next chunk,
//! with their reject lines made ready (the chunk's rows are gone by then).

use super::{Action, BATCH, LoadError, PlanRow, WriteOptions, progress_bar, retry};
use crate::pipeline::BlacklistStep;
use crate::prepare::{BlacklistChunk, RejectLookup};
use crate::source::RejectRow;
use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_api::Group;
use listpipe_api::blacklist::{BlacklistEntry, BlacklistInput};
use listpipe_base::hash::{FastMap, Key128};
use std::hash::{DefaultHasher, Hash, Hasher};
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

/// A comment reduced to what the comparison needs.
fn comment_hash(comment: &str) -> u64 {
    let mut h = DefaultHasher::new();
    comment.hash(&mut h);
    h.finish()
}

/// One blacklist step's writes, chunk by chunk.
pub struct BlacklistLoad<'a> {
    conn: &'a Connected,
    opts: &'a WriteOptions,
    /// The group whose blocklist the step fills; none: the account's blacklist.
    group: Option<Group>,
    keys: Key128,
    /// What the target holds: address key -> hash of its comment.
    existing: FastMap<u128, u64>,
    out: BlacklistOutcome,
    retried: AtomicU64,
    bar: Box<dyn crate::progress::Stage>,
    /// Entries of earlier chunks short of a full batch (fewer than [`BATCH`]),
    /// and their reject lines should the target refuse them.
    carried: Vec<Item>,
    ready: FastMap<(u32, u64), RejectRow>,
}

impl<'a> BlacklistLoad<'a> {
    /// Finds the step's group (if any) and reads what the target holds.
    pub async fn start(
        conn: &'a Connected,
        step: &BlacklistStep,
        opts: &'a WriteOptions,
    ) -> Result<BlacklistLoad<'a>, LoadError> {
        let c = &conn.client;
        let retried = AtomicU64::new(0);
        let group = match &step.group {
            None => None,
            Some(g) => Some(
                super::plan::group(conn, g, false, opts.dry_run, opts.retries, &retried)
                    .await?
                    .0
                    .ok_or_else(|| {
                        LoadError::step(format!("the blocklist's {g} does not exist"))
                    })?,
            ),
        };
        let held: Vec<BlacklistEntry> = match &group {
            None => retry::retrying(conn, opts.retries, &retried, || c.blacklist()).await?,
            Some(g) => {
                retry::retrying(conn, opts.retries, &retried, || c.group_blocklist(g.id)).await?
            }
        };
        let keys = Key128::default();
        let existing = held
            .iter()
            .map(|e| (keys.of(&e.email.to_lowercase()), comment_hash(&e.comment)))
            .collect();
        Ok(BlacklistLoad {
            conn,
            opts,
            group,
            keys,
            existing,
            out: BlacklistOutcome::default(),
            retried,
            bar: progress_bar(opts, &step.name),
            carried: Vec::new(),
            ready: FastMap::default(),
        })
    }

    /// Compares one chunk's entries with the target and writes what
    /// differs; entries the target refuses become `rejects`, a dry run's
    /// actions `plan_rows`.
    pub async fn chunk(
        &mut self,
        chunk: BlacklistChunk,
        rejects: &mut Vec<RejectRow>,
        plan_rows: &mut Vec<PlanRow>,
    ) -> Result<(), LoadError> {
        let (opts, out) = (self.opts, &mut self.out);
        let mut todo: Vec<Item> = Vec::new();
        let entries = chunk.entries.into_iter().zip(chunk.rows);
        for ((email, comment), row) in entries {
            let action = match self.existing.get(&self.keys.of(&email)) {
                None => Action::Create,
                // A group blocklist has no comments to compare.
                Some(_) if self.group.is_some() => Action::Unchanged,
                Some(have) if comment.is_empty() || *have == comment_hash(&comment) => {
                    Action::Unchanged
                }
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
                _ => todo.push((row, BlacklistInput::new(email, comment), action)),
            }
        }
        if opts.dry_run {
            for (_, _, action) in &todo {
                count(out, *action);
            }
            return Ok(());
        }
        self.bar.inc_length(todo.len() as u64);
        let lookup = RejectLookup::new(&chunk.table);
        let failures = match self.group.clone() {
            Some(g) => self.send_to_blocklist(g.id, &todo).await,
            None => {
                // Whole batches now, the rest with the next chunk.
                let mut items = std::mem::take(&mut self.carried);
                items.extend(todo);
                let rest = items.split_off(items.len() / BATCH * BATCH);
                let ready = rest
                    .iter()
                    .map(|(row, _, _)| (*row, self.line(*row, Some(&lookup))))
                    .collect();
                let failures = self.send_batches(&items).await;
                self.carried = rest;
                let failed = self.failed(failures, rejects, Some(&lookup));
                self.ready = ready;
                return failed;
            }
        };
        self.failed(failures, rejects, Some(&lookup))
    }

    /// The reject line of the entry at `row`: ready from an earlier chunk,
    /// or made from this chunk's rows.
    fn line(&self, row: (u32, u64), lookup: Option<&RejectLookup<'_>>) -> RejectRow {
        match (self.ready.get(&row), lookup) {
            (Some(line), _) => line.clone(),
            (None, Some(l)) => l.reject(row.0, row.1, "email", String::new()),
            // Every carried entry has its line ready.
            (None, None) => RejectRow {
                file: None,
                values: Vec::new(),
                row_number: row.1,
                field: "email".into(),
                reason: String::new(),
            },
        }
    }

    /// Counts `failures` and adds their reject lines.
    fn failed(
        &mut self,
        failures: Vec<Failure>,
        rejects: &mut Vec<RejectRow>,
        lookup: Option<&RejectLookup<'_>>,
    ) -> Result<(), LoadError> {
        self.out.failed += failures.len() as u64;
        // The target stopped answering: what failed is not the rows' fault.
        if let Some(stopped) = self.conn.breaker.stopped() {
            return Err(stopped.into());
        }
        for (row, _email, reason) in failures {
            rejects.push(RejectRow {
                reason,
                ..self.line(row, lookup)
            });
        }
        Ok(())
    }

    /// The account blacklist: batches of at most [`BATCH`].
    async fn send_batches(&mut self, todo: &[Item]) -> Vec<Failure> {
        let mut failures = Vec::new();
        for chunk in todo.chunks(BATCH) {
            if self.conn.breaker.is_open() {
                break;
            }
            let (done, failed) = send_batch(
                self.conn,
                chunk,
                self.opts.retries,
                &self.retried,
                &mut self.out,
            )
            .await;
            for (_, _, action) in done {
                count(&mut self.out, *action);
            }
            failures.extend(failed);
            self.bar.inc(chunk.len() as u64);
        }
        failures
    }

    /// A group's blocklist: one request an entry, as many in flight as the run allows.
    async fn send_to_blocklist(&mut self, group: listpipe_api::Id, todo: &[Item]) -> Vec<Failure> {
        let (conn, opts) = (self.conn, self.opts);
        let (retried, bar) = (&self.retried, &self.bar);
        let results: Vec<_> = futures::stream::iter(todo.iter())
            .map(|(row, item, _)| {
                let email = item.email.clone().unwrap_or_default();
                async move {
                    let r = retry::retrying(conn, opts.retries, retried, || {
                        conn.client.add_to_group_blocklist(group, &email)
                    })
                    .await;
                    bar.inc(1);
                    (*row, email, r)
                }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
        let mut failures = Vec::new();
        for (row, email, r) in results {
            self.out.requests += 1;
            match r {
                Ok(_) => self.out.added += 1,
                Err(e) => failures.push((row, email, e.server_message())),
            }
        }
        failures
    }

    /// Sends what is left of the last batch; the step's counts.
    pub async fn finish(
        mut self,
        rejects: &mut Vec<RejectRow>,
    ) -> Result<BlacklistOutcome, LoadError> {
        let items = std::mem::take(&mut self.carried);
        let failures = self.send_batches(&items).await;
        self.failed(failures, rejects, None)?;
        self.bar.finish();
        self.out.retries = self.retried.load(Ordering::Relaxed);
        Ok(self.out)
    }
}

fn count(out: &mut BlacklistOutcome, action: Action) {
    if action == Action::Create {
        out.added += 1
    } else {
        out.updated += 1
    }
}

/// An entry that failed: its file and row, its address, the server's reason.
type Failure = ((u32, u64), String, String);

type Item = ((u32, u64), BlacklistInput, Action);

/// Sends one batch; on a refusal (400/413) splits it in halves down to
/// single entries, so only the entries the server refuses fail.
async fn send_batch<'a>(
    conn: &Connected,
    chunk: &'a [Item],
    retries: u32,
    retried: &AtomicU64,
    out: &mut BlacklistOutcome,
) -> (Vec<&'a Item>, Vec<Failure>) {
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
