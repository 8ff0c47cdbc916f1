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

use futures::{Stream, StreamExt};
use std::future::Future;

/// What a row needs once decided.
pub(super) enum Decision<R, P> {
    /// Nothing more to do: its result.
    Finished(R),
    /// A write: what to send.
    Send(P),
}

/// Decides and sends each row of `rows` in its own future, `concurrency`
/// of them at once; each row's result comes out as it is ready.
pub(super) fn one_by_one<'a, R, P, D, DF, S, SF>(
    rows: impl Stream<Item = usize> + 'a,
    concurrency: usize,
    decide: D,
    send: S,
) -> impl Stream<Item = (usize, R)> + 'a
where
    R: 'a,
    P: 'a,
    D: Fn(usize) -> DF + Copy + 'a,
    DF: Future<Output = Decision<R, P>> + 'a,
    S: Fn(P) -> SF + Copy + 'a,
    SF: Future<Output = R> + 'a,
{
    rows.map(move |i| async move {
        let r = match decide(i).await {
            Decision::Finished(r) => r,
            Decision::Send(p) => send(p).await,
        };
        (i, r)
    })
    .buffer_unordered(concurrency.max(1))
}

/// Takes `rows` in groups of `batch_rows`; each group's future decides its
/// rows (`concurrency` at once; `more` is asked before each, so a stop takes
/// no new row), then sends the ones that need a write as one batch.
/// `batches` groups are in flight at once.
pub(super) fn in_batches<'a, R, P, D, DF, S, SF, M>(
    rows: impl Stream<Item = usize> + 'a,
    batch_rows: usize,
    concurrency: usize,
    batches: usize,
    more: M,
    decide: D,
    send: S,
) -> impl Stream<Item = (usize, R)> + 'a
where
    R: 'a,
    P: 'a,
    M: Fn() -> bool + Copy + 'a,
    D: Fn(usize) -> DF + Copy + 'a,
    DF: Future<Output = Decision<R, P>> + 'a,
    S: Fn(Vec<P>) -> SF + Copy + 'a,
    SF: Future<Output = Vec<(usize, R)>> + 'a,
{
    rows.chunks(batch_rows.max(1))
        .map(move |group| async move {
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
        })
        .buffer_unordered(batches.max(1))
        .flatten()
}

#[cfg(test)]
mod tests;
