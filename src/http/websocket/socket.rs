//! One GraphQL WebSocket from its upgrade to its close. async-graphql speaks the protocol
//! (`async_graphql::http::WebSocket`: it reads the client's messages and runs the
//! subscriptions); around it, three parts that never wait on one another:
//!
//! - the **writer** task owns the socket's sending half and sends what is queued for it, and
//!   the cohort frames of the connection's subscriptions gone live (`cohort`), which it reads
//!   itself (`live`): a comment wakes one task per socket, not the relay and then the writer.
//!   What is ready together (with `--websocket-coalesce-ms`, what came within that window after
//!   a live event) goes out in one write, within `--websocket-send-timeout-ms`. A client that
//!   does not read stops the socket's sends once the kernel's send buffer is full (capped for
//!   WebSockets: `crate::http::connections`'s `stream`); at the deadline the writer gives up,
//!   and the connection ends (`SLOW_SUBSCRIBER`): its subscriptions, queue and buffers are
//!   dropped and its memory is returned. No close frame can reach a client that reads nothing,
//!   so none is waited for.
//! - the **keep-alive** task pings every `--websocket-keepalive-ms` (the protocol's ping; to
//!   legacy `graphql-ws` clients, which answer nothing to its `ka`, also a WebSocket ping frame,
//!   which every client answers by itself) and closes with 3008 a client that has said nothing
//!   for two intervals. It only ever `try_send`s: a full queue means the writer is stuck, and
//!   its deadline ends that.
//! - the **relay** forwards what async-graphql says to the writer's queue (a bounded one: a
//!   socket holds at most [`QUEUE`] messages besides its buffers), hands the writer each
//!   subscription's cohort frames once it goes live (through the same queue, so they follow its
//!   replay), and adds what async-graphql leaves to us: the `connection_init` timeout (4408),
//!   the close codes of refused `connection_init`s, the token's expiry, and 1001 when the
//!   server shuts down.
//!
//! Why not async-graphql's own loop alone: its keep-alive check sits in the same loop as its
//! sends, so a socket whose client stopped reading was never closed (one held 318
//! subscriptions and about 100 MB for as long as it liked), and it sends no pings at all.

mod incoming;
mod live;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::http::{WebSocketProtocols, WsMessage};
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::FutureExt;
use futures::SinkExt;
use futures::channel::mpsc;
use futures::stream::{BoxStream, SplitSink, StreamExt};
use tokio_util::sync::CancellationToken;

use self::incoming::{Heard, incoming};
use self::live::Live;
use super::cohort::Members;
use super::{Init, SubscriptionsOnly};
use crate::http::HttpOptions;
use crate::telemetry::metric;

/// Messages queued for one socket's writer at most.
pub(super) const QUEUE: usize = 16;

/// Close code of a socket whose client did not read within the send deadline.
pub const SLOW_SUBSCRIBER_CLOSE: u16 = 4008;

/// What the writer's queue carries.
pub(super) enum Out {
    /// A message to send.
    Message(Message),
    /// A subscription gone live: its cohort frames as messages (`cohort::Members::claim`),
    /// which the writer reads from then on.
    Deliveries(BoxStream<'static, Message>),
}

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
    metric::WEBSOCKETS_OPEN.gauge(&[]).increment(1.0);
    let options = executor.options.clone();
    let members = executor.members.clone();
    let deadline = options.websocket.send_timeout;
    let (sink, stream) = socket.split();
    let (mut out, queue) = mpsc::channel::<Out>(QUEUE);
    let ending = Ending::default();
    let heard = Heard::new();
    let pace = Pace {
        deadline,
        coalesce: options.websocket.coalesce,
    };
    let writer = tokio::spawn(write(sink, queue, pace, ending.clone()));
    let pinger = tokio::spawn(keep_alive(
        out.clone(),
        protocol,
        options.websocket_keepalive,
        heard.clone(),
        ending.clone(),
    ));
    let messages = incoming(stream, &heard, &ending);
    let graphql = async_graphql::http::WebSocket::new(executor, messages, protocol)
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
        let _ = tokio::time::timeout(deadline, out.send(Out::Message(frame))).await;
    }
    drop(out);
    // The writer ends after the close frame, or at its send deadline.
    let _ = writer.await;
    metric::WEBSOCKETS_OPEN.gauge(&[]).decrement(1.0);
}

/// Messages the writer sends with one flush at most: what a fan-out readied for this socket
/// together (a comment for each of its subscriptions) leaves in one write instead of several.
const BATCH: usize = QUEUE;

/// How the writer paces its sends.
#[derive(Clone, Copy)]
struct Pace {
    /// The most a batch may take to be sent (`--websocket-send-timeout-ms`).
    deadline: Duration,
    /// How long to wait, after a live event is ready, for more to send with it
    /// (`--websocket-coalesce-ms`).
    coalesce: Duration,
}

/// How a batch went out.
#[derive(PartialEq)]
enum Sent {
    /// A close frame went out: the writer is done.
    Close,
    /// [`BATCH`] messages went out and more may be ready: the next goes out without waiting.
    Full,
    /// Everything ready went out.
    Drained,
}

