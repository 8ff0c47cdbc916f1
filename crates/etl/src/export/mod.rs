//! Export: the way back out. An [`ExportStep`] (from a pipeline's
//! `[[export]]` or from `listpipe export`) is planned against the target
//! (group, filter, attribute names → columns, known total), then rows are
//! streamed page by page from [`reader`] to a [`writer`], into a temporary
//! file beside the output that is renamed only when complete
//! ([`listpipe_base::state_file`]): a failed export never leaves a half file that
//! looks whole.
//!
//! `out = "-"` writes to standard output, for piping (CSV and JSON lines only:
//! xlsx and Parquet are not streams), and `out = "s3://bucket/key.csv"` (or
//! `gs://`, `az://`) uploads to an object store. Decision: the rows still go to
//! a temporary file first, copied or uploaded once the export is complete
//! ([`destination`]): memory stays flat, and a reader of the pipe or the
//! bucket never gets half an export that looks whole.

pub mod columns;
mod destination;
pub mod flags;
mod in_use;
pub mod incremental;
mod pages;
pub use crate::pipeline::placeholders;
mod plan;
pub mod reader;
pub mod writer;

use crate::load::LoadError;
use crate::pipeline::ExportFormat;
use crate::pipeline::export::ExportStep;
use crate::transport::target::Connected;
use columns::{Kind, ORDER_COLUMNS};
use listpipe_client::ClientError;
use pages::{Read, Written};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use writer::{Layout, Sink};

pub use crate::pipeline::out::{STDOUT, check_out, is_stdout};
use destination::Staged;
pub use destination::shown;

/// How an export reads (the step says what and where).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Receivers per page (at most 5,000).
    pub pagesize: i64,
    /// Pages in flight at once.
    pub concurrency: usize,
    pub retries: u32,
    /// Where progress goes (the binary's bar on a terminal; `None`: nowhere).
    pub progress: crate::progress::Progress,
    /// For connecting to an object store an `out` names, and each wait for its answer.
    pub timeout: Duration,
    /// An incremental export starts again: everything, and a new cursor.
    pub full: bool,
    /// The run's state folder: cursors, and the files staged for standard
    /// output or an object store ([`crate::pipeline::Pipeline::state_dir`]).
    pub state_dir: std::path::PathBuf,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            pagesize: reader::MAX_PAGESIZE,
            concurrency: reader::DEFAULT_CONCURRENCY,
            retries: crate::pipeline::DEFAULT_RETRIES,
            progress: None,
            timeout: Duration::from_secs(crate::pipeline::DEFAULT_TIMEOUT_SECS),
            full: false,
            state_dir: crate::pipeline::STATE_DIR.into(),
        }
    }
}

