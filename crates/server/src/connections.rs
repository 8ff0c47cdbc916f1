//! The server's accept loop and its connection limits (issue 43): what
//! keeps idle and half-sent connections from taking the server down.
//!
//! - A connection that sent the first byte of a request has
//!   `--header-timeout-secs` to finish its request line and headers.
//! - A connection with no request under way is closed after
//!   `--idle-timeout-secs` (keep-alive, and a connection that never sends).
//! - At most `--max-connections` are open, and never more than the
//!   open-file limit less [`RESERVED_FILES`]. A new connection past the cap
//!   closes the connection idle the longest (as nginx reuses its keep-alive
//!   connections when out of them); only when every connection is handling
//!   a request is the new one answered 503 with `Retry-After` and closed.
//! - A request's line and headers together are at most
//!   `--max-header-bytes` (64 KiB): hyper's read buffer is capped there
//!   (`max_buf_size`; hyper 1.12 answers a head that outgrows it, or has
//!   more than 100 fields, with 431 Request Header Fields Too Large, an
//!   empty body and a close), so a connection holding an unfinished head
//!   holds at most that much of it (the buffer grows by doubling from
//!   8 KiB up to the cap, never past it), about 72 KiB in all with the
//!   connection's own state. Measured (issue 56): 1,000 connections each
//!   holding 60 KiB of a head raised the server's memory by 72 MB; 1,000
//!   each sending 400 KB of one, refused, by 12 MB at the peak (400 MB
//!   before). HTTP/2 gets the same cap as its `max_header_list_size`.
//!
//! A connection handling a request (from its complete headers until its
//! response is sent) is not closed by these limits: `--body-timeout-secs`
//! and `--request-timeout` bound it instead ([`super::overload`]; a body
//! too slow is answered 408 and the connection closed). Except when its
//! client stops taking the answer: a socket that takes nothing of it for
//! `--idle-timeout-secs` is closed (a slow reader holds no connection for
//! long either).
//!
//! Decision: our own timers rather than hyper's `header_read_timeout`,
//! which in hyper 1.12 also runs while a keep-alive connection waits for
//! its next request, so it cannot tell "idle" from "slow headers"; and our
//! own accept loop rather than `axum::serve`, which has neither limit and
//! sleeps a second after each failed accept once files run out.

mod io;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use hyper_util::rt::{TokioExecutor, TokioIo};
use io::{Guarded, Watched};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use tower::ServiceExt;

/// Seconds from a request's first byte to its last header unless
/// `serve --header-timeout-secs` says otherwise.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
/// Seconds a connection may wait without a request unless
/// `serve --idle-timeout-secs` says otherwise. Longer than listpipe's
/// client keeps an idle connection (60 s): the client closes first, so it
/// never sends a request into a connection the server is closing.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 75;
/// Connections open at once unless `serve --max-connections` says otherwise
/// (and never more than the open-file limit allows).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Bytes of a request line and headers together unless
/// `serve --max-header-bytes` says otherwise (nginx allows 4 × 8 KiB by
/// default; hyper's own cap is about 400 KB).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;
/// The smallest header cap hyper takes (its first read buffer).
pub const MIN_MAX_HEADER_BYTES: usize = 8 * 1024;
/// Open files kept back from connections for the database, its journal,
/// logs and whatever else the process opens.
pub const RESERVED_FILES: u64 = 128;

/// The connection limits of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// The request line and headers together, in bytes (at least
    /// [`MIN_MAX_HEADER_BYTES`]); more is answered 431.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
        }
    }
}

/// The open-file limit of this process, after [`raise_open_file_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit found at start.
    pub was: u64,
    /// The soft limit now (the hard limit, when raising it worked).
    pub soft: u64,
}

impl OpenFiles {
    /// The connections this limit leaves room for: `wanted`, or fewer when
    /// the open-file limit less [`RESERVED_FILES`] is lower (at least 1).
    pub fn cap(&self, wanted: usize) -> usize {
        let room = self.soft.saturating_sub(RESERVED_FILES).max(1);
        wanted
            .max(1)
            .min(usize::try_from(room).unwrap_or(usize::MAX))
    }
}

