//! HTTP: routes, request ids, CORS, caching headers, health and readiness, and the server's
//! lifecycle.
//!
//! `serve` takes a bound listener and a shutdown future, so tests run the real server on port 0
//! and stop it at will (STYLE 9). Its sockets are `connections`' business: caps, and timeouts
//! for connections that wait. Nothing here knows how pages are computed.
//!
//! What a GraphQL request passes before anything runs, over either transport, is
//! `admission`'s. Pages drawn from the API in process (the storefront at `/demo`) are the
//! caller's: [`router`] routes them beside its own and lends them an [`InProcessApi`], and
//! imports nothing of theirs.
//!
//! Rate limits: the server is served with each connection's peer address, from which
//! `client_address` tells the client (`--trusted-proxies`), whose budgets `graphql::budget`
//! checks.
//!
//! Caching: POST responses are `no-store` (mutations, and queries clients chose not to cache).
//! Error-free anonymous queries over GET may be cached briefly ([`GET_QUERY_CACHE_CONTROL`]):
//! long enough for a CDN or browser to absorb bursts of identical reads, short enough that a new
//! comment shows up within seconds. A response that is one client's own is `private`, and GET
//! responses with errors are `no-store` (`caching` decides).
//!
//! Compression: bodies above [`COMPRESS_ABOVE_BYTES`] are sent brotli, gzip or zstd as the
//! client's `Accept-Encoding` prefers, in that order among equal weights (`compression`);
//! WebSocket frames are not compressed (no
//! permessage-deflate: compressing secrets beside attacker-chosen text leaks them, CRIME-style,
//! and each socket would hold its own compression window in memory).

mod body_limit;
mod client_address;
mod connections;
mod cors;
pub mod embedded;
mod in_process;
mod me_export;
mod playground;
mod websocket;

pub use admission::check::Transport;
pub use admission::offline_check::{OfflineCheck, Outcome};
pub use caching::{NO_STORE, RATELIMIT, RATELIMIT_POLICY};
pub use client_address::{TrustedProxies, client_address};
pub use compression::COMPRESS_ABOVE_BYTES;
pub use connections::{BodyTimeout, ConnectionOptions, Timeouts};
pub use cors::CorsOrigins;
pub use graphql::Peer;
pub use in_process::InProcessApi;
pub use response_cache::{COST as COST_HEADER, MAX_TAGS_BYTES, ResponseCacheOptions};
pub use websocket::{SLOW_SUBSCRIBER_CLOSE, WebSocketLimits};

mod admission;
mod caching;
mod compression;
mod graphql;
mod readiness;
mod request_id;
mod response_cache;
mod transport;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower::util::MapRequestLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::graphql::field_errors::OutputTypes;
use crate::graphql::variables::InputTypes;
use crate::graphql::{ApiSchema, ApiState};
use crate::persisted::PersistedDocuments;
use crate::ratelimit::RateLimiter;

pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Limits of the HTTP layer.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// A request still running after this answers `REQUEST_TIMEOUT` (its backend calls are
    /// cancelled).
    pub request_timeout: Duration,
    /// Requests executing at once; more are refused at once with 503, not queued.
    pub max_concurrent_requests: usize,
    /// Aliased fields one document may select (per fragment expansion).
    pub max_aliases: usize,
    /// Fields one document may select (per fragment expansion), checked before validation.
    pub max_selections: usize,
    /// Deepest nesting of fields accepted (see `admission::limits::depth`).
    pub max_depth: usize,
    /// Largest request body accepted (413 and a `PAYLOAD_TOO_LARGE` error beyond: `body_limit`).
    pub max_body_bytes: usize,
    /// Browser origins allowed to call the API.
    pub cors: CorsOrigins,
    /// Renders `/metrics`; `None` serves no metrics (404), as when they have a listener of
    /// their own (`metrics_router`).
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// Each client's budgets; `None` limits nothing.
    pub rate_limiter: Option<RateLimiter>,
    /// Peers whose `X-Forwarded-For` names the client.
    pub trusted_proxies: TrustedProxies,
    /// Subscriptions open at once on this server.
    pub max_subscriptions: usize,
    /// Subscriptions one WebSocket connection may hold at once.
    pub max_subscriptions_per_connection: usize,
    /// How long a WebSocket may wait before its `connection_init`.
    pub connection_init_timeout: Duration,
    /// How often a WebSocket is pinged (a client silent for two intervals is closed).
    pub websocket_keepalive: Duration,
    /// Fires when the server shuts down: WebSockets close with 1001 ("going away").
    pub shutdown: tokio_util::sync::CancellationToken,
    /// What one client may hold and do over WebSockets.
    pub websocket: WebSocketLimits,
    /// `Cache-Control` of a response a shared cache may keep (`--cache-max-age`,
    /// `--cache-stale-while-revalidate`).
    pub public_cache_control: HeaderValue,
    /// The response cache and the CDN tags (`response_cache`).
    pub response_cache: ResponseCacheOptions,
    /// Automatic persisted queries and trusted documents (`crate::persisted`).
    pub persisted: Arc<PersistedDocuments>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            max_concurrent_requests: 512,
            max_aliases: 30,
            max_selections: 1_000,
            max_depth: 12,
            max_body_bytes: 64 * 1024,
            max_subscriptions: 10_000,
            max_subscriptions_per_connection: 10,
            connection_init_timeout: Duration::from_secs(10),
            websocket_keepalive: Duration::from_secs(15),
            shutdown: tokio_util::sync::CancellationToken::new(),
            cors: CorsOrigins::None,
            metrics: None,
            rate_limiter: None,
            trusted_proxies: TrustedProxies::default(),
            websocket: WebSocketLimits::default(),
            public_cache_control: HeaderValue::from_static(caching::PUBLIC),
            response_cache: ResponseCacheOptions::default(),
            persisted: Arc::new(PersistedDocuments::new(
                None,
                false,
                PERSISTED_QUERIES_BYTES,
                None,
                64 * 1024,
            )),
        }
    }
}

