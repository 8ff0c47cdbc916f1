//! Group commit: every [`Store::write`](super::Store::write) goes to one
//! writer thread, which takes the writes that are waiting (up to
//! [`GROUP_MAX`]), runs each inside its own SAVEPOINT of one transaction and
//! commits them together. A write that fails is rolled back to its
//! savepoint alone; the others commit. No write is answered before the
//! commit that holds it, so "acknowledged is kept" still holds.
//!
//! Sixteen clients each creating one receiver per request then cost one
//! commit (one pass of WAL writes over the shared index and group pages)
//! instead of sixteen; and since their creates wait together in a
//! [`Merge`], one batch's statements instead of sixteen times twenty.

use super::written::{self, RowsWritten};
use super::{Db, RETRY_AFTER_SECS, StoreError, StoreResult, WRITES};
use rusqlite::Connection;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Writes committed together at most.
const GROUP_MAX: usize = 64;
/// Writes waiting for the writer at most: one more is refused at once
/// (`StoreError::Busy`, a 503 with `Retry-After`) rather than queued
/// without bound. With the in-flight bound of the HTTP layer
/// (`server::overload`) it is rarely reached; it guards callers that write
/// without a request (and a flood that slips past).
pub(super) const QUEUE: usize = 1024;

/// Answers a write once its group's commit is known.
type Finish = Box<dyn FnOnce(Result<(), String>) + Send>;
/// Runs a write; `Some` to answer after the commit, `None` when it failed
/// (and has answered).
type Run = Box<dyn FnOnce(&Db) -> Option<Finish> + Send>;

/// One write: runs on the writer's connection; on success answers how to
/// reply once committed, on failure has replied already (and is rolled back).
pub(super) struct Job {
    run: Run,
    /// Replies with an error without running (the transaction could not start).
    fail: Box<dyn FnOnce(String) + Send>,
}

impl Job {
    /// The job of `f`, answering on `reply`.
    pub(super) fn new<T, F>(f: F, reply: tokio::sync::oneshot::Sender<StoreResult<T>>) -> Job
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> StoreResult<T> + Send + 'static,
    {
        let reply = Arc::new(Mutex::new(Some(reply)));
        let answer = {
            let reply = reply.clone();
            move |r: StoreResult<T>| {
                if let Some(tx) = reply.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    let _ = tx.send(r);
                }
            }
        };
        let fail_answer = answer.clone();
        Job {
            run: Box::new(move |conn| {
                match std::panic::catch_unwind(AssertUnwindSafe(|| f(conn))) {
                    Ok(Ok(v)) => Some(Box::new(move |committed: Result<(), String>| {
                        answer(committed.map(|_| v).map_err(StoreError::Internal))
                    })),
                    Ok(Err(e)) => {
                        answer(Err(e));
                        None
                    }
                    Err(_) => {
                        answer(Err(StoreError::Internal(
                            "a write failed unexpectedly".into(),
                        )));
                        None
                    }
                }
            }),
            fail: Box::new(move |e| fail_answer(Err(StoreError::Internal(e)))),
        }
    }
}

/// The writer's queue: its sender, and how many jobs wait in it (for
/// `serve --metrics-listen`).
#[derive(Clone)]
pub(super) struct Queue {
    tx: SyncSender<Job>,
    waiting: Arc<AtomicUsize>,
}

impl Queue {
    /// Queues `job`, or refuses it at once (full, or the writer gone).
    pub(super) fn try_send(&self, job: Job) -> Result<(), TrySendError<Job>> {
        // Counted before it can be taken, so that the writer's count down
        // never passes it.
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.tx.try_send(job).inspect_err(|_| {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        })
    }

