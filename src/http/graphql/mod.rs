//! The `/graphql` handlers over HTTP: request ids, the request check (`check`, shared with
//! WebSocket subscriptions), the concurrency limit, bearer tokens, rate limits, timeouts, the
//! `cost` extension, codes on every error, metrics and one structured log line per request.

mod admit;
mod run;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::Extension;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::admission::check::Transport;
use super::admission::payer::{Payer, budget};
use super::admission::{cost, failures, persisted};
use super::caching::Cacheability;
use super::response_cache::{self, Asker, Pending, from_cache};
use super::transport::{self, MediaType, Refusal};
use super::{AppState, REQUEST_ID, client_address};
use crate::auth::Auth;
use crate::graphql::{
    Budget, ClientAddress, RequestMeta, VIEWER_FOUND_HELPFUL, retry_after_seconds,
};
use crate::pagination::PageStats;
use crate::ratelimit::Refused;
use crate::telemetry::metric;
use admit::{Admitted, admit};
use run::run;

/// The peer's address, as `serve` records it for each connection (`None` when the router is
/// served some other way: such requests share the budget of `0.0.0.0`).
pub type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The client's address: the peer's, or what `X-Forwarded-For` says a trusted proxy saw.
/// Whose budgets a request spends is decided once its token is verified (`execute`): the
/// token's subject, else this address.
fn client_ip(app: &AppState, peer: Peer, headers: &HeaderMap) -> IpAddr {
    let peer = peer.map_or(
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        |Extension(ConnectInfo(a))| a.ip(),
    );
    client_address(peer, headers, &app.options.trusted_proxies)
}

pub(super) async fn post(
    State(app): State<Arc<AppState>>,
    peer: Peer,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let read = transport::post_request(&headers, body, app.options.max_body_bytes);
    answer(&app, peer, &headers, read, false).await
}

/// GraphQL over GET, for cacheable queries. Mutations are refused: a GET must not write
/// (a link or a prefetch could trigger it).
pub(super) async fn get(
    State(app): State<Arc<AppState>>,
    peer: Peer,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let read = async { transport::get_request(&uri) };
    answer(&app, peer, &headers, read, true).await
}

/// A request over POST or GET: the response's media type negotiated first (a refusal is
/// answered in JSON when none fits), then the request `read` (its body or its URL), then run.
async fn answer(
    app: &AppState,
    peer: Peer,
    headers: &HeaderMap,
    read: impl Future<Output = Result<transport::Read, transport::Unread>>,
    over_get: bool,
) -> Response {
    let request_id = request_id(headers);
    let media = match transport::negotiate(headers) {
        Ok(media) => media,
        Err(refusal) => return transport::refusal(MediaType::Json, &refusal, &request_id),
    };
    match read.await {
        Ok((request, size)) => {
            let address = client_ip(app, peer, headers);
            let at = Origin {
                address,
                over_get,
                size,
            };
            execute(app, headers, request_id, media, request, at).await
        }
        Err(unread) => {
            let refused = transport::refusal(media, &unread.refusal, &request_id);
            if unread.bytes == 0 {
                return refused;
            }
            let address = client_ip(app, peer, headers);
            let at = Payer {
                address,
                bytes: unread.bytes,
            };
            failures::charge_refused(app, media, &request_id, at, refused).await
        }
    }
}

/// A query the server asks of itself to draw a page (`InProcessApi`), run exactly as the same
/// query sent over `GET /graphql` by the page's client would be: the client's address pays (its
/// budgets, the complexity price, the failure floor), under the same limits, concurrency cap,
/// timeout and response cache, so a page costs what its query costs and no less. Only the
/// headers in `forwarded` reach the request (the page's own are not the API's: no
/// `Authorization`, and an `If-None-Match` only as the page translated it). Answers in
/// `application/json`.
pub(super) async fn on_behalf_of(
    app: &AppState,
    peer: Peer,
    headers: &HeaderMap,
    forwarded: &HeaderMap,
    request: async_graphql::Request,
) -> Response {
    let request_id = request_id(headers);
    let at = Origin {
        address: client_ip(app, peer, headers),
        over_get: true,
        size: request.query.len(),
    };
    execute(app, forwarded, request_id, MediaType::Json, request, at).await
}

/// Where a request came from and how: its client's address, whether over GET, and its size on
/// the wire (`transport::Read`).
#[derive(Clone, Copy, Debug)]
struct Origin {
    address: IpAddr,
    over_get: bool,
    size: usize,
}