/// `Cache-Control` of a response a shared cache may keep for `max_age` seconds, and serve
/// stale `stale_while_revalidate` more while it asks again (RFC 5861).
pub fn public_cache_control(max_age: u64, stale_while_revalidate: u64) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "public, max-age={max_age}, stale-while-revalidate={stale_while_revalidate}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(caching::PUBLIC))
}

/// `Cache-Control` of an error-free anonymous query over GET; see the module's comment.
pub const GET_QUERY_CACHE_CONTROL: &str = caching::PUBLIC;

/// What the handlers share, behind one `Arc`: axum clones the state for every request, and one
/// reference count to touch is cheaper than ten (−0.2 to −2.2 % of the server's CPU per request
/// in `bench/ab/run.sh`, now `cargo bench-tool ab run`: bench/results/ab/appstate-arc.txt).
struct AppState {
    schema: ApiSchema,
    /// The schema for texts that passed validation before (`graphql::variables` says why).
    validated_schema: ApiSchema,
    /// The schema for plain texts validated before (`graphql::plain_document`).
    validated_plain_schema: ApiSchema,
    api: Arc<ApiState>,
    options: Arc<HttpOptions>,
    in_flight: Arc<tokio::sync::Semaphore>,
    documents: Arc<admission::documents::DocumentCache>,
    /// Automatic persisted queries and trusted documents (`persisted`).
    persisted: Arc<PersistedDocuments>,
    /// The schema's field types, for completing field errors (`graphql::field_errors`) and
    /// pricing (`graphql::pricing`).
    types: Arc<OutputTypes>,
    /// The schema's input types, which variables of validated texts are held to (`None`: every
    /// request is validated in full).
    inputs: Option<InputTypes>,
    /// `None` when `--response-cache-bytes` is 0.
    response_cache: Option<Arc<response_cache::ResponseCache>>,
    /// `/readyz`'s shared checks.
    readiness: Arc<readiness::Readiness>,
}

/// Parsed query documents kept (see `documents`): far more than the distinct queries of an app.
const DOCUMENT_CACHE_ENTRIES: usize = 512;

/// Bytes of automatic persisted queries kept in memory by default
/// (`--persisted-queries-bytes`): thousands of client queries.
pub const PERSISTED_QUERIES_BYTES: usize = 8 * 1024 * 1024;

/// `GET /graphql`: a WebSocket for subscriptions when the request asks to upgrade, a query
/// otherwise.
async fn graphql_get(
    State(app): State<Arc<AppState>>,
    upgrade: Result<
        axum::extract::ws::WebSocketUpgrade,
        axum::extract::ws::rejection::WebSocketUpgradeRejection,
    >,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> axum::response::Response {
    let Ok(upgrade) = upgrade else {
        return graphql::get(State(app), peer, headers, uri).await;
    };
    let Some(protocol) = websocket::requested_protocol(&headers) else {
        return (
            StatusCode::BAD_REQUEST,
            "a GraphQL WebSocket needs `Sec-WebSocket-Protocol: graphql-transport-ws` (or the legacy `graphql-ws`)",
        )
            .into_response();
    };
    let peer = peer.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |p| p.0.0.ip());
    let address = client_address(peer, &headers, &app.options.trusted_proxies);
    websocket::upgrade(upgrade, protocol, &app, address, &headers).await
}

