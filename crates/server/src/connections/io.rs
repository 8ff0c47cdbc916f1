//! What wraps a connection's I/O: the response body that keeps it busy
//! and the socket that notes when a request starts and when writes block.

use super::{Busy, Clock, Conn};
use axum::body::{Body, Bytes, HttpBody};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
/// A response body that keeps its connection busy until it is sent.
pub(super) struct Guarded {
    pub(super) inner: Body,
    pub(super) _busy: Busy,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The socket, noting when the first byte of a request arrives.
pub(super) struct Watched {
    pub(super) io: TcpStream,
    pub(super) conn: Arc<Conn>,
    pub(super) clock: Clock,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let conn = &self.conn;
            if conn.is_idle() && conn.started.load(Ordering::SeqCst) == 0 {
                conn.started.store(self.clock.now(), Ordering::SeqCst);
                conn.wake.notify_one();
            }
        }
        polled
    }
}

impl Watched {
    /// Notes whether the socket took what was written (see `Conn::write_blocked`).
    fn wrote<T>(&self, polled: Poll<T>) -> Poll<T> {
        let blocked = &self.conn.write_blocked;
        if polled.is_pending() {
            if blocked.load(Ordering::SeqCst) == 0 {
                blocked.store(self.clock.now(), Ordering::SeqCst);
                self.conn.wake.notify_one();
            }
        } else {
            blocked.store(0, Ordering::SeqCst);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(polled)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(polled)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
