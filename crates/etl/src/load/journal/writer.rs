//! The journal's writer: one thread that owns the file, so the async
//! workers never block on the disk. Workers hand it whole groups of lines
//! through a bounded channel (back-pressure when the disk falls behind)
//! and it appends each group with one `write`.
//!
//! Grouping, decided here: a batch upsert hands over its rows' lines as one
//! message (its `start`s before the request, its `done`s once acknowledged).
//! Single writes are not held back on a timer; instead every message queued
//! while the thread was busy goes out with the next `write` (group commit),
//! so under load the rows acknowledged together are written together, and
//! a lone row is written at once.
//!
//! `start` lines are awaited, and their answer is the write's `Result`: a
//! request is sent only with the [`Started`](super::Started) that a written
//! `start` gives, so a `kill -9` of listpipe can never leave a sent row
//! without a trace, and a line the disk refused sends nothing. After a
//! failed write nothing more is written (the file may end in part of a
//! line): every later line is answered with the first failure. `done`
//! lines are not awaited: a `done` lost to a kill leaves a `start`, and a
//! resumed run checks that row against the target (never writes it twice).
//! Every [`SYNC_EVERY`](super::SYNC_EVERY) `done` lines, and when asked
//! ([`Writer::sync`]), the file is fsync'd.

use super::super::Stop;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Messages waiting for the thread, at most; a worker waits for room.
const QUEUED: usize = 64;

/// Where a journal's lines go: a file, or in tests a device that fails.
pub(super) trait Device: Write + Send + 'static {
    /// Makes what was written durable (`fsync`).
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Device for std::fs::File {
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_data()
    }
}

/// The answer to a message: written (and synced when asked), or the
/// message of the write that failed.
type Ack = oneshot::Sender<Result<(), String>>;

enum Msg {
    /// Lines to append (`done` of them are confirmations); `ack` is
    /// answered once they reached the operating system (or failed).
    Lines {
        bytes: Vec<u8>,
        done: u64,
        ack: Option<Ack>,
    },
    /// Make everything before it durable, then answer.
    Sync(Ack),
}

/// The message of a writer thread that is gone.
const STOPPED: &str = "the journal's writer has stopped";

/// The first failed write (the step ends with it) and the run's stop.
pub(super) struct Failure {
    failed: Mutex<Option<std::io::Error>>,
    stop: Stop,
}

impl Failure {
    pub(super) fn new(stop: Stop) -> Failure {
        Failure {
            failed: Mutex::new(None),
            stop,
        }
    }

    /// Keeps the first failure and stops the run taking rows: rows already
    /// sent finish, the target holds what it confirmed, and `--resume`
    /// checks every row against it.
    pub(super) fn fail(&self, e: std::io::Error) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_none() {
            *failed = Some(e);
        }
        self.stop.set();
    }

    /// The first failure's message, if any.
    pub(super) fn message(&self) -> Option<String> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.as_ref().map(ToString::to_string)
    }
}

/// The handle the workers share; dropping it drains the queue and ends
/// the thread.
pub(super) struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    failure: Arc<Failure>,
}

impl Writer {
    /// Starts the thread that appends to `file`.
    pub(super) fn start(file: impl Device, failure: Arc<Failure>) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel(QUEUED);
        let f = failure.clone();
        let thread = std::thread::Builder::new()
            .name("listpipe-journal".into())
            .spawn(move || run(file, rx, &f))?;
        Ok(Writer {
            tx: Some(tx),
            thread: Some(thread),
            failure,
        })
    }

    pub(super) fn failure(&self) -> &Failure {
        &self.failure
    }

    /// Hands `msg` to the thread; `Err` when the thread is gone (the run's
    /// failure is set).
    async fn send(&self, msg: Msg) -> Result<(), String> {
        let sent = match &self.tx {
            Some(tx) => tx.send(msg).await.is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            self.failure.fail(std::io::Error::other(STOPPED));
            Err(STOPPED.to_string())
        }
    }

    /// The thread's answer to a message, or the failure of a thread gone.
    async fn answer(&self, rx: oneshot::Receiver<Result<(), String>>) -> Result<(), String> {
        rx.await.unwrap_or_else(|_| {
            self.failure.fail(std::io::Error::other(STOPPED));
            Err(STOPPED.to_string())
        })
    }

    /// Appends `bytes` (whole lines, `done` of them confirmations) and
    /// returns once they are with the operating system: `Err` with the
    /// failure's message when they are not (and never will be).
    pub(super) async fn written(&self, bytes: Vec<u8>, done: u64) -> Result<(), String> {
        if bytes.is_empty() {
            return self.failure.message().map_or(Ok(()), Err);
        }
        let (tx, rx) = oneshot::channel();
        self.send(Msg::Lines {
            bytes,
            done,
            ack: Some(tx),
        })
        .await?;
        self.answer(rx).await
    }

    /// Appends `bytes` without waiting for the write (a failure is kept
    /// and stops the run); waits only for room in the queue.
    pub(super) async fn append(&self, bytes: Vec<u8>, done: u64) {
        if bytes.is_empty() {
            return;
        }
        // A failure is the run's (kept in `failure`): nothing waits on it here.
        let _ = self
            .send(Msg::Lines {
                bytes,
                done,
                ack: None,
            })
            .await;
    }

    /// Returns once everything appended before is durable; a failure is
    /// kept in [`Writer::failure`].
    pub(super) async fn sync(&self) {
        let (tx, rx) = oneshot::channel();
        if self.send(Msg::Sync(tx)).await.is_ok() {
            // The failure, if any, is kept in `failure` by the thread.
            let _ = self.answer(rx).await;
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel lets the thread write what is queued and end.
        drop(self.tx.take());
        let Some(t) = self.thread.take() else {
            return;
        };
        // Joined off the async threads (the queue may hold an fsync): a
        // runtime waits for its blocking tasks when it shuts down, so the
        // lines still reach the file before the process ends.
        let join = move || {
            if t.join().is_err() {
                tracing::error!(target: log_target!(), "the journal's writer thread panicked");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(join)),
            Err(_) => join(),
        }
    }
}

/// The thread: takes the first waiting message, then everything else
/// already queued, and appends them with one write.
fn run(mut file: impl Device, mut rx: mpsc::Receiver<Msg>, failure: &Failure) {
    let mut confirmations = 0u64;
    let mut bytes = Vec::new();
    let mut acks = Vec::new();
    // The first failure: nothing is written after it.
    let mut broken: Option<String> = None;
    while let Some(first) = rx.blocking_recv() {
        let mut sync = false;
        let before = confirmations;
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Lines {
                    bytes: lines,
                    done,
                    ack,
                } => {
                    bytes.extend_from_slice(&lines);
                    confirmations += done;
                    acks.extend(ack);
                }
                Msg::Sync(ack) => {
                    sync = true;
                    acks.push(ack);
                }
            }
            next = rx.try_recv().ok();
        }
        if broken.is_none() {
            let mut written = if bytes.is_empty() {
                Ok(())
            } else {
                file.write_all(&bytes)
            };
            let due = before / super::SYNC_EVERY != confirmations / super::SYNC_EVERY;
            if written.is_ok() && (sync || due) {
                written = file.sync();
            }
            if let Err(e) = written {
                broken = Some(e.to_string());
                failure.fail(e);
            }
        }
        bytes.clear();
        let answer = broken.clone().map_or(Ok(()), Err);
        for ack in acks.drain(..) {
            // A worker that gave up waiting needs no answer.
            let _ = ack.send(answer.clone());
        }
    }
}
