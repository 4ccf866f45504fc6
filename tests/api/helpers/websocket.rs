//! A GraphQL WebSocket client written here on tokio-tungstenite (`graphql-transport-ws`, and the
//! legacy `graphql-ws`), and the one way the tests open a socket: any protocol, headers on the
//! upgrade (a token, `X-Forwarded-For`), and optionally a tiny TCP receive window, the client
//! that reads nothing.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::Api;

/// `commentEvents` of `$sku`, optionally filtered by `$ratings` and resumed `$after` a cursor.
pub const EVENTS: &str = r#"subscription Events($sku: String!, $ratings: [Int!], $after: String) {
  commentEvents(sku: $sku, ratings: $ratings, after: $after) {
    kind totalCount deletedCommentId
    edge { cursor node { id body rating } }
  }
}"#;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket to `/graphql` of the server at `address` (`http://…`) speaking `protocol`,
/// with `headers` on the upgrade, over a TCP socket whose receive window is 4 KiB when
/// `tiny_window` (a client that reads nothing: the server's sends back up at once); before
/// `connection_init`. A refused upgrade is `Err(Http(response))`; an upgrade that answers with
/// another protocol fails the test.
pub async fn try_open(
    address: &str,
    protocol: &str,
    headers: &[(&str, &str)],
    tiny_window: bool,
) -> Result<Socket, tungstenite::Error> {
    let url = format!("{}/graphql", address.replacen("http", "ws", 1));
    let mut request = url.into_client_request()?;
    let mut all = vec![("sec-websocket-protocol", protocol)];
    all.extend_from_slice(headers);
    for (name, value) in all {
        let name: tungstenite::http::HeaderName = name.parse().expect("a header name");
        request
            .headers_mut()
            .insert(name, value.parse().expect("a header value"));
    }
    let tcp = tokio::net::TcpSocket::new_v4()?;
    if tiny_window {
        tcp.set_recv_buffer_size(4096)?;
    }
    let peer = address
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(tcp.connect(peer).await?);
    let (socket, response) = tokio_tungstenite::client_async(request, stream).await?;
    assert_eq!(
        response
            .headers()
            .get("sec-websocket-protocol")
            .map(|v| v.as_bytes()),
        Some(protocol.as_bytes()),
        "the server speaks the protocol asked for"
    );
    Ok(socket)
}

/// [`try_open`] with nothing else on the upgrade, failing the test if it does not open.
pub async fn open_socket(address: &str, protocol: &str) -> Socket {
    try_open(address, protocol, &[], false)
        .await
        .expect("the WebSocket opens")
}

/// The errors of an operation's refusal: the list an `error` message carries, or the `errors`
/// of a `next` message's result.
pub fn errors_of(message: &Value) -> &Value {
    match message["type"].as_str() {
        Some("error") => &message["payload"],
        _ => &message["payload"]["errors"],
    }
}

/// A GraphQL WebSocket client.
#[derive(Debug)]
pub struct Client {
    pub socket: Socket,
}

impl Client {
    /// Connects to `app`'s `/graphql` with `protocol`, without `connection_init` yet.
    pub async fn connect(app: &Api, protocol: &str) -> Self {
        Self {
            socket: open_socket(&app.address, protocol).await,
        }
    }

    /// Connects with `graphql-transport-ws` and completes `connection_init`.
    pub async fn ready(app: &Api) -> Self {
        Self::ready_at(&app.address, &[], false).await
    }

    /// [`ready`](Self::ready) for the server at `address`, with `headers` on the upgrade and a
    /// tiny receive window when `tiny_window` (see [`try_open`]).
    pub async fn ready_at(address: &str, headers: &[(&str, &str)], tiny_window: bool) -> Self {
        let socket = try_open(address, "graphql-transport-ws", headers, tiny_window)
            .await
            .expect("the WebSocket opens");
        let mut client = Self { socket };
        client.init(json!({})).await;
        client
    }

    /// Connects with the legacy `graphql-ws` and completes `connection_init`.
    pub async fn legacy_ready(app: &Api) -> Self {
        let mut client = Self::connect(app, "graphql-ws").await;
        client.init(json!({})).await;
        client
    }

    /// Connects with `graphql-transport-ws` and completes `connection_init` carrying `token`
    /// (`Authorization: Bearer …` in its payload, as graphql-ws clients send it).
    pub async fn signed_in(app: &Api, token: &str) -> Self {
        let mut client = Self::connect(app, "graphql-transport-ws").await;
        client
            .init(json!({ "Authorization": format!("Bearer {token}") }))
            .await;
        client
    }

    /// Sends `connection_init` with `payload` and waits for its `connection_ack`.
    pub async fn init(&mut self, payload: Value) {
        self.send(json!({ "type": "connection_init", "payload": payload }))
            .await;
        assert_eq!(self.next().await["type"], "connection_ack");
    }

    pub async fn send(&mut self, message: Value) {
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await
            .expect("sent");
    }

    /// Subscribes to [`EVENTS`] as operation `id`.
    pub async fn subscribe(&mut self, id: &str, variables: Value) {
        self.subscribe_to(id, EVENTS, variables).await;
    }

    /// Starts [`EVENTS`] as operation `id` the legacy `graphql-ws` way (`start`).
    pub async fn start(&mut self, id: &str, variables: Value) {
        self.send(json!({ "id": id, "type": "start", "payload": { "query": EVENTS, "variables": variables } }))
            .await;
    }

    /// Starts the subscription `query` as operation `id`.
    pub async fn subscribe_to(&mut self, id: &str, query: &str, variables: Value) {
        self.send(json!({ "id": id, "type": "subscribe", "payload": { "query": query, "variables": variables } }))
            .await;
    }

    /// The next protocol message (pings answered), within 5 s; `{"type": "close", …}` for a
    /// close frame.
    pub async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(5), self.socket.next())
                .await
                .expect("a message within 5 s")
                .expect("the socket is open")
                .expect("a message");
            match message {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(&text).expect("JSON");
                    if value["type"] == "ping" {
                        self.send(json!({ "type": "pong" })).await;
                        continue;
                    }
                    return value;
                }
                Message::Close(frame) => {
                    let (code, reason) = frame.map_or((0, String::new()), |f| {
                        (u16::from(f.code), f.reason.to_string())
                    });
                    return json!({ "type": "close", "code": code, "reason": reason });
                }
                _ => continue,
            }
        }
    }

    /// The next message about operation `id` that is not its `complete` (answers to several
    /// operations come in any order).
    pub async fn answer_to(&mut self, id: &str) -> Value {
        loop {
            let message = self.next().await;
            if message["id"] == id && message["type"] != "complete" {
                return message;
            }
        }
    }

    /// The next event's `commentEvents` payload (a `next` message without errors).
    pub async fn event(&mut self) -> Value {
        let message = self.next().await;
        assert_eq!(message["type"], "next", "{message:#}");
        assert!(message["payload"].get("errors").is_none(), "{message:#}");
        message["payload"]["data"]["commentEvents"].clone()
    }
}
