//! Subscriptions over WebSocket at `GET /graphql`: the `graphql-transport-ws` protocol (and the
//! legacy `graphql-ws` one), served by async-graphql-axum, with what it leaves to us:
//!
//! - the request check HTTP requests get (`check`: the parse, through the same document cache,
//!   and the limits on depth and aliases, refused with the same messages and codes) before a
//!   subscription runs, and only subscriptions: queries and mutations go over HTTP, where the
//!   rate limits, timeouts and response shaping apply;
//! - `--max-subscriptions-per-connection` (the server-wide maximum is counted by the resolver);
//! - closing with 4408 a socket that sends no `connection_init` within
//!   `--connection-init-timeout-ms`, as graphql-transport-ws requires (async-graphql waits
//!   forever; this can go when it has a timeout of its own);
//! - a bearer token in `connection_init`'s payload (`{"Authorization": "Bearer …"}`), verified
//!   like the HTTP header; an invalid one is refused. Events are public, so none is needed;
//! - keep-alive: a `ping` (`ka` in the legacy protocol) every `--websocket-keepalive-ms`, which
//!   clients answer with `pong` (the `graphql-ws` client does so by itself), and closing with
//!   3008 a graphql-transport-ws socket that has said nothing for two intervals. async-graphql's
//!   own `keepalive_timeout` is not used: it sends no pings and closes any socket whose client
//!   has been silent for the timeout, which is every listening subscriber (the `graphql-ws`
//!   client sends nothing of its own accord); this can go if async-graphql pings;
//! - closing every socket with 1001 ("going away") when the server shuts down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_graphql::http::{WebSocketProtocols, WsMessage};
use async_graphql::{Data, Executor, Request, Response, ServerError};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use futures::SinkExt;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{BoxStream, SplitSink, SplitStream, StreamExt};

use super::check::{Rejection, Transport, check_request};
use super::documents::DocumentCache;
use super::{AppState, HttpOptions};
use crate::auth::Auth;
use crate::graphql::ApiSchema;

/// Largest message a client may send (a `subscribe` with its query), and the size of each
/// socket's read and write buffers.
const MESSAGE_BYTES: usize = 16 * 1024;

/// Runs subscriptions of one connection, after the check HTTP requests get.
#[derive(Clone)]
struct SubscriptionsOnly {
    schema: ApiSchema,
    options: Arc<HttpOptions>,
    documents: Arc<DocumentCache>,
    /// Subscriptions this connection holds now.
    open: Arc<AtomicUsize>,
}

/// A response of one error with `code`.
fn error_response(code: &'static str, message: String) -> Response {
    let mut error = ServerError::new(message, None);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("code", code);
    error.extensions = Some(extensions);
    Response::from_errors(vec![error])
}

/// A stream of one error response: the subscription ends at once with `code`.
fn refused(code: &'static str, message: String) -> BoxStream<'static, Response> {
    futures::stream::once(async move { error_response(code, message) }).boxed()
}

impl Executor for SubscriptionsOnly {
    async fn execute(&self, _request: Request) -> Response {
        let only = Rejection::OnlySubscriptions;
        error_response(only.code(), only.to_string())
    }

    fn execute_stream(
        &self,
        mut request: Request,
        session_data: Option<Arc<Data>>,
    ) -> BoxStream<'static, Response> {
        let check = check_request(
            &mut request,
            Transport::WebSocket,
            &self.documents,
            &self.options,
        );
        if let Err(rejection) = check {
            return refused(rejection.code(), rejection.to_string());
        }
        let max = self.options.max_subscriptions_per_connection;
        if self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return refused(
                "TOO_MANY_SUBSCRIPTIONS",
                format!("this connection holds its maximum of {max} subscriptions"),
            );
        }
        let held = Held(self.open.clone());
        let stream = self
            .schema
            .execute_stream_with_session_data(request, session_data.unwrap_or_default());
        stream
            .map(move |response| {
                let _ = &held;
                response
            })
            .boxed()
    }
}

/// One subscription of a connection, counted until its stream is dropped.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The GraphQL protocol a WebSocket request asks for (`Sec-WebSocket-Protocol`), if any.
pub(super) fn requested_protocol(headers: &axum::http::HeaderMap) -> Option<WebSocketProtocols> {
    use std::str::FromStr;
    headers
        .get(axum::http::header::SEC_WEBSOCKET_PROTOCOL)?
        .to_str()
        .ok()?
        .split(',')
        .find_map(|p| WebSocketProtocols::from_str(p.trim()).ok())
}

/// Upgrades `GET /graphql` to a GraphQL WebSocket.
pub(super) fn upgrade(
    upgrade: WebSocketUpgrade,
    protocol: WebSocketProtocols,
    app: &AppState,
) -> axum::response::Response {
    let executor = SubscriptionsOnly {
        schema: app.schema.clone(),
        options: app.options.clone(),
        documents: app.documents.clone(),
        open: Arc::default(),
    };
    let auth = app.api.auth.clone();
    upgrade
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS)
        // Clients send small messages (a subscribe, a pong); tungstenite's defaults (a 128 KiB
        // read buffer, messages up to 64 MiB) would cost each idle socket far more memory than
        // its subscriptions do.
        .read_buffer_size(MESSAGE_BYTES)
        .write_buffer_size(MESSAGE_BYTES)
        .max_message_size(MESSAGE_BYTES)
        .max_frame_size(MESSAGE_BYTES)
        .on_upgrade(move |socket| serve(socket, protocol, executor, auth))
}

