//! An import step against the target: resolve the group and attributes,
//! set blocked addresses aside, compare each row with the receiver the
//! target holds, and create or update only what differs, with bounded
//! concurrency. A dry run stops before writing and lists the plan instead.
//! Writes are recorded in the run's [journal](super::journal) so that a
//! resumed run sends no confirmed row again.

use super::diff::Held;
use super::journal::Journal;
use super::rows::{Decision, RowResult, Rows};
use super::target::Connected;
use super::{Action, LoadError, PlanRow, WriteMode, WriteOptions, mirror, plan, progress_bar};
use crate::hash::{FastMap, FastSet};
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
use crate::prepare::{ImportChunk, PreparedRows};
use crate::source::RejectRow;
use futures::StreamExt;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What an import step did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportOutcome {
    pub group_id: Option<String>,
    /// Created by this run: always false in a dry run, which creates nothing.
    pub group_created: bool,
    /// Created by this run: always empty in a dry run.
    pub attributes_created: Vec<String>,
    /// A dry run: the group is missing and a run would create it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub would_create_group: bool,
    /// A dry run: the attributes a run would create.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_create_attributes: Vec<String>,
    pub blocked: u64,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub retries: u64,
    pub orders_sent: u64,
    /// Rows a resumed run found confirmed in the journal and did not send again.
    pub resumed: u64,
    /// Rows an earlier run left in flight, checked against the target.
    pub in_flight_checked: u64,
    /// Lines of the resumed journal that could not be read (a torn last
    /// line, damage): their rows were checked against the target like new ones.
    pub journal_unreadable_lines: u64,
    /// Rows not taken because the run was stopped (Ctrl-C, SIGTERM).
    pub not_started: u64,
    /// Failed rows whose last error was transient (the target unreachable
    /// or overloaded through every retry): a `--resume` may finish them.
    pub failed_transient: u64,
    pub stopped: bool,
    /// Write requests sent (with retries): 0 when nothing changed.
    pub write_requests: u64,
    /// Mirror mode: receivers deactivated or deleted (planned, in a dry run).
    pub removed: u64,
    /// Mirror mode: removals the target refused, with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removal_failures: Vec<(String, String)>,
}

/// Rows per batch upsert (the extension takes up to 1,000).
const BATCH_ROWS: usize = 500;
/// Batches prepared and journalled ahead of their requests, at most: the
/// controller decides how many of them are in flight.
const BATCHES_QUEUED: usize = 16;

/// Every address the source holds, valid or not, as an import row would
/// normalise it: mirror mode must not remove a receiver whose row is still
/// there but was rejected this time (a bad date, say). A mirror step's
/// source comes whole, as one chunk.
fn source_emails(step: &ImportStep, chunk: &ImportChunk, valid: &[String]) -> HashSet<String> {
    let mut all: HashSet<String> = valid.iter().cloned().collect();
    let column = step.fields.iter().find_map(|(f, m)| match (f, &m.from) {
        (ReceiverField::Email, ValueFrom::Column(c)) => Some(c.as_str()),
        _ => None,
    });
    if let Some(Ok(cells)) =
        column.map(|c| chunk.table.frame.column(c).and_then(|c| c.str().cloned()))
    {
        all.extend(cells.iter().flatten().map(|e| e.trim().to_lowercase()));
    }
    for (_, email) in &chunk.duplicates {
        all.insert(email.trim().to_lowercase());
    }
    all
}

/// The step's counters, fed one row result at a time.
struct Tally<'a> {
    out: &'a mut ImportOutcome,
    /// Rows of the chunk taken (the rest were not started: a stop).
    seen: usize,
    /// Refused rows of the chunk (index, reason): their rejects are made
    /// from the chunk's source rows once it is written.
    failed_rows: Vec<(usize, String)>,
    /// The mirror ledger, outside a dry run: what this run imported.
    ledger: Option<&'a mut mirror::Ledger>,
    plan_rows: &'a mut Vec<PlanRow>,
    dry_run: bool,
    /// The group exists (a dry run may be about to create it).
    group_known: bool,
}

