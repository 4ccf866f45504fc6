//! Subscriptions over WebSocket at `GET /graphql`: the `graphql-transport-ws` protocol (and the
//! legacy `graphql-ws` one), spoken by async-graphql, with what it leaves to us:
//!
//! - **the upgrade**: an `Authorization` header is verified like any request's (a bad token is
//!   refused with 401 and a GraphQL error body, before the upgrade), and the client (the
//!   token's subject, else its address through `--trusted-proxies`) may hold at most
//!   `--max-sockets-per-client` sockets (429 beyond);
//! - **`connection_init`** (`init`): a bearer token in its payload is verified like the header
//!   and then names the client; the socket closes at the token's `exp`;
//! - **each `subscribe`** (`subscribe`): the request check HTTP requests get (`admission::check`:
//!   the parse, the limits on depth and aliases, and a subscription's shape: one root field,
//!   no connections below it), only subscriptions (queries and mutations go over HTTP), at most
//!   `--max-subscriptions-per-connection` on the socket and `--max-subscriptions-per-client`
//!   for the client (`live::shares`), the client's rate of opening subscriptions
//!   (`--rate-limit-subscriptions`), and its cost budget, charged like an HTTP request's: the
//!   document's price before it runs (`graphql::pricing`, with this server's paging settings;
//!   `graphql::budget`), a resume's replay as it is read
//!   (`graphql::subscription`);
//! - **the socket** (`socket`): send deadlines, keep-alive and silence checks, close codes.
//!
//! One root field per subscription makes a `subscribe` message one subscription, so the
//! per-connection limit counts subscriptions.

mod cohort;
mod init;
mod socket;
mod subscribe;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_graphql::http::WebSocketProtocols;
use axum::extract::ws::WebSocketUpgrade;
use axum::http::{HeaderMap, StatusCode};

pub(super) use self::cohort::Cohorts;
use self::init::{Connection, Init};
pub use self::socket::SLOW_SUBSCRIBER_CLOSE;
use self::subscribe::SubscriptionsOnly;
use super::AppState;
use super::admission::failures::charge_refused;
use super::admission::payer::Payer;
use super::transport::{self, MediaType, Refusal};
use crate::live::shares::Shares;
use crate::ratelimit::RateLimiter;
use crate::telemetry::metric;

/// Largest message a client may send (a `subscribe` with its query), and the size of each
/// socket's read and write buffers.
const MESSAGE_BYTES: usize = 16 * 1024;

/// Each socket's read buffer: the chunk tungstenite reads into, held for the socket's life
/// (a message longer than it is assembled apart). 4 KiB, not [`MESSAGE_BYTES`]: an idle socket
/// cost about 24.8 KB of RSS with a 16 KiB one (2,000 sockets), past the 24 KiB budget.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// What one client may hold and do over WebSockets.
#[derive(Clone, Debug)]
pub struct WebSocketLimits {
    /// What each client holds, against its caps of sockets and subscriptions on this server.
    pub shares: Arc<Shares>,
    /// A message the client has not taken within this is its last: the socket is closed.
    pub send_timeout: Duration,
    /// How long a writer waits after a live event for more to send with it (`socket::write`);
    /// zero sends at once.
    pub coalesce: Duration,
    /// The rate at which each client may open subscriptions (one token per `subscribe`, keyed
    /// apart from its other budgets); `None` does not limit it.
    pub subscribe_limiter: Option<RateLimiter>,
    /// This server's cohorts of subscribers who asked the same thing (`cohort`).
    pub cohorts: Arc<Cohorts>,
}

impl Default for WebSocketLimits {
    fn default() -> Self {
        Self {
            shares: Shares::new(5, 20),
            send_timeout: Duration::from_secs(10),
            coalesce: Duration::ZERO,
            subscribe_limiter: None,
            cohorts: Arc::default(),
        }
    }
}

/// The GraphQL protocol a WebSocket request asks for (`Sec-WebSocket-Protocol`), if any.
pub(super) fn requested_protocol(headers: &HeaderMap) -> Option<WebSocketProtocols> {
    use std::str::FromStr;
    headers
        .get(axum::http::header::SEC_WEBSOCKET_PROTOCOL)?
        .to_str()
        .ok()?
        .split(',')
        .find_map(|p| WebSocketProtocols::from_str(p.trim()).ok())
}

/// Upgrades `GET /graphql` to a GraphQL WebSocket, once its `Authorization` header (if any)
/// verifies and the client has a socket to spare.
pub(super) async fn upgrade(
    upgrade: WebSocketUpgrade,
    protocol: WebSocketProtocols,
    app: &AppState,
    address: IpAddr,
    headers: &HeaderMap,
) -> axum::response::Response {
    let request_id = headers
        .get(super::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let signed_in = match signed_in(app, headers, &request_id).await {
        Ok(signed_in) => signed_in,
        Err(unauthorized) => {
            let payer = Payer { address, bytes: 0 };
            let media = MediaType::Json;
            return charge_refused(app, media, &request_id, payer, unauthorized).await;
        }
    };
    let connection = match Connection::open(app, address, signed_in) {
        Ok(connection) => Arc::new(connection),
        Err(full) => {
            metric::WEBSOCKETS_REFUSED.counter(&[]).increment(1);
            let refusal = Refusal {
                status: StatusCode::TOO_MANY_REQUESTS,
                code: "TOO_MANY_SOCKETS",
                message: format!("{full}: close one before opening another"),
            };
            return transport::refusal(MediaType::Json, &refusal, &request_id);
        }
    };
    let executor = SubscriptionsOnly::new(app, connection.clone());
    let limiter = app.options.rate_limiter.clone();
    let init = Init::new(app.api.auth.clone(), connection, limiter);
    // The socket's task holds the schema (its executor), and the store with it: a stopping
    // server waits for it as for a cohort (`Cohorts::track`).
    let tracked = app.options.websocket.cohorts.track();
    upgrade
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS)
        // Clients send small messages (a subscribe, a pong); tungstenite's defaults (a 128 KiB
        // read buffer, messages up to 64 MiB) would cost each idle socket far more memory than
        // its subscriptions do.
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(MESSAGE_BYTES)
        .max_message_size(MESSAGE_BYTES)
        .max_frame_size(MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            socket::serve(socket, protocol, executor, init).await;
            drop(tracked);
        })
}

/// The viewer of the upgrade's `Authorization` header, verified like any request's: a token
/// that does not verify is refused with 401 and a GraphQL error body, before the upgrade.
async fn signed_in(
    app: &AppState,
    headers: &HeaderMap,
    request_id: &str,
) -> Result<Option<init::SignedIn>, axum::response::Response> {
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let verified = match value.to_str() {
        Ok(value) => init::verify(&app.api.auth, value).await,
        Err(_) => Some(Err(crate::auth::TokenError::NotBearer)),
    };
    verified.transpose().map_err(|error| {
        metric::AUTH_REFUSALS.counter(&[]).increment(1);
        tracing::info!(request_id, reason = %error, "bearer token refused on a websocket upgrade");
        let refusal = Refusal {
            status: StatusCode::UNAUTHORIZED,
            code: "UNAUTHENTICATED",
            message: error.to_string(),
        };
        let mut response = transport::refusal(MediaType::Json, &refusal, request_id);
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer error=\"invalid_token\""),
        );
        response
    })
}
