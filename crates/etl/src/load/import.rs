//! An import step against the target: resolve the group and attributes,
//! set blocked addresses aside, compare each row with the receiver the
//! target holds, and create or update only what differs, with bounded
//! concurrency. A dry run stops before writing and lists the plan instead.
//! Writes are recorded in the run's [journal](super::journal) so that a
//! resumed run sends no confirmed row again.
//!
//! [`run`] goes through the step's phases: the set-up, the mirror plan, the
//! journal, the chunk loop ([`chain`]), the finish.

mod chain;

use self::chain::{Chain, Chunking, Sink};
use super::chunk::{Limit, Prepared, Shared, unstarted};
use super::diff::Policies;
use super::held::TargetIndex;
use super::journal::Journal;
use super::lookup::Lookup;
pub use super::outcome::ImportOutcome;
use super::plan_file::PlanFile;
use super::{Action, LoadError, PlanRow, WriteOptions, mirror, plan, progress_bar};
use crate::key_store::KeyStore;
use crate::pipeline::{ImportStep, ReceiverField, ValueFrom};
use crate::prepare::ImportChunk;
use crate::source::RejectSpool;
use crate::transport::target::Connected;
use listpipe_api::Group;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use super::chunk::Chunks;

/// What every phase of a step takes.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    conn: &'a Connected,
    step: &'a ImportStep,
    opts: &'a WriteOptions,
    /// The step's retries outside its rows' writes: the set-up's and the
    /// blacklist lookups'.
    retried: &'a AtomicU64,
    /// `limit`: each chunk is cut to the rows the limit leaves, as it comes.
    limit: &'a Limit,
}

/// The step set up: its group, what the group holds, and its first chunk
/// with its blacklist lookups under way.
struct SetUp<'a> {
    group: Option<Group>,
    existing: TargetIndex,
    first: Prepared,
    lookup: Lookup<'a>,
    /// Mirror mode: every address of the source, from its first read.
    source_addresses: Option<KeyStore>,
}

/// Runs one import step over its chunks, `first` and the `rest`, one after
/// the other. Rows the target refuses go to `refused` with their source
/// values; a dry run writes each chunk's lines to `plan` (the chunk's own
/// rejects among them, as `invalid`).
pub async fn run(
    conn: &Connected,
    step: &ImportStep,
    first: ImportChunk,
    rest: &mut Chunks,
    opts: &WriteOptions,
    mut plan: Option<&mut PlanFile>,
    refused: &mut RejectSpool,
) -> Result<ImportOutcome, LoadError> {
    let mut out = ImportOutcome::default();
    let retried = AtomicU64::new(0);
    let limit = Limit::new(step.limit);
    let cx = Ctx {
        conn,
        step,
        opts,
        retried: &retried,
        limit: &limit,
    };
    let policies = Policies::new(step);
    let kept: Vec<AtomicU64> = (0..policies.len()).map(|_| AtomicU64::new(0)).collect();
    let SetUp {
        group,
        existing,
        first,
        lookup,
        source_addresses,
    } = set_up(cx, first, &policies, &mut out).await?;
    let (mut ledger, removals) = mirror_plan(cx, group.as_ref(), source_addresses, &existing)?;
    let create_only = create_only(step);
    let journal = open_journal(cx, group.as_ref())?;
    out.journal_unreadable_lines = journal.as_ref().map_or(0, Journal::unreadable);
    let bar = progress_bar(opts, &step.name);
    let gid = group.as_ref().map(|g| g.id);
    // A chunk's plan lines, written when it is done.
    let plan_rows = removal_rows(cx, gid, &removals);
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
    let chain = Chain {
        cx,
        group: group.as_ref(),
        shared: &shared,
        keeps_imported: !opts.dry_run && ledger.is_some(),
    };
    let mut chunking = Chunking::new(&chain, first, lookup, plan_rows, rest);
    let sink = Sink {
        out: &mut out,
        ledger: ledger.as_mut(),
        plan: plan.as_deref_mut(),
        refused,
    };
    chunking.run(&chain, sink).await?;
    let kept: Vec<u64> = kept.iter().map(|k| k.load(Ordering::Relaxed)).collect();
    out.kept_by_policy = policies.counted(&kept);
    out.limited = limit.outcome();
    count_ended(cx, chunking, plan, &mut out)?;
    synced(journal.as_ref(), &out).await?;
    // The target stopped answering: the rows that failed did not fail on
    // their own, so they are not rejects; the journal keeps them for
    // `--resume`, and the run stops (exit 3).
    if let Some(stopped) = conn.breaker.stopped() {
        bar.finish();
        return Err(LoadError::from(stopped).unfinished(&out));
    }
    out.stopped |= out.not_started > 0;
    bar.finish();
    finish_mirror(cx, gid, removals, ledger.as_ref(), &mut out).await?;
    Ok(out)
}

/// The step's set-up: its group (made if it may be and must), then, side
/// by side, its attributes made, the group read and the first chunk's
/// blacklist lookups started. What it made (or would make) goes to `out`.
async fn set_up<'a>(
    cx: Ctx<'a>,
    mut first: ImportChunk,
    policies: &Policies,
    out: &mut ImportOutcome,
) -> Result<SetUp<'a>, LoadError> {
    let Ctx {
        conn,
        step,
        opts,
        retried,
        limit,
    } = cx;
    let (group, created) = plan::group(
        conn,
        &step.group,
        step.create_group,
        opts.dry_run,
        opts.retries,
        retried,
    )
    .await?;
    out.group_id = group.as_ref().map(|g| g.id.to_string());
    let source_addresses = first.source_addresses.take();
    let first = Prepared::new(step, limit.cut(first))?;
    let watched = policies.watched();
    // Once the group is known, the attributes are made, the group is read
    // and the first chunk's blacklist lookups go, side by side: none needs
    // another, and each waits out its own 429s.
    let mut lookup = Lookup::start(
        conn,
        group.as_ref(),
        Arc::clone(&first.emails),
        (opts.concurrency, opts.retries),
        retried,
    );
    let attributes = plan::attributes(
        conn,
        group.as_ref(),
        &step.global_attributes,
        &step.attributes,
        opts.dry_run,
        opts.retries,
        retried,
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
    Ok(SetUp {
        group,
        existing,
        first,
        lookup,
        source_addresses,
    })
}

