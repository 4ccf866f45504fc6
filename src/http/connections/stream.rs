//! The client's socket as hyper (and, after an upgrade, the WebSocket) sees it: it reports its
//! reads and writes to the connection's [`Activity`], holds the connection's place under the
//! caps for as long as it is open, and caps the kernel's send buffer once it is a WebSocket.
//!
//! **Why the cap.** Linux grows a socket's send buffer by itself (up to `net.ipv4.tcp_wmem`'s
//! last value, 4 MiB by default), which suits a large HTTP response. A WebSocket whose client
//! stops reading keeps taking our writes until that buffer is full, and only then does the
//! send deadline (`--websocket-send-timeout-ms`) start to run: up to 4 MiB of kernel memory a
//! socket, and seconds of writes (copies and system calls) to a client that will never read
//! them. With the buffer capped at `--websocket-send-buffer-bytes` (Linux doubles the figure
//! for its bookkeeping, and lets one write that starts below it run over by up to a packet), a
//! silent client is found out after about that many bytes, and holds no more of them in the
//! kernel. Beside two hundred hostile sockets (a third of them silent, a third slow
//! readers) the p99 of normal writes was 2.3 to 4.1 times its quiet figure; with the cap, 1.3
//! to 1.6 times (BENCHMARKS.md, "Soak beside hostile sockets").

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::caps::Admission;
use super::watch::Activity;

/// An accepted socket, watched (the module's comment).
#[derive(Debug)]
pub(super) struct WatchedStream {
    stream: TcpStream,
    activity: Arc<Activity>,
    _admission: Admission,
    /// The send buffer to set when the connection turns into a WebSocket; 0 once set, or when
    /// the kernel's own sizing is kept.
    websocket_send_buffer: usize,
}

impl WatchedStream {
    pub(super) fn new(
        stream: TcpStream,
        activity: Arc<Activity>,
        admission: Admission,
        websocket_send_buffer: usize,
    ) -> Self {
        Self {
            stream,
            activity,
            _admission: admission,
            websocket_send_buffer,
        }
    }

    /// Before a write: caps the send buffer once the service has answered an upgrade (the
    /// `101` itself is the first write after it).
    fn cap_if_upgraded(&mut self) {
        if self.websocket_send_buffer > 0 && self.activity.is_upgraded() {
            let bytes = std::mem::take(&mut self.websocket_send_buffer);
            if let Err(error) =
                rustix::net::sockopt::set_socket_send_buffer_size(&self.stream, bytes)
            {
                tracing::debug!(%error, "the WebSocket's send buffer keeps the kernel's size");
            }
        }
    }

    /// A write's outcome, reported to the activity when it wrote something.
    fn reported(&self, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        polled
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.read();
        }
        polled
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.cap_if_upgraded();
        let polled = Pin::new(&mut this.stream).poll_write(cx, data);
        this.reported(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.cap_if_upgraded();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, data);
        this.reported(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
