//! An import step's chunk loop ([`import`](super)): its chunks written
//! one after the other, the next one fetched while they are.
//!
//! Chunks are written one after the other, except that the next one
//! starts once every row of the one before is taken: its rows left (on
//! the wire, or waiting out a 429's `Retry-After`) go on beside the next
//! chunk's, each request taking its place from the one controller. A
//! sporadic 429 near a chunk's end then delays its own row, not the next
//! 65,536 (issue 41). Measured: waiting instead until the rows left only
//! waited out a 429, a chunk's last thousand rows (8% refused, at 10,000
//! a second) had one or another on the wire for a second at every chunk's
//! end, and the run sent about a tenth of its rate meanwhile. Two chunks
//! are written at most, and they end in order.

use super::Ctx;
use crate::load::chunk::{
    Chunks, Counters, Next, Prepared, Progress, RowCounts, Shared, StepFetch, Tally, next_chunk,
    unstarted, write_chunk,
};
use crate::load::lookup::Lookup;
use crate::load::outcome::ImportOutcome;
use crate::load::plan_file::{self, PlanFile};
use crate::load::{Action, LoadError, PlanRow, mirror, spool_error};
use crate::pipeline::ImportStep;
use crate::prepare::PreparedRows;
use crate::source::RejectSpool;
use listpipe_api::Group;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

/// A chunk being written, and how far it is.
struct Writing<'s> {
    progress: Arc<Progress>,
    run: futures::future::MaybeDone<Pin<Box<dyn Future<Output = Written> + 's>>>,
}

/// A chunk written (or stopped by `result`'s error), with what it did.
struct Written {
    chunk: Prepared,
    tally: Tally,
    counters: Counters,
    result: Result<(), LoadError>,
}

/// What a chunk's fetch ends with: the source back, and the next chunk.
type Fetched<'a> = (&'a mut Chunks, Result<Option<Next<'a>>, LoadError>);

/// The next chunk's fetch, under way.
type Fetching<'a> = Pin<Box<dyn Future<Output = Fetched<'a>> + 'a>>;

/// What the step's loop waits for: a chunk ended (the older first), or
/// the next chunk came (`None`: the source ended, or the run stops).
/// One a loop turn, moved once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Event<'r> {
    Ended(Option<Writing<'r>>),
    Fetched(&'r mut Chunks, Result<Option<Next<'r>>, LoadError>),
}

/// What the chunk loop takes of the step.
pub(super) struct Chain<'a> {
    pub(super) cx: Ctx<'a>,
    pub(super) group: Option<&'a Group>,
    pub(super) shared: &'a Shared<'a>,
    /// Each chunk keeps the addresses it imported, for the ledger.
    pub(super) keeps_imported: bool,
}

impl<'a> Chain<'a> {
    /// Starts writing a chunk; it keeps its own counts and lines, added to
    /// the step's when it ends.
    fn start(
        &self,
        chunk: Prepared,
        lookup: Lookup<'a>,
        plan_rows: Vec<PlanRow>,
        batches: bool,
    ) -> Writing<'a> {
        let shared = self.shared;
        let (dry_run, keeps_imported, gid) =
            (self.cx.opts.dry_run, self.keeps_imported, shared.gid);
        shared.bar.inc_length(chunk.emails.len() as u64);
        let progress = Arc::new(Progress::new(chunk.emails.len()));
        let p = Arc::clone(&progress);
        let run: Pin<Box<dyn Future<Output = Written> + 'a>> = Box::pin(async move {
            let mut tally = Tally {
                out: RowCounts::default(),
                seen: 0,
                failed_rows: Vec::new(),
                imported: keeps_imported.then(Vec::new),
                plan_rows,
                dry_run,
                group_known: gid.is_some(),
            };
            if dry_run {
                let duplicates = chunk.chunk.duplicates.iter();
                tally
                    .plan_rows
                    .extend(duplicates.map(|(row, email)| PlanRow {
                        row_number: *row,
                        email: email.clone(),
                        action: Action::Duplicate,
                        detail: String::new(),
                    }));
            }
            let mut counters = Counters {
                batches,
                ..Default::default()
            };
            let result = write_chunk(shared, &chunk, lookup, &mut tally, &mut counters, &p).await;
            p.ended.store(true, Ordering::SeqCst);
            Written {
                chunk,
                tally,
                counters,
                result,
            }
        });
        Writing {
            progress,
            run: futures::future::maybe_done(run),
        }
    }

    /// Fetches the next chunk from `rest` while the chunk of `progress` is
    /// written ([`next_chunk`]).
    fn fetch(&self, rest: &'a mut Chunks, progress: Option<Arc<Progress>>) -> Fetching<'a> {
        let Ctx {
            conn,
            step,
            opts,
            retried,
            limit,
        } = self.cx;
        let step = StepFetch {
            step,
            retried,
            limit,
        };
        Box::pin(next_chunk(conn, step, self.group, opts, rest, progress))
    }
}

