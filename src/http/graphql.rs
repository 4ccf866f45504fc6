//! The `/graphql` handlers: request ids, limits, the `cost` extension, codes on every error,
//! metrics and one structured log line per request.

use std::sync::Arc;
use std::time::Instant;

use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, OperationType};
use async_graphql::{ErrorExtensionValues, Value};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{AppState, REQUEST_ID, limits};
use crate::graphql::RequestMeta;

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
    request: GraphQLRequest,
) -> Response {
    execute(&app, request_id(&headers), request.into_inner(), false).await
}

/// GraphQL over GET, for cacheable queries. Mutations are refused: a GET must not write
/// (a link or a prefetch could trigger it).
pub(super) async fn get(
    State(app): State<AppState>,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> Response {
    execute(&app, request_id(&headers), request.into_inner(), true).await
}

/// A refusal before execution, in the GraphQL response shape.
fn refuse(status: StatusCode, code: &str, message: String, request_id: &str) -> Response {
    let body = serde_json::json!({ "errors": [{
        "message": message,
        "extensions": { "code": code, "requestId": request_id },
    }]});
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
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

async fn execute(
    app: &AppState,
    request_id: String,
    mut request: async_graphql::Request,
    over_get: bool,
) -> Response {
    let started = Instant::now();
    // Parse once, for the checks async-graphql does not make; the request keeps the document,
    // so execution does not parse it again, and a text seen before is not parsed at all
    // (`documents`). A syntax error is left to async-graphql to report in its usual shape.
    let operation_name = request.operation_name.clone();
    let document = app.documents.get(&request.query).or_else(|| {
        let parsed = async_graphql::parser::parse_query(&request.query).ok()?;
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
    if let Some(document) = document {
        request.set_parsed_query(document);
    }
    let kind = if mutation { "mutation" } else { "query" };
    if over_get && mutation {
        let mut response = refuse(
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
            StatusCode::OK,
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
            StatusCode::OK,
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

    let operation = operation_name.unwrap_or_default();
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
            StatusCode::GATEWAY_TIMEOUT,
            "REQUEST_TIMEOUT",
            message,
            &request_id,
        );
    };
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
    let mut http = GraphQLResponse::from(response).into_response();
    http.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    http
}
