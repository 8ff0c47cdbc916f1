//! A chunk's addresses checked against the blacklist (or the group's
//! blocklist) with the spec's validate call, 1,000 to a request, and
//! answered batch by batch: the chunk's rows are taken in the order their
//! batches are answered, so a lookup waiting out a 429's `Retry-After`
//! holds back its own 1,000 rows, not the chunk's 65,536 (issue 41). When
//! the whole chunk waited for its last lookup, a target refusing 8% of
//! requests kept every row of a run's first chunk waiting a second or two,
//! and a chunk whose lookup was refused twice left the run idle up to 1.2 s
//! between chunks.
//!
//! A [`Lookup`] is the lookups' driver (a future that sends each answer
//! down a channel) and the channel's receiving end. Whoever holds it
//! drives it: each lookup waits for its room in the run's controller, a
//! fair semaphore that hands a permit to a waiter whether or not anything
//! polls it, so lookups left unpolled could sit on the permits every other
//! request waits for (the hang of flow.rs).

use super::{BATCH, LoadError, retry};
use crate::transport::target::Connected;
use futures::channel::mpsc;
use futures::future::LocalBoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use listpipe_api::Group;
use listpipe_base::hash::FastSet;
use std::cell::Cell;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Context;

/// One batch answered: its rows (indices in the chunk), and those among
/// them whose address the blacklist holds.
pub(super) struct Answer {
    pub(super) rows: Range<usize>,
    pub(super) blocked: Vec<usize>,
}

/// A chunk's lookups, some answered, the rest in flight.
pub(super) struct Lookup<'c> {
    /// Sends each answer as it comes (after an error, nothing more);
    /// `None` once it ended.
    driver: Option<LocalBoxFuture<'c, ()>>,
    answers: Answers,
}

/// The answers as they come; they end when every batch is answered, or
/// after the first lookup that failed for good.
pub(super) type Answers = mpsc::UnboundedReceiver<Result<Answer, LoadError>>;

impl<'c> Lookup<'c> {
    /// The lookups of `emails` (as prepared: lower-case), `concurrency` at
    /// once, their retries counted in `retried`. Nothing is asked before
    /// the lookup is first driven.
    pub(super) fn start(
        conn: &'c Connected,
        group: Option<&Group>,
        emails: Arc<[String]>,
        (concurrency, retries): (usize, u32),
        retried: &'c AtomicU64,
    ) -> Self {
        let gid = group.map(|g| g.id);
        let n = emails.len();
        let (tx, answers) = mpsc::unbounded();
        let mut asked = futures::stream::iter((0..n).step_by(BATCH))
            .map(move |first| {
                let emails = Arc::clone(&emails);
                async move {
                    let rows = first..(first + BATCH).min(n);
                    let batch = &emails[rows.clone()];
                    let allowed = retry::retrying(conn, retries, retried, || {
                        conn.client.validate_blacklist(batch, gid, false)
                    })
                    .await?;
                    let allowed: FastSet<String> =
                        allowed.into_iter().map(|e| e.to_lowercase()).collect();
                    let blocked = rows
                        .clone()
                        .filter(|&i| !allowed.contains(&emails[i]))
                        .collect();
                    Ok(Answer { rows, blocked })
                }
            })
            .buffer_unordered(concurrency.max(1));
        let driver = async move {
            while let Some(answer) = asked.next().await {
                let failed = answer.is_err();
                // A receiver gone wants no more answers: the chunk is
                // not written (a stop), and nothing is lost.
                if tx.unbounded_send(answer).is_err() || failed {
                    break;
                }
            }
        };
        Lookup {
            driver: Some(driver.boxed_local()),
            answers,
        }
    }

    /// Polls the lookups in flight: to be called from every poll while
    /// the lookup is held and not [`run`](Self::run).
    pub(super) fn drive(&mut self, cx: &mut Context<'_>) {
        drive(&mut self.driver, cx);
    }

    /// Runs `until` to its end while the lookups go on.
    pub(super) async fn alongside<T>(&mut self, until: impl Future<Output = T>) -> T {
        let mut until = std::pin::pin!(until);
        std::future::poll_fn(|cx| {
            self.drive(cx);
            until.as_mut().poll(cx)
        })
        .await
    }

    /// Runs `write`, given the answers as they come, while the lookups go
    /// on: `write` ends when the answers do, or sooner (a stop).
    pub(super) async fn run<T, WF>(self, write: impl FnOnce(Answers) -> WF) -> T
    where
        WF: Future<Output = T>,
    {
        let Lookup {
            mut driver,
            answers,
        } = self;
        let mut write = std::pin::pin!(write(answers));
        std::future::poll_fn(|cx| {
            drive(&mut driver, cx);
            write.as_mut().poll(cx)
        })
        .await
    }
}

/// The rows of each batch as it is answered, its blocked ones marked in
/// `blocked` (by row of the chunk) first. After a lookup that failed for
/// good, no more: its error goes to `failed`.
pub(super) fn rows<'a>(
    answers: Answers,
    blocked: &'a [AtomicBool],
    failed: &'a Cell<Option<LoadError>>,
) -> impl Stream<Item = usize> + 'a {
    answers
        .scan((), move |(), answer| {
            futures::future::ready(match answer {
                Ok(a) => {
                    for i in a.blocked {
                        blocked[i].store(true, Ordering::Relaxed);
                    }
                    Some(futures::stream::iter(a.rows))
                }
                Err(e) => {
                    failed.set(Some(e));
                    None
                }
            })
        })
        .flatten()
}

/// Polls `driver` until it ends.
fn drive(driver: &mut Option<LocalBoxFuture<'_, ()>>, cx: &mut Context<'_>) {
    if let Some(d) = driver.as_mut()
        && d.poll_unpin(cx).is_ready()
    {
        *driver = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows come batch by batch in the order the batches are answered,
    /// each batch's blocked rows marked before its rows come; a failed
    /// lookup ends them and is kept.
    #[tokio::test]
    async fn rows_come_as_their_batch_is_answered_and_stop_at_a_failure() {
        let (tx, answers) = mpsc::unbounded();
        let answer = |rows: Range<usize>, blocked: Vec<usize>| Ok(Answer { rows, blocked });
        for a in [
            answer(3..5, vec![4]),
            answer(0..3, vec![]),
            Err(LoadError::step("the lookup failed")),
            answer(5..7, vec![5]),
        ] {
            tx.unbounded_send(a).expect("sent");
        }
        let blocked: Vec<AtomicBool> = (0..7).map(|_| AtomicBool::new(false)).collect();
        let failed = Cell::new(None);
        let mut taken = Vec::new();
        let mut rows = std::pin::pin!(rows(answers, &blocked, &failed));
        while let Some(i) = rows.next().await {
            // A row's mark is set when it comes.
            taken.push((i, blocked[i].load(Ordering::Relaxed)));
        }
        let got: Vec<usize> = taken.iter().map(|t| t.0).collect();
        assert_eq!(got, [3, 4, 0, 1, 2], "the batch answered first goes first");
        assert!(taken.contains(&(4, true)) && taken.contains(&(3, false)));
        assert!(
            !blocked[5].load(Ordering::Relaxed),
            "nothing after the failure"
        );
        let failure = failed.take().map(|e| e.to_string()).unwrap_or_default();
        assert!(failure.contains("the lookup failed"), "{failure}");
    }
}
