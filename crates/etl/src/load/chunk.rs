//! One prepared chunk of an import step written: each row decided against
//! what the target holds, sent alone or in batches with bounded
//! concurrency, and its result folded into the step's counters; and the
//! next chunk fetched while one is written ([`next_chunk`]). The step
//! itself (set-up, the chain of chunks, mirror mode) is [`import`](super::import).

use super::diff::Policies;
use super::flow;
use super::held::TargetIndex;
use super::journal::Journal;
use super::lookup::{self, Lookup};
use super::outcome::ImportOutcome;
use super::plan_file::{self, PlanFile};
use super::rows::{Pending, RowResult, Rows};
use super::{Action, LoadError, PlanRow, WriteMode, WriteOptions};
use crate::pipeline::{ImportStep, ReceiverField};
use crate::prepare::{ImportChunk, PreparedRows};
use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_api::Group;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Rows per batch upsert: the most the extension takes. Against 500, a
/// first import of 1M rows ran in 0.90 of the time (BENCHMARKS.md, issue
/// 15, an eleventh session): half the requests, and each commit of the
/// target's writer holds more rows. A batch the target finds too large
/// (413) is sent again in halves.
const BATCH_ROWS: usize = listpipe_api::batch::MAX_BATCH;
/// Batches prepared and journalled ahead of their requests, at most: the
/// controller decides how many of them are in flight.
const BATCHES_QUEUED: usize = 16;

/// A chunk's row counts, added to the step's outcome once it is written.
#[derive(Default)]
pub(super) struct RowCounts {
    blocked: u64,
    created: u64,
    updated: u64,
    unchanged: u64,
    failed: u64,
    failed_transient: u64,
    resumed: u64,
}

impl RowCounts {
    pub(super) fn add_to(&self, out: &mut ImportOutcome) {
        out.blocked += self.blocked;
        out.created += self.created;
        out.updated += self.updated;
        out.unchanged += self.unchanged;
        out.failed += self.failed;
        out.failed_transient += self.failed_transient;
        out.resumed += self.resumed;
    }
}

/// A chunk's counters, fed one row result at a time.
pub(super) struct Tally {
    pub(super) out: RowCounts,
    /// Rows of the chunk taken (the rest were not started: a stop).
    pub(super) seen: usize,
    /// Refused rows of the chunk (index, reason): their rejects are made
    /// from the chunk's source rows once it is written.
    pub(super) failed_rows: Vec<(usize, String)>,
    /// Outside a dry run: the chunk's addresses this run imported, for
    /// the mirror ledger (appended once the chunk is written).
    pub(super) imported: Option<Vec<String>>,
    /// A dry run's plan lines of the chunk.
    pub(super) plan_rows: Vec<PlanRow>,
    pub(super) dry_run: bool,
    /// The group exists (a dry run may be about to create it).
    pub(super) group_known: bool,
}

impl Tally {
    fn imported(&mut self, email: &str) {
        if let Some(l) = self.imported.as_mut() {
            l.push(email.to_string());
        }
    }

    /// Row `i` of the chunk whose addresses are `emails` and rows `cols`.
    pub(super) fn add(
        &mut self,
        i: usize,
        r: RowResult,
        emails: &[String],
        cols: &PreparedRows<'_>,
    ) {
        if matches!(r, RowResult::NotStarted) {
            // Counted with the rows a stop left (`seen` is what was taken).
            return;
        }
        self.seen += 1;
        let out = &mut self.out;
        let (action, detail) = match r {
            RowResult::Done(a, detail) => (a, detail),
            RowResult::Resumed => {
                out.resumed += 1;
                self.imported(&emails[i]);
                return;
            }
            RowResult::NotStarted => return,
            RowResult::Failed { index, error } => {
                out.failed_transient += u64::from(error.transient);
                self.failed_rows.push((index, error.reason.clone()));
                (Action::Failed, error.reason)
            }
        };
        match action {
            Action::Create => out.created += 1,
            Action::Update => out.updated += 1,
            Action::Unchanged => out.unchanged += 1,
            Action::Blocked => out.blocked += 1,
            Action::Failed => out.failed += 1,
            Action::Invalid | Action::Duplicate | Action::Remove => {}
        }
        if matches!(action, Action::Create | Action::Update) && !self.dry_run {
            self.imported(&emails[i]);
        }
        if self.dry_run {
            let detail = match action {
                Action::Create if !self.group_known => {
                    "the group would be created first".to_string()
                }
                _ => detail,
            };
            self.plan_rows.push(PlanRow {
                row_number: cols.row_number(i),
                email: emails[i].clone(),
                action,
                detail,
            });
        }
    }
}

