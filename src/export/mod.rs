//! Export: the way back out. An [`ExportStep`] (from a pipeline's
//! `[[export]]` or from `listpipe export`) is planned against the target
//! (group, filter, attribute names → columns, known total), then rows are
//! streamed page by page from [`reader`] to a [`writer`], into a temporary
//! file beside the output that is renamed only when complete
//! ([`crate::state_file`]): a failed export never leaves a half file that
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
pub mod reader;
pub mod writer;

use crate::api::filter::RuntimeFilter;
use crate::api::{Group, Id, ReceiverType, detail};
use crate::client::{ClientError, Page};
use crate::load::LoadError;
use crate::load::retry::retrying;
use crate::load::target::Connected;
use crate::pipeline::export::{ExportStep, ExportWhat, FilterRef};
use crate::pipeline::{ExportFormat, GroupRef};
use columns::{Column, Kind, ORDER_COLUMNS, Source};
use futures::StreamExt;
use reader::{Query, ReadOptions};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use writer::{Chunk, Encode, Layout, Sink, WriteError};

use destination::Staged;
pub use destination::{STDOUT, check_out, is_stdout, shown};

/// How an export reads (the step says what and where).
#[derive(Debug, Clone, Copy)]
pub struct ExportOptions {
    /// Receivers per page (at most 5,000).
    pub pagesize: i64,
    /// Pages in flight at once.
    pub concurrency: usize,
    pub retries: u32,
    /// Show a progress bar (a terminal and not `--quiet`).
    pub progress: bool,
    /// For connecting to an object store an `out` names, and each wait for its answer.
    pub timeout: Duration,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            pagesize: reader::MAX_PAGESIZE,
            concurrency: reader::DEFAULT_CONCURRENCY,
            retries: crate::pipeline::DEFAULT_RETRIES,
            progress: false,
            timeout: Duration::from_secs(crate::pipeline::DEFAULT_TIMEOUT_SECS),
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
    let retried = AtomicU64::new(0);
    let mut outcome = ExportOutcome {
        file: step.out.clone(),
        format: step.format.extension(),
        ..Default::default()
    };
    let plan = plan(conn, step, opts.progress).await?;
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
    };
    let main = Staged::open(&step.out, &format!("{}.out", step.name))?;
    let mut sink = writer::open(
        step.format,
        main.temp_path(),
        layout(
            cols.iter()
                .map(|c| (c.name.clone(), c.source.kind()))
                .collect(),
        ),
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
    let bar = progress(opts.progress, plan.total, &step.name);

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
        Some(query) => {
            let ropts = ReadOptions {
                pagesize: opts.pagesize.clamp(1, reader::MAX_PAGESIZE),
                concurrency: opts.concurrency.max(1),
                retries: opts.retries,
                detail: plan.detail(&cols, orders.is_some()),
            };
            let prepare = Arc::new(Prepare {
                cols: cols.clone(),
                tags_separator: step.tags_separator.clone(),
                main: sink.encoder(),
                orders: orders.as_ref().map(|(s, _)| s.encoder()),
            });
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
            let mut order_rows = 0u64;
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
                bar.inc(page.rows);
                if (page.rows as i64) < ropts.pagesize {
                    break;
                }
            }
            if orders.is_some() {
                outcome.orders = Some(order_rows);
            }
        }
    }
    sink.finish().map_err(|e| output(&step.out, e))?;
    bar.finish_and_clear();
    if let Some((s, t)) = orders {
        s.finish().map_err(|e| output(t.out(), e))?;
        outcome.orders_file = Some(t.out().to_path_buf());
        t.deliver(opts.timeout).await?;
    }
    main.deliver(opts.timeout).await?;
    outcome.retries = retried.load(Ordering::Relaxed);
    outcome.ms = started.elapsed().as_millis() as u64;
    Ok(outcome)
}

/// How a page of receivers becomes its chunks (see [`writer`]): on any
/// thread, since it holds no file.
struct Prepare {
    cols: Vec<Column>,
    tags_separator: String,
    main: Arc<dyn Encode>,
    orders: Option<Arc<dyn Encode>>,
}

/// A page ready to write.
struct Prepared {
    rows: u64,
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
        let rows: Vec<_> = page
            .iter()
            .map(|r| columns::receiver_row(&self.cols, r, &self.tags_separator))
            .collect();
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
            rows: page.len() as u64,
            main,
            orders,
        })
    }
}

/// What the target says before reading: which receivers, which columns,
/// how many (when the API can tell).
struct Plan {
    /// `None`: a blacklist export.
    query: Option<Query>,
    blocklist_of: Option<Id>,
    /// Every column there is, for `--columns` to pick from.
    columns: Vec<Column>,
    /// The columns written when the step picks none (see [`in_use`]).
    defaults: Vec<Column>,
    total: Option<u64>,
}

impl Plan {
    /// Ask for tags and orders only when they are written.
    fn detail(&self, cols: &[Column], orders: bool) -> i64 {
        let tags = cols.iter().any(|c| c.source == Source::Tags);
        (if tags { detail::TAGS } else { 0 }) | (if orders { detail::ORDERS } else { 0 })
    }
}

/// Every receiver column of the receivers of `groups` (`None`: all), and
/// the default ones: the groups' own attributes and the globals in use.
async fn receiver_columns(
    conn: &Connected,
    groups: Option<&[Id]>,
    globals: Vec<String>,
    local: Vec<String>,
) -> (Vec<Column>, Vec<Column>) {
    let used = in_use::globals_in_use(conn, groups, globals.clone(), &local).await;
    (
        columns::receiver_columns(&globals, &local),
        columns::receiver_columns(&used, &local),
    )
}

