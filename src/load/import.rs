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
use crate::hash::FastMap;
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
use crate::prepare::{PreparedImport, PreparedRows};
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
/// there but was rejected this time (a bad date, say).
fn source_emails(
    step: &ImportStep,
    prepared: &PreparedImport,
    valid: &[String],
) -> HashSet<String> {
    let mut all: HashSet<String> = valid.iter().cloned().collect();
    let column = step.fields.iter().find_map(|(f, m)| match (f, &m.from) {
        (ReceiverField::Email, ValueFrom::Column(c)) => Some(c.as_str()),
        _ => None,
    });
    if let Some(Ok(cells)) = column.map(|c| {
        prepared
            .table
            .frame
            .column(c)
            .and_then(|c| c.str().cloned())
    }) {
        all.extend(cells.iter().flatten().map(|e| e.trim().to_lowercase()));
    }
    for (_, email) in &prepared.duplicates {
        all.insert(email.trim().to_lowercase());
    }
    all
}

/// The step's counters, fed one row result at a time.
struct Tally<'a> {
    out: &'a mut ImportOutcome,
    /// Rows taken (the rest were not started: a stop).
    seen: usize,
    /// Refused rows (index, reason): their rejects are made after the run.
    failed_rows: Vec<(usize, String)>,
    /// The mirror ledger, outside a dry run: what this run imported.
    ledger: Option<&'a mut mirror::Ledger>,
    plan_rows: &'a mut Vec<PlanRow>,
    dry_run: bool,
    /// The group exists (a dry run may be about to create it).
    group_known: bool,
    emails: &'a [String],
    cols: &'a PreparedRows<'a>,
}

impl Tally<'_> {
    fn imported(&mut self, i: usize) {
        let email = &self.emails[i];
        if let Some(l) = self.ledger.as_mut()
            && !l.emails.contains(email)
        {
            l.emails.insert(email.clone());
        }
    }

    fn add(&mut self, i: usize, r: RowResult) {
        self.seen += 1;
        let out = &mut *self.out;
        let (action, detail) = match r {
            RowResult::Done(a, detail) => (a, detail),
            RowResult::Resumed => {
                out.resumed += 1;
                self.imported(i);
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
            self.imported(i);
        }
        if self.dry_run {
            let detail = match action {
                Action::Create if !self.group_known => {
                    "the group would be created first".to_string()
                }
                _ => detail,
            };
            self.plan_rows.push(PlanRow {
                row_number: self.cols.row_number(i),
                email: self.emails[i].clone(),
                action,
                detail,
            });
        }
    }
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

    let frame = prepared.frame.clone();
    let cols = PreparedRows::new(step, &frame).map_err(|e| LoadError::step(e.to_string()))?;
    let n = frame.height();
    let emails: Vec<String> = (0..n).map(|i| cols.email(i)).collect();
    // The blacklist check and the read of the group go side by side.
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
            &emails,
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
            let source = source_emails(step, prepared, &emails);
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
    let rows = Rows {
        conn,
        opts,
        cols: &cols,
        emails: &emails,
        blocked: &blocked,
        existing: &existing,
        orders: &prepared.orders,
        create_only: &create_only,
        run_time: chrono::Utc::now().timestamp(),
        gid: group.as_ref().map(|g| g.id),
        journal: journal.as_ref(),
        batches: AtomicBool::new(true),
        retried: AtomicU64::new(0),
        orders_sent: AtomicU64::new(0),
        checked: AtomicU64::new(0),
        write_requests: AtomicU64::new(0),
    };
    let bar = progress_bar(opts, n as u64, &step.name);
    // A stop (Ctrl-C, SIGTERM) takes no new row; rows in flight finish.
    // So does the breaker opening, and its rows in flight fail at once.
    let stop = opts.stop.clone();
    let breaker = &conn.breaker;
    let (rows, bar) = (&rows, &bar);
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
    let decided = futures::stream::iter(0..n)
        .take_while(|_| futures::future::ready(!stop.is_set() && !breaker.is_open()))
        .map(|i| async move { (i, rows.decide(i).await) })
        .buffer_unordered(concurrency);
    // Each row's result is folded into the step's counters as it arrives,
    // so memory does not grow with the rows: only what must outlive the
    // stream is kept per row (a refused row's reject, a dry run's plan, the
    // ledger's addresses).
    let gid = rows.gid;
    let mut tally = Tally {
        out: &mut out,
        seen: 0,
        failed_rows: Vec::new(),
        ledger: ledger.as_mut().filter(|_| !opts.dry_run),
        plan_rows: &mut *plan_rows,
        dry_run: opts.dry_run,
        group_known: gid.is_some(),
        emails: &emails,
        cols: &cols,
    };
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
                    tally.add(i, r);
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
                    tally.add(i, r);
                    futures::future::ready(())
                })
                .await
        }
    };
    let (seen, failed_rows) = (tally.seen, tally.failed_rows);
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
    if let Some(stopped) = breaker.stopped() {
        bar.finish_and_clear();
        return Err(stopped.into());
    }
    out.not_started = (n - seen) as u64;
    out.stopped = out.not_started > 0;
    bar.finish_and_clear();

    // Mirror mode: what left the source goes, once every row is written.
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
    // One pass over the table finds every failed row's values (a lookup
    // per failed row was a scan of the table each).
    let lookup = crate::prepare::RejectLookup::new(&prepared.table);
    for (index, reason) in failed_rows {
        let (file, row) = (cols.file(index), cols.row_number(index));
        prepared
            .rejects
            .rows
            .push(lookup.reject(file, row, "email", reason));
    }
    out.retries += rows.retried.load(Ordering::Relaxed) + setup_retried.load(Ordering::Relaxed);
    out.orders_sent = rows.orders_sent.load(Ordering::Relaxed);
    out.in_flight_checked = rows.checked.load(Ordering::Relaxed);
    out.write_requests = rows.write_requests.load(Ordering::Relaxed);
    Ok(out)
}