/// Sends the queue's messages and the deliveries handed to it until a close frame, the queue's
/// end, a failed send, or a client that does not read (which ends the connection). What is
/// ready when the writer wakes goes out together, written once and flushed once (one system
/// call where each message used to make its own), within the deadline for the whole batch.
/// With a coalescing window, a live event waits that long for the events after it, so that a
/// busy product's events leave in one write per window rather than one each: at 1,000
/// subscribers, the write and the wake-up are most of what a delivery costs (BENCHMARKS.md,
/// "Live comments").
async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Out>,
    pace: Pace,
    ending: Ending,
) {
    let mut live = Live::default();
    let mut last = Sent::Drained;
    loop {
        let (first, delivery) = tokio::select! {
            out = queue.next() => match out {
                Some(Out::Message(message)) => (message, false),
                Some(Out::Deliveries(deliveries)) => {
                    live.push(deliveries);
                    continue;
                }
                None => break,
            },
            Some(message) = live.next(), if !live.is_empty() => (message, true),
        };
        if delivery && last == Sent::Drained && !pace.coalesce.is_zero() {
            // Not polled meanwhile, the deliveries wake nobody: they wait in their cohorts'
            // rings (`--subscription-buffer` frames), and in the queue what else comes.
            tokio::time::sleep(pace.coalesce).await;
        }
        let batch = send_batch(&mut sink, &mut queue, &mut live, first);
        match tokio::time::timeout(pace.deadline, batch).await {
            Ok(Ok(Sent::Close)) | Ok(Err(_)) => break,
            Ok(Ok(sent)) => last = sent,
            Err(_) => {
                metric::WEBSOCKETS_CLOSED_SLOW.counter(&[]).increment(1);
                tracing::info!(
                    deadline_ms = pace.deadline.as_millis() as u64,
                    "websocket closed: the client did not read within the send deadline"
                );
                let reason = "SLOW_SUBSCRIBER: the client did not read within the send deadline";
                ending.end(Some((SLOW_SUBSCRIBER_CLOSE, reason.to_owned())));
                return;
            }
        }
    }
    ending.end(None);
    let _ = tokio::time::timeout(pace.deadline, sink.close()).await;
}

/// Feeds `first` and what else is ready (up to [`BATCH`] in all, ending at a close frame) to
/// the sink, then flushes it once.
async fn send_batch(
    sink: &mut SplitSink<WebSocket, Message>,
    queue: &mut mpsc::Receiver<Out>,
    live: &mut Live,
    first: Message,
) -> Result<Sent, axum::Error> {
    let mut message = first;
    let mut fed = 0;
    let sent = loop {
        let close = matches!(message, Message::Close(_));
        sink.feed(message).await?;
        fed += 1;
        if close {
            break Sent::Close;
        }
        if fed == BATCH {
            break Sent::Full;
        }
        match ready_now(queue, live) {
            Some(next) => message = next,
            None => break Sent::Drained,
        }
    };
    sink.flush().await?;
    metric::WEBSOCKET_WRITES.counter(&[]).increment(1);
    Ok(sent)
}

/// The next message ready without waiting: the queue's first (deliveries on it join `live`),
/// else a delivery. Polled without a waker: the writer's loop polls both again before it
/// sleeps.
fn ready_now(queue: &mut mpsc::Receiver<Out>, live: &mut Live) -> Option<Message> {
    // Empty for now, or closed (the next `queue.next()` says so).
    while let Ok(out) = queue.try_recv() {
        match out {
            Out::Message(message) => return Some(message),
            Out::Deliveries(deliveries) => live.push(deliveries),
        }
    }
    live.next().now_or_never().flatten()
}

/// Pings every `every` and ends the connection (3008) when the client has said nothing for two
/// intervals; never waits on the queue.
async fn keep_alive(
    mut out: mpsc::Sender<Out>,
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
        let _ = out.try_send(Out::Message(Message::Text(ping.into())));
        if protocol != WebSocketProtocols::GraphQLWS {
            // Legacy clients answer nothing to `ka`; every client answers a ping frame.
            let _ = out.try_send(Out::Message(Message::Ping(Default::default())));
        }
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

/// Queues `item` for the writer; `false` when the connection is ending.
async fn forward(out: &mut mpsc::Sender<Out>, ending: &Ending, item: Out) -> bool {
    tokio::select! {
        sent = out.send(item) => sent.is_ok(),
        () = ending.token.cancelled() => false,
    }
}

/// Forwards async-graphql's messages, and the cohort frames of the connection's members gone
/// live (`cohort`, for the writer to read), to the writer's queue until either side or another
/// part ends the connection, and adds the `connection_init` timeout (4408), the close code of a
/// refused `connection_init`, the token's expiry, and 1001 when the server shuts down. Returns
/// the close frame to send, if any.
async fn relay(
    mut graphql: impl futures::Stream<Item = WsMessage> + Unpin,
    out: &mut mpsc::Sender<Out>,
    parts: &Parts<'_>,
) -> Option<(u16, String)> {
    let Parts {
        options,
        init,
        ending,
        members,
        protocol,
    } = *parts;
    let mut init_seen = init.accepted.subscribe();
    let init_deadline = tokio::time::sleep(options.connection_init_timeout);
    tokio::pin!(init_deadline);
    let mut initialised_in_time = false;
    loop {
        let expires = init.expires();
        tokio::select! {
            message = graphql.next() => match message {
                Some(WsMessage::Text(text)) => {
                    let item = match members.claim(&text, protocol) {
                        Some(deliveries) => Out::Deliveries(deliveries),
                        None => Out::Message(Message::Text(text.into())),
                    };
                    if !forward(out, ending, item).await {
                        return ending.reason();
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    return Some(init.refused_close().unwrap_or((code, reason)));
                }
                // The client's messages ended: it left, or `incoming` ended the connection.
                None => return ending.reason(),
            },
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
