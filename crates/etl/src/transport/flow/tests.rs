//! A model of the chunk writer's queues: rows decided and sent through
//! [`one_by_one`] and [`in_batches`], every look at the target and every
//! send taking a permit of a fair semaphore of a few permits (the
//! controller), each holding it for a few polls. The model is polled by
//! hand: a poll that leaves it pending without anything woken is a state
//! in which every task waits, and the test fails there. A refused send
//! gives its permit back and waits out its retry counted as waiting, as
//! `retry.rs` does with the controller.

use super::{Decision, in_batches, one_by_one};
use futures::{Stream, StreamExt};
use proptest::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use tokio::sync::Semaphore;

/// Pending `n` times (waking itself each time), then ready: work that
/// takes a while without any timer.
struct Busy(u8);

impl Future for Busy {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Drains `rows`, or says where every task waits: `Err(rows out so far)`.
fn drive<T>(rows: impl Stream<Item = T>) -> Result<usize, usize> {
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut rows = std::pin::pin!(rows);
    let mut out = 0;
    loop {
        flag.0.store(false, Ordering::SeqCst);
        match rows.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(_)) => out += 1,
            Poll::Ready(None) => return Ok(out),
            Poll::Pending if !flag.0.load(Ordering::SeqCst) => return Err(out),
            Poll::Pending => {}
        }
    }
}

/// One chunk of the model: which rows an earlier run left in flight (their
/// decision asks the target), and how many polls each request lasts.
#[derive(Debug, Clone)]
struct Case {
    in_flight: Vec<bool>,
    /// Rows whose first send is refused (a 429) and retried.
    refused: Vec<bool>,
    polls: Vec<u8>,
    permits: usize,
    concurrency: usize,
}

impl Case {
    fn polls(&self, i: usize) -> u8 {
        self.polls[i % self.polls.len()]
    }

    fn refused(&self, i: usize) -> bool {
        self.refused.get(i % self.refused.len().max(1)) == Some(&true)
    }
}

/// A request: a permit of the controller for a few polls.
async fn request(sem: &Semaphore, polls: u8) {
    let _permit = sem.acquire().await.expect("never closed");
    Busy(polls).await;
}

/// What the model's rows share beside the permits: the requests waiting
/// out a retry (the controller's count), the rows taken and not yet out,
/// and whether a row was ever taken without room for it.
#[derive(Default)]
struct Room {
    waiting: AtomicUsize,
    live: AtomicUsize,
    overtaken: AtomicBool,
}

impl Room {
    fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// The rows of `rows` counted live from when the set takes them; a
    /// row taken while `bound` plus the waiting ones are live is noted.
    fn taken<'a>(
        &'a self,
        rows: impl Stream<Item = usize> + 'a,
        bound: usize,
    ) -> impl Stream<Item = usize> + 'a {
        rows.inspect(move |_| {
            let live = self.live.fetch_add(1, Ordering::SeqCst);
            if live >= bound + self.waiting() {
                self.overtaken.store(true, Ordering::SeqCst);
            }
        })
    }

    /// A send: refused once when `refused` (its permit given back, then a
    /// retry's wait of `polls` counted as waiting), then answered.
    async fn send(&self, sem: &Semaphore, refused: bool, polls: u8) {
        if refused {
            request(sem, polls).await;
            self.waiting.fetch_add(1, Ordering::SeqCst);
            Busy(polls.saturating_mul(4)).await;
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        request(sem, polls).await;
    }
}

fn cases() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(proptest::bool::weighted(0.7), 0..400),
        proptest::collection::vec(proptest::bool::weighted(0.1), 1..50),
        proptest::collection::vec(0u8..6, 1..16),
        1usize..6,
        1usize..80,
    )
        .prop_map(|(in_flight, refused, polls, permits, concurrency)| Case {
            in_flight,
            refused,
            polls,
            permits,
            concurrency,
        })
}

/// Drives the case one by one: the rows out, or where every task waits;
/// and whether a row was taken without room.
fn one_by_one_case(case: &Case) -> (Result<usize, usize>, bool) {
    let sem = Semaphore::new(case.permits);
    let room = Room::default();
    let (sem, case, room) = (&sem, case, &room);
    let decide = move |i: usize| async move {
        if case.in_flight[i] {
            request(sem, case.polls(i)).await;
        }
        Decision::<usize, usize>::Send(i)
    };
    let send = move |i: usize| async move {
        room.send(sem, case.refused(i), case.polls(i + 1)).await;
        room.live.fetch_sub(1, Ordering::SeqCst);
        i
    };
    let rows = room.taken(
        futures::stream::iter(0..case.in_flight.len()),
        case.concurrency,
    );
    let out = drive(one_by_one(
        rows,
        case.concurrency,
        || room.waiting(),
        decide,
        send,
    ));
    (out, room.overtaken.load(Ordering::SeqCst))
}

