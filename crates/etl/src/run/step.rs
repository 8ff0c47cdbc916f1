//! One step of `listpipe run`: an export, or an import or blacklist step
//! (its URL sources fetched first), from its source to its report, its
//! rejects file and, in a dry run, its plan, both written as the chunks go
//! by (`rejects.rs`, [`PlanFile`]). The binary's `run` runs the steps in order.

use super::rejects::{StepRejects, write_order_rejects};
use crate::export::{self, ExportOptions};
use crate::load::{self, LoadError, PlanFile, WriteOptions, plan_file, spool_error};
use crate::pipeline::{Pipeline, Step};
use crate::prepare;
use crate::profile::StepProfile;
use crate::remote::{self, Fetched, RemoteError};
use crate::report::StepReport;
use crate::source::{RejectRow, RejectSpool};
use crate::transport::target;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Prepare(#[from] prepare::PrepareError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The step stopped after it had written rows: its report so far.
    #[error(transparent)]
    Partial(Box<Partial>),
}

/// An error that stopped a step, and the step's report as far as it got:
/// what it read, wrote and how long it took, as a finished step's report
/// says (the report of a run stopped by exit 74 had no `import` although
/// receivers were written, one stopped by exit 3 no timings).
#[derive(Debug)]
pub struct Partial {
    cause: StepError,
    report: StepReport,
}

impl std::fmt::Display for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cause.fmt(f)
    }
}

impl std::error::Error for Partial {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.source()
    }
}

impl StepError {
    /// `cause`, after the step's `report` was filled in so far; what the
    /// cause itself says it wrote ([`LoadError::Unfinished`]) goes into it.
    fn partial(cause: impl Into<StepError>, mut report: StepReport) -> StepError {
        let cause = match cause.into() {
            StepError::Load(e) => {
                let (e, outcome) = e.split();
                if outcome.is_some() {
                    report.import = outcome;
                }
                StepError::Load(e)
            }
            e => e,
        };
        StepError::Partial(Box::new(Partial { cause, report }))
    }

    /// The error itself and the step's report so far, if it has one: a
    /// step stopped after writing rows, or an import the target or the
    /// journal stopped ([`LoadError::Unfinished`]).
    pub fn split(self) -> (StepError, Option<StepReport>) {
        match self {
            StepError::Partial(p) => {
                let Partial { cause, report } = *p;
                (cause, Some(report))
            }
            StepError::Load(e) => {
                let (e, outcome) = e.split();
                let report = outcome.map(|o| StepReport {
                    import: Some(o),
                    ..Default::default()
                });
                (StepError::Load(e), report)
            }
            e => (e, None),
        }
    }
}