/// What an export wrote (the report's `export` section).
#[derive(Debug, Clone, Serialize, Default)]
pub struct ExportOutcome {
    pub rows: u64,
    pub file: PathBuf,
    pub format: &'static str,
    pub columns: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orders: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orders_file: Option<PathBuf>,
    pub pages: u64,
    pub retries: u64,
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incremental: Option<IncrementalOutcome>,
    /// Parquet: values of `number`/`date` attributes that are not a number
    /// or a `YYYY-MM-DD` date, written as null (CSV and JSON lines keep them).
    #[serde(skip_serializing_if = "is_zero")]
    pub values_not_typed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What an incremental export read (the report's `export.incremental`).
#[derive(Debug, Clone, Serialize, Default)]
pub struct IncrementalOutcome {
    /// The last run's cursor (ISO 8601 UTC) the changes were read from;
    /// `None`: the first run (or `--full`) wrote everything.
    pub since: Option<String>,
    /// The cursor recorded for the next run.
    pub cursor: String,
}

pub(crate) fn output(path: &Path, e: impl std::fmt::Display) -> LoadError {
    LoadError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The format of the orders file: its own extension, else the main file's.
fn orders_format(step: &ExportStep, path: &Path) -> ExportFormat {
    ExportFormat::from_path(path).unwrap_or(step.format)
}

/// A read that failed midway: says how far it got and that nothing was kept.
fn read_failed(step: &ExportStep, rows: u64, e: ClientError) -> LoadError {
    LoadError::target(
        format!(
            "the export stopped after {rows} rows; {} was not written (nothing is kept from a failed export)",
            step.out.display()
        ),
        Some(e.into()),
    )
}

/// Runs one export to the end, or fails leaving no output file behind.
pub async fn run(
    conn: &Connected,
    step: &ExportStep,
    opts: &ExportOptions,
) -> Result<ExportOutcome, LoadError> {
    let started = Instant::now();
    let expanded = expanded(step);
    let step = &expanded;
    let retried = AtomicU64::new(0);
    let mut outcome = ExportOutcome {
        file: step.out.clone(),
        format: step.format.extension(),
        ..Default::default()
    };
    let plan = plan::plan(conn, step, opts.progress.is_some()).await?;
    let cols = match &step.columns {
        None => plan.defaults.clone(),
        Some(chosen) => columns::select(&plan.columns, chosen).map_err(LoadError::step)?,
    };
    outcome.columns = cols.iter().map(|c| c.name.clone()).collect();
    let main = Staged::open(&opts.state_dir, &step.out, &format!("{}.out", step.name))?;
    let mut sink = writer::open(
        step.format,
        main.temp_path(),
        layout(
            step,
            cols.iter().map(|c| (c.name.clone(), c.kind)).collect(),
        ),
    )
    .map_err(|e| output(&step.out, e))?;
    let mut orders = open_orders(step, &plan, &opts.state_dir)?;
    let bar = crate::progress::stage(&opts.progress, &step.name, plan.total);
    let cursor = open_cursor(conn, step, opts, &plan)?;
    let read = Read {
        conn,
        step,
        opts,
        plan: &plan,
        cols: &cols,
        retried: &retried,
        bar: bar.as_ref(),
    };
    let mut to = Written {
        main: &mut sink,
        orders: &mut orders,
        outcome: &mut outcome,
    };
    match &plan.query {
        None => read.blacklist(&mut to).await?,
        Some(base) => read.receivers(base, cursor.as_ref(), &mut to).await?,
    }
    sink.finish().map_err(|e| output(&step.out, e))?;
    bar.finish();
    if let Some((s, t)) = orders {
        s.finish().map_err(|e| output(t.out(), e))?;
        outcome.orders_file = Some(t.out().to_path_buf());
        t.deliver(opts.timeout).await?;
    }
    main.deliver(opts.timeout).await?;
    if let Some(c) = cursor {
        // Every page has come back; a preparation's thread may still be
        // dropping its clone, so the cursor is read, not taken.
        outcome.incremental = Some(IncrementalOutcome {
            since: c.since.map(columns::iso),
            cursor: columns::iso(c.started),
        });
        c.save()?;
    }
    outcome.retries = retried.load(Ordering::Relaxed);
    outcome.ms = started.elapsed().as_millis() as u64;
    Ok(outcome)
}

/// The step with `{date}` and `{run}` in the output's names expanded (see
/// [`placeholders`]).
fn expanded(step: &ExportStep) -> ExportStep {
    let at = chrono::Utc::now();
    ExportStep {
        out: placeholders::expand(&step.out, at),
        orders_out: step
            .orders_out
            .as_deref()
            .map(|p| placeholders::expand(p, at)),
        ..step.clone()
    }
}

/// The layout of a file of the step with `cols` (name and kind).
fn layout(step: &ExportStep, cols: Vec<(String, Kind)>) -> Layout<'_> {
    Layout {
        names: cols.iter().map(|(n, _)| n.clone()).collect(),
        kinds: cols.iter().map(|(_, k)| *k).collect(),
        timestamps: step.timestamps,
        csv: &step.csv,
        tags_separator: &step.tags_separator,
    }
}

/// The orders file's sink, then its temporary file.
type OrdersFile = (Box<dyn Sink>, Staged);

/// The orders file, when the step writes one (receivers only).
fn open_orders(
    step: &ExportStep,
    plan: &plan::Plan,
    state_dir: &std::path::Path,
) -> Result<Option<OrdersFile>, LoadError> {
    // The sink first: fields drop in order, so the file is closed before the temp guard removes it.
    Ok(match (&step.orders_out, &plan.query) {
        (Some(path), Some(_)) => {
            let t = Staged::open(state_dir, path, &format!("{}.orders", step.name))?;
            let s = writer::open(
                orders_format(step, path),
                t.temp_path(),
                layout(
                    step,
                    ORDER_COLUMNS
                        .iter()
                        .map(|(n, k)| (n.to_string(), *k))
                        .collect(),
                ),
            )
            .map_err(|e| output(path, e))?;
            Some((s, t))
        }
        _ => None,
    })
}

/// An incremental export's cursor; a blacklist has none to follow.
fn open_cursor(
    conn: &Connected,
    step: &ExportStep,
    opts: &ExportOptions,
    plan: &plan::Plan,
) -> Result<Option<Arc<incremental::Cursor>>, LoadError> {
    Ok(match (&plan.query, step.incremental) {
        (Some(q), true) => Some(Arc::new(incremental::Cursor::open(
            &opts.state_dir,
            &conn.resolved,
            q,
            opts.full,
        )?)),
        (None, true) => {
            return Err(LoadError::step(
                "an incremental export needs receivers: a blacklist has no change times to follow",
            ));
        }
        _ => None,
    })
}