/// A prepared chunk with the addresses of its rows.
pub(super) struct Prepared {
    pub(super) chunk: ImportChunk,
    /// Shared with the chunk's blacklist lookups.
    pub(super) emails: Arc<[String]>,
}

impl Prepared {
    pub(super) fn new(step: &ImportStep, chunk: ImportChunk) -> Result<Self, LoadError> {
        let emails = {
            let cols = PreparedRows::new(step, &chunk.frame)
                .map_err(|e| LoadError::step(e.to_string()))?;
            (0..cols.len()).map(|i| cols.email(i)).collect()
        };
        Ok(Prepared { chunk, emails })
    }
}

/// What every chunk of a step shares.
pub(super) struct Shared<'a> {
    pub(super) step: &'a ImportStep,
    pub(super) conn: &'a Connected,
    pub(super) opts: &'a WriteOptions,
    pub(super) existing: &'a TargetIndex,
    pub(super) create_only: &'a [ReceiverField],
    /// The step's write policies, and the values each kept (every chunk's).
    pub(super) policies: &'a Policies,
    pub(super) kept: &'a [AtomicU64],
    pub(super) run_time: i64,
    pub(super) gid: Option<listpipe_api::Id>,
    pub(super) journal: Option<&'a Journal>,
    pub(super) bar: &'a dyn crate::progress::Stage,
}

/// The step's request counters, summed over its chunks.
#[derive(Default)]
pub(super) struct Counters {
    /// False once the target answered the batch upsert with "no such route".
    pub(super) batches: bool,
    pub(super) retried: u64,
    pub(super) orders_sent: u64,
    pub(super) checked: u64,
    pub(super) write_requests: u64,
    pub(super) write_requests_refused: u64,
}

impl Counters {
    /// Adds a later chunk's counters.
    pub(super) fn add(&mut self, c: &Counters) {
        self.batches &= c.batches;
        self.retried += c.retried;
        self.orders_sent += c.orders_sent;
        self.checked += c.checked;
        self.write_requests += c.write_requests;
        self.write_requests_refused += c.write_requests_refused;
    }
}

/// How far a chunk's writing is, read by the step to start the next chunk
/// once this one has taken every row (import.rs).
pub(super) struct Progress {
    rows: AtomicUsize,
    taken: AtomicUsize,
    /// The chunk's writing ended, however.
    pub(super) ended: AtomicBool,
}

impl Progress {
    /// A chunk of `rows` rows, none taken.
    pub(super) fn new(rows: usize) -> Self {
        Progress {
            rows: AtomicUsize::new(rows),
            taken: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
        }
    }

    /// The chunk's writing ended, or every row of it is taken: the rows
    /// still in flight no longer fill the places, and the next chunk's
    /// rows may take them.
    pub(super) fn all_taken(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
            || self.taken.load(Ordering::SeqCst) == self.rows.load(Ordering::SeqCst)
    }
}

