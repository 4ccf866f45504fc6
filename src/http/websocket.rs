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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_graphql::http::{WebSocketProtocols, WsMessage};
use async_graphql::{Data, Executor, Request, Response, ServerError};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use futures::SinkExt;
use futures::stream::{BoxStream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::HttpOptions;
use super::check::{Rejection, Transport, check_request};
use super::documents::DocumentCache;
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
    schema: ApiSchema,
    options: Arc<HttpOptions>,
    documents: Arc<DocumentCache>,
    auth: Auth,
    shutdown: CancellationToken,
) -> axum::response::Response {
    upgrade
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS)
        // Clients send small messages (a subscribe, a pong); tungstenite's defaults (a 128 KiB
        // read buffer, messages up to 64 MiB) would cost each idle socket far more memory than
        // its subscriptions do.
        .read_buffer_size(MESSAGE_BYTES)
        .write_buffer_size(MESSAGE_BYTES)
        .max_message_size(MESSAGE_BYTES)
        .max_frame_size(MESSAGE_BYTES)
        .on_upgrade(move |socket| {
            serve(socket, protocol, schema, options, documents, auth, shutdown)
        })
}

async fn serve(
    socket: WebSocket,
    protocol: WebSocketProtocols,
    schema: ApiSchema,
    options: Arc<HttpOptions>,
    documents: Arc<DocumentCache>,
    auth: Auth,
    shutdown: CancellationToken,
) {
    metrics::gauge!("dynapage_websockets_open").increment(1.0);
    let (mut sink, stream) = socket.split();
    // Our own queue in front of the socket, so a close frame of ours can follow async-graphql's.
    let (out, mut queue) = futures::channel::mpsc::channel::<Message>(16);
    let (initialised, mut init_seen) = tokio::sync::watch::channel(false);
    // Set when `connection_init` is refused: async-graphql then closes with 1002 (protocol
    // error); graphql-transport-ws says 4403 (Forbidden), which is what clients look for. This
    // can go when async-graphql closes with 4403 itself.
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let refused_init = refused.clone();
    // When the client last sent anything, in milliseconds since the socket opened.
    let opened = std::time::Instant::now();
    let heard = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let heard_in = heard.clone();
    let executor = SubscriptionsOnly {
        schema,
        options: options.clone(),
        documents,
        open: Arc::default(),
    };
    let input = stream
        .take_while(|message| futures::future::ready(message.is_ok()))
        .inspect(move |_| {
            let ms = u64::try_from(opened.elapsed().as_millis()).unwrap_or(u64::MAX);
            heard_in.store(ms, Ordering::Relaxed);
        })
        .map(|message| match message {
            Ok(Message::Text(text)) => text.as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            _ => Vec::new(),
        })
        .filter(|bytes| futures::future::ready(!bytes.is_empty()));
    let graphql = async_graphql::http::WebSocket::new(executor, input, protocol)
        .on_connection_init(move |payload| {
            let auth = auth.clone();
            let initialised = initialised.clone();
            let refused = refused_init.clone();
            async move {
                let data = connection_data(&auth, &payload).await.inspect_err(|_| {
                    refused.store(true, Ordering::Relaxed);
                })?;
                let _ = initialised.send(true);
                Ok(data)
            }
        });
    let mut graphql = Box::pin(graphql);
    let writer = tokio::spawn(async move {
        while let Some(message) = queue.next().await {
            let close = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut out = out;
    let init_deadline = tokio::time::sleep(options.connection_init_timeout);
    tokio::pin!(init_deadline);
    let every = options.websocket_keepalive;
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let ping = match protocol {
        WebSocketProtocols::GraphQLWS => r#"{"type":"ping"}"#,
        _ => r#"{"type":"ka"}"#,
    };
    let mut initialised_in_time = false;
    let close = loop {
        tokio::select! {
            message = graphql.next() => match message {
                Some(WsMessage::Text(text)) => {
                    if out.send(Message::Text(text.into())).await.is_err() {
                        break None;
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    let code = if refused.load(Ordering::Relaxed) { 4403 } else { code };
                    break Some((code, reason));
                }
                None => break None,
            },
            changed = init_seen.changed(), if !initialised_in_time => {
                initialised_in_time = changed.is_ok() && *init_seen.borrow();
            }
            () = &mut init_deadline, if !initialised_in_time => {
                break Some((4408, "Connection initialisation timeout".to_owned()));
            }
            _ = keepalive.tick() => {
                let silent = opened.elapsed().saturating_sub(Duration::from_millis(heard.load(Ordering::Relaxed)));
                if protocol == WebSocketProtocols::GraphQLWS && silent > 2 * every {
                    break Some((3008, "no pong to the keep-alive pings".to_owned()));
                }
                if out.send(Message::Text(ping.into())).await.is_err() {
                    break None;
                }
            }
            () = shutdown.cancelled() => break Some((1001, "the server is going away".to_owned())),
        }
    };
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
