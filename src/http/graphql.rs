//! The `/graphql` handlers: request ids, limits, the `cost` extension, codes on every error,
//! metrics and one structured log line per request.

use std::sync::Arc;
use std::time::Instant;

use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, OperationType};
use async_graphql::{ErrorExtensionValues, Value};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::transport::{self, MediaType, Refusal};
use super::{AppState, REQUEST_ID, limits};
use crate::auth::{Auth, TokenError, Viewer};
use crate::graphql::{RequestMeta, field_errors};

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

pub(super) async fn post(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let request_id = request_id(&headers);
    let media = match transport::negotiate(&headers) {
        Ok(media) => media,
        Err(refusal) => return transport::refusal(MediaType::Json, &refusal, &request_id),
    };
    match transport::post_request(&headers, body, app.options.max_body_bytes).await {
        Ok(request) => execute(&app, &headers, request_id, media, request, false).await,
        Err(refusal) => transport::refusal(media, &refusal, &request_id),
    }
}

/// GraphQL over GET, for cacheable queries. Mutations are refused: a GET must not write
/// (a link or a prefetch could trigger it).
pub(super) async fn get(
    State(app): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let request_id = request_id(&headers);
    let media = match transport::negotiate(&headers) {
        Ok(media) => media,
        Err(refusal) => return transport::refusal(MediaType::Json, &refusal, &request_id),
    };
    match transport::get_request(&uri) {
        Ok(request) => execute(&app, &headers, request_id, media, request, true).await,
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

/// Whether the operation the request selects is a mutation.
fn is_mutation(document: &ExecutableDocument, operation_name: Option<&str>) -> bool {
    let is = |ty: OperationType| ty == OperationType::Mutation;
    match &document.operations {
        DocumentOperations::Single(op) => is(op.node.ty),
        DocumentOperations::Multiple(ops) => match operation_name {
            Some(name) => ops.get(name).is_some_and(|op| is(op.node.ty)),
            None => ops.values().any(|op| is(op.node.ty)),
        },
    }
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

async fn execute(
    app: &AppState,
    headers: &HeaderMap,
    request_id: String,
    media: MediaType,
    mut request: async_graphql::Request,
    over_get: bool,
) -> Response {
    let started = Instant::now();
    // Parse once, for the checks async-graphql does not make; the request keeps the document,
    // so execution does not parse it again, and a text seen before is not parsed at all
    // (`documents`). A syntax error is left to async-graphql to report in its usual shape.
    let operation_name = request.operation_name.clone();
    let document = app.documents.get(&request.query).or_else(|| {
        let parsed = Arc::new(async_graphql::parser::parse_query(&request.query).ok()?);
        app.documents.insert(&request.query, &parsed);
        Some(parsed)
    });
    let (mutation, aliases, depth) = match &document {
        Some(document) => (
            is_mutation(document, operation_name.as_deref()),
            limits::count_aliases(document),
            limits::depth(document),
        ),
        None => (false, 0, 0),
    };
    if let Some(document) = &document {
        request.set_parsed_query(ExecutableDocument::clone(document));
    }
    let kind = if mutation { "mutation" } else { "query" };
    if over_get && mutation {
        let mut response = refuse(
            media,
            StatusCode::METHOD_NOT_ALLOWED,
            "BAD_REQUEST",
            "mutations must be sent with POST".into(),
            &request_id,
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if aliases > app.options.max_aliases {
        let message = format!(
            "the query declares {aliases} aliases; at most {} are allowed",
            app.options.max_aliases
        );
        return refuse(
            media,
            media.status(false),
            "GRAPHQL_VALIDATION_FAILED",
            message,
            &request_id,
        );
    }
    if depth > app.options.max_depth {
        let message = match depth {
            usize::MAX => "the query's fragment spreads nest too deeply".to_owned(),
            depth => format!(
                "the query nests fields {depth} deep; at most {} are allowed",
                app.options.max_depth
            ),
        };
        return refuse(
            media,
            media.status(false),
            "GRAPHQL_VALIDATION_FAILED",
            message,
            &request_id,
        );
    }
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
    if let Some(viewer) = viewer {
        request = request.data(viewer);
    }

    let operation = operation_name.clone().unwrap_or_default();
    let meta = Arc::new(RequestMeta::new(request_id.clone()));
    let execution = app.schema.execute(request.data(meta.clone()));
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
    let cost = meta.cost();
    let elapsed = started.elapsed();
    let outcome = if response.errors.is_empty() {
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
        items_read = cost.items_read,
        store_queries = cost.store_queries,
        index_calls = cost.index_calls,
        elapsed_ms = elapsed.as_millis() as u64,
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
    let cache_control = if over_get && response.errors.is_empty() {
        super::GET_QUERY_CACHE_CONTROL
    } else {
        "no-store"
    };
    response = response.extension("cost", Value::Object(cost_value));
    let mut http = transport::respond(media, &response);
    http.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    http
}
