//! Subscriptions over WebSocket at `GET /graphql`: the `graphql-transport-ws` protocol (and the
//! legacy `graphql-ws` one), spoken by async-graphql, with what it leaves to us:
//!
//! - **the upgrade**: an `Authorization` header is verified like any request's (a bad token is
//!   refused with 401 and a GraphQL error body, before the upgrade), and the client (the
//!   token's subject, else its address through `--trusted-proxies`) may hold at most
//!   `--max-sockets-per-client` sockets (429 beyond);
//! - **`connection_init`** (`init`): a bearer token in its payload is verified like the header
//!   and then names the client; the socket closes at the token's `exp`;
//! - **each `subscribe`** ([`SubscriptionsOnly`]): the request check HTTP requests get (`check`:
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

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_graphql::http::WebSocketProtocols;
use async_graphql::{Data, Executor, Request, Response, ServerError};
use axum::extract::ws::WebSocketUpgrade;
use axum::http::{HeaderMap, StatusCode};
use futures::stream::{BoxStream, StreamExt};
use tokio_util::sync::CancellationToken;

pub use self::cohort::Cohorts;
use self::cohort::{Asking, Ended, Key, Live, Members};
use self::init::{Connection, Init};
pub use self::socket::SLOW_SUBSCRIBER_CLOSE;
use super::check::{Checked, Rejection, Transport, check_request};
use super::documents::{DocumentCache, MAX_TEXT_BYTES};
use super::failures::charge_refused;
use super::payer::Payer;
use super::transport::{self, MediaType, Refusal};
use super::{AppState, HttpOptions};
use crate::graphql::cohort::Member;
use crate::graphql::field_errors::OutputTypes;
use crate::graphql::{ApiSchema, ApiState, Budget, ClientAddress};
use crate::live::shares::{Kind, Share, Shares};
use crate::ratelimit::{Charge, ClientKey, RateLimiter};
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
            subscribe_limiter: None,
            cohorts: Arc::default(),
        }
    }
}

/// Runs subscriptions of one connection, after the check HTTP requests get.
#[derive(Clone)]
struct SubscriptionsOnly {
    schema: ApiSchema,
    /// What prices a subscription before it runs: the API's settings and limits, the schema's
    /// field types (`graphql::pricing`).
    api: Arc<ApiState>,
    types: Arc<OutputTypes>,
    options: Arc<HttpOptions>,
    documents: Arc<DocumentCache>,
    /// Who the connection is, and its shares.
    connection: Arc<Connection>,
    /// Subscriptions this connection holds now.
    open: Arc<AtomicUsize>,
    /// This server's live feed, which cohorts listen to.
    hub: crate::live::Hub,
    /// This connection's members gone live, until the relay learns their ids.
    members: Arc<Members>,
}

/// A response of one error with `code`.
fn error_response(code: &'static str, message: String) -> Response {
    let mut error = ServerError::new(message, None);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("code", code);
    error.extensions = Some(extensions);
    Response::from_errors(vec![error])
}

