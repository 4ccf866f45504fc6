//! The server's sockets: accepting them under the connection caps, serving HTTP/1.1 on each
//! (with WebSocket upgrades), and closing those that wait too long (issue 22, item 7).
//!
//! `axum::serve` has no timeouts and no caps: a socket that sends nothing, or stalls in its
//! headers or its body, stayed open for as long as its client liked, and sixty of them took a
//! process with 64 file descriptors off the network (`accept` failing with "too many open
//! files", `/healthz` included). So the accept loop is ours:
//!
//! * the soft file-descriptor limit is raised to the hard one, and `--max-connections` kept
//!   under it ([`fd_limit`]);
//! * each socket is admitted under a global and a per-address cap ([`caps`]) or closed at once;
//! * hyper serves it, and a watchdog closes it when a phase lasts too long: header, body, idle
//!   ([`watch`]; hyper's own header timeout also runs between keep-alive requests, so it is
//!   turned off);
//! * on shutdown, idle connections close and in-flight requests finish (the caller bounds it).
//!
//! Handlers see each connection's peer address as `ConnectInfo`, as with `axum::serve`.

mod bodies;
mod caps;
mod fd_limit;
mod stream;
mod watch;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

pub use self::bodies::BodyTimeout;
use self::bodies::{DeadlineBody, TrackedBody};
use self::caps::{Admission, ConnectionCaps};
use self::stream::WatchedStream;
use self::watch::Activity;
pub use self::watch::Timeouts;
use super::TrustedProxies;
use crate::telemetry::metric;

/// How long a connection may wait in each phase, and how many may be open.
#[derive(Clone, Debug)]
pub struct ConnectionOptions {
    /// How long a connection may wait in each phase.
    pub timeouts: Timeouts,
    /// Connections open at once, in all (kept under the file-descriptor limit).
    pub max_connections: usize,
    /// Connections open at once from one address; `trusted` peers are exempt.
    pub max_connections_per_address: usize,
    /// The longest request head hyper reads (its read buffer's bound, at least 8 KiB);
    /// beyond it hyper answers 431 and closes the connection.
    pub max_head_bytes: usize,
    /// Proxies (the load balancer) whose connections count only against the global cap.
    pub trusted: TrustedProxies,
    /// The kernel's send buffer of a connection once it is a WebSocket, in bytes (`stream`'s
    /// comment says why); 0 keeps the kernel's own sizing.
    pub websocket_send_buffer: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            timeouts: Timeouts {
                header: Duration::from_secs(10),
                body: Duration::from_secs(30),
                idle: Duration::from_secs(75),
            },
            max_connections: 10_000,
            max_connections_per_address: 256,
            max_head_bytes: 32 * 1024,
            trusted: TrustedProxies::default(),
            websocket_send_buffer: 32 * 1024,
        }
    }
}

/// After `accept` fails for want of file descriptors, how long the loop waits before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` until `shutdown` completes; then stops accepting, lets
/// in-flight requests finish and returns when every HTTP connection has closed.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    options: ConnectionOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limit = fd_limit::raise();
    let max = fd_limit::connections_under(limit, options.max_connections);
    if max < options.max_connections {
        tracing::warn!(
            max_connections = options.max_connections,
            file_descriptors = limit,
            capped_at = max,
            "--max-connections / DYNAPAGE_MAX_CONNECTIONS is above what the file-descriptor limit allows; raise `ulimit -n`"
        );
    }
    let caps = ConnectionCaps::new(max, options.max_connections_per_address, options.trusted);
    let stopping = CancellationToken::new();
    // Every connection task holds a sender; when the last is dropped, all have ended.
    let (open, mut all_closed) = tokio::sync::mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    let mut last_warned: Option<std::time::Instant> = None;
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error, &mut last_warned).await;
                    continue;
                }
            },
        };
        let admission = match caps.admit(peer.ip()) {
            Ok(admission) => admission,
            Err(refusal) => {
                metric::HTTP_CONNECTIONS_REFUSED
                    .counter(&[("reason", refusal.as_str())])
                    .increment(1);
                tracing::debug!(%peer, reason = refusal.as_str(), "connection refused");
                continue;
            }
        };
        let (router, stopping, open) = (router.clone(), stopping.clone(), open.clone());
        let limits = Limits {
            timeouts: options.timeouts,
            websocket_send_buffer: options.websocket_send_buffer,
            max_head_bytes: options.max_head_bytes,
        };
        tokio::spawn(async move {
            connection(stream, peer, admission, limits, router, stopping).await;
            drop(open);
        });
    }
    drop(listener);
    stopping.cancel();
    drop(open);
    let _ = all_closed.recv().await;
    Ok(())
}

/// A failed `accept`: out of file descriptors (wait a moment: the cap normally prevents it),
/// or a connection that went away before it was accepted. Logged at most once a second: a
/// flood must not turn into a flood of log lines.
async fn accept_failed(error: &std::io::Error, last_warned: &mut Option<std::time::Instant>) {
    metric::HTTP_ACCEPT_ERRORS.counter(&[]).increment(1);
    if last_warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
        *last_warned = Some(std::time::Instant::now());
        tracing::warn!(%error, "accept failed");
    }
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// What each connection is held to ([`ConnectionOptions`]' share of it).
#[derive(Clone, Copy, Debug)]
struct Limits {
    timeouts: Timeouts,
    websocket_send_buffer: usize,
    max_head_bytes: usize,
}

/// Serves one connection until it ends, overstays a phase, or the server shuts down; its
/// send buffer becomes `limits.websocket_send_buffer` if it turns into a WebSocket (`stream`).
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    admission: Admission,
    limits: Limits,
    router: Router,
    stopping: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let timeouts = limits.timeouts;
    let activity = Arc::new(Activity::new());
    let send_buffer = limits.websocket_send_buffer;
    let stream = WatchedStream::new(stream, activity.clone(), admission, send_buffer);
    let io = TokioIo::new(stream);
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let (router, activity) = (router.clone(), activity.clone());
            async move {
                let has_body = !hyper::body::Body::is_end_stream(request.body());
                let started = activity.request_started(has_body, timeouts.body);
                let mut request = request
                    .map(|body| DeadlineBody::new(body, started, timeouts.body, activity.clone()));
                request.extensions_mut().insert(ConnectInfo(peer));
                let response = router.oneshot(request).await?;
                if response.status() == hyper::StatusCode::SWITCHING_PROTOCOLS {
                    activity.upgrading();
                }
                Ok::<_, Infallible>(response.map(|body| TrackedBody::new(body, activity)))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog times headers out; hyper's timer would also cut idle keep-alive connections.
    builder.header_read_timeout(None);
    // hyper's read buffer grows to 400 kB by default while a head is unfinished, and the
    // allocator keeps what it grew to: 200 connections of one address holding unfinished
    // 390 kB heads took 103 MB that stayed after they were closed. Past this bound hyper answers
    // 431 Request Header Fields Too Large and closes the connection.
    builder.max_buf_size(limits.max_head_bytes.max(8192));
    let served = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(served);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                }
                return;
            }
            why = activity.expired(timeouts) => {
                metric::HTTP_CONNECTIONS_TIMED_OUT.counter(&[("reason", why.as_str())])
                    .increment(1);
                tracing::debug!(%peer, reason = why.as_str(), "connection closed");
                return;
            }
            () = stopping.cancelled(), if !shutting_down => {
                shutting_down = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
}
