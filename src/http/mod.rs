//! HTTP: routes, request ids, CORS, caching headers, health and readiness, and the server's
//! lifecycle.
//!
//! `serve` takes a bound listener and a shutdown future, so tests run the real server on port 0
//! and stop it at will (STYLE 9). Nothing here knows how pages are computed.
//!
//! Caching: POST responses are `no-store` (mutations, and queries clients chose not to cache).
//! Error-free queries over GET may be cached briefly ([`GET_QUERY_CACHE_CONTROL`]): long enough
//! for a CDN or browser to absorb bursts of identical reads, short enough that a new comment
//! shows up within seconds. GET responses with errors are `no-store`.

mod cors;
mod playground;

pub use cors::CorsOrigins;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_graphql::parser::types::{DocumentOperations, OperationType};
use async_graphql::{ErrorExtensionValues, Value};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::graphql::{ApiSchema, ApiState, RequestMeta};
use crate::index::PageIndex;
use crate::store::CommentStore;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// Largest request body accepted; GraphQL documents are small, this is generous.
const MAX_BODY_BYTES: usize = 256 * 1024;
/// `Cache-Control` of an error-free query over GET; see the module's comment.
pub const GET_QUERY_CACHE_CONTROL: &str = "public, max-age=5";

/// What the handlers share.
#[derive(Clone)]
struct AppState {
    schema: ApiSchema,
    api: Arc<ApiState>,
}

/// The application's routes; `cors` says which browser origins may call them.
pub fn router(schema: ApiSchema, api: Arc<ApiState>, cors: &CorsOrigins) -> Router {
    let mut router = Router::new()
        .route("/graphql", get(graphql_get).post(graphql_post))
        .route("/", get(playground::page))
        .route("/playground/{name}", get(playground::asset))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(AppState { schema, api });
    if let Some(layer) = cors.layer(REQUEST_ID) {
        router = router.layer(layer);
    }
    router
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let request_id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or_default();
                tracing::info_span!("http", method = %request.method(), path = request.uri().path(), request_id)
            }),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, UlidRequestId))
}

/// Serves `router` on `listener` until `shutdown` completes, then lets in-flight requests end.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
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

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

async fn graphql_post(
    State(app): State<AppState>,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> Response {
    execute(
        &app,
        request_id(&headers),
        request.into_inner(),
        Method::Post,
    )
    .await
}

/// GraphQL over GET, for cacheable queries. Mutations are refused: a GET must not write
/// (a link or a prefetch could trigger it).
async fn graphql_get(
    State(app): State<AppState>,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> Response {
    let request = request.into_inner();
    if is_mutation(&request) {
        let body = serde_json::json!({ "errors": [{
            "message": "mutations must be sent with POST",
            "extensions": { "code": "BAD_REQUEST" },
        }]});
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "POST"), (header::CACHE_CONTROL, "no-store")],
            Json(body),
        )
            .into_response();
    }
    execute(&app, request_id(&headers), request, Method::Get).await
}

/// How the request came, which decides how long its answer may be cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Post,
}

fn is_mutation(request: &async_graphql::Request) -> bool {
    let Ok(document) = async_graphql::parser::parse_query(&request.query) else {
        return false;
    };
    let is = |ty: OperationType| ty == OperationType::Mutation;
    match &document.operations {
        DocumentOperations::Single(op) => is(op.node.ty),
        DocumentOperations::Multiple(ops) => match &request.operation_name {
            Some(name) => ops.get(name.as_str()).is_some_and(|op| is(op.node.ty)),
            None => ops.values().any(|op| is(op.node.ty)),
        },
    }
}

async fn execute(
    app: &AppState,
    request_id: String,
    request: async_graphql::Request,
    method: Method,
) -> Response {
    let started = Instant::now();
    let operation = request.operation_name.clone().unwrap_or_default();
    let meta = Arc::new(RequestMeta::new(request_id.clone()));
    let mut response = app.schema.execute(request.data(meta.clone())).await;
    // Parse and validation errors (depth, complexity, unknown fields) come from async-graphql
    // without a code; every error a client sees carries one.
    for error in &mut response.errors {
        let extensions = error
            .extensions
            .get_or_insert_with(ErrorExtensionValues::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
        }
    }
    let cost = meta.cost();
    tracing::info!(
        request_id,
        operation,
        errors = response.errors.len(),
        items_read = cost.items_read,
        store_queries = cost.store_queries,
        index_calls = cost.index_calls,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "graphql request"
    );
    let mut cost_value = async_graphql::indexmap::IndexMap::new();
    cost_value.insert(
        async_graphql::Name::new("itemsRead"),
        Value::from(cost.items_read),
    );
    cost_value.insert(
        async_graphql::Name::new("storeQueries"),
        Value::from(cost.store_queries),
    );
    cost_value.insert(
        async_graphql::Name::new("indexCalls"),
        Value::from(cost.index_calls),
    );
    let cache_control = if method == Method::Get && response.errors.is_empty() {
        GET_QUERY_CACHE_CONTROL
    } else {
        "no-store"
    };
    response = response.extension("cost", Value::Object(cost_value));
    let mut http = GraphQLResponse::from(response).into_response();
    http.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    http
}

/// Ready when both backends answer within two seconds.
async fn readyz(State(app): State<AppState>) -> Response {
    let timeout = Duration::from_secs(2);
    let (store, index) = tokio::join!(
        tokio::time::timeout(timeout, app.api.engine.store().ping()),
        tokio::time::timeout(timeout, app.api.engine.index().ping()),
    );
    let status = |ok: bool| if ok { "ok" } else { "unavailable" };
    let (store_ok, index_ok) = (matches!(store, Ok(Ok(()))), matches!(index, Ok(Ok(()))));
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
