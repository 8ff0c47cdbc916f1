//! What each row of an import step needs, decided against what the target
//! holds, and how it is sent: one request per receiver through the spec's
//! endpoints, or batch upserts where the target has them. [`import`](super::import)
//! drives the rows through these.

use super::diff::{Held, Kept, Policies, changed_fields, clear, update_body};
use super::held::ChunkHeld;
use super::journal::{self, Journal, Prior};
use super::write::{self, Wire, WriteError};
use super::{Action, WriteOptions};
use crate::pipeline::ReceiverField;
use crate::prepare::{OrderLines, PreparedRows, consent};
use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_api::{Id, ReceiverInput, ReceiverRow};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(super) enum RowResult {
    /// What was done, and for the plan what differs (or why not).
    Done(Action, String),
    /// Confirmed by an earlier run (journal): not sent again.
    Resumed,
    Failed {
        index: usize,
        error: WriteError,
    },
    /// Not sent: its journal line could not be written (the step ends
    /// with that error; the row counts as not started).
    NotStarted,
}

/// A row whose body cannot be fingerprinted for the journal: refused,
/// with the reason and its cause.
fn unfingerprinted(index: usize, e: &journal::FingerprintError) -> RowResult {
    RowResult::Failed {
        index,
        error: WriteError {
            reason: format!("{e}: {}", e.cause),
            transient: false,
        },
    }
}

/// A row that needs a write: what to send and how to journal it.
pub(super) struct Pending {
    index: usize,
    action: Action,
    body: ReceiverInput,
    detail: String,
    key: journal::RowKey,
    hash: String,
}

impl Pending {
    /// The row's journal line, for `action`.
    fn entry(&self, action: Action) -> journal::Entry<'_> {
        journal::Entry {
            key: &self.key,
            action: action.as_str(),
            hash: &self.hash,
        }
    }
}

/// What a row needs, decided against what the target holds.
pub(super) type Decision = crate::transport::flow::Decision<RowResult, Box<Pending>>;

/// What every row of a step shares.
pub(super) struct Rows<'a> {
    pub(super) conn: &'a Connected,
    pub(super) opts: &'a WriteOptions,
    pub(super) cols: &'a PreparedRows<'a>,
    pub(super) emails: &'a [String],
    /// Each row of the chunk: the blacklist (or the group's blocklist)
    /// holds its address.
    pub(super) blocked: &'a [AtomicBool],
    /// What the target holds, by row of the chunk.
    pub(super) existing: &'a ChunkHeld,
    pub(super) orders: &'a OrderLines,
    pub(super) create_only: &'a [ReceiverField],
    /// The step's write policies, and the values each kept so far.
    pub(super) policies: &'a Policies,
    pub(super) kept: &'a [AtomicU64],
    pub(super) run_time: i64,
    pub(super) gid: Option<Id>,
    pub(super) journal: Option<&'a Journal>,
    /// What an earlier run's journal recorded last of each row of the
    /// chunk (empty when it recorded nothing).
    pub(super) recorded: &'a [Option<journal::Last>],
    /// Cleared when the target answers the batch upsert with "no such route".
    pub(super) batches: AtomicBool,
    pub(super) retried: AtomicU64,
    pub(super) orders_sent: AtomicU64,
    pub(super) checked: AtomicU64,
    pub(super) write_requests: AtomicU64,
    /// Write requests answered 429.
    pub(super) write_requests_refused: AtomicU64,
}