/// One socket, from its upgrade to its close: async-graphql speaks the protocol, [`relay`]
/// forwards what it says and adds the timeouts, pings and close codes it leaves to us.
async fn serve(
    socket: WebSocket,
    protocol: WebSocketProtocols,
    executor: SubscriptionsOnly,
    auth: Auth,
) {
    metrics::gauge!("dynapage_websockets_open").increment(1.0);
    let (sink, stream) = socket.split();
    // Our own queue in front of the socket, so a close frame of ours can follow async-graphql's.
    let (mut out, queue) = futures::channel::mpsc::channel::<Message>(16);
    let writer = tokio::spawn(write(sink, queue));
    let options = executor.options.clone();
    let heard = Heard::new();
    let init = Init::default();
    let graphql = async_graphql::http::WebSocket::new(executor, incoming(stream, &heard), protocol)
        .on_connection_init(init.callback(auth));
    let close = relay(
        Box::pin(graphql),
        &mut out,
        protocol,
        &options,
        &init,
        &heard,
    )
    .await;
    if let Some((code, reason)) = close {
        let _ = out
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    }
    drop(out);
    let _ = writer.await;
    metrics::gauge!("dynapage_websockets_open").decrement(1.0);
}

/// Sends the queue's messages to the socket until a close frame or the queue's end.
async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: futures::channel::mpsc::Receiver<Message>,
) {
    while let Some(message) = queue.next().await {
        let close = matches!(message, Message::Close(_));
        if sink.send(message).await.is_err() || close {
            break;
        }
    }
    let _ = sink.close().await;
}

/// The client's messages as async-graphql reads them, noting when each was heard; the stream
/// ends at the socket's first error.
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

/// What became of `connection_init`.
#[derive(Default)]
struct Init {
    /// Set when `connection_init` was accepted.
    accepted: Arc<tokio::sync::watch::Sender<bool>>,
    /// Set when `connection_init` was refused: async-graphql then closes with 1002 (protocol
    /// error); graphql-transport-ws says 4403 (Forbidden), which is what clients look for. This
    /// can go when async-graphql closes with 4403 itself.
    refused: Arc<AtomicBool>,
}

impl Init {
    /// async-graphql's `on_connection_init`: the connection's data, noting the outcome.
    fn callback(
        &self,
        auth: Auth,
    ) -> impl FnOnce(serde_json::Value) -> BoxFuture<'static, async_graphql::Result<Data>> + Send + 'static
    {
        let (accepted, refused) = (self.accepted.clone(), self.refused.clone());
        move |payload| {
            async move {
                let data = connection_data(&auth, &payload).await.inspect_err(|_| {
                    refused.store(true, Ordering::Relaxed);
                })?;
                accepted.send_replace(true);
                Ok(data)
            }
            .boxed()
        }
    }
}

/// Forwards async-graphql's messages to the socket until either side closes, and adds what it
/// leaves to us: the `connection_init` timeout (4408), keep-alive pings and the silent-client
/// close (3008), 4403 for a refused `connection_init`, and 1001 when the server shuts down.
/// Returns the close frame to send, if any.
async fn relay(
    mut graphql: impl futures::Stream<Item = WsMessage> + Unpin,
    out: &mut futures::channel::mpsc::Sender<Message>,
    protocol: WebSocketProtocols,
    options: &HttpOptions,
    init: &Init,
    heard: &Heard,
) -> Option<(u16, String)> {
    let mut init_seen = init.accepted.subscribe();
    let init_deadline = tokio::time::sleep(options.connection_init_timeout);
    tokio::pin!(init_deadline);
    let every = options.websocket_keepalive;
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let ping = match protocol {
        WebSocketProtocols::GraphQLWS => r#"{"type":"ping"}"#,
        _ => r#"{"type":"ka"}"#,
    };
    let mut initialised_in_time = false;
    loop {
        tokio::select! {
            message = graphql.next() => match message {
                Some(WsMessage::Text(text)) => {
                    if out.send(Message::Text(text.into())).await.is_err() {
                        return None;
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    let code = if init.refused.load(Ordering::Relaxed) { 4403 } else { code };
                    return Some((code, reason));
                }
                None => return None,
            },
            changed = init_seen.changed(), if !initialised_in_time => {
                initialised_in_time = changed.is_ok() && *init_seen.borrow();
            }
            () = &mut init_deadline, if !initialised_in_time => {
                return Some((4408, "Connection initialisation timeout".to_owned()));
            }
            _ = keepalive.tick() => {
                if protocol == WebSocketProtocols::GraphQLWS && heard.silent() > 2 * every {
                    return Some((3008, "no pong to the keep-alive pings".to_owned()));
                }
                if out.send(Message::Text(ping.into())).await.is_err() {
                    return None;
                }
            }
            () = options.shutdown.cancelled() => {
                return Some((1001, "the server is going away".to_owned()));
            }
        }
    }
}

/// The connection's data from `connection_init`'s payload: a verified viewer when it carries a
/// bearer token (`Authorization` or `authorization`), nothing otherwise.
async fn connection_data(auth: &Auth, payload: &serde_json::Value) -> async_graphql::Result<Data> {
    let mut data = Data::default();
    let header = payload
        .get("Authorization")
        .or_else(|| payload.get("authorization"))
        .and_then(serde_json::Value::as_str);
    if let (Some(header), Auth::Jwt(verifier)) = (header, auth) {
        let viewer = verifier
            .verify_header(header)
            .await
            .map_err(|e| async_graphql::Error::new(format!("the bearer token was refused: {e}")))?;
        data.insert(viewer);
    }
    Ok(data)
}
