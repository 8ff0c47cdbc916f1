//! An export's rows read and written: a blacklist whole, receivers page
//! by page, each page prepared on a blocking thread and written in order
//! (see [`run`](super::run)).

use super::columns::{self, Column, Kind};
use super::reader::{self, Query, ReadOptions};
use super::writer::{self, Chunk, Encode, Sink, WriteError};
use super::{ExportOptions, ExportOutcome, OrdersFile, incremental, output, plan, read_failed};
use crate::load::LoadError;
use crate::pipeline::ExportFormat;
use crate::pipeline::export::ExportStep;
use crate::transport::retry::retrying;
use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_client::{ClientError, Page};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// What an export reads with: the target, the step and its plan, the
/// columns written, the counter of retries, the progress bar.
#[derive(Clone, Copy)]
pub(super) struct Read<'a> {
    pub(super) conn: &'a Connected,
    pub(super) step: &'a ExportStep,
    pub(super) opts: &'a ExportOptions,
    pub(super) plan: &'a plan::Plan,
    pub(super) cols: &'a [Column],
    pub(super) retried: &'a AtomicU64,
    pub(super) bar: &'a dyn crate::progress::Stage,
}

/// Where an export's rows go: the main file's sink, the orders file's, and
/// the outcome's counts.
pub(super) struct Written<'w> {
    pub(super) main: &'w mut Box<dyn Sink>,
    pub(super) orders: &'w mut Option<OrdersFile>,
    pub(super) outcome: &'w mut ExportOutcome,
}

impl Read<'_> {
    /// A blacklist export: the blacklists come whole (the API has no pages
    /// for them), and are written a page's worth at a time.
    pub(super) async fn blacklist(&self, to: &mut Written<'_>) -> Result<(), LoadError> {
        let Read {
            conn,
            step,
            opts,
            plan,
            cols,
            retried,
            bar,
        } = *self;
        let entries = retrying(conn, opts.retries, retried, || async {
            match &plan.blocklist_of {
                Some(g) => conn.client.group_blocklist(*g).await,
                None => conn.client.blacklist().await,
            }
        })
        .await
        .map_err(|e| read_failed(step, 0, e))?;
        bar.set_length(entries.len() as u64);
        for chunk in entries.chunks(opts.pagesize.max(1) as usize) {
            let rows: Vec<_> = chunk.iter().map(|e| columns::entry_row(cols, e)).collect();
            to.main.write(&rows).map_err(|e| output(&step.out, e))?;
            to.outcome.rows += rows.len() as u64;
            bar.inc(rows.len() as u64);
        }
        to.outcome.pages = 1;
        Ok(())
    }

    /// A receiver export: the pages of `base` (an incremental export's
    /// `cursor` may make several queries of it).
    pub(super) async fn receivers(
        &self,
        base: &Query,
        cursor: Option<&Arc<incremental::Cursor>>,
        to: &mut Written<'_>,
    ) -> Result<(), LoadError> {
        let Read {
            step,
            opts,
            plan,
            cols,
            ..
        } = *self;
        let queries = match cursor {
            Some(c) => c.queries(base, plan.filter_rules.as_ref())?,
            None => vec![base.clone()],
        };
        let ropts = ReadOptions {
            pagesize: opts.pagesize.clamp(1, reader::MAX_PAGESIZE),
            concurrency: opts.concurrency.max(1),
            retries: opts.retries,
            detail: plan.detail(cols, to.orders.is_some()),
        };
        let prepare = Arc::new(Prepare {
            cols: cols.to_vec(),
            main: to.main.encoder(),
            orders: to.orders.as_ref().map(|(s, _)| s.encoder()),
            cursor: cursor.cloned(),
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
            order_rows += self.pages(query, &ropts, &prepare, to).await?;
        }
        if to.orders.is_some() {
            to.outcome.orders = Some(order_rows);
        }
        Ok(())
    }

    /// The pages of one query, written in order; returns the orders file's
    /// lines written.
    async fn pages(
        &self,
        query: &Query,
        ropts: &ReadOptions,
        prepare: &Arc<Prepare>,
        to: &mut Written<'_>,
    ) -> Result<u64, LoadError> {
        let step = self.step;
        let mut order_rows = 0u64;
        // Each page is decoded and encoded on a blocking thread, a page
        // per core at once, while this task writes the pages before it
        // in order: one thread could not keep up with the server.
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let pages = reader::pages(self.conn, query, ropts, self.retried)
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
                PageError::Read(e) => read_failed(step, to.outcome.rows, e),
                PageError::Main(e) => output(&step.out, e),
                PageError::Orders(e) => output(step.orders_out.as_deref().unwrap_or(&step.out), e),
                PageError::Lost(e) => {
                    LoadError::step(format!("preparing a page of the export failed: {e}"))
                }
            })?;
            to.outcome.pages += 1;
            to.main
                .write_chunk(page.main)
                .map_err(|e| output(&step.out, e))?;
            if let (Some((s, t)), Some((chunk, lines))) = (to.orders.as_mut(), page.orders) {
                s.write_chunk(chunk).map_err(|e| output(t.out(), e))?;
                order_rows += lines;
            }
            to.outcome.rows += page.rows;
            to.outcome.values_not_typed += page.not_typed;
            self.bar.inc(page.rows);
            if (page.read as i64) < ropts.pagesize {
                break;
            }
        }
        Ok(order_rows)
    }
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