/// Where the written chunks' results go: the step's outcome, its ledger,
/// a dry run's plan, the rows the target refused.
pub(super) struct Sink<'s> {
    pub(super) out: &'s mut ImportOutcome,
    pub(super) ledger: Option<&'s mut mirror::Ledger>,
    pub(super) plan: Option<&'s mut PlanFile>,
    pub(super) refused: &'s mut RejectSpool,
}

/// The chunk loop as it goes: two chunks written at most (`prev`, the
/// older, and `cur`), one fetched or being fetched.
pub(super) struct Chunking<'a> {
    prev: Option<Writing<'a>>,
    cur: Option<Writing<'a>>,
    fetching: Option<Fetching<'a>>,
    fetched: Option<(Prepared, Lookup<'a>)>,
    /// The source, while it may hold more chunks.
    pub(super) rest: Option<&'a mut Chunks>,
    /// The source once it ended or the run stops (what is left in it
    /// counts as not started).
    pub(super) done: Option<&'a mut Chunks>,
    pub(super) failure: Option<LoadError>,
    pub(super) not_started: u64,
    /// The step's request counters, summed over its chunks.
    pub(super) counters: Counters,
}

impl<'a> Chunking<'a> {
    /// The loop with the `first` chunk being written (its blacklist
    /// `lookup` under way, its plan lines begun), the `rest` to come.
    pub(super) fn new(
        chain: &Chain<'a>,
        first: Prepared,
        lookup: Lookup<'a>,
        plan_rows: Vec<PlanRow>,
        rest: &'a mut Chunks,
    ) -> Self {
        Chunking {
            prev: None,
            cur: Some(chain.start(first, lookup, plan_rows, true)),
            fetching: None,
            fetched: None,
            rest: Some(rest),
            done: None,
            failure: None,
            not_started: 0,
            counters: Counters {
                batches: true,
                ..Default::default()
            },
        }
    }

    /// Runs the loop until every chunk ended; a failure that stops the
    /// step is kept in `failure`, an error of the run's own output comes
    /// back at once.
    pub(super) async fn run(
        &mut self,
        chain: &Chain<'a>,
        mut sink: Sink<'_>,
    ) -> Result<(), LoadError> {
        loop {
            // The next chunk is fetched (read, and checked against the
            // blacklist) as soon as the one before it starts, while the
            // chunks before are written: a chunk's last rows may wait out
            // 429s for seconds (a row refused four times waits four),
            // longer than its successor takes to write. Two chunks are
            // written at most, and one more is ready.
            if self.fetched.is_none()
                && self.fetching.is_none()
                && self.failure.is_none()
                && let Some(r) = self.rest.take()
            {
                let progress = self.cur.as_ref().map(|w| Arc::clone(&w.progress));
                self.fetching = Some(chain.fetch(r, progress));
            }
            if self.prev.is_none()
                && let Some((chunk, lookup)) = self.fetched.take()
            {
                let next = chain.start(chunk, lookup, Vec::new(), self.counters.batches);
                self.prev = self.cur.replace(next);
            }
            if self.prev.is_none()
                && self.cur.is_none()
                && self.fetching.is_none()
                && self.fetched.is_none()
            {
                return Ok(());
            }
            match self.next_event().await {
                Event::Fetched(r, next) => self.fetched(r, next, sink.plan.as_deref_mut()),
                Event::Ended(w) => {
                    if let Some(w) = w.and_then(|mut w| Pin::new(&mut w.run).take_output()) {
                        self.ended(chain.cx.step, w, &mut sink)?;
                    }
                }
            }
        }
    }

