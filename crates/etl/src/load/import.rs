//! An import step against the target: resolve the group and attributes,
//! set blocked addresses aside, compare each row with the receiver the
//! target holds, and create or update only what differs, with bounded
//! concurrency. A dry run stops before writing and lists the plan instead.
//! Writes are recorded in the run's [journal](super::journal) so that a
//! resumed run sends no confirmed row again.

use super::chunk::{
    Counters, Limit, Next, Prepared, Progress, RowCounts, Shared, StepFetch, Tally, next_chunk,
    unstarted, write_chunk,
};
use super::diff::Policies;
use super::held::TargetIndex;
use super::journal::Journal;
use super::lookup::Lookup;
pub use super::outcome::ImportOutcome;
use super::plan_file::{self, PlanFile};
use super::{Action, LoadError, PlanRow, WriteOptions, mirror, plan, progress_bar, spool_error};
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
use crate::prepare::{ImportChunk, PreparedRows};
use crate::source::RejectSpool;
use crate::transport::target::Connected;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

pub use super::chunk::Chunks;

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

/// What the step's loop waits for: a chunk ended (the older first), or
/// the next chunk came (`None`: the source ended, or the run stops).
/// One a loop turn, moved once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Event<'r> {
    Ended(Option<Writing<'r>>),
    Fetched(&'r mut Chunks, Result<Option<Next<'r>>, LoadError>),
}