fn in_batches_case(case: &Case, batch_rows: usize) -> Result<usize, usize> {
    let sem = Semaphore::new(case.permits);
    let room = Room::default();
    let (sem, case, room) = (&sem, case, &room);
    let decide = move |i: usize| async move {
        if case.in_flight[i] {
            request(sem, case.polls(i)).await;
        }
        if i.is_multiple_of(5) {
            Decision::<usize, usize>::Finished(i)
        } else {
            Decision::Send(i)
        }
    };
    let send = move |batch: Vec<usize>| async move {
        let refused = batch.first().is_some_and(|&i| case.refused(i));
        room.send(sem, refused, case.polls(batch.len())).await;
        batch.into_iter().map(|i| (i, i)).collect::<Vec<_>>()
    };
    let rows = futures::stream::iter(0..case.in_flight.len());
    let batches = case.concurrency.div_ceil(4);
    drive(in_batches(
        rows,
        batch_rows,
        case.concurrency,
        batches,
        || room.waiting(),
        || true,
        decide,
        send,
    ))
}

proptest! {
    #[test]
    fn rows_sent_one_by_one_never_wait_on_each_other(case in cases()) {
        let (out, overtaken) = one_by_one_case(&case);
        prop_assert_eq!(out, Ok(case.in_flight.len()));
        prop_assert!(!overtaken, "a row was taken with no room for it");
    }

    #[test]
    fn rows_sent_in_batches_never_wait_on_each_other(case in cases(), batch_rows in 1usize..50) {
        prop_assert_eq!(in_batches_case(&case, batch_rows), Ok(case.in_flight.len()));
    }
}

/// The shape the writer had: decisions in one `buffer_unordered`, sends in
/// another around it.
fn nested_case(case: &Case) -> Result<usize, usize> {
    let sem = Semaphore::new(case.permits);
    let (sem, case) = (&sem, case);
    let rows = futures::stream::iter(0..case.in_flight.len())
        .map(move |i| async move {
            if case.in_flight[i] {
                request(sem, case.polls(i)).await;
            }
            i
        })
        .buffer_unordered(case.concurrency)
        .map(move |i| async move {
            request(sem, case.polls(i + 1)).await;
            i
        })
        .buffer_unordered(case.concurrency);
    drive(rows)
}

/// The resume of issue 41 in the model: 250 rows in flight, the adaptive
/// limit's first 4 permits, 64 rows at once.
fn resumed_250() -> Case {
    Case {
        in_flight: (0..1000).map(|i| i < 250).collect(),
        refused: vec![false],
        polls: vec![3, 1, 4, 1, 5],
        permits: 4,
        concurrency: 64,
    }
}

#[test]
fn the_old_nested_writer_waits_forever_on_a_resume_with_250_rows_in_flight() {
    assert!(nested_case(&resumed_250()).is_err());
}

#[test]
fn the_writer_finishes_a_resume_with_250_rows_in_flight_both_ways() {
    let case = resumed_250();
    assert_eq!(one_by_one_case(&case).0, Ok(1000));
    assert_eq!(in_batches_case(&case, 100), Ok(1000));
}

/// Rows `0..concurrency` are refused, and their retry waits until every
/// other row is out (a gate opened by the last of them): `send_one` as the
/// writer's set runs it, with or without the count of waiting retries.
fn refused_first(concurrency: usize, rows: usize, counted: bool) -> Result<usize, usize> {
    let sem = Semaphore::new(4);
    let gate = Semaphore::new(0);
    let (waiting, others_out) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (sem, gate, waiting, others_out) = (&sem, &gate, &waiting, &others_out);
    let others = rows - concurrency;
    let decide = |i: usize| async move { Decision::<usize, usize>::Send(i) };
    let send = move |i: usize| async move {
        if i < concurrency {
            request(sem, 1).await;
            waiting.fetch_add(1, Ordering::SeqCst);
            drop(gate.acquire().await.expect("never closed"));
            waiting.fetch_sub(1, Ordering::SeqCst);
        }
        request(sem, 1).await;
        if i >= concurrency && others_out.fetch_add(1, Ordering::SeqCst) + 1 == others {
            gate.add_permits(concurrency);
        }
        i
    };
    let waiting = move || {
        if counted {
            waiting.load(Ordering::SeqCst)
        } else {
            0
        }
    };
    let rows = futures::stream::iter(0..rows);
    drive(one_by_one(rows, concurrency, waiting, decide, send))
}

/// The set without the count is `buffer_unordered(concurrency)`, the shape
/// that made a sporadic 429 cost 4.9x (issue 41): rows waiting out their
/// retry hold every place, and no other row moves until they end.
#[test]
fn rows_waiting_out_a_retry_leave_their_places_to_rows_that_can_go() {
    assert_eq!(refused_first(8, 200, false), Err(0));
    assert_eq!(refused_first(8, 200, true), Ok(200));
    assert_eq!(refused_first(1, 50, true), Ok(50));
}
