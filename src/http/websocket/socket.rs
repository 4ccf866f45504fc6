//! One GraphQL WebSocket from its upgrade to its close. async-graphql speaks the protocol
//! (`async_graphql::http::WebSocket`: it reads the client's messages and runs the
//! subscriptions); around it, three parts that never wait on one another:
//!
//! - the **writer** task owns the socket's sending half and sends what is queued for it (what
//!   is queued together in one write) within `--websocket-send-timeout-ms`. A client that does
//!   not read stops the socket's sends; at the deadline the writer gives up, and the
//!   connection ends (`SLOW_SUBSCRIBER`): its subscriptions, queue and buffers are dropped and
//!   its memory is returned. No close frame can reach a client that reads nothing, so none is
//!   waited for.
//! - the **keep-alive** task pings every `--websocket-keepalive-ms` (the protocol's ping; to
//!   legacy `graphql-ws` clients, which answer nothing to its `ka`, also a WebSocket ping frame,
//!   which every client answers by itself) and closes with 3008 a client that has said nothing
//!   for two intervals. It only ever `try_send`s: a full queue means the writer is stuck, and
//!   its deadline ends that.
//! - the **relay** forwards what async-graphql says to the writer's queue (a bounded one: a
//!   socket holds at most [`QUEUE`] messages besides its buffers), and adds what async-graphql
//!   leaves to us: the `connection_init` timeout (4408), the close codes of refused
//!   `connection_init`s, the token's expiry, and 1001 when the server shuts down.
//!
//! Why not async-graphql's own loop alone: its keep-alive check sits in the same loop as its
//! sends, so a socket whose client stopped reading was never closed (one held 318
//! subscriptions and about 100 MB for as long as it liked), and it sends no pings at all.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_graphql::http::{WebSocketProtocols, WsMessage};
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::SinkExt;
use futures::channel::mpsc;
use futures::stream::{SplitSink, SplitStream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::cohort::Members;
use super::{Init, SubscriptionsOnly};
use crate::http::HttpOptions;

/// Messages queued for one socket's writer at most.
pub(super) const QUEUE: usize = 16;

/// Close code of a socket whose client did not read within the send deadline.
pub const SLOW_SUBSCRIBER_CLOSE: u16 = 4008;

/// How the connection ends, decided by whichever part ends it first.
#[derive(Clone, Default)]
pub(super) struct Ending {
    token: CancellationToken,
    reason: Arc<Mutex<Option<(u16, String)>>>,
}

impl Ending {
    /// Ends the connection, with a close frame of `reason` if any (only the first reason
    /// counts).
    pub(super) fn end(&self, reason: Option<(u16, String)>) {
        let mut kept = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if !self.token.is_cancelled() {
            *kept = reason;
            self.token.cancel();
        }
    }

    fn reason(&self) -> Option<(u16, String)> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Serves one upgraded socket until either side ends it.
pub(super) async fn serve(
    socket: WebSocket,
    protocol: WebSocketProtocols,
    executor: SubscriptionsOnly,
    init: Init,
) {
    metrics::gauge!("dynapage_websockets_open").increment(1.0);
    let options = executor.options.clone();
    let members = executor.members.clone();
    let deadline = options.websocket.send_timeout;
    let (sink, stream) = socket.split();
    let (mut out, queue) = mpsc::channel::<Message>(QUEUE);
    let ending = Ending::default();
    let heard = Heard::new();
    let writer = tokio::spawn(write(sink, queue, deadline, ending.clone()));
    let pinger = tokio::spawn(keep_alive(
        out.clone(),
        protocol,
        options.websocket_keepalive,
        heard.clone(),
        ending.clone(),
    ));
    let graphql = async_graphql::http::WebSocket::new(executor, incoming(stream, &heard), protocol)
        .on_connection_init(init.callback());
    let parts = Parts {
        options: &options,
        init: &init,
        ending: &ending,
        members: &members,
        protocol,
    };
    let close = relay(Box::pin(graphql), &mut out, &parts).await;
    pinger.abort();
    let _ = pinger.await;
    if let Some((code, reason)) = close {
        let frame = Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }));
        let _ = tokio::time::timeout(deadline, out.send(frame)).await;
    }
    drop(out);
    // The writer ends after the close frame, or at its send deadline.
    let _ = writer.await;
    metrics::gauge!("dynapage_websockets_open").decrement(1.0);
}

/// Messages the writer sends with one flush at most: what a fan-out queued for this socket
/// together (a comment for each of its subscriptions) leaves in one write instead of several.
const BATCH: usize = QUEUE;

/// Sends the queue's messages until a close frame, the queue's end, a failed send, or a client
/// that does not read (which ends the connection). What is already queued when the writer
/// wakes goes out together, written once and flushed once (one system call where each message
/// used to make its own), within `deadline` for the whole batch.
async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Message>,
    deadline: Duration,
    ending: Ending,
) {
    while let Some(first) = queue.next().await {
        match tokio::time::timeout(deadline, send_batch(&mut sink, &mut queue, first)).await {
            Ok(Ok(false)) => {}
            Ok(_) => break,
            Err(_) => {
                metrics::counter!("dynapage_websockets_closed_slow_total").increment(1);
                tracing::info!(
                    deadline_ms = deadline.as_millis() as u64,
                    "websocket closed: the client did not read within the send deadline"
                );
                let reason = "SLOW_SUBSCRIBER: the client did not read within the send deadline";
                ending.end(Some((SLOW_SUBSCRIBER_CLOSE, reason.to_owned())));
                return;
            }
        }
    }
    ending.end(None);
    let _ = tokio::time::timeout(deadline, sink.close()).await;
}

