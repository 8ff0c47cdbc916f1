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
mod in_use;
pub mod incremental;
pub use crate::pipeline::placeholders;
mod plan;
pub mod reader;
pub mod writer;

use crate::load::LoadError;
use crate::pipeline::ExportFormat;
use crate::pipeline::export::ExportStep;
use crate::transport::retry::retrying;
use crate::transport::target::Connected;
use columns::{Column, Kind, ORDER_COLUMNS};
use futures::StreamExt;
use listpipe_client::{ClientError, Page};
use reader::ReadOptions;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use writer::{Chunk, Encode, Layout, Sink, WriteError};

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
    // `{date}` and `{run}` in the output's names (see [`placeholders`]).
    let at = chrono::Utc::now();
    let expanded = ExportStep {
        out: placeholders::expand(&step.out, at),
        orders_out: step
            .orders_out
            .as_deref()
            .map(|p| placeholders::expand(p, at)),
        ..step.clone()
    };
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
    let layout = |cols: Vec<(String, Kind)>| Layout {
        names: cols.iter().map(|(n, _)| n.clone()).collect(),
        kinds: cols.iter().map(|(_, k)| *k).collect(),
        timestamps: step.timestamps,
        csv: &step.csv,
        tags_separator: &step.tags_separator,
    };
    let main = Staged::open(&step.out, &format!("{}.out", step.name))?;
    let mut sink = writer::open(
        step.format,
        main.temp_path(),
        layout(cols.iter().map(|c| (c.name.clone(), c.kind)).collect()),
    )
    .map_err(|e| output(&step.out, e))?;
    // The sink first: fields drop in order, so the file is closed before the temp guard removes it.
    let mut orders: Option<(Box<dyn Sink>, Staged)> = match (&step.orders_out, &plan.query) {
        (Some(path), Some(_)) => {
            let t = Staged::open(path, &format!("{}.orders", step.name))?;
            let s = writer::open(
                orders_format(step, path),
                t.temp_path(),
                layout(
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
    };
    let bar = crate::progress::stage(&opts.progress, &step.name, plan.total);
    let cursor = match (&plan.query, step.incremental) {
        (Some(q), true) => Some(Arc::new(incremental::Cursor::open(
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
    };

    match &plan.query {
        None => {
            // The blacklists come whole: the API has no pages for them.
            let entries = retrying(conn, opts.retries, &retried, || async {
                match &plan.blocklist_of {
                    Some(g) => conn.client.group_blocklist(*g).await,
                    None => conn.client.blacklist().await,
                }
            })
            .await
            .map_err(|e| read_failed(step, 0, e))?;
            bar.set_length(entries.len() as u64);
            for chunk in entries.chunks(opts.pagesize.max(1) as usize) {
                let rows: Vec<_> = chunk.iter().map(|e| columns::entry_row(&cols, e)).collect();
                sink.write(&rows).map_err(|e| output(&step.out, e))?;
                outcome.rows += rows.len() as u64;
                bar.inc(rows.len() as u64);
            }
            outcome.pages = 1;
        }
        Some(base) => {
            let queries = match &cursor {
                Some(c) => c.queries(base, plan.filter_rules.as_ref())?,
                None => vec![base.clone()],
            };
            let ropts = ReadOptions {
                pagesize: opts.pagesize.clamp(1, reader::MAX_PAGESIZE),
                concurrency: opts.concurrency.max(1),
                retries: opts.retries,
                detail: plan.detail(&cols, orders.is_some()),
            };
            let prepare = Arc::new(Prepare {
                cols: cols.clone(),
                main: sink.encoder(),
                orders: orders.as_ref().map(|(s, _)| s.encoder()),
                cursor: cursor.clone(),
                // Only Parquet has no place for a value that is not its column's type.
                typed: if step.format == ExportFormat::Parquet {
                    cols.iter()
                        .enumerate()
                        .filter(|(_, c)| matches!(c.kind, Kind::Number | Kind::Date))
                        .map(|(i, c)| (i, c.kind))
                        .collect()
                } else {
                    Vec::new()
                },
            });
            let mut order_rows = 0u64;
            for query in &queries {
                // Each page is decoded and encoded on a blocking thread, a page
                // per core at once, while this task writes the pages before it
                // in order: one thread could not keep up with the server.
                let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
                let pages = reader::pages(conn, query, &ropts, &retried)
                    .map(|page| {
                        let prepare = prepare.clone();
                        async move {
                            let page = page.map_err(PageError::Read)?;
                            tokio::task::spawn_blocking(move || prepare.page(page))
                                .await
                                .map_err(|e| PageError::Lost(e.to_string()))?
                        }
                    })
                    .buffered(workers);
                let mut pages = std::pin::pin!(pages);
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| match e {
                        PageError::Read(e) => read_failed(step, outcome.rows, e),
                        PageError::Main(e) => output(&step.out, e),
                        PageError::Orders(e) => {
                            output(step.orders_out.as_deref().unwrap_or(&step.out), e)
                        }
                        PageError::Lost(e) => {
                            LoadError::step(format!("preparing a page of the export failed: {e}"))
                        }
                    })?;
                    outcome.pages += 1;
                    sink.write_chunk(page.main)
                        .map_err(|e| output(&step.out, e))?;
                    if let (Some((s, t)), Some((chunk, lines))) = (&mut orders, page.orders) {
                        s.write_chunk(chunk).map_err(|e| output(t.out(), e))?;
                        order_rows += lines;
                    }
                    outcome.rows += page.rows;
                    outcome.values_not_typed += page.not_typed;
                    bar.inc(page.rows);
                    if (page.read as i64) < ropts.pagesize {
                        break;
                    }
                }
            }
            if orders.is_some() {
                outcome.orders = Some(order_rows);
            }
        }
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

/// How a page of receivers becomes its chunks (see [`writer`]): on any
/// thread, since it holds no file.
struct Prepare {
    cols: Vec<Column>,
    main: Arc<dyn Encode>,
    orders: Option<Arc<dyn Encode>>,
    /// An incremental export's: which receivers are written.
    cursor: Option<Arc<incremental::Cursor>>,
    /// The `number`/`date` columns whose values are counted when they are
    /// not of the type (Parquet writes them as null).
    typed: Vec<(usize, Kind)>,
}

/// A page ready to write.
struct Prepared {
    /// Receivers on the page read (a short page is the last).
    read: u64,
    /// Of them written.
    rows: u64,
    /// Values written as null for not being their column's type.
    not_typed: u64,
    main: Chunk,
    /// The orders file's chunk and its lines.
    orders: Option<(Chunk, u64)>,
}

/// Why a page is not ready.
enum PageError {
    Read(ClientError),
    Main(WriteError),
    Orders(WriteError),
    /// Its thread did not finish (the run is stopping).
    Lost(String),
}

impl Prepare {
    fn page(&self, page: Page) -> Result<Prepared, PageError> {
        let page = page.rows().map_err(PageError::Read)?;
        let read = page.len() as u64;
        let page: Vec<_> = match &self.cursor {
            Some(c) => page.into_iter().filter(|r| c.keep(r)).collect(),
            None => page,
        };
        let rows: Vec<_> = page
            .iter()
            .map(|r| columns::receiver_row(&self.cols, r))
            .collect();
        let not_typed = rows
            .iter()
            .flat_map(|row| self.typed.iter().map(move |(i, kind)| (row.get(*i), *kind)))
            .filter(|(cell, kind)| match cell {
                Some(columns::Cell::Text(t)) if !t.trim().is_empty() => match kind {
                    Kind::Number => writer::number(t).is_none(),
                    _ => writer::date(t).is_none(),
                },
                _ => false,
            })
            .count() as u64;
        let main = self.main.encode(&rows).map_err(PageError::Main)?;
        let orders = match &self.orders {
            None => None,
            Some(encoder) => {
                let lines: Vec<_> = page
                    .iter()
                    .flat_map(|r| {
                        r.orders
                            .iter()
                            .flatten()
                            .map(|o| columns::order_row(&r.email, o))
                    })
                    .collect();
                let chunk = encoder.encode(&lines).map_err(PageError::Orders)?;
                Some((chunk, lines.len() as u64))
            }
        };
        Ok(Prepared {
            read,
            rows: page.len() as u64,
            not_typed,
            main,
            orders,
        })
    }
}
