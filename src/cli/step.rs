//! One step of `listpipe run`: an export, or an import or blacklist step
//! (its URL sources fetched first), from its source to its report, its
//! rejects file and, in a dry run, its plan. `run.rs` runs the steps in order.

use crate::export::{self, ExportOptions};
use crate::load::target;
use crate::load::{self, Action, LoadError, PlanRow, WriteOptions};
use crate::pipeline::{Pipeline, STATE_DIR, Step};
use crate::prepare::{self, Rejects};
use crate::remote::{self, Fetched, RemoteError};
use crate::report::StepReport;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub(super) enum StepError {
    #[error(transparent)]
    Prepare(#[from] prepare::PrepareError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

pub(super) async fn run_step(
    pipeline: &Pipeline,
    step: &Step,
    conn: &target::Connected,
    opts: &WriteOptions,
) -> Result<StepReport, StepError> {
    let mut report = StepReport {
        name: step.name().to_string(),
        dry_run: opts.dry_run,
        ..Default::default()
    };
    let mut plan: Vec<PlanRow> = Vec::new();
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
            progress: opts.progress,
            timeout: Duration::from_secs(pipeline.target.timeout_secs),
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
        state_dir: Path::new(STATE_DIR),
        pipeline: &pipeline.name,
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
    match step {
        Step::Import(s) => import_step(pipeline, s, conn, opts, &mut report, &mut plan).await?,
        Step::Blacklist(s) => {
            blacklist_step(pipeline, s, conn, opts, &mut report, &mut plan).await?
        }
        Step::Export(_) => unreachable!("exports return above"),
    }
    if opts.dry_run {
        let path = Path::new(STATE_DIR)
            .join("plans")
            .join(&pipeline.name)
            .join(format!("{}.plan.csv", step.name()));
        load::write_plan(&path, &mut plan)?;
        report.plan_file = Some(path);
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
/// source chunk by chunk (source -> map, check -> dedupe), a chunk ahead at
/// most; the loader diffs each chunk against the target and writes it while
/// the next one is prepared; then the rejects.
async fn import_step(
    pipeline: &Pipeline,
    s: &crate::pipeline::ImportStep,
    conn: &target::Connected,
    opts: &WriteOptions,
    report: &mut StepReport,
    plan: &mut Vec<PlanRow>,
) -> Result<(), StepError> {
    let (step, base_dir) = (s.clone(), pipeline.base_dir.clone());
    let (mut chunks, preparing) = produce(move |send| {
        prepare::import_chunks(&step, &base_dir, prepare::Budget::from_env(), send)
    });
    let prepared = |joined: Result<_, tokio::task::JoinError>| {
        joined.map_err(|e| LoadError::step(format!("preparing the rows failed: {e}")))
    };
    let Some(first) = chunks.recv().await else {
        // No chunk came: the source could not be read.
        let (summary, _) = prepared(preparing.await)?;
        return Err(summary
            .err()
            .unwrap_or(prepare::PrepareError::Stopped)
            .into());
    };
    let loading = Instant::now();
    let mut refused = Vec::new();
    let outcome = load::import::run(conn, s, first, &mut chunks, opts, plan, &mut refused).await;
    drop(chunks);
    let (summary, prepare_ms) = prepared(preparing.await)?;
    let outcome = outcome?;
    let mut summary = summary?;
    report.timings_ms.prepare = prepare_ms;
    report.timings_ms.load = loading.elapsed().as_millis() as u64;
    report.prepare = summary.stats.clone();
    report.import = Some(outcome);
    if opts.dry_run {
        plan.extend(invalid_rows(&summary.rejects));
    }
    summary.rejects.rows.extend(refused);
    report.rejects_file = write_rejects(&s.rejects, &summary.rejects)?;
    if let (Some(orders), Some(spec)) = (&summary.order_rejects, &s.orders) {
        report.order_rejects_file = write_rejects(&spec.rejects, orders)?;
    }
    Ok(())
}

/// A blacklist step as a chain like an import's: a thread reads and checks
/// the source chunk by chunk, the loader writes each chunk while the next
/// one is read; then the rejects.
async fn blacklist_step(
    pipeline: &Pipeline,
    s: &crate::pipeline::BlacklistStep,
    conn: &target::Connected,
    opts: &WriteOptions,
    report: &mut StepReport,
    plan: &mut Vec<PlanRow>,
) -> Result<(), StepError> {
    let (step, base_dir) = (s.clone(), pipeline.base_dir.clone());
    let (mut chunks, preparing) = produce(move |send| {
        prepare::blacklist_chunks(&step, &base_dir, prepare::Budget::from_env(), send)
    });
    let loading = Instant::now();
    let mut refused = Vec::new();
    let loaded = async {
        let mut load = load::blacklist::BlacklistLoad::start(conn, s, opts).await?;
        while let Some(chunk) = chunks.recv().await {
            load.chunk(chunk, &mut refused, plan).await?;
        }
        load.finish(&mut refused).await
    }
    .await;
    drop(chunks);
    let (summary, prepare_ms) = preparing
        .await
        .map_err(|e| LoadError::step(format!("preparing the rows failed: {e}")))?;
    // A source that cannot be read is the step's error; a target that
    // failed stopped the read, and is.
    let (mut summary, outcome) = match (summary, loaded) {
        (Err(prepare::PrepareError::Stopped), Err(e)) => return Err(e.into()),
        (Err(e), _) => return Err(e.into()),
        (Ok(summary), loaded) => (summary, loaded?),
    };
    report.timings_ms.prepare = prepare_ms;
    report.timings_ms.load = loading.elapsed().as_millis() as u64;
    report.prepare = summary.stats.clone();
    report.blacklist = Some(outcome);
    if opts.dry_run {
        plan.extend(invalid_rows(&summary.rejects));
    }
    summary.rejects.rows.extend(refused);
    report.rejects_file = write_rejects(&s.rejects, &summary.rejects)?;
    Ok(())
}

fn invalid_rows(rejects: &Rejects) -> impl Iterator<Item = PlanRow> + '_ {
    rejects.rows.iter().map(|r| PlanRow {
        row_number: r.row_number,
        email: String::new(),
        action: Action::Invalid,
        detail: if r.field.is_empty() {
            r.reason.clone()
        } else {
            format!("{}: {}", r.field, r.reason)
        },
    })
}

/// Writes the rejects file and returns its path, or removes a stale one
/// when nothing was rejected.
pub fn write_rejects(path: &Path, rejects: &Rejects) -> Result<Option<PathBuf>, LoadError> {
    if rejects.rows.is_empty() {
        let _ = std::fs::remove_file(path);
        return Ok(None);
    }
    rejects.write(path).map_err(|e| LoadError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(Some(path.to_path_buf()))
}