/// Why a `subscribe` was refused before it ran: its code and message.
struct Refused(&'static str, String);

impl Executor for SubscriptionsOnly {
    async fn execute(&self, _request: Request) -> Response {
        let only = Rejection::OnlySubscriptions;
        error_response(only.code(), only.to_string())
    }

    /// A `subscribe`, from its first byte to its last event. It pays like an HTTP request
    /// (issue 42, item 3: refused messages were free, and five sockets of one client sending
    /// them kept 1.3 cores busy): a long document its budget could not pay for is refused
    /// unparsed; a message refused by the checks, or whose document does not parse or
    /// validate, pays the failure floor; one that runs pays its price, and at least its bytes.
    fn execute_stream(
        &self,
        mut request: Request,
        session_data: Option<Arc<Data>>,
    ) -> BoxStream<'static, Response> {
        let this = self.clone();
        let client = this.connection.client();
        let bytes = message_bytes(&request);
        let limiter = this.options.rate_limiter.clone();
        let budget = Arc::new(Budget::new(limiter, client.clone(), 0).for_bytes(bytes));
        // A document short enough to be kept parsed is admitted at once, in the order its
        // messages came (the per-connection limit counts them in that order); a longer one
        // (parsed every time) only once its budget is known to afford the parse, as over HTTP.
        let early =
            (request.query.len() <= MAX_TEXT_BYTES).then(|| this.admit(&mut request, &client));
        async_stream::stream! {
            let admitted = match early {
                Some(admitted) => admitted,
                None => {
                    if let Some(checked) = budget.unaffordable(bytes).await {
                        yield refusal_of(&budget, &checked);
                        return;
                    }
                    this.admit(&mut request, &client)
                }
            };
            let (held, share, checked) = match admitted {
                Ok(admitted) => admitted,
                Err(Refused(code, message)) => {
                    let checked = budget.charge_failure(bytes, 0).await;
                    match budget.refusal_error(&checked, None) {
                        Some(limited) => yield Response::from_errors(vec![limited]),
                        None => yield error_response(code, message),
                    }
                    return;
                }
            };
            let mut stream = this.run(request, session_data, &client, &budget, checked, (held, share));
            let mut first = true;
            while let Some(response) = stream.next().await {
                // A document that did not parse or validate was refused before anything ran;
                // it pays at least the failure floor, as over HTTP.
                if std::mem::take(&mut first) && response.data == async_graphql::Value::Null && !response.errors.is_empty() {
                    let paid = budget.checked().map_or(0, |c| c.cost);
                    budget.charge_failure(bytes, paid).await;
                }
                yield response;
            }
        }
        .boxed()
    }
}

/// A `subscribe`'s size for its bytes floor: its document and its variables as JSON.
fn message_bytes(request: &Request) -> usize {
    let variables = serde_json::to_vec(&request.variables).map_or(0, |v| v.len());
    request.query.len() + variables
}

/// The `RATE_LIMITED` answer of a budget that `checked` found spent.
fn refusal_of(budget: &Budget, checked: &crate::graphql::Checked) -> Response {
    let error = budget.refusal_error(checked, None);
    Response::from_errors(error.into_iter().collect())
}

impl SubscriptionsOnly {
    /// An admitted subscription, run: the client's rate of opening subscriptions, its price
    /// (charged before it runs), then its events, until it ends or goes live in its cohort.
    fn run(
        &self,
        request: Request,
        session_data: Option<Arc<Data>>,
        client: &ClientKey,
        budget: &Arc<Budget>,
        checked: Checked,
        holding: (Held, Share),
    ) -> BoxStream<'static, Response> {
        let settings = self.api.engine.settings();
        let price = checked
            .parsed
            .map(|p| p.price(&self.types, &request, settings));
        let (budget, client) = (budget.clone(), client.clone());
        let api = self.api.clone();
        let (member, joined) = self.member(&request);
        let request = request
            .data(budget.clone())
            .data(member.clone())
            .data(ClientAddress(self.connection.address()));
        let limiter = self.options.websocket.subscribe_limiter.clone();
        let schema = self.schema.clone();
        let members = self.members.clone();
        let subscription = async_stream::stream! {
            let _held = holding;
            if let Some(limiter) = limiter {
                let verdict = limiter.check(&client.scoped("subscribe"), Charge { cost: 1, writes: 0 }).await;
                if let Some(refused) = verdict.refused {
                    metric::RATE_LIMITED.counter(&[("limit", "subscribe")]).increment(1);
                    let wait = refused.retry_after.map_or(60, crate::graphql::retry_after_seconds);
                    yield error_response("RATE_LIMITED", format!("this client opens subscriptions faster than it may: retry in {wait} s"));
                    return;
                }
            }
            // Its price, charged before it runs (a document the walk cannot follow is
            // async-graphql's to refuse).
            let admitted = match price {
                Some(price) => budget.admit(price, &api, None).await,
                None => Ok(()),
            };
            if let Err(refusal) = admitted {
                yield Response::from_errors(vec![refusal]);
                return;
            }
            let session = session_data.unwrap_or_default();
            for await mut response in schema.execute_stream_with_session_data(request, session) {
                coded(&mut response);
                yield response;
            }
            // Gone live: the cohort's frames take over (the socket's writer sends them), this
            // stream holds the slot until then and says why they ended.
            let Some(mut ticket) = member.ticket() else {
                return;
            };
            let Some(joined) = take(&joined) else {
                return;
            };
            let gone = CancellationToken::new();
            let _gone = gone.clone().drop_guard();
            let (ended, end) = tokio::sync::oneshot::channel();
            let replayed = std::mem::take(&mut ticket.replayed);
            yield members.park(Live { joined, replayed, gone, ended });
            if let Ok(Ended::Slow(missed)) = end.await {
                metric::SUBSCRIPTIONS_DROPPED_SLOW.counter(&[]).increment(1);
                tracing::info!(missed_changes = missed, "slow subscriber closed");
                yield error_response(
                    "SLOW_SUBSCRIBER",
                    format!("this subscription fell {missed} changes behind and was closed: resubscribe with `after:` set to the newest cursor you hold"),
                );
            }
        };
        subscription.boxed()
    }
}