/// Feeds `first` and what else is already queued (up to [`BATCH`] in all, ending at a close
/// frame) to the sink, then flushes it once; `true` when a close frame went out.
async fn send_batch(
    sink: &mut SplitSink<WebSocket, Message>,
    queue: &mut mpsc::Receiver<Message>,
    first: Message,
) -> Result<bool, axum::Error> {
    let mut message = first;
    let mut fed = 0;
    let close = loop {
        let close = matches!(message, Message::Close(_));
        sink.feed(message).await?;
        fed += 1;
        if close || fed == BATCH {
            break close;
        }
        match queue.try_recv() {
            Ok(next) => message = next,
            // Empty for now, or closed (the next `queue.next()` says so).
            Err(_) => break false,
        }
    };
    sink.flush().await?;
    Ok(close)
}

/// Pings every `every` and ends the connection (3008) when the client has said nothing for two
/// intervals; never waits on the queue.
async fn keep_alive(
    mut out: mpsc::Sender<Message>,
    protocol: WebSocketProtocols,
    every: Duration,
    heard: Heard,
    ending: Ending,
) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let ping = match protocol {
        WebSocketProtocols::GraphQLWS => r#"{"type":"ping"}"#,
        _ => r#"{"type":"ka"}"#,
    };
    loop {
        ticks.tick().await;
        if heard.silent() > 2 * every {
            ending.end(Some((3008, "no answer to the keep-alive pings".to_owned())));
            return;
        }
        let _ = out.try_send(Message::Text(ping.into()));
        if protocol != WebSocketProtocols::GraphQLWS {
            // Legacy clients answer nothing to `ka`; every client answers a ping frame.
            let _ = out.try_send(Message::Ping(Default::default()));
        }
    }
}

/// The client's messages as async-graphql reads them, noting when each (pongs included) was
/// heard; the stream ends at the socket's first error.
fn incoming(
    stream: SplitStream<WebSocket>,
    heard: &Heard,
) -> impl futures::Stream<Item = Vec<u8>> + Unpin + Send + 'static {
    let heard = heard.clone();
    stream
        .take_while(|message| futures::future::ready(message.is_ok()))
        .inspect(move |_| heard.now())
        .map(|message| match message {
            Ok(Message::Text(text)) => text.as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            _ => Vec::new(),
        })
        .filter(|bytes| futures::future::ready(!bytes.is_empty()))
}

/// When the client last sent anything, in milliseconds since the socket opened.
#[derive(Clone)]
struct Heard {
    opened: Instant,
    ms: Arc<AtomicU64>,
}

impl Heard {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            ms: Arc::default(),
        }
    }

    /// The client was heard just now.
    fn now(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.ms.store(ms, Ordering::Relaxed);
    }

    /// How long the client has said nothing.
    fn silent(&self) -> Duration {
        let heard = Duration::from_millis(self.ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(heard)
    }
}

/// What the relay works with besides the streams.
struct Parts<'a> {
    options: &'a HttpOptions,
    init: &'a Init,
    ending: &'a Ending,
    members: &'a Members,
    protocol: WebSocketProtocols,
}

/// Queues `message` for the writer; `false` when the connection is ending.
async fn forward(out: &mut mpsc::Sender<Message>, ending: &Ending, message: Message) -> bool {
    tokio::select! {
        sent = out.send(message) => sent.is_ok(),
        () = ending.token.cancelled() => false,
    }
}

/// Forwards async-graphql's messages, and the cohort frames of the connection's members gone
/// live (`cohort`), to the writer's queue until either side or another part ends the
/// connection, and adds the `connection_init` timeout (4408), the close code of a refused
/// `connection_init`, the token's expiry, and 1001 when the server shuts down. Returns the
/// close frame to send, if any.
async fn relay(
    mut graphql: impl futures::Stream<Item = WsMessage> + Unpin,
    out: &mut mpsc::Sender<Message>,
    parts: &Parts<'_>,
) -> Option<(u16, String)> {
    let Parts {
        options,
        init,
        ending,
        members,
        protocol,
    } = *parts;
    let mut live = futures::stream::SelectAll::new();
    let mut init_seen = init.accepted.subscribe();
    let init_deadline = tokio::time::sleep(options.connection_init_timeout);
    tokio::pin!(init_deadline);
    let mut initialised_in_time = false;
    loop {
        let expires = init.expires();
        tokio::select! {
            message = graphql.next() => match message {
                Some(WsMessage::Text(text)) => {
                    if let Some(deliveries) = members.claim(&text, protocol) {
                        live.push(deliveries);
                    } else if !forward(out, ending, Message::Text(text.into())).await {
                        return ending.reason();
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    return Some(init.refused_close().unwrap_or((code, reason)));
                }
                None => return None,
            },
            Some(message) = live.next(), if !live.is_empty() => {
                if !forward(out, ending, message).await {
                    return ending.reason();
                }
            }
            changed = init_seen.changed(), if !initialised_in_time => {
                initialised_in_time = changed.is_ok() && *init_seen.borrow();
            }
            () = &mut init_deadline, if !initialised_in_time => {
                return Some((4408, "Connection initialisation timeout".to_owned()));
            }
            () = sleep_until(expires), if expires.is_some() => {
                // 4403, not 4401: the `graphql-ws` client gives up after 4401 and reconnects after
                // 4403, asking its `connectionParams` for a token again (its recipe for expiry).
                return Some((4403, "the bearer token expired: reconnect with a fresh one".to_owned()));
            }
            () = ending.token.cancelled() => return ending.reason(),
            () = options.shutdown.cancelled() => {
                return Some((1001, "the server is going away".to_owned()));
            }
        }
    }
}

/// Sleeps until `at` (forever without one).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