/// Raises the soft limit of open files to the hard limit: the soft limit
/// (often 1,024) is a default for interactive programs, the hard limit what
/// the administrator allows. `None` where the limits cannot be read.
// `rlim_t` is not `u64` on every platform.
#[allow(clippy::unnecessary_cast)]
pub fn raise_open_file_limit() -> Option<OpenFiles> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let was = lim.rlim_cur as u64;
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given. It fails (and the
        // soft limit stays) where the hard limit is "unlimited" above what
        // the kernel allows; that is not an error worth stopping for.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(OpenFiles {
                was,
                soft: lim.rlim_max as u64,
            });
        }
    }
    Some(OpenFiles { was, soft: was })
}

/// What one connection is doing, shared by its task, its requests and its
/// socket. Times are milliseconds since the server's epoch, 0 for "none".
struct Conn {
    /// Requests being handled (responses not yet sent).
    busy: AtomicUsize,
    /// When the connection last had no request under way.
    idle_since: AtomicU64,
    /// When the first byte of the next request came (0: none yet).
    started: AtomicU64,
    /// Since when the socket takes nothing of what is written to it (0:
    /// it takes it): a client that stopped reading its answer.
    write_blocked: AtomicU64,
    /// Asked to close to make room for a new connection.
    evicted: AtomicBool,
    /// Wakes the connection's task to look at the above again.
    wake: Notify,
}

/// The server's clock for [`Conn`]: milliseconds since `epoch`, from 1.
#[derive(Clone, Copy)]
struct Clock(Instant);

impl Clock {
    fn now(&self) -> u64 {
        self.0.elapsed().as_millis() as u64 + 1
    }
    fn at(&self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms.saturating_sub(1))
    }
}

impl Conn {
    fn new(now: u64) -> Conn {
        Conn {
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(now),
            started: AtomicU64::new(0),
            write_blocked: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    fn is_idle(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
    }

    /// When this connection is to be closed if nothing happens; `None`
    /// while it handles a request whose client takes what it is sent.
    fn deadline(&self, limits: &Limits) -> Option<u64> {
        if !self.is_idle() {
            return match self.write_blocked.load(Ordering::SeqCst) {
                0 => None,
                t => Some(t + limits.idle_timeout.as_millis() as u64),
            };
        }
        let idle = self.idle_since.load(Ordering::SeqCst) + limits.idle_timeout.as_millis() as u64;
        match self.started.load(Ordering::SeqCst) {
            0 => Some(idle),
            t => Some(idle.min(t + limits.header_timeout.as_millis() as u64)),
        }
    }
}

/// Held while a request is handled, until its response body is dropped.
struct Busy {
    conn: Arc<Conn>,
    clock: Clock,
}

impl Busy {
    fn enter(conn: Arc<Conn>, clock: Clock) -> Busy {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        conn.started.store(0, Ordering::SeqCst);
        Busy { conn, clock }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.conn.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.conn.started.store(0, Ordering::SeqCst);
            self.conn
                .idle_since
                .store(self.clock.now(), Ordering::SeqCst);
            self.conn.wake.notify_one();
        }
    }
}

/// The open connections, to count them and to pick one to close.
#[derive(Default)]
struct Registry {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Registry {
    fn add(&self, conn: Arc<Conn>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, conn);
        id
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open connections not already asked to close.
    fn open(&self) -> usize {
        self.lock()
            .values()
            .filter(|c| !c.evicted.load(Ordering::SeqCst))
            .count()
    }