    /// Jobs queued that the writer has not taken yet.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// Why a job was not queued: the queue is full (a 503 with `Retry-After`)
/// or the writer is gone.
pub(super) fn refused(e: &TrySendError<Job>) -> StoreError {
    match e {
        TrySendError::Full(_) => busy(),
        TrySendError::Disconnected(_) => {
            StoreError::Internal("the store's writer has stopped".into())
        }
    }
}

/// The answer to a write over the queue's bound.
fn busy() -> StoreError {
    StoreError::Busy(format!(
        "Service Unavailable: {QUEUE} writes are waiting; retry after {RETRY_AFTER_SECS} s"
    ))
}

/// Writes of one kind that wait together, run as one job: the first to
/// wait queues the job, which takes every write waiting when it runs and
/// hands them to `run` at once (single creates written as one batch,
/// `receivers::create_many`). `run` answers each write, in order, and
/// writes nothing for a write it refuses. The answers go out after the
/// commit, as for any job.
pub(super) struct Merge<I, O> {
    waiting: Mutex<Vec<(I, Reply<O>)>>,
    run: fn(&Db, Vec<I>) -> Vec<StoreResult<O>>,
}

type Reply<O> = tokio::sync::oneshot::Sender<StoreResult<O>>;

impl<I: Send + 'static, O: Send + 'static> Merge<I, O> {
    pub(super) fn new(run: fn(&Db, Vec<I>) -> Vec<StoreResult<O>>) -> Arc<Self> {
        Arc::new(Merge {
            waiting: Mutex::new(Vec::new()),
            run,
        })
    }

    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.waiting.lock().unwrap().len()
    }

    fn take(&self) -> Vec<(I, Reply<O>)> {
        std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Writes `item` with the others waiting, on the writer of `writes`.
    /// Past [`QUEUE`] waiting, it is refused at once (busy).
    pub(super) async fn write(self: &Arc<Self>, writes: &Queue, item: I) -> StoreResult<O> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let first = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            if waiting.len() >= QUEUE {
                return Err(busy());
            }
            waiting.push((item, tx));
            waiting.len() == 1
        };
        // Waiting is non-empty exactly while one job is queued to take it.
        if first && let Err(e) = writes.try_send(self.job()) {
            for (_, tx) in self.take() {
                let _ = tx.send(Err(refused(&e)));
            }
        }
        rx.await
            .map_err(|_| StoreError::Internal("the store's writer dropped a write".into()))?
    }

    fn job(self: &Arc<Self>) -> Job {
        let (merge, unrun) = (self.clone(), self.clone());
        Job {
            run: Box::new(move |db| {
                let (items, replies): (Vec<I>, Vec<Reply<O>>) = merge.take().into_iter().unzip();
                match std::panic::catch_unwind(AssertUnwindSafe(|| (merge.run)(db, items))) {
                    Ok(answers) => Some(Box::new(move |committed: Result<(), String>| {
                        for (tx, answer) in replies.into_iter().zip(answers) {
                            let answer = match &committed {
                                Err(e) if answer.is_ok() => Err(StoreError::Internal(e.clone())),
                                _ => answer,
                            };
                            let _ = tx.send(answer);
                        }
                    })),
                    Err(_) => {
                        for tx in replies {
                            let _ = tx.send(Err(StoreError::Internal(
                                "a write failed unexpectedly".into(),
                            )));
                        }
                        None
                    }
                }
            }),
            fail: Box::new(move |e| {
                for (_, tx) in unrun.take() {
                    let _ = tx.send(Err(StoreError::Internal(e.clone())));
                }
            }),
        }
    }
}

/// Starts the writer thread on `conn`, its writes on `clock`, the rows
/// they commit counted in `counts`; it ends when every sender is dropped.
pub(super) fn start(
    conn: Arc<Mutex<Connection>>,
    clock: super::Clock,
    counts: RowsWritten,
) -> std::io::Result<Queue> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(QUEUE);
    let waiting = Arc::new(AtomicUsize::new(0));
    let taken = waiting.clone();
    std::thread::Builder::new()
        .name("listpipe-store-writer".into())
        .spawn(move || clock.enter(|| run(&conn, &rx, &taken, &counts)))?;
    Ok(Queue { tx, waiting })
}