/// A refusal before execution, in the GraphQL response shape.
fn refuse(
    media: MediaType,
    status: StatusCode,
    code: &'static str,
    message: String,
    request_id: &str,
) -> Response {
    let refusal = Refusal {
        status,
        code,
        message,
    };
    transport::refusal(media, &refusal, request_id)
}

/// One request on its way through [`execute`]'s steps: what each step needs to answer, log
/// and count it.
struct Call<'a> {
    app: &'a AppState,
    request_id: String,
    media: MediaType,
    over_get: bool,
    /// The request carried `Authorization`, or asked the votes of its address (`--auth off`):
    /// its response is never public (`caching`).
    authorization: bool,
    started: Instant,
    operation_name: Option<String>,
    /// The metrics label: `mutation` or `query`.
    kind: &'static str,
    /// The request's size (on the wire, or the document it runs when that is longer), for the
    /// floor every request pays and the larger one a failed request pays.
    bytes: usize,
}

/// A GraphQL request over HTTP, in its steps: parse and check it (the check WebSocket
/// subscriptions get too), admit it (the concurrency limit, the viewer, its budget), run it,
/// respond.
async fn execute(
    app: &AppState,
    headers: &HeaderMap,
    request_id: String,
    media: MediaType,
    mut request: async_graphql::Request,
    at: Origin,
) -> Response {
    let Origin {
        address, over_get, ..
    } = at;
    let started = Instant::now();
    // Each step that may wait is boxed. Why: a future is as large as the largest future it
    // awaits, and axum and tower move a handler's future whole, twice a request; these steps
    // await Redis, the JWKS and async-graphql's execution, kilobytes each. Boxed, each is
    // allocated only while it runs (BENCHMARKS.md, "Cost of the abuse checks").
    let admitted = admit(app, headers, &request_id, media, &mut request, at).await;
    let Admitted {
        registration,
        checked,
        payer,
    } = match admitted {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let Ok(_permit) = app.in_flight.clone().try_acquire_owned() else {
        return shed(app, media, &request_id);
    };
    let (personal, own_votes) = personal(app, headers, &request.query);
    let asker = Asker::new(over_get, payer, &request_id, registration.as_deref());
    let bypass = checked.mutation || own_votes;
    let pending = match Box::pin(from_cache(app, headers, &request, media, bypass, asker)).await {
        Ok(pending) => pending,
        Err(hit) => return hit,
    };
    let viewer = match Box::pin(failures::viewer(app, headers, media, &request_id, payer)).await {
        Ok(viewer) => viewer,
        Err(refusal) => return refusal,
    };
    let budget = budget(app, viewer.as_ref(), payer, checked.writes);
    if let Some(viewer) = viewer {
        request = request.data(viewer);
    }
    let call = Call {
        app,
        request_id,
        media,
        over_get,
        authorization: personal,
        started,
        operation_name: request.operation_name.clone(),
        kind: operation_kind(checked.mutation),
        bytes: payer.bytes,
    };
    let meta = Arc::new(RequestMeta::new(call.request_id.clone()));
    let request = request.data(ClientAddress(address));
    let registration = registration.map(|hash| (hash, request.query.clone()));
    match Box::pin(run(&call, request, &meta, &budget, &checked)).await {
        Ok(response) => {
            // Only a request that passed validation registers its text (a price is charged
            // before validation runs).
            let registration = registration.filter(|_| transport::executed(&response));
            Box::pin(persisted::register(app, registration, &budget)).await;
            Box::pin(respond(&call, response, &meta, &budget, pending)).await
        }
        Err(timed_out) => timed_out,
    }
}

/// Whether the answer is one client's own (`caching`): the request carried `Authorization`, or
/// asks the viewer's votes under `--auth off`, where the client's address is the voter (the
/// second value: such an answer is also kept out of the response cache).
fn personal(app: &AppState, headers: &HeaderMap, query: &str) -> (bool, bool) {
    let own_votes = matches!(app.api.auth, Auth::Off) && query.contains(VIEWER_FOUND_HELPFUL);
    (
        headers.contains_key(header::AUTHORIZATION) || own_votes,
        own_votes,
    )
}

/// The transport a request came by, for its checks.
fn transport(over_get: bool) -> Transport {
    if over_get {
        Transport::Get
    } else {
        Transport::Post
    }
}

/// The metrics label of an operation.
fn operation_kind(mutation: bool) -> &'static str {
    if mutation { "mutation" } else { "query" }
}