/// Decides and writes one chunk's rows, with bounded concurrency, taking
/// them as their blacklist `lookup` answers; each row's result is folded
/// into `tally` as it arrives.
pub(super) async fn write_chunk(
    shared: &Shared<'_>,
    chunk: &Prepared,
    lookup: Lookup<'_>,
    tally: &mut Tally,
    counters: &mut Counters,
    progress: &Progress,
) -> Result<(), LoadError> {
    let Shared {
        step, conn, opts, ..
    } = *shared;
    let cols =
        PreparedRows::new(step, &chunk.chunk.frame).map_err(|e| LoadError::step(e.to_string()))?;
    let emails = &chunk.emails;
    // The lookups go on while the rest is asked (lookup.rs).
    let mut lookup = lookup;
    // What the target holds for the chunk's rows, asked once.
    let existing = lookup
        .alongside(shared.existing.chunk_off_thread(emails))
        .await?;
    // What an earlier run recorded of them, asked once (only on a resume).
    let recorded = match shared.journal {
        Some(j) if j.resumes() => {
            let keys: Vec<_> = (0..emails.len())
                .map(|i| (cols.file(i), cols.row_number(i), emails[i].clone()))
                .collect();
            lookup.alongside(j.recorded(&keys)).await?
        }
        _ => Vec::new(),
    };
    // Each row: the blacklist holds its address. Marked as its batch is
    // answered, before the batch's rows are taken.
    let blocked: Vec<AtomicBool> = (0..emails.len()).map(|_| AtomicBool::new(false)).collect();
    let rows = Rows {
        conn,
        opts,
        cols: &cols,
        emails,
        blocked: &blocked,
        existing: &existing,
        orders: &chunk.chunk.orders,
        create_only: shared.create_only,
        policies: shared.policies,
        kept: shared.kept,
        run_time: shared.run_time,
        gid: shared.gid,
        journal: shared.journal,
        recorded: &recorded,
        batches: AtomicBool::new(counters.batches),
        retried: AtomicU64::new(0),
        orders_sent: AtomicU64::new(0),
        checked: AtomicU64::new(0),
        write_requests: AtomicU64::new(0),
        write_requests_refused: AtomicU64::new(0),
    };
    let failed = send_rows(shared, &rows, lookup, tally, progress).await;
    counters.batches = rows.batches.load(Ordering::Relaxed);
    counters.retried += rows.retried.load(Ordering::Relaxed);
    counters.orders_sent += rows.orders_sent.load(Ordering::Relaxed);
    counters.checked += rows.checked.load(Ordering::Relaxed);
    counters.write_requests += rows.write_requests.load(Ordering::Relaxed);
    counters.write_requests_refused += rows.write_requests_refused.load(Ordering::Relaxed);
    let more = !opts.stop.is_set() && !conn.breaker.is_open();
    match failed {
        // A stop or the breaker cut the lookups short: their rows are not
        // started, as the stop's.
        Some(_) if !more => Ok(()),
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Decides and sends the chunk's `rows` as their blacklist `lookup`
/// answers, alone or in batches, folding each result into `tally`. Returns
/// the error of a lookup that failed for good: the rows of the batches
/// answered before it are written, the rest are not taken.
async fn send_rows(
    shared: &Shared<'_>,
    rows: &Rows<'_>,
    lookup: Lookup<'_>,
    tally: &mut Tally,
    progress: &Progress,
) -> Option<LoadError> {
    let Shared {
        conn, opts, bar, ..
    } = *shared;
    let (cols, emails, blocked) = (rows.cols, rows.emails, rows.blocked);
    // A stop (Ctrl-C, SIGTERM) takes no new row; rows whose request is on
    // the wire finish, the rest are given up at once (rows.rs). The
    // breaker opening takes no new row either, and its rows in flight fail
    // at once.
    let stop = opts.stop.clone();
    let breaker = &conn.breaker;
    // The streams are bounded by the controller's maximum; each request
    // then waits for its room in the controller (retry.rs), so the rows in
    // flight follow the limit it sets as it moves.
    let concurrency = opts.concurrency.max(1);
    let ctl = &conn.controller;
    let noted = std::sync::Mutex::new(std::time::Instant::now());
    let note = || {
        if opts.progress.is_none() {
            return;
        }
        // The progress line's note, four times a second at most.
        let mut last = noted.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= std::time::Duration::from_millis(250) {
            *last = std::time::Instant::now();
            bar.set_message(ctl.progress());
        }
    };
    let note = &note;
    let more = || !stop.is_set() && !breaker.is_open();
    // A row whose request waits out a 429's `Retry-After` leaves its place to
    // another (flow.rs): a sporadic 429 delays its own row only.
    let waiting = || ctl.waiting();
    let decide = |i| rows.decide(i);
    // Each row's result is folded into the step's counters as it arrives,
    // so memory does not grow with the rows: only what must outlive the
    // stream is kept per row (a refused row's reject, a dry run's plan, the
    // ledger's addresses).
    let fold = |(i, r)| {
        tally.add(i, r, emails, cols);
        bar.inc(1);
        note();
        futures::future::ready(())
    };
    let failed = std::cell::Cell::new(None);
    let failed = &failed;
    lookup
        .run(|answers| async move {
            // Every future that can hold the controller's room is polled by
            // the one loop below (flow.rs), and the lookups by `run`: a
            // decision never waits unpolled behind sends that wait for its
            // permit (the resume that hung, issue 41).
            let taken = lookup::rows(answers, blocked, failed)
                .take_while(move |_| futures::future::ready(more()))
                .inspect(|_| {
                    progress.taken.fetch_add(1, Ordering::SeqCst);
                });
            match opts.writes {
                WriteMode::Single => {
                    let send = |p: Box<Pending>| rows.send_one(*p);
                    flow::one_by_one(taken, concurrency, waiting, decide, send)
                        .for_each(fold)
                        .await
                }
                // Rows that need a write go in batches of up to BATCH_ROWS, a
                // few batches in flight: the target commits each in one
                // transaction.
                WriteMode::Auto => {
                    let send = |batch: Vec<Box<Pending>>| {
                        rows.send_batch(batch.into_iter().map(|p| *p).collect())
                    };
                    let batches = concurrency.div_ceil(4).min(BATCHES_QUEUED);
                    flow::in_batches(
                        taken,
                        BATCH_ROWS,
                        concurrency,
                        batches,
                        waiting,
                        more,
                        decide,
                        send,
                    )
                    .for_each(fold)
                    .await
                }
            }
        })
        .await;
    failed.take()
}

/// `limit` of a step (a canary run): its first N receivers, in the
/// source's order, are taken; each chunk is cut to what is left of it as
/// it comes, so the rows past it are neither looked up nor decided nor
/// counted as not started. The chunks past the limit are still read (the
/// preparing thread reads the source whole), to say of how many receivers.
/// The chunks come one after the other (one is fetched at a time).
pub(super) struct Limit {
    limit: Option<u64>,
    left: AtomicU64,
    seen: AtomicU64,
}

impl Limit {
    pub(super) fn new(limit: Option<u64>) -> Self {
        Limit {
            limit,
            left: AtomicU64::new(limit.unwrap_or(u64::MAX)),
            seen: AtomicU64::new(0),
        }
    }

    /// `c` without the rows past the limit.
    pub(super) fn cut(&self, mut c: ImportChunk) -> ImportChunk {
        let rows = c.frame.height() as u64;
        self.seen.fetch_add(rows, Ordering::SeqCst);
        if self.limit.is_none() {
            return c;
        }
        let left = self.left.load(Ordering::SeqCst);
        let take = left.min(rows);
        self.left.store(left - take, Ordering::SeqCst);
        if take < rows {
            c.frame = c.frame.slice(0, take as usize);
        }
        c
    }

    /// What the report says of a limited step: the limit, of how many.
    pub(super) fn outcome(&self) -> Option<super::outcome::Limited> {
        self.limit.map(|limit| super::outcome::Limited {
            limit,
            of: self.seen.load(Ordering::SeqCst),
        })
    }
}

/// The prepared chunks of a step after the first, as the preparing thread
/// hands them over (a bounded channel: it reads ahead a chunk at most).
pub type Chunks = tokio::sync::mpsc::Receiver<ImportChunk>;

/// How often a step looks whether its chunk has taken every row, to start
/// the next one.
const TAKEN_CHECK: Duration = Duration::from_millis(10);

/// What [`next_chunk`] takes of its step: the step, the counter of its
/// lookups' retries, its limit.
#[derive(Clone, Copy)]
pub(super) struct StepFetch<'s, 'c> {
    pub(super) step: &'s ImportStep,
    pub(super) retried: &'c AtomicU64,
    pub(super) limit: &'s Limit,
}

/// The next chunk, as its fetch ends.
pub(super) enum Next<'c> {
    /// Its blacklist lookups under way (most often answered), and the
    /// chunk before it has taken every row: to be written now.
    Ready(Prepared, Lookup<'c>),
    /// Taken from the source, but the run stops (or the breaker opened)
    /// first: never written, its rows count as not started.
    Unstarted(ImportChunk),
}

/// The next chunk: taken from the preparing thread and checked against
/// the blacklist at once, while the chunk before it (of `progress`) is
/// written, then handed over once that one has taken every row or ended,
/// with the lookups not answered yet still going. `None` when the source
/// ended, or when the run stops before it is taken (a stop takes no new
/// chunk). `rest` comes back with it; the lookups' retries are counted in
/// `step.retried`, and the chunk is cut to `step.limit`.
pub(super) async fn next_chunk<'r, 'c>(
    conn: &'c Connected,
    step: StepFetch<'_, 'c>,
    group: Option<&Group>,
    opts: &WriteOptions,
    rest: &'r mut Chunks,
    progress: Option<Arc<Progress>>,
) -> (&'r mut Chunks, Result<Option<Next<'c>>, LoadError>) {
    let StepFetch {
        step,
        retried,
        limit,
    } = step;
    let stopped = || opts.stop.is_set() || conn.breaker.is_open();
    if stopped() {
        return (rest, Ok(None));
    }
    let Some(c) = rest.recv().await else {
        return (rest, Ok(None));
    };
    let c = match Prepared::new(step, limit.cut(c)) {
        Ok(c) => c,
        Err(e) => return (rest, Err(e)),
    };
    let emails = Arc::clone(&c.emails);
    let limits = (opts.concurrency, opts.retries);
    let mut lookup = Lookup::start(conn, group, emails, limits, retried);
    lookup
        .alongside(async {
            while let Some(p) = &progress
                && !p.all_taken()
            {
                tokio::time::sleep(TAKEN_CHECK).await;
            }
        })
        .await;
    if stopped() {
        return (rest, Ok(Some(Next::Unstarted(c.chunk))));
    }
    (rest, Ok(Some(Next::Ready(c, lookup))))
}

/// A chunk taken from the source but never written (the run stops): its
/// rows count as not started, and a dry run's plan lists its invalid rows.
pub(super) fn unstarted(
    c: &ImportChunk,
    not_started: &mut u64,
    plan: Option<&mut PlanFile>,
) -> Result<(), LoadError> {
    *not_started += c.frame.height() as u64;
    if let Some(plan) = plan {
        let mut invalid = c.rejects.iter().map(plan_file::invalid).collect();
        plan.chunk(&mut invalid)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next chunk may start once every row is taken, or once the
    /// chunk's writing ended (a stop may leave rows untaken).
    #[test]
    fn the_next_chunk_starts_once_every_row_is_taken() {
        let p = Progress::new(3);
        assert!(!p.all_taken(), "nothing taken");
        p.taken.store(2, Ordering::SeqCst);
        assert!(!p.all_taken(), "a row not taken");
        p.taken.store(3, Ordering::SeqCst);
        assert!(p.all_taken(), "every row taken, some still in flight");
        let stopped = Progress::new(3);
        stopped.taken.store(1, Ordering::SeqCst);
        assert!(!stopped.all_taken(), "a stop left rows untaken");
        stopped.ended.store(true, Ordering::SeqCst);
        assert!(stopped.all_taken(), "the writing ended");
    }
}