/// `counted`: whether the progress bar wants the total. A count is a pass
/// over every receiver on the server (seconds at 10M, more for a filter),
/// so a run that shows no bar (`--quiet`, cron) does not ask for it.
async fn plan(conn: &Connected, step: &ExportStep, counted: bool) -> Result<Plan, LoadError> {
    let c = &conn.client;
    let globals = || async {
        Ok::<_, LoadError>(
            c.attributes(None)
                .await?
                .into_iter()
                .filter(|a| a.group_id == 0)
                .map(|a| a.name)
                .collect::<Vec<_>>(),
        )
    };
    let group_attrs = |id: Id| async move {
        Ok::<_, LoadError>(
            c.group_attributes(id)
                .await?
                .into_iter()
                .map(|a| a.name)
                .collect::<Vec<_>>(),
        )
    };
    Ok(match &step.what {
        ExportWhat::Group { group, kind } => {
            let g = find_group(conn, group).await?;
            let total = if counted {
                let stats = c.group_stats(g.id).await?;
                Some(match kind {
                    ReceiverType::All => stats.total_count,
                    ReceiverType::Active => stats.active_count,
                    ReceiverType::Inactive => stats.inactive_count,
                    ReceiverType::Bounce => stats.bounce_count,
                })
            } else {
                None
            };
            let (all, defaults) = receiver_columns(
                conn,
                Some(&[g.id]),
                globals().await?,
                group_attrs(g.id).await?,
            )
            .await;
            Plan {
                query: Some(Query::Group {
                    group: g.id,
                    kind: *kind,
                }),
                blocklist_of: None,
                columns: all,
                defaults,
                total: total.map(|t| t.max(0) as u64),
            }
        }
        ExportWhat::Filter { group, filter } => {
            let g = find_group(conn, group).await?;
            let filters = c.filters(g.id).await?;
            let f = filters
                .iter()
                .find(|f| match filter {
                    FilterRef::Id(id) => f.id.0 == *id,
                    FilterRef::Name(n) => f.name.eq_ignore_ascii_case(n),
                })
                .ok_or_else(|| {
                    let names: Vec<&str> = filters.iter().map(|f| f.name.as_str()).collect();
                    LoadError::step(format!(
                        "the group \"{}\" has no filter {}; its filters: {}",
                        g.name,
                        match filter {
                            FilterRef::Id(id) => format!("with id {id}"),
                            FilterRef::Name(n) => format!("named \"{n}\""),
                        },
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    ))
                })?;
            let total = if counted {
                Some(c.filter_stats(g.id, f.id).await?.total_count)
            } else {
                None
            };
            let (all, defaults) = receiver_columns(
                conn,
                Some(&[g.id]),
                globals().await?,
                group_attrs(g.id).await?,
            )
            .await;
            Plan {
                query: Some(Query::Filter {
                    group: g.id,
                    filter: f.id,
                }),
                blocklist_of: None,
                columns: all,
                defaults,
                total: total.map(|t| t.max(0) as u64),
            }
        }
        ExportWhat::Runtime {
            groups,
            rules,
            operator,
            activeonly,
        } => {
            let ids: Vec<Id> = if groups.is_empty() {
                c.groups(None).await?.into_iter().map(|g| g.id).collect()
            } else {
                let mut ids = Vec::new();
                for g in groups {
                    ids.push(find_group(conn, g).await?.id);
                }
                ids
            };
            let mut local: Vec<String> = Vec::new();
            for id in &ids {
                for name in group_attrs(*id).await? {
                    if !local.contains(&name) {
                        local.push(name);
                    }
                }
            }
            let scope = (!groups.is_empty()).then_some(ids.as_slice());
            let (all, defaults) = receiver_columns(conn, scope, globals().await?, local).await;
            Plan {
                query: Some(Query::Runtime(RuntimeFilter {
                    rules: Some(rules.clone()),
                    groups: (!groups.is_empty())
                        .then(|| ids.iter().map(|i| i.to_string()).collect()),
                    operator: Some(operator.clone()),
                    activeonly: Some(*activeonly),
                    ..Default::default()
                })),
                blocklist_of: None,
                columns: all,
                defaults,
                total: None,
            }
        }
        ExportWhat::Blacklist => Plan {
            query: None,
            blocklist_of: None,
            columns: columns::blacklist_columns(),
            defaults: columns::blacklist_columns(),
            total: None,
        },
        ExportWhat::Blocklist { group } => Plan {
            query: None,
            blocklist_of: Some(find_group(conn, group).await?.id),
            columns: columns::blacklist_columns(),
            defaults: columns::blacklist_columns(),
            total: None,
        },
    })
}

async fn find_group(conn: &Connected, group: &GroupRef) -> Result<Group, LoadError> {
    let c = &conn.client;
    match group {
        GroupRef::Id(id) => match c.group((*id).into()).await {
            Ok(g) => Ok(g),
            Err(e) if e.is_not_found() => Err(LoadError::step(format!(
                "the target has no group with id {id}"
            ))),
            Err(e) => Err(e.into()),
        },
        GroupRef::Name(name) => {
            let groups = c.groups(None).await?;
            groups
                .iter()
                .find(|g| g.name.eq_ignore_ascii_case(name))
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                    LoadError::step(format!(
                        "the target has no group named \"{name}\"; its groups: {}",
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    ))
                })
        }
    }
}

/// A bar with the known total, a counter without one; hidden when off.
fn progress(on: bool, total: Option<u64>, label: &str) -> indicatif::ProgressBar {
    if !on {
        return indicatif::ProgressBar::hidden();
    }
    let (bar, template) = match total {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{prefix:>12} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
        ),
        None => (
            indicatif::ProgressBar::no_length(),
            "{prefix:>12} {spinner} {pos} rows {per_sec}",
        ),
    };
    let style = indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    bar
}