/// An admitted subscription's slot, its share and what the request check found.
type Admitted = (Held, Share, Checked);

type Joining = Arc<std::sync::Mutex<Option<cohort::Joined>>>;

fn take(joining: &Joining) -> Option<cohort::Joined> {
    joining.lock().unwrap_or_else(|p| p.into_inner()).take()
}

impl SubscriptionsOnly {
    /// What a subscription passes before it runs: the safelist, the request's checks, this
    /// connection's limit and this client's share; with the check's findings, to price. `Err`:
    /// the refusal to answer with.
    fn admit(&self, request: &mut Request, client: &ClientKey) -> Result<Admitted, Refused> {
        // `--require-trusted-documents` holds for subscriptions too (`crate::persisted`).
        let persisted = &self.options.persisted;
        if persisted.require_trusted() && !persisted.is_trusted(&request.query) {
            let not_trusted = crate::persisted::Refused::NotInSafelist;
            return Err(Refused(not_trusted.code(), not_trusted.to_string()));
        }
        let check = check_request(
            request,
            Transport::WebSocket,
            &self.documents,
            &self.options,
        );
        let checked = match check {
            Ok(checked) => checked,
            Err(rejection) => return Err(Refused(rejection.code(), rejection.to_string())),
        };
        let max = self.options.max_subscriptions_per_connection;
        if self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return Err(Refused(
                "TOO_MANY_SUBSCRIPTIONS",
                format!("this connection holds its maximum of {max} subscriptions"),
            ));
        }
        let held = Held(self.open.clone());
        let share = match self
            .options
            .websocket
            .shares
            .take(client, Kind::Subscription)
        {
            Ok(share) => share,
            Err(full) => return Err(Refused("TOO_MANY_SUBSCRIPTIONS", full.to_string())),
        };
        Ok((held, share, checked))
    }

    /// The member role of `request`'s execution, which joins its cohort when the resolver says,
    /// and where the joined cohort is left.
    fn member(&self, request: &Request) -> (Arc<Member>, Joining) {
        let viewer = self.connection.viewer();
        let key = Key::of(request, viewer.as_ref(), &self.connection.client());
        let asking = Asking {
            viewer,
            address: self.connection.address(),
        };
        let variables = request.variables.clone();
        let joining = Joining::default();
        let (cohorts, schema, hub) = (
            self.options.websocket.cohorts.clone(),
            self.schema.clone(),
            self.hub.clone(),
        );
        let left = joining.clone();
        let member = Member::new(move || {
            let joined = cohorts.join(&key, &schema, &hub, variables.clone(), asking.clone());
            *left.lock().unwrap_or_else(|p| p.into_inner()) = Some(joined);
        });
        (member, joining)
    }
}

/// Gives every error a code: async-graphql's parse and validation errors come without one (the
/// HTTP handler does the same).
fn coded(response: &mut Response) {
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
        }
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
    let executor = SubscriptionsOnly {
        schema: app.schema.clone(),
        api: app.api.clone(),
        types: app.types.clone(),
        options: app.options.clone(),
        documents: app.documents.clone(),
        connection: connection.clone(),
        open: Arc::default(),
        hub: app.api.hub.clone(),
        members: Arc::default(),
    };
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