/// `profile`: an import step profiles its prepared columns for the HTML
/// report (`--html`), in [`StepReport::profile`]; off, it costs nothing.
pub async fn run_step(
    pipeline: &Pipeline,
    step: &Step,
    conn: &target::Connected,
    opts: &WriteOptions,
    budget: prepare::Budget,
    full_exports: bool,
    profile: bool,
) -> Result<StepReport, StepError> {
    let mut report = StepReport {
        name: step.name().to_string(),
        dry_run: opts.dry_run,
        ..Default::default()
    };
    if let Step::Export(s) = step {
        report.kind = "export";
        // An export changes nothing on the target, but in a dry run the
        // steps before it wrote nothing either: its file would mislead.
        if opts.dry_run {
            report.export_skipped = true;
            return Ok(report);
        }
        let export_opts = ExportOptions {
            concurrency: opts.concurrency.min(export::reader::DEFAULT_CONCURRENCY),
            retries: opts.retries,
            progress: opts.progress.clone(),
            timeout: Duration::from_secs(pipeline.target.timeout_secs),
            full: full_exports,
            state_dir: pipeline.state_dir.clone(),
            ..Default::default()
        };
        let outcome = export::run(conn, s, &export_opts).await?;
        report.timings_ms.load = outcome.ms;
        report.export = Some(outcome);
        return Ok(report);
    }
    // URLs in the source are downloaded first; every one unchanged skips the step.
    let (source, kind) = match step {
        Step::Import(s) => (&s.source, "import"),
        Step::Blacklist(s) => (&s.source, "blacklist"),
        Step::Export(_) => unreachable!("exports return above"),
    };
    report.kind = kind;
    let context = remote::Context {
        state_dir: &pipeline.state_dir,
        pipeline: &pipeline.state,
        step: step.name(),
        timeout: Duration::from_secs(pipeline.target.timeout_secs),
    };
    let fetched = match remote::fetch(source, &context).await? {
        Fetched::Unchanged { since } => {
            report.skipped = Some(format!("source unchanged since {since}"));
            return Ok(report);
        }
        Fetched::Ready(ready) => ready,
    };
    let local_step;
    let step = if remote::is_remote(source) {
        local_step = match step {
            Step::Import(s) => Step::Import(crate::pipeline::ImportStep {
                source: fetched.spec.clone(),
                ..s.clone()
            }),
            Step::Blacklist(s) => Step::Blacklist(crate::pipeline::BlacklistStep {
                source: fetched.spec.clone(),
                ..s.clone()
            }),
            Step::Export(_) => unreachable!("exports return above"),
        };
        &local_step
    } else {
        step
    };
    // A dry run's plan, written as the chunks are decided.
    let mut plan = if opts.dry_run {
        // Under the pipeline's path, as journals and rejects: two
        // same-named pipelines of two folders keep two plans.
        let path = pipeline
            .state_dir
            .join("plans")
            .join(&pipeline.state)
            .join(format!("{}.plan.csv", step.name()));
        Some(PlanFile::create(&path)?)
    } else {
        None
    };
    match step {
        Step::Import(s) => {
            let plan = plan.as_mut();
            import_step(pipeline, s, conn, opts, budget, &mut report, plan, profile).await?
        }
        Step::Blacklist(s) => {
            blacklist_step(pipeline, s, conn, opts, budget, &mut report, plan.as_mut()).await?
        }
        Step::Export(_) => unreachable!("exports return above"),
    }
    if let Some(plan) = plan {
        report.plan_file = Some(plan.commit()?);
    }
    // The URLs' validators only once the step wrote everything: a failed run
    // downloads again next time.
    let failed = report
        .import
        .as_ref()
        .is_some_and(|i| i.failed > 0 || i.failed_transient > 0 || i.stopped)
        || report.blacklist.as_ref().is_some_and(|b| b.failed > 0);
    if !opts.dry_run && !failed {
        fetched.remember().map_err(|e| LoadError::Output {
            path: e.path.clone(),
            message: e.source.to_string(),
        })?;
    }
    Ok(report)
}

/// Runs `read` on a blocking thread, handing its chunks through a channel
/// one ahead at most (back-pressure: the reader waits for the loader);
/// answers the receiving end and the reader's result with its milliseconds.
fn produce<T: Send + 'static, S: Send + 'static>(
    read: impl FnOnce(&mut dyn FnMut(T) -> bool) -> S + Send + 'static,
) -> (
    tokio::sync::mpsc::Receiver<T>,
    tokio::task::JoinHandle<(S, u64)>,
) {
    let (tx, chunks) = tokio::sync::mpsc::channel(1);
    let reading = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let summary = read(&mut |c| tx.blocking_send(c).is_ok());
        (summary, started.elapsed().as_millis() as u64)
    });
    (chunks, reading)
}

/// An import step as a chain of stages: a thread reads and prepares the
/// source chunk by chunk (source -> map, check -> dedupe) and writes each
/// chunk's rejects, a chunk ahead at most; the loader diffs each chunk
/// against the target and writes it while the next one is prepared; then
/// the rows the target refused go after the rejects.
#[allow(clippy::too_many_arguments)] // the step's context, each its own
async fn import_step(
    pipeline: &Pipeline,
    s: &crate::pipeline::ImportStep,
    conn: &target::Connected,
    opts: &WriteOptions,
    budget: prepare::Budget,
    report: &mut StepReport,
    plan: Option<&mut PlanFile>,
    profile: bool,
) -> Result<(), StepError> {
    let (step, base_dir) = (s.clone(), pipeline.base_dir.clone());
    let (rejects, dry_run) = (StepRejects::new(&s.rejects, s.rejects_bom), opts.dry_run);
    let (mut chunks, preparing) = produce(move |send| {
        let mut rejects = rejects;
        let mut columns = profile.then(StepProfile::default);
        let summary = prepare::import_chunks(&step, &base_dir, budget, &mut |mut c| {
            rejects.take(&c.table, &mut c.rejects, dry_run);
            if let Some(p) = columns.as_mut() {
                p.add_chunk(&c);
            }
            send(c)
        });
        (summary, (rejects, columns))
    });
    let prepared = |joined: Result<_, tokio::task::JoinError>| {
        joined.map_err(|e| LoadError::step(format!("preparing the rows failed: {e}")))
    };
    let Some(first) = chunks.recv().await else {
        // No chunk came: the source could not be read.
        let ((summary, _), _) = prepared(preparing.await)?;
        return Err(summary
            .err()
            .unwrap_or(prepare::PrepareError::Stopped)
            .into());
    };
    let loading = Instant::now();
    let mut refused = RejectSpool::new();
    let outcome = load::import::run(conn, s, first, &mut chunks, opts, plan, &mut refused).await;
    drop(chunks);
    let ((summary, (rejects, columns)), prepare_ms) = prepared(preparing.await)?;
    report.profile = columns;
    report.timings_ms.prepare = prepare_ms;
    report.timings_ms.load = loading.elapsed().as_millis() as u64;
    let stopped = outcome.as_ref().map_or(true, |o| o.stopped);
    let summary = match summary {
        Ok(summary) => Some(summary),
        // A stop (Ctrl-C, SIGTERM, the target lost) ended the load before
        // the source was read to its end, which ended the read: the step
        // is still reported, with what it wrote, without the source's totals.
        Err(prepare::PrepareError::Stopped) if stopped => None,
        Err(e) if outcome.is_ok() => return Err(e.into()),
        // The load's own error is the step's.
        Err(_) => None,
    };
    if let Some(summary) = &summary {
        report.prepare = summary.stats.clone();
    }
    // From here an error keeps what the step did in its report.
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => return Err(StepError::partial(e, report.clone())),
    };
    report.import = Some(outcome);
    report.rejects_file = match rejects.finish(refused) {
        Ok(file) => file,
        Err(e) => return Err(StepError::partial(e, report.clone())),
    };
    if let Some(summary) = summary
        && let (Some(orders), Some(spec)) = (summary.order_rejects, &s.orders)
    {
        report.order_rejects_file = match write_order_rejects(&spec.rejects, orders) {
            Ok(file) => file,
            Err(e) => return Err(StepError::partial(e, report.clone())),
        };
    }
    Ok(())
}

