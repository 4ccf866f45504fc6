//! The `/graphql` handlers: request ids, limits, rate limits, the `cost` extension, codes on
//! every error, metrics and one structured log line per request.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use async_graphql::indexmap::IndexMap;
use async_graphql::{ErrorExtensionValues, Name, Value};
use axum::Extension;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::check::{Rejection, Transport, check_request};
use super::transport::{self, MediaType, Refusal};
use super::{AppState, REQUEST_ID, client_address};
use crate::auth::{Auth, TokenError, Viewer};
use crate::graphql::{Budget, RequestMeta, field_errors, retry_after_seconds};
use crate::pagination::PageStats;
use crate::ratelimit::{ClientKey, Throttle};

/// The peer's address, as `serve` records it for each connection (`None` when the router is
/// served some other way: such requests share the budget of `0.0.0.0`).
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

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
    State(app): State<AppState>,
    peer: Peer,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let request_id = request_id(&headers);
    let media = match transport::negotiate(&headers) {
        Ok(media) => media,
        Err(refusal) => return transport::refusal(MediaType::Json, &refusal, &request_id),
    };
    match transport::post_request(&headers, body, app.options.max_body_bytes).await {
        Ok(request) => {
            let address = client_ip(&app, peer, &headers);
            execute(&app, &headers, request_id, media, request, false, address).await
        }
        Err(refusal) => transport::refusal(media, &refusal, &request_id),
    }
}

/// GraphQL over GET, for cacheable queries. Mutations are refused: a GET must not write
/// (a link or a prefetch could trigger it).
pub(super) async fn get(
    State(app): State<AppState>,
    peer: Peer,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let request_id = request_id(&headers);
    let media = match transport::negotiate(&headers) {
        Ok(media) => media,
        Err(refusal) => return transport::refusal(MediaType::Json, &refusal, &request_id),
    };
    match transport::get_request(&uri) {
        Ok(request) => {
            let address = client_ip(&app, peer, &headers);
            execute(&app, &headers, request_id, media, request, true, address).await
        }
        Err(refusal) => transport::refusal(media, &refusal, &request_id),
    }
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

/// The verified viewer of a request under `--auth jwt`: `None` without an `Authorization`
/// header, a refusal when it holds a token that does not verify (even on a read: a client
/// should learn at once that its token went bad, not on its next write). Under `--auth off` the
/// header is not looked at.
async fn viewer(
    app: &AppState,
    headers: &HeaderMap,
    media: MediaType,
    request_id: &str,
) -> Result<Option<Viewer>, Response> {
    let Auth::Jwt(verifier) = &app.api.auth else {
        return Ok(None);
    };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let verified = match value.to_str() {
        Ok(value) => verifier.verify_header(value).await,
        Err(_) => Err(TokenError::NotBearer),
    };
    verified.map(Some).map_err(|error| {
        metrics::counter!("dynapage_auth_refusals_total").increment(1);
        tracing::info!(request_id, reason = %error, "bearer token refused");
        let mut response = refuse(
            media,
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            error.to_string(),
            request_id,
        );
        // RFC 6750 §3: the scheme, and that the token (not the request) is what failed.
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer error=\"invalid_token\""),
        );
        response
    })
}