impl Tally<'_> {
    fn imported(&mut self, email: &str) {
        if let Some(l) = self.ledger.as_mut()
            && !l.emails.contains(email)
        {
            l.emails.insert(email.to_string());
        }
    }

    /// Row `i` of the chunk whose addresses are `emails` and rows `cols`.
    fn add(&mut self, i: usize, r: RowResult, emails: &[String], cols: &PreparedRows<'_>) {
        self.seen += 1;
        let out = &mut *self.out;
        let (action, detail) = match r {
            RowResult::Done(a, detail) => (a, detail),
            RowResult::Resumed => {
                out.resumed += 1;
                self.imported(&emails[i]);
                return;
            }
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

/// The prepared chunks of a step after the first, as the preparing thread
/// hands them over (a bounded channel: it reads ahead a chunk at most).
pub type Chunks = tokio::sync::mpsc::Receiver<ImportChunk>;

/// Runs one import step over its chunks, `first` and the `rest`, one after
/// the other. Rows the target refuses go to `refused` with their source
/// values; dry runs fill `plan_rows`.
pub async fn run(
    conn: &Connected,
    step: &ImportStep,
    first: ImportChunk,
    rest: &mut Chunks,
    opts: &WriteOptions,
    plan_rows: &mut Vec<PlanRow>,
    refused: &mut Vec<RejectRow>,
) -> Result<ImportOutcome, LoadError> {
    let mut out = ImportOutcome::default();
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
    let attributes = plan::attributes(
        conn,
        group.as_ref(),
        &step.global_attributes,
        &step.attributes,
        opts.dry_run,
        opts.retries,
        &setup_retried,
    )
    .await?;
    if opts.dry_run {
        out.would_create_group = created;
        out.would_create_attributes = attributes;
    } else {
        out.group_created = created;
        out.attributes_created = attributes;
    }

    let first = Prepared::new(step, first)?;
    // The blacklist check of the first chunk and the read of the group go
    // side by side.
    let existing = async {
        match &group {
            Some(g) => plan::existing(conn, g, opts.concurrency, opts.retries).await,
            None => Ok(FastMap::default()),
        }
    };
    let (blocked, existing) = futures::try_join!(
        plan::blocked(
            conn,
            group.as_ref(),
            &first.emails,
            opts.concurrency,
            opts.retries
        ),
        existing
    )?;
    let existing: FastMap<String, Held> = existing;
    // What listpipe imported into this group before; mirror mode plans its
    // removals now, so that its guard can refuse before anything is written.
    let mut ledger = group
        .as_ref()
        .map(|g| mirror::Ledger::open(&opts.pipeline, &step.name, &opts.target, g.id))
        .transpose()?;
    let removals = match (&step.mirror, &ledger) {
        (Some(m), Some(l)) => {
            let source = source_emails(step, &first.chunk, &first.emails);
            let planned = mirror::planned(l, &source, &existing, m.removal);
            if !opts.dry_run {
                mirror::guard(m, planned.len(), existing.len(), opts.allow_mass_removal)
                    .map_err(LoadError::Guard)?;
            }
            planned
        }
        _ => Vec::new(),
    };

    // Timestamps given as `value = "now"` mean "when it first happened": they
    // are sent on create, and on update only where the target holds none
    // (see rows.rs), so a later run does not move them.
    let create_only: Vec<ReceiverField> = step
        .fields
        .iter()
        .filter(|(_, m)| matches!(&m.from, ValueFrom::Constant(v) if v.eq_ignore_ascii_case("now")))
        .map(|(f, _)| *f)
        .collect();
    let journal = match (&opts.journal, &group, opts.dry_run) {
        (Some(j), Some(_), false) => Some(Journal::open(j, &step.name, &step.group.to_string())?),
        _ => None,
    };
    out.journal_unreadable_lines = journal.as_ref().map_or(0, Journal::unreadable);
    let bar = progress_bar(opts, 0, &step.name);
    let gid = group.as_ref().map(|g| g.id);
    let mut tally = Tally {
        out: &mut out,
        seen: 0,
        failed_rows: Vec::new(),
        ledger: ledger.as_mut().filter(|_| !opts.dry_run),
        plan_rows: &mut *plan_rows,
        dry_run: opts.dry_run,
        group_known: gid.is_some(),
    };
    let shared = Shared {
        step,
        conn,
        opts,
        existing: &existing,
        create_only: &create_only,
        run_time: chrono::Utc::now().timestamp(),
        gid,
        journal: journal.as_ref(),
        bar: &bar,
    };
    let mut counters = Counters {
        batches: true,
        ..Default::default()
    };
    let mut next = Some((first, blocked));
    let mut not_started = 0u64;
    while let Some((chunk, blocked)) = next.take() {
        let n = chunk.emails.len();
        bar.inc_length(n as u64);
        if opts.dry_run {
            tally
                .plan_rows
                .extend(chunk.chunk.duplicates.iter().map(|(row, email)| PlanRow {
                    row_number: *row,
                    email: email.clone(),
                    action: Action::Duplicate,
                    detail: String::new(),
                }));
        }
        tally.seen = 0;
        write_chunk(&shared, &chunk, &blocked, &mut tally, &mut counters).await?;
        not_started += (n - tally.seen) as u64;
        // One pass over the chunk's source rows finds every refused row's
        // values (a lookup per refused row was a scan of the table each).
        let failed = std::mem::take(&mut tally.failed_rows);
        if !failed.is_empty() {
            let cols = PreparedRows::new(step, &chunk.chunk.frame)
                .map_err(|e| LoadError::step(e.to_string()))?;
            let lookup = crate::prepare::RejectLookup::new(&chunk.chunk.table);
            for (index, reason) in failed {
                let (file, row) = (cols.file(index), cols.row_number(index));
                refused.push(lookup.reject(file, row, "email", reason));
            }
        }
        drop(chunk);
        // A stop (Ctrl-C, SIGTERM) or the breaker opening takes no new chunk.
        if opts.stop.is_set() || conn.breaker.is_open() {
            // Chunks prepared already count as not started; the rest of
            // the source is not read.
            while let Ok(c) = rest.try_recv() {
                not_started += c.frame.height() as u64;
            }
            tally.out.stopped = true;
            break;
        }
        if let Some(c) = rest.recv().await {
            let c = Prepared::new(step, c)?;
            let blocked = plan::blocked(
                conn,
                group.as_ref(),
                &c.emails,
                opts.concurrency,
                opts.retries,
            )
            .await?;
            next = Some((c, blocked));
        }
    }
    drop(tally);
    if let Some(j) = &journal {
        j.sync().await;
        // A journal that could not be written stops the step here, before
        // the ledger and the rejects: the target holds what it confirmed,
        // and `--resume` checks every row against it.
        if let Some(e) = j.failure() {
            return Err(e);
        }
    }
    // The target stopped answering: the rows that failed did not fail on
    // their own, so they are not rejects; the journal keeps them for
    // `--resume`, and the run stops (exit 3).
    if let Some(stopped) = conn.breaker.stopped() {
        bar.finish_and_clear();
        return Err(stopped.into());
    }
    out.not_started = not_started;
    out.stopped |= not_started > 0;
    bar.finish_and_clear();

    // Mirror mode: what left the source goes, once every row is written.
    let concurrency = opts.concurrency.max(1);
    let mut removed = Vec::new();
    if let (Some(m), Some(g)) = (&step.mirror, gid) {
        if opts.dry_run {
            plan_rows.extend(removals.iter().map(|e| PlanRow {
                row_number: 0,
                email: e.clone(),
                action: Action::Remove,
                detail: format!(
                    "{}: imported earlier, not in the source now",
                    m.removal.as_str()
                ),
            }));
            out.removed = removals.len() as u64;
        } else if !out.stopped {
            let r = mirror::remove(conn, g, removals, m.removal, concurrency, opts.retries).await;
            out.removed = r.done.len() as u64;
            out.removal_failures = r.failed;
            out.retries += r.retries;
            removed = r.done;
        }
    }
    if let (Some(l), false) = (ledger.as_mut(), opts.dry_run) {
        if step
            .mirror
            .as_ref()
            .is_some_and(|m| m.removal == mirror::Removal::Delete)
        {
            removed.iter().for_each(|e| {
                l.emails.remove(e);
            });
        }
        l.save()?;
    }
    out.retries += counters.retried + setup_retried.load(Ordering::Relaxed);
    out.orders_sent = counters.orders_sent;
    out.in_flight_checked = counters.checked;
    out.write_requests = counters.write_requests;
    Ok(out)
}

/// A prepared chunk with the addresses of its rows.
struct Prepared {
    chunk: ImportChunk,
    emails: Vec<String>,
}

impl Prepared {
    fn new(step: &ImportStep, chunk: ImportChunk) -> Result<Self, LoadError> {
        let emails = {
            let cols = PreparedRows::new(step, &chunk.frame)
                .map_err(|e| LoadError::step(e.to_string()))?;
            (0..cols.len()).map(|i| cols.email(i)).collect()
        };
        Ok(Prepared { chunk, emails })
    }
}

/// What every chunk of a step shares.
struct Shared<'a> {
    step: &'a ImportStep,
    conn: &'a Connected,
    opts: &'a WriteOptions,
    existing: &'a FastMap<String, Held>,
    create_only: &'a [ReceiverField],
    run_time: i64,
    gid: Option<crate::api::Id>,
    journal: Option<&'a Journal>,
    bar: &'a indicatif::ProgressBar,
}

/// The step's request counters, summed over its chunks.
#[derive(Default)]
struct Counters {
    /// False once the target answered the batch upsert with "no such route".
    batches: bool,
    retried: u64,
    orders_sent: u64,
    checked: u64,
    write_requests: u64,
}

/// Decides and writes one chunk's rows, with bounded concurrency; each
/// row's result is folded into `tally` as it arrives.
async fn write_chunk(
    shared: &Shared<'_>,
    chunk: &Prepared,
    blocked: &FastSet<String>,
    tally: &mut Tally<'_>,
    counters: &mut Counters,
) -> Result<(), LoadError> {
    let Shared {
        step,
        conn,
        opts,
        bar,
        ..
    } = *shared;
    let cols =
        PreparedRows::new(step, &chunk.chunk.frame).map_err(|e| LoadError::step(e.to_string()))?;
    let emails = &chunk.emails;
    let rows = Rows {
        conn,
        opts,
        cols: &cols,
        emails,
        blocked,
        existing: shared.existing,
        orders: &chunk.chunk.orders,
        create_only: shared.create_only,
        run_time: shared.run_time,
        gid: shared.gid,
        journal: shared.journal,
        batches: AtomicBool::new(counters.batches),
        retried: AtomicU64::new(0),
        orders_sent: AtomicU64::new(0),
        checked: AtomicU64::new(0),
        write_requests: AtomicU64::new(0),
    };
    // A stop (Ctrl-C, SIGTERM) takes no new row; rows in flight finish.
    // So does the breaker opening, and its rows in flight fail at once.
    let stop = opts.stop.clone();
    let breaker = &conn.breaker;
    let rows = &rows;
    // The streams are bounded by the controller's maximum; each request
    // then waits for its room in the controller (retry.rs), so the rows in
    // flight follow the limit it sets as it moves.
    let concurrency = opts.concurrency.max(1);
    let ctl = &conn.controller;
    let noted = std::sync::Mutex::new(std::time::Instant::now());
    let note = || {
        if !opts.progress {
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
    let decided = futures::stream::iter(0..emails.len())
        .take_while(|_| futures::future::ready(!stop.is_set() && !breaker.is_open()))
        .map(|i| async move { (i, rows.decide(i).await) })
        .buffer_unordered(concurrency);
    // Each row's result is folded into the step's counters as it arrives,
    // so memory does not grow with the rows: only what must outlive the
    // stream is kept per row (a refused row's reject, a dry run's plan, the
    // ledger's addresses).
    let cols = &cols;
    match opts.writes {
        WriteMode::Single => {
            decided
                .map(|(i, d)| async move {
                    let r = match d {
                        Decision::Finished(r) => r,
                        Decision::Send(p) => rows.send_one(*p).await,
                    };
                    bar.inc(1);
                    note();
                    (i, r)
                })
                .buffer_unordered(concurrency)
                .for_each(|(i, r)| {
                    tally.add(i, r, emails, cols);
                    futures::future::ready(())
                })
                .await
        }
        // Rows that need a write go in batches of up to BATCH_ROWS, a few
        // batches in flight: the target commits each in one transaction.
        WriteMode::Auto => {
            decided
                .chunks(BATCH_ROWS)
                .map(|chunk| async move {
                    let mut done = Vec::with_capacity(chunk.len());
                    let mut pending = Vec::new();
                    for (i, d) in chunk {
                        match d {
                            Decision::Finished(r) => done.push((i, r)),
                            Decision::Send(p) => pending.push(*p),
                        }
                    }
                    if !pending.is_empty() {
                        done.extend(rows.send_batch(pending).await);
                    }
                    bar.inc(done.len() as u64);
                    note();
                    futures::stream::iter(done)
                })
                .buffer_unordered(concurrency.div_ceil(4).min(BATCHES_QUEUED))
                .flatten()
                .for_each(|(i, r)| {
                    tally.add(i, r, emails, cols);
                    futures::future::ready(())
                })
                .await
        }
    };
    counters.batches = rows.batches.load(Ordering::Relaxed);
    counters.retried += rows.retried.load(Ordering::Relaxed);
    counters.orders_sent += rows.orders_sent.load(Ordering::Relaxed);
    counters.checked += rows.checked.load(Ordering::Relaxed);
    counters.write_requests += rows.write_requests.load(Ordering::Relaxed);
    Ok(())
}