/// Runs one import step over its chunks, `first` and the `rest`, one after
/// the other. Rows the target refuses go to `refused` with their source
/// values; a dry run writes each chunk's lines to `plan` (the chunk's own
/// rejects among them, as `invalid`).
pub async fn run(
    conn: &Connected,
    step: &ImportStep,
    mut first: ImportChunk,
    rest: &mut Chunks,
    opts: &WriteOptions,
    mut plan: Option<&mut PlanFile>,
    refused: &mut RejectSpool,
) -> Result<ImportOutcome, LoadError> {
    let mut out = ImportOutcome::default();
    // The step's retries outside its rows' writes: the set-up's and the
    // blacklist lookups'.
    let setup_retried = AtomicU64::new(0);
    let (group, created) = plan::group(
        conn,
        &step.group,
        step.create_group,
        opts.dry_run,
        opts.retries,
        &setup_retried,
    )
    .await?;
    out.group_id = group.as_ref().map(|g| g.id.to_string());
    // Mirror mode: every address of the source, from its first read.
    let source_addresses = first.source_addresses.take();
    // `limit`: each chunk is cut to the rows the limit leaves, as it comes.
    let limit = Limit::new(step.limit);
    let first = Prepared::new(step, limit.cut(first))?;
    let policies = Policies::new(step);
    let watched = policies.watched();
    let kept: Vec<AtomicU64> = (0..policies.len()).map(|_| AtomicU64::new(0)).collect();
    // Once the group is known, the attributes are made, the group is read
    // and the first chunk's blacklist lookups go, side by side: none needs
    // another, and each waits out its own 429s.
    let mut lookup = Lookup::start(
        conn,
        group.as_ref(),
        Arc::clone(&first.emails),
        (opts.concurrency, opts.retries),
        &setup_retried,
    );
    let attributes = plan::attributes(
        conn,
        group.as_ref(),
        &step.global_attributes,
        &step.attributes,
        opts.dry_run,
        opts.retries,
        &setup_retried,
    );
    let existing = async {
        match &group {
            Some(g) => {
                let (c, r, s) = (opts.concurrency, opts.retries, opts.spill_after);
                plan::existing(conn, g, c, r, s, &watched).await
            }
            None => Ok(TargetIndex::new(opts.spill_after)),
        }
    };
    let (attributes, existing) = lookup
        .alongside(async { futures::try_join!(attributes, existing) })
        .await?;
    let existing: TargetIndex = existing;
    if opts.dry_run {
        out.would_create_group = created;
        out.would_create_attributes = attributes;
    } else {
        out.group_created = created;
        out.attributes_created = attributes;
    }
    // What listpipe imported into this group before; mirror mode reads it
    // and plans its removals now, so that its guard can refuse before
    // anything is written. A plain import only appends to it.
    let mut ledger = group
        .as_ref()
        .map(|g| {
            let read = step.mirror.is_some();
            let key = mirror::LedgerKey {
                pipeline: &opts.pipeline,
                formerly: &opts.pipeline_name,
                step: &step.name,
                target: &opts.target,
                group: g.id,
            };
            mirror::Ledger::open(&key, read)
        })
        .transpose()?;
    let removals = match (&step.mirror, ledger.as_ref().filter(|l| l.is_read())) {
        (Some(m), Some(imported)) => {
            let source = source_addresses.ok_or_else(|| {
                LoadError::step("mirror mode: the source's addresses were not read")
            })?;
            let planned = mirror::planned(imported, &source, &existing, m.removal)?;
            drop(source);
            if !opts.dry_run {
                let total = existing.len()?;
                mirror::guard(m, planned.len(), total, opts.allow_mass_removal)
                    .map_err(LoadError::Guard)?;
            }
            planned
        }
        _ => Vec::new(),
    };

    // Timestamps given as `value = "now"` mean "when it first happened": they
    // are sent on create, and on update only where the target holds none
    // (see rows.rs), so a later run does not move them. So do those that fall
    // back to `default = "now"` (the opt-in of a row without a date): a time
    // set by an earlier run is not moved by today's.
    let now = |v: &str| v.eq_ignore_ascii_case("now");
    let create_only: Vec<ReceiverField> = step
        .fields
        .iter()
        .filter(|(_, m)| {
            matches!(&m.from, ValueFrom::Constant(v) if now(v))
                || m.default.as_deref().is_some_and(now)
        })
        .map(|(f, _)| *f)
        .collect();
    let journal = match (&opts.journal, &group, opts.dry_run) {
        (Some(j), Some(_), false) => Some(Journal::open(j, &step.name, &step.group.to_string())?),
        _ => None,
    };
    out.journal_unreadable_lines = journal.as_ref().map_or(0, Journal::unreadable);
    let bar = progress_bar(opts, &step.name);
    let gid = group.as_ref().map(|g| g.id);
    // A chunk's plan lines, written when it is done.
    let mut plan_rows: Vec<PlanRow> = Vec::new();
    // Mirror mode's removals go with the step's one chunk (see plan_file).
    if let (Some(m), Some(_), true) = (&step.mirror, gid, opts.dry_run) {
        plan_rows.extend(removals.iter().map(|e| PlanRow {
            row_number: 0,
            email: e.clone(),
            action: Action::Remove,
            detail: format!(
                "{}: imported earlier, not in the source now",
                m.removal.as_str()
            ),
        }));
    }
    let shared = Shared {
        step,
        conn,
        opts,
        existing: &existing,
        create_only: &create_only,
        policies: &policies,
        kept: &kept,
        run_time: chrono::Utc::now().timestamp(),
        gid,
        journal: journal.as_ref(),
        bar: bar.as_ref(),
    };
    let shared = &shared;
    let (dry_run, keeps_imported) = (opts.dry_run, !opts.dry_run && ledger.is_some());
    // Starts writing a chunk; it keeps its own counts and lines, added to
    // the step's when it ends.
    let start = |chunk: Prepared, lookup, plan_rows, batches| {
        bar.inc_length(chunk.emails.len() as u64);
        let progress = Arc::new(Progress::new(chunk.emails.len()));
        let p = Arc::clone(&progress);
        let run: Pin<Box<dyn Future<Output = Written> + '_>> = Box::pin(async move {
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
    };
    // Chunks are written one after the other, except that the next one
    // starts once every row of the one before is taken: its rows left (on
    // the wire, or waiting out a 429's `Retry-After`) go on beside the next
    // chunk's, each request taking its place from the one controller. A
    // sporadic 429 near a chunk's end then delays its own row, not the next
    // 65,536 (issue 41). Measured: waiting instead until the rows left only
    // waited out a 429, a chunk's last thousand rows (8% refused, at 10,000
    // a second) had one or another on the wire for a second at every chunk's
    // end, and the run sent about a tenth of its rate meanwhile. Two chunks
    // are written at most, and they end in order.
    let mut counters = Counters {
        batches: true,
        ..Default::default()
    };
    let mut not_started = 0u64;
    let mut failure: Option<LoadError> = None;
    let mut prev: Option<Writing<'_>> = None;
    let mut cur = Some(start(first, lookup, plan_rows, true));
    let fetch = |rest, progress| {
        let step = StepFetch {
            step,
            retried: &setup_retried,
            limit: &limit,
        };
        Box::pin(next_chunk(conn, step, group.as_ref(), opts, rest, progress))
    };
    let mut fetching = None;
    let mut fetched = None;
    // The source, while it may hold more chunks.
    let mut rest = Some(rest);
    // The source once it ended or the run stops (what is left in it counts
    // as not started).
    let mut done = None;
    loop {
        // The next chunk is fetched (read, and checked against the
        // blacklist) as soon as the one before it starts, while the chunks
        // before are written: a chunk's last rows may wait out 429s for
        // seconds (a row refused four times waits four), longer than its
        // successor takes to write. Two chunks are written at most, and
        // one more is ready.
        if fetched.is_none()
            && fetching.is_none()
            && failure.is_none()
            && let Some(r) = rest.take()
        {
            let progress = cur.as_ref().map(|w| Arc::clone(&w.progress));
            fetching = Some(fetch(r, progress));
        }
        if prev.is_none()
            && let Some((chunk, lookup)) = fetched.take()
        {
            let next = start(chunk, lookup, Vec::new(), counters.batches);
            prev = cur.replace(next);
        }
        if prev.is_none() && cur.is_none() && fetching.is_none() && fetched.is_none() {
            break;
        }
        let event = std::future::poll_fn(|cx| {
            // A chunk that waits for the one before it to end keeps its
            // lookups going (lookup.rs).
            if let Some((_, lookup)) = fetched.as_mut() {
                lookup.drive(cx);
            }
            if let Some(w) = prev.as_mut()
                && Pin::new(&mut w.run).poll(cx).is_ready()
            {
                return Poll::Ready(Event::Ended(prev.take()));
            }
            if let Some(w) = cur.as_mut()
                && Pin::new(&mut w.run).poll(cx).is_ready()
                && prev.is_none()
            {
                return Poll::Ready(Event::Ended(cur.take()));
            }
            if let Some(f) = fetching.as_mut()
                && let Poll::Ready((r, next)) = f.as_mut().poll(cx)
            {
                fetching = None;
                return Poll::Ready(Event::Fetched(r, next));
            }
            Poll::Pending
        })
        .await;
        let ended = match event {
            Event::Fetched(r, next) => {
                match next {
                    Ok(Some(Next::Ready(chunk, lookup))) => {
                        fetched = Some((chunk, lookup));
                        rest = Some(r);
                    }
                    Ok(Some(Next::Unstarted(c))) => {
                        // The chunks still written end first.
                        if let Err(e) = unstarted(&c, &mut not_started, plan.as_deref_mut()) {
                            failure.get_or_insert(e);
                        }
                        done = Some(r);
                    }
                    Ok(None) => done = Some(r),
                    Err(e) => {
                        failure.get_or_insert(e);
                        done = Some(r);
                    }
                }
                continue;
            }
            Event::Ended(w) => w.and_then(|mut w| Pin::new(&mut w.run).take_output()),
        };
        let Some(Written {
            chunk,
            mut tally,
            counters: chunk_counters,
            result,
        }) = ended
        else {
            continue;
        };
        tally.out.add_to(&mut out);
        counters.add(&chunk_counters);
        // What the chunk imported goes to the ledger now, even when the
        // step stops here: the target holds it.
        if let (Some(l), Some(imported)) = (ledger.as_mut(), tally.imported.as_mut()) {
            l.add(imported)?;
        }
        let written = result.is_ok();
        match result {
            Ok(()) => not_started += (chunk.emails.len() - tally.seen) as u64,
            // No new chunk; the one still written ends first. The rows
            // written before the failure (a blacklist lookup that failed
            // for good comes mid-chunk) keep their rejects below.
            Err(e) => {
                failure.get_or_insert(e);
                fetched = None;
                fetching = None;
            }
        }
        // One pass over the chunk's source rows finds every refused row's
        // values (a lookup per refused row was a scan of the table each).
        let failed = std::mem::take(&mut tally.failed_rows);
        if !failed.is_empty() {
            let cols = PreparedRows::new(step, &chunk.chunk.frame)
                .map_err(|e| LoadError::step(e.to_string()))?;
            let lookup = crate::prepare::RejectLookup::new(&chunk.chunk.table);
            for (index, reason) in failed {
                let (file, row) = (cols.file(index), cols.row_number(index));
                refused
                    .push(&lookup.reject(file, row, "email", reason))
                    .map_err(spool_error)?;
            }
        }
        if let (Some(plan), true) = (plan.as_deref_mut(), written) {
            let invalid = chunk.chunk.rejects.iter().map(plan_file::invalid);
            tally.plan_rows.extend(invalid);
            plan.chunk(&mut tally.plan_rows)?;
        }
    }
    let kept: Vec<u64> = kept.iter().map(|k| k.load(Ordering::Relaxed)).collect();
    out.kept_by_policy = policies.counted(&kept);
    out.limited = limit.outcome();
    if let Some(e) = failure {
        return Err(e);
    }
    // A stop (Ctrl-C, SIGTERM) or the breaker opening took no new chunk.
    if opts.stop.is_set() || conn.breaker.is_open() {
        // Chunks prepared already count as not started; the rest of the
        // source is not read.
        if let Some(rest) = done.or(rest) {
            while let Ok(c) = rest.try_recv() {
                unstarted(&c, &mut not_started, plan.as_deref_mut())?;
            }
        }
        out.stopped = true;
    }
    // What the rows' requests did, counted before any early return: a run
    // stopped here (exit 3, 74) reports what it sent as a finished one does.
    out.retries += counters.retried + setup_retried.load(Ordering::Relaxed);
    out.orders_sent = counters.orders_sent;
    out.in_flight_checked = counters.checked;
    out.write_requests = counters.write_requests;
    out.not_started = not_started;
    if let Some(j) = &journal {
        j.sync().await;
        // A journal that could not be written stops the step here, before
        // the ledger and the rejects: the target holds what it confirmed,
        // and `--resume` checks every row against it.
        if let Some(e) = j.failure() {
            return Err(e.unfinished(&out));
        }
    }
    // The target stopped answering: the rows that failed did not fail on
    // their own, so they are not rejects; the journal keeps them for
    // `--resume`, and the run stops (exit 3).
    if let Some(stopped) = conn.breaker.stopped() {
        bar.finish();
        return Err(LoadError::from(stopped).unfinished(&out));
    }
    out.stopped |= not_started > 0;
    bar.finish();

    // Mirror mode: what left the source goes, once every row is written.
    let concurrency = opts.concurrency.max(1);
    let mut removed = Vec::new();
    if let (Some(m), Some(g)) = (&step.mirror, gid) {
        if opts.dry_run {
            out.removed = removals.len() as u64;
        } else if !out.stopped {
            let r = mirror::remove(conn, g, removals, m.removal, concurrency, opts.retries).await;
            out.removed = r.done.len() as u64;
            out.removal_failures = r.failed;
            out.retries += r.retries;
            removed = r.done;
        }
    }
    // Mirror mode writes back the ledger it read, compacted, without what
    // it deleted; a plain import appended its chunks already.
    if let (Some(l), false) = (ledger.as_ref(), opts.dry_run) {
        let deleted = step
            .mirror
            .as_ref()
            .is_some_and(|m| m.removal == mirror::Removal::Delete);
        if !deleted {
            removed.clear();
        }
        l.save(&removed, opts.spill_after)?;
    }
    Ok(out)
}