    /// Asks the connection idle the longest to close; false when every
    /// connection is handling a request.
    fn evict_oldest_idle(&self) -> bool {
        let conns = self.lock();
        let oldest = conns
            .values()
            .filter(|c| c.is_idle() && !c.evicted.load(Ordering::SeqCst))
            .min_by_key(|c| c.idle_since.load(Ordering::SeqCst));
        match oldest {
            Some(c) => {
                c.evicted.store(true, Ordering::SeqCst);
                c.wake.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's place in the [`Registry`], given back when dropped.
struct Registered {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

/// The answer to a connection past the cap when none can be closed for it:
/// the API's error body, written before the request is read.
fn refused() -> String {
    let body = r#"{"error":{"code":503,"message":"Service Unavailable: too many connections; retry after 1 s"}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Serves `service` on `listener` within `limits` until `shutdown` fires,
/// then lets the requests in flight finish.
pub async fn serve<S>(
    listener: TcpListener,
    service: S,
    limits: Limits,
    cap: usize,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let clock = Clock(Instant::now());
    let registry = Arc::new(Registry::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of files despite the cap (the database, a burst of
                // refusals): make room and try again shortly, never a
                // second's pause for everyone.
                tracing::warn!(target: log_target!(), error = %e, "accepting a connection failed");
                registry.evict_oldest_idle();
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if registry.open() >= cap && !registry.evict_oldest_idle() {
            // Not a warning each: under a flood the log would be the next victim.
            tracing::debug!(target: log_target!(), %peer, cap, "connection refused: every connection is handling a request");
            tokio::spawn(refuse(stream));
            continue;
        }
        tracing::trace!(target: log_target!(), %peer, "connection accepted");
        let _ = stream.set_nodelay(true);
        let conn = Arc::new(Conn::new(clock.now()));
        let id = registry.add(conn.clone());
        let task = ConnTask {
            conn,
            clock,
            limits,
            peer,
        };
        let (registry, stop, done, service) = (
            registry.clone(),
            stop_rx.clone(),
            done_tx.clone(),
            service.clone(),
        );
        tokio::spawn(async move {
            // Removed however the task ends, a panic included.
            let _registered = Registered { registry, id };
            task.run(stream, service, stop).await;
            drop(done);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_tx);
    let _ = done_rx.recv().await;
    Ok(())
}

/// Answers 503 and closes, within a second.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(refused().as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

struct ConnTask {
    conn: Arc<Conn>,
    clock: Clock,
    limits: Limits,
    peer: SocketAddr,
}

impl ConnTask {
    async fn run<S>(self, stream: TcpStream, service: S, mut stop: watch::Receiver<bool>)
    where
        S: tower::Service<Request, Response = Response, Error = Infallible>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        let ConnTask {
            conn,
            clock,
            limits,
            peer,
        } = self;
        let io = TokioIo::new(Watched {
            io: stream,
            conn: conn.clone(),
            clock,
        });
        let for_requests = conn.clone();
        let hyper_service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let busy = Busy::enter(for_requests.clone(), clock);
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(ConnectInfo(peer));
                let service = service.clone();
                async move {
                    let res = service.oneshot(req).await?;
                    Ok::<_, Infallible>(res.map(|inner| Body::new(Guarded { inner, _busy: busy })))
                }
            });
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        // hyper panics below its minimum.
        let max_head = limits.max_header_bytes.max(MIN_MAX_HEADER_BYTES);
        builder.http1().max_buf_size(max_head);
        builder
            .http2()
            .max_header_list_size(u32::try_from(max_head).unwrap_or(u32::MAX));
        let served = builder.serve_connection(io, hyper_service);
        tokio::pin!(served);
        let mut draining = false;
        loop {
            let deadline = conn.deadline(&limits);
            let until = match deadline {
                Some(ms) => clock.at(ms),
                None => Instant::now() + limits.idle_timeout,
            };
            tokio::select! {
                _ = served.as_mut() => return,
                _ = conn.wake.notified() => {
                    if conn.evicted.load(Ordering::SeqCst) && conn.is_idle() {
                        tracing::debug!(target: log_target!(), %peer, "connection closed to make room for a new one");
                        return;
                    }
                }
                _ = tokio::time::sleep_until(until) => {
                    if conn.deadline(&limits).is_some_and(|d| d <= clock.now()) {
                        tracing::debug!(target: log_target!(), %peer, "connection closed: no complete request in time");
                        return;
                    }
                }
                _ = stop.changed(), if !draining => {
                    draining = true;
                    if conn.is_idle() {
                        return;
                    }
                    served.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_the_database_below_the_open_file_limit() {
        let files = OpenFiles {
            was: 1024,
            soft: 1024,
        };
        assert_eq!(files.cap(4096), 896);
        assert_eq!(files.cap(100), 100);
        let tiny = OpenFiles { was: 64, soft: 64 };
        assert_eq!(tiny.cap(4096), 1);
    }

    #[test]
    fn a_connection_is_due_after_the_idle_timeout_idle_or_unread_and_after_the_header_timeout_once_started()
     {
        let limits = Limits {
            header_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(1000),
            max_connections: 10,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
        };
        let conn = Conn::new(5);
        assert_eq!(conn.deadline(&limits), Some(1005));
        conn.started.store(50, Ordering::SeqCst);
        assert_eq!(conn.deadline(&limits), Some(150));
        conn.busy.store(1, Ordering::SeqCst);
        assert_eq!(conn.deadline(&limits), None);
        conn.write_blocked.store(400, Ordering::SeqCst);
        assert_eq!(conn.deadline(&limits), Some(1400));
    }
}