/// What listpipe imported into this group before (its ledger) and, in
/// mirror mode, the removals planned from it now, so that its guard can
/// refuse before anything is written. A plain import only appends to the
/// ledger.
fn mirror_plan(
    cx: Ctx<'_>,
    group: Option<&Group>,
    source_addresses: Option<KeyStore>,
    existing: &TargetIndex,
) -> Result<(Option<mirror::Ledger>, Vec<String>), LoadError> {
    let Ctx { step, opts, .. } = cx;
    let ledger = group
        .map(|g| {
            let read = step.mirror.is_some();
            let key = mirror::LedgerKey {
                pipeline: &opts.pipeline,
                formerly: &opts.pipeline_name,
                step: &step.name,
                target: &opts.target,
                group: g.id,
            };
            mirror::Ledger::open(&opts.state_dir, &key, read)
        })
        .transpose()?;
    let removals = match (&step.mirror, ledger.as_ref().filter(|l| l.is_read())) {
        (Some(m), Some(imported)) => {
            let source = source_addresses.ok_or_else(|| {
                LoadError::step("mirror mode: the source's addresses were not read")
            })?;
            let planned = mirror::planned(imported, &source, existing, m.removal)?;
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
    Ok((ledger, removals))
}

/// The fields sent on create only.
///
/// Timestamps given as `value = "now"` mean "when it first happened": they
/// are sent on create, and on update only where the target holds none
/// (see rows.rs), so a later run does not move them. So do those that fall
/// back to `default = "now"` (the opt-in of a row without a date): a time
/// set by an earlier run is not moved by today's.
fn create_only(step: &ImportStep) -> Vec<ReceiverField> {
    let now = |v: &str| v.eq_ignore_ascii_case("now");
    step.fields
        .iter()
        .filter(|(_, m)| {
            matches!(&m.from, ValueFrom::Constant(v) if now(v))
                || m.default.as_deref().is_some_and(now)
        })
        .map(|(f, _)| *f)
        .collect()
}

/// The run's journal for the step's writes: outside a dry run, once the
/// group exists.
fn open_journal(cx: Ctx<'_>, group: Option<&Group>) -> Result<Option<Journal>, LoadError> {
    let Ctx { step, opts, .. } = cx;
    Ok(match (&opts.journal, group, opts.dry_run) {
        (Some(j), Some(_), false) => Some(Journal::open(j, &step.name, &step.group.to_string())?),
        _ => None,
    })
}

/// A dry run's plan lines of mirror mode's removals: they go with the
/// step's one chunk (see plan_file).
fn removal_rows(cx: Ctx<'_>, gid: Option<listpipe_api::Id>, removals: &[String]) -> Vec<PlanRow> {
    let mut plan_rows = Vec::new();
    if let (Some(m), Some(_), true) = (&cx.step.mirror, gid, cx.opts.dry_run) {
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
    plan_rows
}

/// What the chunk loop left, counted into `out`: its failure is the step's;
/// the chunks a stop left count as not started; the rows' requests.
fn count_ended(
    cx: Ctx<'_>,
    chunking: Chunking<'_>,
    mut plan: Option<&mut PlanFile>,
    out: &mut ImportOutcome,
) -> Result<(), LoadError> {
    let Ctx {
        conn,
        opts,
        retried,
        ..
    } = cx;
    let Chunking {
        failure,
        mut not_started,
        counters,
        done,
        rest,
        ..
    } = chunking;
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
    out.retries += counters.retried + retried.load(Ordering::Relaxed);
    out.orders_sent = counters.orders_sent;
    out.in_flight_checked = counters.checked;
    out.write_requests = counters.write_requests;
    out.write_requests_refused = counters.write_requests_refused;
    out.not_started = not_started;
    Ok(())
}

/// The journal synced. A journal that could not be written stops the step
/// here, before the ledger and the rejects: the target holds what it
/// confirmed, and `--resume` checks every row against it.
async fn synced(journal: Option<&Journal>, out: &ImportOutcome) -> Result<(), LoadError> {
    if let Some(j) = journal {
        j.sync().await;
        if let Some(e) = j.failure() {
            return Err(e.unfinished(out));
        }
    }
    Ok(())
}

/// Mirror mode's end: what left the source goes, once every row is
/// written; then the ledger it read is written back, compacted, without
/// what it deleted (a plain import appended its chunks already).
async fn finish_mirror(
    cx: Ctx<'_>,
    gid: Option<listpipe_api::Id>,
    removals: Vec<String>,
    ledger: Option<&mirror::Ledger>,
    out: &mut ImportOutcome,
) -> Result<(), LoadError> {
    let Ctx {
        conn, step, opts, ..
    } = cx;
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
    if let (Some(l), false) = (ledger, opts.dry_run) {
        let deleted = step
            .mirror
            .as_ref()
            .is_some_and(|m| m.removal == mirror::Removal::Delete);
        if !deleted {
            removed.clear();
        }
        l.save(&removed, opts.spill_after)?;
    }
    Ok(())
}