impl Rows<'_> {
    /// `requests` (a write of rows journalled as started, or a look at the
    /// target), given up when the run is stopped: at once while none of its
    /// requests is on the wire (waiting for room, a rate or a retry's
    /// backoff), else as soon as the answer is in. A stop so ends within a
    /// request's timeout whatever the rate; the journal keeps the rows as
    /// started (or, when none of its requests went, as never sent) and
    /// `--resume` checks them. `None`: given up.
    async fn unless_stopped<T>(
        &self,
        wire: &Wire,
        requests: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let stopped = async {
            self.opts.stop.stopped().await;
            // Polled, not woken: only while a stopped run finishes.
            while wire.on() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            biased;
            // A request the stop kept from the wire (its wait for the rate,
            // a pause or a backoff cut: `ClientError::Interrupted`) is a row
            // given up unsent, like one the stop found waiting here.
            done = requests => (wire.went() || !self.opts.stop.is_set()).then_some(done),
            () = stopped => None,
        }
    }

    /// The row as every run sends it, as the journal hashes it: without the
    /// times that only a create sends (copied only when there are any).
    fn stable<'r>(&self, input: &'r ReceiverInput) -> std::borrow::Cow<'r, ReceiverInput> {
        if self.create_only.is_empty() {
            std::borrow::Cow::Borrowed(input)
        } else {
            let mut stable = input.clone();
            self.create_only.iter().for_each(|f| clear(&mut stable, *f));
            std::borrow::Cow::Owned(stable)
        }
    }

    /// `input`, an update of `have`, as the step's write policies leave it,
    /// and what they kept (copied only when the step has policies).
    fn under_policies<'r>(
        &self,
        input: &'r ReceiverInput,
        have: &Held,
    ) -> (std::borrow::Cow<'r, ReceiverInput>, Kept) {
        let mut kept = Kept::new();
        if self.policies.is_empty() {
            return (std::borrow::Cow::Borrowed(input), kept);
        }
        let mut effective = input.clone();
        self.policies.apply(&mut effective, have, &mut kept);
        (std::borrow::Cow::Owned(effective), kept)
    }

    fn count_kept(&self, kept: &Kept) {
        for &k in kept {
            if let Some(n) = self.kept.get(k) {
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Decides what row `i` needs: nothing, or a write.
    pub(super) async fn decide(&self, i: usize) -> Decision {
        let finished = |r| Decision::Finished(r);
        let email = &self.emails[i];
        if self.blocked[i].load(Ordering::Relaxed) {
            return finished(RowResult::Done(
                Action::Blocked,
                "on the blacklist or the group's blocklist".into(),
            ));
        }
        let mut input = self.cols.input(i, self.orders.of(email));
        let key = (self.cols.file(i), self.cols.row_number(i), email.clone());
        // With a journal: skip what an earlier run had confirmed, and look
        // again at the target for what it left in flight. A row no earlier
        // run recorded is hashed only if it is sent (a tenth of an
        // unchanged re-import's client was hashing rows, issue 15).
        let mut hashed = None;
        let mut fetched = None;
        if let (Some(_), Some(g), Some(last)) = (
            self.journal,
            self.gid,
            self.recorded.get(i).and_then(Option::as_ref),
        ) {
            let stable = self.stable(&input);
            let h = match journal::hash(&stable) {
                Ok(h) => h,
                Err(e) => return finished(unfingerprinted(i, &e)),
            };
            match last.prior(&h) {
                // Confirmed earlier and still held by the target as sent:
                // not sent again. A target restored from a backup (or
                // emptied) no longer holds it, so it is sent again: the
                // journal is never trusted over what the target holds.
                Prior::Confirmed => {
                    if let Some(have) = self.existing.get(i)
                        && changed_fields(&self.under_policies(&stable, have).0, have).is_empty()
                    {
                        return finished(RowResult::Resumed);
                    }
                }
                Prior::InFlight => {
                    self.checked.fetch_add(1, Ordering::Relaxed);
                    let wire = Wire::default();
                    let look =
                        write::fetch(self.conn, g, email, self.opts.retries, &self.retried, &wire);
                    match self.unless_stopped(&wire, look).await {
                        Some(Ok(r)) => {
                            let watched = self.policies.watched();
                            fetched = Some(
                                r.as_ref()
                                    .map(|r| Held::of(&ReceiverRow::from(r), &watched)),
                            )
                        }
                        Some(Err(error)) => return finished(RowResult::Failed { index: i, error }),
                        // A look only: nothing of the row was sent.
                        None => return finished(RowResult::NotStarted),
                    }
                }
                Prior::New => {}
            }
            hashed = Some(h);
        }
        // The journal's hash of a row about to be sent.
        let hash_to_send = |input: &ReceiverInput, hashed: Option<String>| match hashed {
            Some(h) => Ok(Some(h)),
            None if self.journal.is_some() && self.gid.is_some() => {
                journal::hash(&self.stable(input)).map(Some)
            }
            None => Ok(None),
        };
        let have = match &fetched {
            Some(r) => r.as_ref(),
            None => self.existing.get(i),
        };
        let (action, body, detail) = match have {
            // Consent is the row's: one that states no state is created
            // registered, awaiting activation, whatever the other rows say.
            None => {
                hashed = match hash_to_send(&input, hashed) {
                    Ok(h) => h,
                    Err(e) => return finished(unfingerprinted(i, &e)),
                };
                (
                    Action::Create,
                    Some(consent::create_body(input, self.run_time)),
                    String::new(),
                )
            }
            Some(have) => {
                // A `now` time says when something first happened: an update
                // sends it only where the target holds none yet (an opt-out or
                // an activation this row grants today), so a later run does not
                // move a time already set.
                self.create_only
                    .iter()
                    .filter(|f| have.stamp(**f) != 0)
                    .for_each(|f| clear(&mut input, *f));
                let (effective, kept) = self.under_policies(&input, have);
                self.count_kept(&kept);
                let fields = changed_fields(&effective, have);
                let mut detail = fields.join(" ");
                if !kept.is_empty() {
                    let sep = if detail.is_empty() { "" } else { "; " };
                    detail = format!("{detail}{sep}{}", self.policies.describe(&kept));
                }
                if fields.is_empty() {
                    (Action::Unchanged, None, detail)
                } else {
                    // Hashed as `stable`: every create-only time cleared,
                    // before the policies (a resume applies them again).
                    hashed = match hash_to_send(&input, hashed) {
                        Ok(h) => h,
                        Err(e) => return finished(unfingerprinted(i, &e)),
                    };
                    let body = update_body(effective.into_owned(), have);
                    (Action::Update, Some(body), detail)
                }
            }
        };
        // A row is sent only through the journal (whose `start` it needs),
        // which every run that writes has: a dry run, or a step whose group
        // does not exist yet in one, sends nothing.
        match (body, self.gid, self.journal, hashed, self.opts.dry_run) {
            (Some(body), Some(_), Some(_), Some(hash), false) => {
                Decision::Send(Box::new(Pending {
                    index: i,
                    action,
                    body,
                    detail,
                    key,
                    hash,
                }))
            }
            _ => finished(RowResult::Done(action, detail)),
        }
    }

    /// Sends one receiver through the spec's single-receiver endpoints.
    pub(super) async fn send_one(&self, p: Pending) -> RowResult {
        let (Some(g), Some(j)) = (self.gid, self.journal) else {
            return RowResult::Done(p.action, p.detail);
        };
        // No `start` written, nothing sent: the journal's failure ends the
        // step (import.rs), and the row counts as not started.
        let Ok(started) = j.started(&[p.entry(p.action)]).await else {
            return RowResult::NotStarted;
        };
        let sent = p.body.orders.as_ref().map_or(0, Vec::len) as u64;
        let email = &self.emails[p.index];
        let wire = Wire::default();
        let counted = write::Counted {
            retried: &self.retried,
            requests: &self.write_requests,
            refused: &self.write_requests_refused,
            wire: &wire,
        };
        let write = write::write(
            &started,
            self.conn,
            g,
            email,
            p.action,
            &p.body,
            self.opts.retries,
            counted,
        );
        let Some(written) = self.unless_stopped(&wire, write).await else {
            if !wire.went() {
                j.unsent(&[p.entry(p.action)]).await;
            }
            return RowResult::NotStarted;
        };
        match written {
            Ok(a) => {
                self.orders_sent.fetch_add(sent, Ordering::Relaxed);
                j.confirmed(&[p.entry(a)]).await;
                RowResult::Done(a, p.detail)
            }
            Err(error) => RowResult::Failed {
                index: p.index,
                error,
            },
        }
    }

    /// Sends rows as batch upserts (one request, one transaction on the
    /// target); without the extension on the target, one by one.
    pub(super) async fn send_batch(&self, batch: Vec<Pending>) -> Vec<(usize, RowResult)> {
        let (Some(g), Some(j)) = (self.gid, self.journal) else {
            return Vec::new();
        };
        if !self.batches.load(Ordering::Relaxed) {
            return self.send_each(batch).await;
        }
        // One journal write for the request's rows before it is sent, one
        // for what its answer acknowledged. No `start`, nothing sent.
        let entries: Vec<_> = batch.iter().map(|p| p.entry(p.action)).collect();
        let Ok(started) = j.started(&entries).await else {
            return batch
                .iter()
                .map(|p| (p.index, RowResult::NotStarted))
                .collect();
        };
        let bodies: Vec<&ReceiverInput> = batch.iter().map(|p| &p.body).collect();
        let wire = Wire::default();
        let counted = write::Counted {
            retried: &self.retried,
            requests: &self.write_requests,
            refused: &self.write_requests_refused,
            wire: &wire,
        };
        let answer = write::upsert(&started, self.conn, g, &bodies, self.opts.retries, counted);
        let Some(answer) = self.unless_stopped(&wire, answer).await else {
            if !wire.went() {
                j.unsent(&entries).await;
            }
            return batch
                .iter()
                .map(|p| (p.index, RowResult::NotStarted))
                .collect();
        };
        match answer {
            Ok(statuses) => {
                let items: Vec<(Pending, Result<Action, String>)> = batch
                    .into_iter()
                    .zip(statuses)
                    .map(|(p, status)| {
                        let done = self.batch_item(&p, status);
                        (p, done)
                    })
                    .collect();
                let entries: Vec<_> = items
                    .iter()
                    .filter_map(|(p, done)| done.as_ref().ok().map(|a| p.entry(*a)))
                    .collect();
                j.confirmed(&entries).await;
                items
                    .into_iter()
                    .map(|(p, done)| {
                        let r = match done {
                            Ok(action) => RowResult::Done(action, p.detail),
                            Err(reason) => RowResult::Failed {
                                index: p.index,
                                error: WriteError {
                                    reason,
                                    transient: false,
                                },
                            },
                        };
                        (p.index, r)
                    })
                    .collect()
            }
            Err(write::BatchError::NoExtension) => {
                self.batches.store(false, Ordering::Relaxed);
                self.send_each(batch).await
            }
            Err(write::BatchError::TooLarge) if batch.len() > 1 => {
                let mut first = batch;
                let second = first.split_off(first.len() / 2);
                let mut out = Box::pin(self.send_batch(first)).await;
                out.extend(Box::pin(self.send_batch(second)).await);
                out
            }
            Err(write::BatchError::TooLarge) => self.send_each(batch).await,
            Err(write::BatchError::Failed(error)) => batch
                .into_iter()
                .map(|p| {
                    let error = WriteError {
                        reason: error.reason.clone(),
                        transient: error.transient,
                    };
                    let index = p.index;
                    (index, RowResult::Failed { index, error })
                })
                .collect(),
        }
    }

    /// What one item of a batch did, as the server said: the action it
    /// took, or the target's reason for refusing it.
    fn batch_item(&self, p: &Pending, status: write::ItemStatus) -> Result<Action, String> {
        match status {
            write::ItemStatus::Done { inserted, repeated } => {
                let sent = p.body.orders.as_ref().map_or(0, Vec::len) as u64;
                self.orders_sent.fetch_add(sent, Ordering::Relaxed);
                // A create whose batch committed on an earlier attempt
                // answers "update" now: it was still this run's create.
                let action = if inserted || (repeated && p.action == Action::Create) {
                    Action::Create
                } else {
                    Action::Update
                };
                Ok(action)
            }
            write::ItemStatus::Refused(reason) => Err(reason),
        }
    }

    async fn send_each(&self, batch: Vec<Pending>) -> Vec<(usize, RowResult)> {
        let sends = batch.into_iter().map(|p| async move {
            let i = p.index;
            (i, self.send_one(p).await)
        });
        futures::stream::iter(sends)
            .buffer_unordered(self.opts.concurrency.max(1))
            .collect()
            .await
    }
}
