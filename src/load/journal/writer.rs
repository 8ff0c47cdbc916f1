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
//! `start` lines are awaited: a request is sent only once its `start` is
//! with the operating system, as when the lines were written in place, so a
//! `kill -9` of listpipe can never leave a sent row without a trace. `done`
//! lines are not awaited: a `done` lost to a kill leaves a `start`, and a
//! resumed run checks that row against the target (never writes it twice).
//! Every [`SYNC_EVERY`](super::SYNC_EVERY) `done` lines, and when asked
//! ([`Writer::sync`]), the file is fsync'd.

use super::super::Stop;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Messages waiting for the thread, at most; a worker waits for room.
const QUEUED: usize = 64;

enum Msg {
    /// Lines to append (`done` of them are confirmations); `ack` is
    /// answered once they reached the operating system (or failed).
    Lines {
        bytes: Vec<u8>,
        done: u64,
        ack: Option<oneshot::Sender<()>>,
    },
    /// Make everything before it durable, then answer.
    Sync(oneshot::Sender<()>),
}

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
    pub(super) fn start(file: File, failure: Arc<Failure>) -> std::io::Result<Writer> {
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

    async fn send(&self, msg: Msg) {
        let sent = match &self.tx {
            Some(tx) => tx.send(msg).await.is_ok(),
            None => false,
        };
        if !sent {
            self.failure
                .fail(std::io::Error::other("the journal's writer has stopped"));
        }
    }

    /// Appends `bytes` (whole lines, `done` of them confirmations); with
    /// `wait`, returns once they are with the operating system.
    pub(super) async fn append(&self, bytes: Vec<u8>, done: u64, wait: bool) {
        if bytes.is_empty() {
            return;
        }
        let (ack, answered) = if wait {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        self.send(Msg::Lines { bytes, done, ack }).await;
        if let Some(rx) = answered
            && rx.await.is_err()
        {
            self.failure
                .fail(std::io::Error::other("the journal's writer has stopped"));
        }
    }

    /// Returns once everything appended before is durable.
    pub(super) async fn sync(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Msg::Sync(tx)).await;
        if rx.await.is_err() {
            self.failure
                .fail(std::io::Error::other("the journal's writer has stopped"));
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel lets the thread write what is queued and end.
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: takes the first waiting message, then everything else
/// already queued, and appends them with one write.
fn run(mut file: File, mut rx: mpsc::Receiver<Msg>, failure: &Failure) {
    let mut confirmations = 0u64;
    let mut bytes = Vec::new();
    let mut acks = Vec::new();
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
        let mut written = if bytes.is_empty() {
            Ok(())
        } else {
            file.write_all(&bytes)
        };
        let due = before / super::SYNC_EVERY != confirmations / super::SYNC_EVERY;
        if written.is_ok() && (sync || due) {
            written = file.sync_data();
        }
        if let Err(e) = written {
            failure.fail(e);
        }
        bytes.clear();
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
    }
}