    /// Waits for the next event: a chunk ended (the older first), or the
    /// next chunk's fetch ended.
    async fn next_event(&mut self) -> Event<'a> {
        std::future::poll_fn(|cx| {
            // A chunk that waits for the one before it to end keeps its
            // lookups going (lookup.rs).
            if let Some((_, lookup)) = self.fetched.as_mut() {
                lookup.drive(cx);
            }
            if let Some(w) = self.prev.as_mut()
                && Pin::new(&mut w.run).poll(cx).is_ready()
            {
                return Poll::Ready(Event::Ended(self.prev.take()));
            }
            if let Some(w) = self.cur.as_mut()
                && Pin::new(&mut w.run).poll(cx).is_ready()
                && self.prev.is_none()
            {
                return Poll::Ready(Event::Ended(self.cur.take()));
            }
            if let Some(f) = self.fetching.as_mut()
                && let Poll::Ready((r, next)) = f.as_mut().poll(cx)
            {
                self.fetching = None;
                return Poll::Ready(Event::Fetched(r, next));
            }
            Poll::Pending
        })
        .await
    }

    /// The next chunk's fetch ended: the chunk is ready to be written, or
    /// never started (the run stops), or there is none (the source ended,
    /// or the fetch failed).
    fn fetched(
        &mut self,
        r: &'a mut Chunks,
        next: Result<Option<Next<'a>>, LoadError>,
        plan: Option<&mut PlanFile>,
    ) {
        match next {
            Ok(Some(Next::Ready(chunk, lookup))) => {
                self.fetched = Some((chunk, lookup));
                self.rest = Some(r);
            }
            Ok(Some(Next::Unstarted(c))) => {
                // The chunks still written end first.
                if let Err(e) = unstarted(&c, &mut self.not_started, plan) {
                    self.failure.get_or_insert(e);
                }
                self.done = Some(r);
            }
            Ok(None) => self.done = Some(r),
            Err(e) => {
                self.failure.get_or_insert(e);
                self.done = Some(r);
            }
        }
    }

    /// A chunk ended: what it did goes to the step's counts, the ledger,
    /// the refused rows and a dry run's plan.
    fn ended(
        &mut self,
        step: &ImportStep,
        written: Written,
        sink: &mut Sink<'_>,
    ) -> Result<(), LoadError> {
        let Written {
            chunk,
            mut tally,
            counters: chunk_counters,
            result,
        } = written;
        tally.out.add_to(sink.out);
        self.counters.add(&chunk_counters);
        // What the chunk imported goes to the ledger now, even when the
        // step stops here: the target holds it.
        if let (Some(l), Some(imported)) = (sink.ledger.as_deref_mut(), tally.imported.as_mut()) {
            l.add(imported)?;
        }
        let written = result.is_ok();
        match result {
            Ok(()) => self.not_started += (chunk.emails.len() - tally.seen) as u64,
            // No new chunk; the one still written ends first. The rows
            // written before the failure (a blacklist lookup that failed
            // for good comes mid-chunk) keep their rejects below.
            Err(e) => {
                self.failure.get_or_insert(e);
                self.fetched = None;
                self.fetching = None;
            }
        }
        let failed = std::mem::take(&mut tally.failed_rows);
        refuse(step, &chunk, failed, sink.refused)?;
        if let (Some(plan), true) = (sink.plan.as_deref_mut(), written) {
            let invalid = chunk.chunk.rejects.iter().map(plan_file::invalid);
            tally.plan_rows.extend(invalid);
            plan.chunk(&mut tally.plan_rows)?;
        }
        Ok(())
    }
}

/// The chunk's `failed` rows (index, reason) to `refused`, with their
/// source values. One pass over the chunk's source rows finds every
/// refused row's values (a lookup per refused row was a scan of the table
/// each).
fn refuse(
    step: &ImportStep,
    chunk: &Prepared,
    failed: Vec<(usize, String)>,
    refused: &mut RejectSpool,
) -> Result<(), LoadError> {
    if failed.is_empty() {
        return Ok(());
    }
    let cols =
        PreparedRows::new(step, &chunk.chunk.frame).map_err(|e| LoadError::step(e.to_string()))?;
    let lookup = crate::prepare::RejectLookup::new(&chunk.chunk.table);
    for (index, reason) in failed {
        let (file, row) = (cols.file(index), cols.row_number(index));
        refused
            .push(&lookup.reject(file, row, "email", reason))
            .map_err(spool_error)?;
    }
    Ok(())
}
