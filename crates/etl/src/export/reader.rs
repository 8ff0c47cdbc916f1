//! Reading receivers page by page: pages of up to 5,000 (the spec's
//! maximum) are fetched a few at a time, and handed on in page order (the
//! stream buffers pages that arrive early), so the file's row order is
//! stable whatever the network does. Each page is retried on 408, 429, 5xx
//! and dropped connections like any other request. A page stays the
//! answer's bytes until its reader decodes it ([`Page::rows`]), into rows
//! that borrow their text from it.

use crate::transport::retry::retrying;
use crate::transport::target::Connected;
use futures::{Stream, StreamExt};
use listpipe_api::filter::RuntimeFilter;
use listpipe_api::{Id, ReceiverQuery, ReceiverType};
use listpipe_client::{ClientError, Page};
use std::sync::atomic::AtomicU64;

/// The spec's largest page.
pub const MAX_PAGESIZE: i64 = 5_000;
/// Pages in flight at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Ids ascending: the same order on every page request, so pages neither
/// overlap nor skip.
const ORDER: &str = "id asc";

/// Which receivers, resolved to ids.
#[derive(Debug, Clone)]
pub enum Query {
    Group { group: Id, kind: ReceiverType },
    Filter { group: Id, filter: Id },
    Runtime(RuntimeFilter),
}

#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    pub pagesize: i64,
    pub concurrency: usize,
    pub retries: u32,
    /// The `detail` bits (tags, orders) the columns need.
    pub detail: i64,
}

/// One page (zero-based).
pub async fn page(
    conn: &Connected,
    query: &Query,
    page: i64,
    opts: &ReadOptions,
) -> Result<Page, ClientError> {
    let q = ReceiverQuery {
        pagesize: Some(opts.pagesize),
        page: Some(page),
        detail: Some(opts.detail),
        order_by: Some(ORDER.into()),
        ..Default::default()
    };
    match query {
        Query::Group { group, kind } => {
            let q = ReceiverQuery {
                kind: (*kind != ReceiverType::All).then(|| kind.as_str().to_string()),
                ..q
            };
            conn.client.receivers_page(*group, &q).await
        }
        Query::Filter { group, filter } => {
            conn.client.filter_receivers_page(*group, *filter, &q).await
        }
        Query::Runtime(f) => {
            let f = RuntimeFilter {
                pagesize: Some(opts.pagesize),
                page: Some(page),
                detail: Some(opts.detail),
                orderby: Some(ORDER.into()),
                ..f.clone()
            };
            conn.client.runtime_filter_page(&f).await
        }
    }
}

/// Every page from the first, in order, `concurrency` requests in flight.
/// The stream does not end by itself: the caller stops at the first page
/// shorter than `pagesize` (pages past the end come back empty).
pub fn pages<'a>(
    conn: &'a Connected,
    query: &'a Query,
    opts: &'a ReadOptions,
    retried: &'a AtomicU64,
) -> impl Stream<Item = Result<Page, ClientError>> + 'a {
    futures::stream::iter(0i64..)
        .map(move |n| {
            retrying(conn, opts.retries, retried, move || {
                page(conn, query, n, opts)
            })
        })
        .buffered(opts.concurrency.max(1))
}