impl AppState {
    /// The state of `schema`'s handlers: the schema's types read from its SDL, the caches, the
    /// concurrency limit.
    fn new(schema: ApiSchema, api: Arc<ApiState>, options: HttpOptions) -> Self {
        let in_flight = Arc::new(tokio::sync::Semaphore::new(options.max_concurrent_requests));
        let response_cache =
            response_cache::ResponseCache::new(&options.response_cache, api.engine.index().clone())
                .map(Arc::new);
        let sdl = schema.sdl();
        let types = OutputTypes::from_sdl(&sdl).unwrap_or_else(|e| {
            // Our own SDL always parses; without types every failed field still becomes a null.
            tracing::error!(error = %e, "the schema's SDL did not parse");
            OutputTypes::default()
        });
        let inputs = InputTypes::from_sdl(&sdl)
            .inspect_err(|e| {
                // Our own SDL always parses; without input types every request is validated in
                // full (no text is taken for validated).
                tracing::error!(error = %e, "the schema's SDL did not parse");
            })
            .ok();
        let validated_schema =
            crate::graphql::build_schema_for_validated_texts(schema.surface(), api.clone());
        let validated_plain_schema =
            crate::graphql::build_schema_for_validated_plain_texts(schema.surface(), api.clone());
        let persisted = Arc::clone(&options.persisted);
        let trusted = persisted.trusted().into_iter().flat_map(|m| m.documents());
        let documents = admission::documents::DocumentCache::new(DOCUMENT_CACHE_ENTRIES)
            .with_pinned(trusted.map(|d| (&d.text, &d.document)));
        Self {
            schema,
            validated_schema,
            validated_plain_schema,
            api,
            options: Arc::new(options),
            in_flight,
            documents: Arc::new(documents),
            persisted,
            types: Arc::new(types),
            inputs,
            response_cache,
            readiness: Arc::default(),
        }
    }
}

/// The application's routes, and the pages `pages` routes beside them (the storefront at
/// `/demo`), under the same layers: `pages` is lent the API to draw its pages from, so this
/// module knows nothing of them. A function pointer, not a generic: a generic `router` is
/// instantiated in its caller, and every handler it names was compiled a second time there
/// (+4.8 MB of machine code in the release binary).
pub fn router(
    schema: ApiSchema,
    api: Arc<ApiState>,
    options: HttpOptions,
    pages: fn(InProcessApi) -> Router,
) -> Router {
    let trusted_proxies = options.trusted_proxies.clone();
    let max_body_bytes = options.max_body_bytes;
    // Browsers show a cross-origin page only the headers it is allowed to read.
    let cors = options.cors.layer([
        REQUEST_ID,
        header::RETRY_AFTER,
        caching::RATELIMIT,
        caching::RATELIMIT_POLICY,
        header::ETAG,
        response_cache::COST,
    ]);
    let state = Arc::new(AppState::new(schema, api, options));
    let pages = pages(InProcessApi::new(state.clone()));
    let mut router = Router::new()
        .route("/graphql", get(graphql_get).post(graphql::post))
        .route("/", get(playground::page))
        .route("/playground/{name}", get(playground::asset))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/me/export", get(me_export::export))
        .with_state(state)
        .merge(pages);
    // Inside CORS, so a browser's page may read a 413 (`body_limit`).
    router = router.layer(body_limit::BodyLimitLayer {
        max_bytes: max_body_bytes,
    });
    if let Some(layer) = cors {
        router = router.layer(layer);
    }
    router
        .layer(compression::layer())
        .layer(compression::GuardLayer)
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let request_id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or_default();
                tracing::info_span!("http", method = %request.method(), path = request.uri().path(), request_id)
            }),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, UlidRequestId))
        // tower's `MapRequestLayer`, not axum's `map_request`: a plain function on the request,
        // without the boxed future and router clone axum's costs each request.
        .layer(MapRequestLayer::new(
            move |request: Request<axum::body::Body>| {
                request_id::keep_only_trusted(request, &trusted_proxies)
            },
        ))
}

/// Serves `router` on `listener` until `shutdown` completes, then lets in-flight requests end;
/// each connection under `connections`' timeouts and caps (see `connections`). Handlers see
/// each connection's peer address (`ConnectInfo`): the rate limits key by it.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    connections: ConnectionOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    connections::serve(listener, router, connections, shutdown).await
}

/// Request ids are ULIDs: unique, and sortable by time in logs.
#[derive(Clone, Copy, Debug)]
struct UlidRequestId;

impl MakeRequestId for UlidRequestId {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&ulid::Ulid::new().to_string())
            .ok()
            .map(RequestId::new)
    }
}

/// Ready when both backends answer within two seconds.
async fn readyz(State(app): State<Arc<AppState>>) -> Response {
    let answer = app.readiness.check(&app.api).await;
    let status = |ok: bool| if ok { "ok" } else { "unavailable" };
    let (store_ok, index_ok) = (answer.store, answer.index);
    let code = if store_ok && index_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        Json(serde_json::json!({ "store": status(store_ok), "index": status(index_ok) })),
    )
        .into_response()
}

/// `/metrics` alone, for its own listener (`--metrics-addr`): the metrics say how the server
/// is used and by how much, which is the operator's business, not the public's.
pub fn metrics_router(handle: Option<metrics_exporter_prometheus::PrometheusHandle>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let handle = handle.clone();
            async move { render_metrics(handle.as_ref()) }
        }),
    )
}

/// Prometheus text format.
async fn metrics(State(app): State<Arc<AppState>>) -> Response {
    render_metrics(app.options.metrics.as_ref())
}

fn render_metrics(handle: Option<&metrics_exporter_prometheus::PrometheusHandle>) -> Response {
    match handle {
        Some(handle) => {
            handle.run_upkeep();
            (
                [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                handle.render(),
            )
                .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