/// A request beyond `--max-concurrent-requests`, refused at once rather than queued.
fn shed(app: &AppState, media: MediaType, request_id: &str) -> Response {
    metric::REQUESTS_SHED.counter(&[]).increment(1);
    let message = format!(
        "the server is at its limit of {} concurrent requests; retry shortly",
        app.options.max_concurrent_requests
    );
    let mut response = refuse(
        media,
        StatusCode::SERVICE_UNAVAILABLE,
        "SERVICE_UNAVAILABLE",
        message,
        request_id,
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The HTTP response to a request that ran: the `cost` extension, its metrics and log line,
/// its caching headers (`caching`, which also decides whether the body may show the budget),
/// and 429 when a budget refused it.
async fn respond(
    call: &Call<'_>,
    response: async_graphql::Response,
    meta: &RequestMeta,
    budget: &Budget,
    pending: Option<Pending>,
) -> Response {
    // A request that failed parsing or validation pays at least the failure floor (less what
    // its price already paid, when it was priced before validation refused it), and is
    // refused like any other when its budget cannot pay that.
    let (checked, response) = match budget.checked() {
        Some(checked) if checked.refused().is_some() || transport::executed(&response) => {
            (checked, response)
        }
        paid => {
            let paid = paid.map_or(0, |checked| checked.cost);
            let checked = budget.charge_failure(call.bytes, paid).await;
            match budget.refusal_error(&checked, Some(&call.request_id)) {
                Some(error) => (checked, async_graphql::Response::from_errors(vec![error])),
                None => (checked, response),
            }
        }
    };
    let refused = checked.refused();
    let throttle = checked.verdict.and_then(|v| v.cost);
    let read = meta.cost();
    let requested = Some(checked.cost);
    record(call, &response, requested, refused.as_ref(), read);
    let actual = requested.filter(|_| refused.is_none());
    let products = meta.products();
    let cacheability = Cacheability {
        over_get: call.over_get,
        error_free: response.errors.is_empty(),
        authorization: call.authorization,
        tags_fit: response_cache::tags_fit(&products),
        throttle,
    };
    let keep = pending.filter(|_| cacheability.error_free && refused.is_none());
    let mut http = match (keep, &call.app.response_cache) {
        // Kept bodies carry no cost: it is in a header (`response_cache` says why).
        (Some(pending), Some(cache)) => {
            let plain = transport::respond(call.media, &response);
            match axum::body::to_bytes(plain.into_body(), usize::MAX).await {
                Ok(body) => {
                    let kept = cache.keep(pending, products.clone(), call.media, body, read);
                    Box::pin(kept).await
                }
                Err(_) => transport::respond(call.media, &response),
            }
        }
        _ => {
            let shown = cacheability.body_throttle();
            let cost = cost::extension(requested, actual, shown, read);
            transport::respond(call.media, &response.extension("cost", cost))
        }
    };
    response_cache::caching_headers(&call.app.options, &cacheability, &mut http, &products);
    if let Some(refused) = refused {
        // 429 under both media types: the GraphQL-over-HTTP specification lets a server answer
        // a status of its own for reasons outside GraphQL, rate limiting among them.
        *http.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        if let Some(wait) = refused.retry_after {
            http.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
    }
    http
}

/// The request's metrics and its one log line.
fn record(
    call: &Call<'_>,
    response: &async_graphql::Response,
    cost: Option<u64>,
    refused: Option<&Refused>,
    read: PageStats,
) {
    let kind = call.kind;
    let elapsed = call.started.elapsed();
    let outcome = if refused.is_some() {
        "rate_limited"
    } else if response.errors.is_empty() {
        "ok"
    } else {
        "error"
    };
    metric::GRAPHQL_REQUESTS
        .counter(&[("kind", kind), ("outcome", outcome)])
        .increment(1);
    metric::GRAPHQL_REQUEST_DURATION
        .histogram(&[("kind", kind)])
        .record(elapsed.as_secs_f64());
    tracing::info!(
        request_id = call.request_id,
        operation = call.operation_name.as_deref().unwrap_or_default(),
        kind,
        errors = response.errors.len(),
        cost,
        rate_limited = refused.map(|r| r.limit.as_str()),
        items_read = read.items_read,
        store_queries = read.store_queries,
        index_calls = read.index_calls,
        elapsed_ms = elapsed.as_millis() as u64,
        "graphql request"
    );
}
