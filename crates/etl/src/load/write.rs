//! One receiver write, safe to repeat, and the look at the target that a
//! resumed run takes for a row an earlier run left in flight. A write is
//! sent only with the journal's [`Started`] for its rows.

use super::journal::Started;
use super::{Action, retry};
use crate::transport::target::Connected;
use listpipe_api::{Id, Receiver, ReceiverInput, detail};
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// Why a write failed, and whether trying again later may succeed (the
/// target unreachable or overloaded through every retry).
pub(super) struct WriteError {
    pub reason: String,
    pub transient: bool,
}

/// Sends one receiver. Every write is safe to repeat: an update is a PUT of
/// the row's values (orders are keyed by order and product id), and a create
/// that meets an existing address (another writer, or a retried create whose
/// first attempt committed before the connection dropped) becomes an update
/// carrying the same full body, so nothing of the row is lost. A create
/// that met a 409 only after one of its own attempts failed in transit is
/// still reported as a create: that attempt made the receiver.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write(
    _started: &Started,
    conn: &Connected,
    g: Id,
    email: &str,
    action: Action,
    body: &ReceiverInput,
    retries: u32,
    counted: Counted<'_>,
) -> Result<Action, WriteError> {
    let c = &conn.client;
    let fail = |e: listpipe_client::ClientError| WriteError {
        transient: e.is_transient(),
        reason: e.server_message(),
    };
    let mut done = Action::Update;
    if action == Action::Create {
        let own = AtomicU64::new(0);
        let created = retry::retrying(conn, retries, &own, || {
            counted.send(c.create_receiver_unread(g, body))
        })
        .await;
        let own_retries = own.load(Ordering::Relaxed);
        counted.retried.fetch_add(own_retries, Ordering::Relaxed);
        match created {
            Ok(_) => return Ok(Action::Create),
            Err(e) if e.status() == Some(409) => {
                if own_retries > 0 {
                    done = Action::Create;
                }
            }
            Err(e) => return Err(fail(e)),
        }
    }
    retry::retrying(conn, retries, counted.retried, || {
        counted.send(c.update_receiver_unread(g, email, body))
    })
    .await
    .map(|_| done)
    .map_err(fail)
}

/// Where a write counts its retries and the requests it sent, and says
/// whether one of its requests is on the wire now.
#[derive(Clone, Copy)]
pub(super) struct Counted<'a> {
    pub retried: &'a AtomicU64,
    pub requests: &'a AtomicU64,
    /// Requests answered 429 Too Many Requests.
    pub refused: &'a AtomicU64,
    pub wire: &'a Wire,
}

impl Counted<'_> {
    /// Sends one of the write's requests: counted, its time on the wire
    /// told, a 429 answer counted as refused.
    async fn send<T>(
        self,
        request: impl Future<Output = Result<T, listpipe_client::ClientError>>,
    ) -> Result<T, listpipe_client::ClientError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let answer = on_wire(self.wire, request).await;
        if answer.as_ref().err().and_then(|e| e.status()) == Some(429) {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        answer
    }
}

/// Where a write's requests are: none sent yet, one on the wire, or
/// answered. A stop gives a write up at once unless a request is on the
/// wire (rows.rs), and a write none of whose requests went is journalled
/// as never sent.
#[derive(Default)]
pub(super) struct Wire(AtomicU8);

impl Wire {
    const ON: u8 = 1;
    const ANSWERED: u8 = 2;

    /// A request of the write is on the wire now.
    pub(super) fn on(&self) -> bool {
        self.0.load(Ordering::SeqCst) == Self::ON
    }

    /// A request of the write was sent (the target may hold it).
    pub(super) fn went(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }
}

/// `request`, its time on the wire told to `wire`.
async fn on_wire<T>(wire: &Wire, request: impl Future<Output = T>) -> T {
    wire.0.store(Wire::ON, Ordering::SeqCst);
    let answer = request.await;
    wire.0.store(Wire::ANSWERED, Ordering::SeqCst);
    answer
}

/// What one item of a batch upsert did.
pub(super) enum ItemStatus {
    /// Written; `inserted` when the target created the receiver, `repeated`
    /// when the batch was sent more than once (a lost answer).
    Done { inserted: bool, repeated: bool },
    /// The target refused this item, with its message.
    Refused(String),
}

/// Why a whole batch was not written.
pub(super) enum BatchError {
    /// The target has no batch upsert (404, 405, 501): write one by one.
    NoExtension,
    /// 413: the batch is too large for the target; send it in halves.
    TooLarge,
    Failed(WriteError),
}

/// Upserts `bodies` into group `g` in one request (the live service's
/// extension, wire.md). Safe to repeat like a single write: an upsert of
/// the same values leaves the same receiver, orders are keyed by order and
/// product id, tags are only added.
pub(super) async fn upsert(
    _started: &Started,
    conn: &Connected,
    g: Id,
    bodies: &[&ReceiverInput],
    retries: u32,
    counted: Counted<'_>,
) -> Result<Vec<ItemStatus>, BatchError> {
    let own = AtomicU64::new(0);
    let answer = retry::retrying(conn, retries, &own, || {
        counted.send(conn.client.upsert_receivers(g, bodies))
    })
    .await;
    let repeated = own.load(Ordering::Relaxed) > 0;
    counted
        .retried
        .fetch_add(own.load(Ordering::Relaxed), Ordering::Relaxed);
    match answer {
        Ok(statuses) if statuses.len() == bodies.len() => Ok(statuses
            .into_iter()
            .map(|s| match s.error() {
                None => ItemStatus::Done {
                    inserted: s.is_inserted(),
                    repeated,
                },
                Some(e) => ItemStatus::Refused(e.to_string()),
            })
            .collect()),
        Ok(statuses) => Err(BatchError::Failed(WriteError {
            reason: format!(
                "the target answered {} statuses for a batch of {}",
                statuses.len(),
                bodies.len()
            ),
            transient: true,
        })),
        Err(e) if matches!(e.status(), Some(404 | 405 | 501)) => Err(BatchError::NoExtension),
        Err(e) if e.status() == Some(413) => Err(BatchError::TooLarge),
        Err(e) => Err(BatchError::Failed(WriteError {
            transient: e.is_transient(),
            reason: e.server_message(),
        })),
    }
}

/// The receiver `email` of group `g` as the target holds it now (`None`
/// when it has none), for a row an earlier run sent without confirmation.
pub(super) async fn fetch(
    conn: &Connected,
    g: Id,
    email: &str,
    retries: u32,
    retried: &AtomicU64,
    wire: &Wire,
) -> Result<Option<Receiver>, WriteError> {
    let c = &conn.client;
    match retry::retrying(conn, retries, retried, || {
        on_wire(wire, c.group_receiver(g, email, detail::ALL))
    })
    .await
    {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.status() == Some(404) => Ok(None),
        Err(e) => Err(WriteError {
            transient: e.is_transient(),
            reason: e.server_message(),
        }),
    }
}
