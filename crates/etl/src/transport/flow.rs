//! How a chunk's rows move through their two stages, deciding (which may
//! ask the target, for a row an earlier run left in flight) and sending,
//! shaped so that the chunk writer can never wait on itself.
//!
//! Both stages take their room from the run's controller, a fair
//! semaphore: a waiter first in its queue is handed the next permit
//! whether or not anything polls it. The writer once chained the stages as
//! two nested `buffer_unordered`: the outer one polls the inner stream only
//! while it has room, so once the sends filled it, the decisions waiting
//! inside held (or were being handed) the controller's permits unpolled,
//! and every send waited for them: a resumed run with more rows in flight
//! than the adaptive mode's 256 streams sent nothing and never ended (issue
//! 41). Precisely: the inner set yields one decision, the outer one is full
//! again and stops polling it, and the other decisions, woken with a permit
//! handed to them (or an answer in), are never polled; once every permit
//! sits with them, the outer set's sends wait for ever.
//!
//! Decided here: every future that can hold a permit lives in the one set
//! that the caller's loop polls. A row is decided and sent by one future
//! ([`one_by_one`]); a batch decides its own rows inside its future, then
//! sends them ([`in_batches`]). Nothing waits in a queue that only a full
//! consumer would drain. The model test beside this file drives both
//! shapes against a semaphore of a few permits and finds no state in which
//! every task waits (and finds one in the old shape).
//!
//! Decided too: a request waiting out a 429's `Retry-After` holds no
//! permit, and its row takes no place among the rows in flight either: the
//! set takes a row more for each request the controller counts as waiting
//! ([`admitted`]). Waits after a failure or a 503 are not counted: a target
//! that fails or is overloaded keeps its rows' places, so a lost target
//! still stops the run (the breaker) with its rows unstarted, rather than
//! every row spending its retries. With `buffer_unordered`,
//! the rows waiting their second kept their places, so a target answering
//! 8% of requests with a sporadic 429 ran a 100,000-row import 4.9 times
//! as long (issue 41). The waiting rows a set may add are bounded
//! ([`SPARE_ROWS`], and as many batches as it holds), so memory stays
//! bounded when every request is refused.

use futures::stream::{FusedStream, FuturesUnordered};
use futures::{Stream, StreamExt};
use std::future::Future;
use std::task::Poll;

/// Rows waiting out a 429 that a set of rows sent one by one may hold
/// beyond its bound: at 10,000 rows a second with 8% refused for a second,
/// about 800 wait at once.
pub(crate) const SPARE_ROWS: usize = 4096;

/// What a row needs once decided.
pub(crate) enum Decision<R, P> {
    /// Nothing more to do: its result.
    Finished(R),
    /// A write: what to send.
    Send(P),
}

/// Decides and sends each row of `rows` in its own future, `concurrency`
/// of them at once and one more for each request `waiting()` out a 429
/// (at most [`SPARE_ROWS`] more); each row's result comes out as it is
/// ready.
pub(crate) fn one_by_one<'a, R, P, D, DF, S, SF, W>(
    rows: impl Stream<Item = usize> + 'a,
    concurrency: usize,
    waiting: W,
    decide: D,
    send: S,
) -> impl Stream<Item = (usize, R)> + 'a
where
    R: 'a,
    P: 'a,
    W: Fn() -> usize + 'a,
    D: Fn(usize) -> DF + Copy + 'a,
    DF: Future<Output = Decision<R, P>> + 'a,
    S: Fn(P) -> SF + Copy + 'a,
    SF: Future<Output = R> + 'a,
{
    let rows = rows.map(move |i| async move {
        let r = match decide(i).await {
            Decision::Finished(r) => r,
            Decision::Send(p) => send(p).await,
        };
        (i, r)
    });
    admitted(rows, concurrency, SPARE_ROWS, waiting)
}

/// Takes `rows` in groups of `batch_rows`; each group's future decides its
/// rows (`concurrency` at once; `more` is asked before each, so a stop takes
/// no new row), then sends the ones that need a write as one batch.
/// `batches` groups are in flight at once, and one more for each request
/// `waiting()` out a 429 (at most `batches` more).
#[allow(clippy::too_many_arguments)]
pub(crate) fn in_batches<'a, R, P, D, DF, S, SF, M, W>(
    rows: impl Stream<Item = usize> + 'a,
    batch_rows: usize,
    concurrency: usize,
    batches: usize,
    waiting: W,
    more: M,
    decide: D,
    send: S,
) -> impl Stream<Item = (usize, R)> + 'a
where
    R: 'a,
    P: 'a,
    W: Fn() -> usize + 'a,
    M: Fn() -> bool + Copy + 'a,
    D: Fn(usize) -> DF + Copy + 'a,
    DF: Future<Output = Decision<R, P>> + 'a,
    S: Fn(Vec<P>) -> SF + Copy + 'a,
    SF: Future<Output = Vec<(usize, R)>> + 'a,
{
    let groups = rows.chunks(batch_rows.max(1)).map(move |group| async move {
        let decided: Vec<(usize, Decision<R, P>)> = futures::stream::iter(group)
            .take_while(move |_| futures::future::ready(more()))
            .map(move |i| async move { (i, decide(i).await) })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        let mut done = Vec::with_capacity(decided.len());
        let mut pending = Vec::new();
        for (i, d) in decided {
            match d {
                Decision::Finished(r) => done.push((i, r)),
                Decision::Send(p) => pending.push(p),
            }
        }
        if !pending.is_empty() {
            done.extend(send(pending).await);
        }
        futures::stream::iter(done)
    });
    admitted(groups, batches, batches, waiting).flatten()
}

/// Polls the futures of `futs` as they are ready, like `buffer_unordered`,
/// holding `bound` of them at once plus one for each request `waiting()`
/// out a 429, at most `spare` more. Every future taken stays in the one
/// set polled here until it ends (the liveness argument above). The count
/// is the controller's, for the whole run: a wait elsewhere may let a few
/// more in, never past `bound + spare`.
fn admitted<'a, F>(
    futs: impl Stream<Item = F> + 'a,
    bound: usize,
    spare: usize,
    waiting: impl Fn() -> usize + 'a,
) -> impl Stream<Item = F::Output> + 'a
where
    F: Future + 'a,
{
    let mut futs = Box::pin(futs.fuse());
    let mut set = FuturesUnordered::new();
    let room = move || bound.max(1) + waiting().min(spare);
    futures::stream::poll_fn(move |cx| {
        loop {
            // Take futures while there is room; a pending source has its
            // waker and wakes this stream when it has more.
            let mut source_pending = false;
            while set.len() < room() && !futs.is_terminated() {
                match futs.as_mut().poll_next(cx) {
                    Poll::Ready(Some(f)) => set.push(f),
                    Poll::Ready(None) => {}
                    Poll::Pending => {
                        source_pending = true;
                        break;
                    }
                }
            }
            match set.poll_next_unpin(cx) {
                Poll::Ready(Some(out)) => return Poll::Ready(Some(out)),
                Poll::Ready(None) if futs.is_terminated() => return Poll::Ready(None),
                // Empty, and the source has its waker.
                Poll::Ready(None) => return Poll::Pending,
                Poll::Pending => {
                    // A future polled just now may have begun to wait out
                    // a 429: room for another row.
                    if source_pending || futs.is_terminated() || set.len() >= room() {
                        return Poll::Pending;
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests;