/// A request the check refused, in the GraphQL response shape.
fn reject(media: MediaType, rejection: &Rejection, request_id: &str) -> Response {
    let status = match rejection {
        Rejection::MutationOverGet => StatusCode::METHOD_NOT_ALLOWED,
        _ => media.status(false),
    };
    let mut response = refuse(
        media,
        status,
        rejection.code(),
        rejection.to_string(),
        request_id,
    );
    if *rejection == Rejection::MutationOverGet {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    response
}

async fn execute(
    app: &AppState,
    headers: &HeaderMap,
    request_id: String,
    media: MediaType,
    mut request: async_graphql::Request,
    over_get: bool,
    address: IpAddr,
) -> Response {
    let started = Instant::now();
    let transport = if over_get {
        Transport::Get
    } else {
        Transport::Post
    };
    let checked = match check_request(&mut request, transport, &app.documents, &app.options) {
        Ok(checked) => checked,
        Err(rejection) => return reject(media, &rejection, &request_id),
    };
    let operation_name = request.operation_name.clone();
    let document = checked.document;
    let writes = checked.writes;
    let kind = if checked.mutation {
        "mutation"
    } else {
        "query"
    };
    let Ok(_permit) = app.in_flight.clone().try_acquire_owned() else {
        metrics::counter!("dynapage_requests_shed_total").increment(1);
        let message = format!(
            "the server is at its limit of {} concurrent requests; retry shortly",
            app.options.max_concurrent_requests
        );
        let mut response = refuse(
            media,
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            message,
            &request_id,
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };

    let viewer = match viewer(app, headers, media, &request_id).await {
        Ok(viewer) => viewer,
        Err(refusal) => return refusal,
    };
    let client = ClientKey::new(viewer.as_ref().map(|v| v.sub.as_str()), address);
    if let Some(viewer) = viewer {
        request = request.data(viewer);
    }

    let operation = operation_name.clone().unwrap_or_default();
    let meta = Arc::new(RequestMeta::new(request_id.clone()));
    // The budgets are checked after validation, before execution (`graphql::budget`).
    let budget = Arc::new(Budget::new(
        app.options.rate_limiter.clone(),
        client,
        writes as u64,
    ));
    let execution = app
        .schema
        .execute(request.data(meta.clone()).data(budget.clone()));
    let Ok(mut response) = tokio::time::timeout(app.options.request_timeout, execution).await
    else {
        metrics::counter!("dynapage_graphql_requests_total", "kind" => kind, "outcome" => "timeout").increment(1);
        tracing::warn!(
            request_id,
            operation,
            kind,
            timeout_ms = app.options.request_timeout.as_millis() as u64,
            "graphql request timed out"
        );
        let message = format!(
            "the request took longer than {} ms",
            app.options.request_timeout.as_millis()
        );
        return refuse(
            media,
            StatusCode::GATEWAY_TIMEOUT,
            "REQUEST_TIMEOUT",
            message,
            &request_id,
        );
    };
    // async-graphql leaves a failed field's key out; the specification wants a null there,
    // propagated through non-null positions (`graphql::field_errors` says why and how).
    if let Some(document) = &document {
        field_errors::complete(
            &app.types,
            document,
            operation_name.as_deref(),
            &mut response,
        );
    }
    // Parse and validation errors (complexity, unknown fields) come from async-graphql
    // without a code; every error a client sees carries one.
    for error in &mut response.errors {
        let extensions = error
            .extensions
            .get_or_insert_with(ErrorExtensionValues::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
        }
    }
    let checked = budget.checked();
    let refused = checked.and_then(|c| c.refused());
    // A request that failed before the check spent nothing; its response still shows the budget.
    let throttle = match checked {
        Some(checked) => checked.verdict.and_then(|v| v.cost),
        None => budget.peek().await.and_then(|v| v.cost),
    };
    let cost = meta.cost();
    let elapsed = started.elapsed();
    let outcome = if refused.is_some() {
        "rate_limited"
    } else if response.errors.is_empty() {
        "ok"
    } else {
        "error"
    };
    metrics::counter!("dynapage_graphql_requests_total", "kind" => kind, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("dynapage_graphql_request_duration_seconds", "kind" => kind)
        .record(elapsed.as_secs_f64());
    tracing::info!(
        request_id,
        operation,
        kind,
        errors = response.errors.len(),
        cost = checked.map(|c| c.cost),
        rate_limited = refused.map(|r| r.limit.as_str()),
        items_read = cost.items_read,
        store_queries = cost.store_queries,
        index_calls = cost.index_calls,
        elapsed_ms = elapsed.as_millis() as u64,
        "graphql request"
    );
    let cache_control = if over_get && response.errors.is_empty() {
        super::GET_QUERY_CACHE_CONTROL
    } else {
        "no-store"
    };
    let requested = checked.map(|c| c.cost);
    let actual = requested.filter(|_| refused.is_none());
    response = response.extension("cost", cost_extension(requested, actual, throttle, cost));
    let mut http = transport::respond(media, &response);
    http.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
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

/// `extensions.cost`: the budget in Shopify's shape (`requestedQueryCost`: the complexity, null
/// when the request failed before it was priced; `actualQueryCost`: what it took from the
/// budget, the same number, null when it did not run; `throttleStatus`: the budget after it,
/// null when cost is not limited), beside what the request read.
fn cost_extension(
    requested: Option<u64>,
    actual: Option<u64>,
    throttle: Option<Throttle>,
    read: PageStats,
) -> Value {
    let mut cost = IndexMap::with_capacity(6);
    let number = |n: Option<u64>| n.map_or(Value::Null, Value::from);
    cost.insert(Name::new("requestedQueryCost"), number(requested));
    cost.insert(Name::new("actualQueryCost"), number(actual));
    let throttle = throttle.map_or(Value::Null, |t| {
        let mut status = IndexMap::with_capacity(3);
        status.insert(
            Name::new("maximumAvailable"),
            Value::from(t.maximum_available),
        );
        status.insert(
            Name::new("currentlyAvailable"),
            Value::from(t.currently_available),
        );
        let rate = t.restore_rate;
        let rate = if rate.fract() == 0.0 {
            Value::from(rate as u64)
        } else {
            Value::from(rate)
        };
        status.insert(Name::new("restoreRate"), rate);
        Value::Object(status)
    });
    cost.insert(Name::new("throttleStatus"), throttle);
    cost.insert(Name::new("itemsRead"), Value::from(read.items_read));
    cost.insert(Name::new("storeQueries"), Value::from(read.store_queries));
    cost.insert(Name::new("indexCalls"), Value::from(read.index_calls));
    Value::Object(cost)
}