fn run(conn: &Mutex<Connection>, rx: &Receiver<Job>, waiting: &AtomicUsize, counts: &RowsWritten) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        waiting.fetch_sub(jobs.len(), Ordering::Relaxed);
        written::discard();
        let guard = conn.lock().unwrap_or_else(|p| p.into_inner());
        // Prepared once: parsing these four for every write was a tenth of a request.
        let sql = |q: &str| {
            guard
                .prepare_cached(q)
                .and_then(|mut s| s.execute([]).map(|_| ()))
        };
        if let Err(e) = sql("BEGIN IMMEDIATE") {
            jobs.into_iter().for_each(|j| (j.fail)(e.to_string()));
            continue;
        }
        let mut finishes = Vec::with_capacity(jobs.len());
        let mut broken = None;
        for job in jobs {
            if let Some(e) = &broken {
                (job.fail)(format!("database error: {e}"));
                continue;
            }
            if let Err(e) = sql("SAVEPOINT write") {
                broken = Some(e.to_string());
                (job.fail)(e.to_string());
                continue;
            }
            let mark = written::mark();
            let done = (job.run)(&Db::Lite(&guard));
            let end = match done {
                Some(_) => sql("RELEASE write"),
                None => {
                    written::back_to(mark);
                    sql("ROLLBACK TO write").and_then(|_| sql("RELEASE write"))
                }
            };
            finishes.extend(done);
            if let Err(e) = end {
                broken = Some(e.to_string());
            }
        }
        let committed = match broken {
            Some(e) => Err(format!("database error: {e}")),
            None => sql("COMMIT").map_err(|e| format!("database error: {e}")),
        };
        if committed.is_err() {
            let _ = guard.execute_batch("ROLLBACK");
            written::discard();
        } else {
            written::flush(counts);
        }
        drop(guard);
        WRITES.fetch_add(1, Ordering::SeqCst);
        for finish in finishes {
            finish(committed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Store, invalid};
    use crate::store::db::params;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn writes_committed_together_fail_and_panic_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("w.db")).unwrap();
        store
            .write(|c| c.batch("CREATE TABLE t (n INTEGER)"))
            .await
            .unwrap();
        let writes = (0..60).map(|n: i64| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(move |c| {
                        c.exec("INSERT INTO t (n) VALUES (?1)", params![n])?;
                        match n % 3 {
                            0 => Ok(n),
                            1 => invalid(format!("{n} refused")),
                            _ => panic!("{n} panics"),
                        }
                    })
                    .await
            })
        });
        let answers = futures::future::join_all(writes).await;
        for (n, a) in answers.into_iter().enumerate() {
            let a = a.unwrap();
            assert_eq!(a.is_ok(), n % 3 == 0, "{n}: {a:?}");
        }
        let kept: Vec<i64> = store
            .read(|c| c.rows("SELECT n FROM t ORDER BY n", params![], |r| r.get(0)))
            .await
            .unwrap();
        assert_eq!(kept, (0..60).filter(|n| n % 3 == 0).collect::<Vec<_>>());
    }

    // Holding the writer's lock across awaits is the point: it stalls the writer.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_over_the_queue_bound_are_refused_busy_and_write_nothing() {
        use super::super::StoreError;
        use super::{GROUP_MAX, QUEUE};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("q.db")).unwrap();
        store
            .write(|c| c.batch("CREATE TABLE t (n INTEGER)"))
            .await
            .unwrap();
        // Hold the connection: the writer takes one group of jobs and waits
        // for it, so everything after fills the queue.
        let held = store.lite_conn();
        let total = QUEUE + GROUP_MAX + 10;
        let writes: Vec<_> = (0..total as i64)
            .map(|n| {
                let store = store.clone();
                tokio::spawn(async move {
                    store
                        .write(move |c| c.exec("INSERT INTO t (n) VALUES (?1)", params![n]))
                        .await
                })
            })
            .collect();
        // Every write has been offered to the queue before the writer goes on.
        while writes.iter().filter(|w| w.is_finished()).count() < total - QUEUE - GROUP_MAX {
            tokio::task::yield_now().await;
        }
        drop(held);
        let mut kept = 0;
        let mut busy = 0;
        for w in writes {
            match w.await.unwrap() {
                Ok(_) => kept += 1,
                Err(StoreError::Busy(m)) => {
                    assert_eq!(
                        m,
                        format!("Service Unavailable: {QUEUE} writes are waiting; retry after 1 s")
                    );
                    busy += 1
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(busy >= 10, "{busy} refused");
        let rows: i64 = store
            .read(|c| c.value("SELECT COUNT(*) FROM t", params![]))
            .await
            .unwrap();
        assert_eq!(rows, kept);
    }
}