/// A blacklist step as a chain like an import's: a thread reads and checks
/// the source chunk by chunk and writes its rejects, the loader writes each
/// chunk while the next one is read; then the entries the target refused.
async fn blacklist_step(
    pipeline: &Pipeline,
    s: &crate::pipeline::BlacklistStep,
    conn: &target::Connected,
    opts: &WriteOptions,
    budget: prepare::Budget,
    report: &mut StepReport,
    mut plan: Option<&mut PlanFile>,
) -> Result<(), StepError> {
    let (step, base_dir) = (s.clone(), pipeline.base_dir.clone());
    let (rejects, dry_run) = (StepRejects::new(&s.rejects, s.rejects_bom), opts.dry_run);
    let (mut chunks, preparing) = produce(move |send| {
        let mut rejects = rejects;
        let summary = prepare::blacklist_chunks(&step, &base_dir, budget, &mut |mut c| {
            rejects.take(&c.table, &mut c.rejects, dry_run);
            send(c)
        });
        (summary, rejects)
    });
    let loading = Instant::now();
    let mut refused = RejectSpool::new();
    let loaded = async {
        let mut load = load::blacklist::BlacklistLoad::start(conn, s, opts).await?;
        let (mut failed, mut lines) = (Vec::new(), Vec::new());
        while let Some(mut chunk) = chunks.recv().await {
            let invalid = std::mem::take(&mut chunk.rejects);
            load.chunk(chunk, &mut failed, &mut lines).await?;
            set_aside(&mut refused, &mut failed)?;
            if let Some(plan) = plan.as_deref_mut() {
                lines.extend(invalid.iter().map(plan_file::invalid));
                plan.chunk(&mut lines)?;
            }
        }
        let outcome = load.finish(&mut failed).await?;
        set_aside(&mut refused, &mut failed)?;
        Ok::<_, LoadError>(outcome)
    }
    .await;
    drop(chunks);
    let ((summary, rejects), prepare_ms) = preparing
        .await
        .map_err(|e| LoadError::step(format!("preparing the rows failed: {e}")))?;
    // A source that cannot be read is the step's error; a target that
    // failed stopped the read, and is.
    let (summary, outcome) = match (summary, loaded) {
        (Err(prepare::PrepareError::Stopped), Err(e)) => return Err(e.into()),
        (Err(e), _) => return Err(e.into()),
        (Ok(summary), loaded) => (summary, loaded?),
    };
    report.timings_ms.prepare = prepare_ms;
    report.timings_ms.load = loading.elapsed().as_millis() as u64;
    report.prepare = summary.stats.clone();
    report.blacklist = Some(outcome);
    report.rejects_file = rejects.finish(refused)?;
    Ok(())
}

/// Moves a chunk's refused entries to the spool (memory holds a chunk's).
fn set_aside(spool: &mut RejectSpool, rows: &mut Vec<RejectRow>) -> Result<(), LoadError> {
    rows.drain(..)
        .try_for_each(|r| spool.push(&r))
        .map_err(spool_error)
}
