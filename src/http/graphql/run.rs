//! Running a checked request, within `--request-timeout-ms`: the variables of a text validated
//! before held to their types (`graphql::variables`), its price admitted against the limits and
//! its budget (`Budget::admit`), and async-graphql's execution (validating in full until a
//! request of the text passes); then what async-graphql leaves out of its response (nulls for
//! failed fields, codes on every error, no schema description).

use std::sync::Arc;

use async_graphql::ErrorExtensionValues;
use async_graphql::parser::types::ExecutableDocument;
use axum::http::StatusCode;
use axum::response::Response;

use super::{Call, refuse};
use crate::graphql::field_errors::operation;
use crate::graphql::raw_json::RawJson;
use crate::graphql::variables::InputTypes;
use crate::graphql::{
    BatchReads, Budget, RequestMeta, field_errors, invalid_request, schema_description,
};
use crate::http::admission::check::Checked;
use crate::http::admission::failures;
use crate::telemetry::metric;

/// Runs the request within `--request-timeout-ms` (a timeout is answered at once, as the
/// `Err`), after its variables (for a text validated before) and its price passed (a refusal is
/// the response, unrun), and completes what async-graphql leaves out of its response.
pub(super) async fn run(
    call: &Call<'_>,
    request: async_graphql::Request,
    meta: &Arc<RequestMeta>,
    budget: &Budget,
    checked: &Checked,
) -> Result<async_graphql::Response, Response> {
    let app = call.app;
    let parsed = checked.parsed.as_ref();
    let document = parsed.map(|p| &*p.document);
    // A text that passed validation before runs on the schema that does not validate it again,
    // once its variables are held to their types (`graphql::variables`).
    let validated = app
        .inputs
        .as_ref()
        .filter(|_| parsed.is_some_and(|p| p.validated.get()));
    let execution = async {
        if let Some(inputs) = validated
            && let Err(refusal) = variables(inputs, document, &request)
        {
            return async_graphql::Response::from_errors(vec![refusal]);
        }
        if let Err(refusal) = admit(call, &request, meta, budget, checked).await {
            return async_graphql::Response::from_errors(vec![refusal]);
        }
        // The request's lookups batch their reads in its own loader, which reports to its
        // `meta`.
        let loader = BatchReads::loader(app.api.clone(), meta.clone());
        // (No `Budget` in the data: only a subscription's replay spends from it, and
        // subscriptions run over WebSocket.)
        // Its response is written by `transport::respond`, which writes resolvers' JSON text
        // (`graphql::raw_json`).
        let request = request.data(meta.clone()).data(loader).data(RawJson);
        let schema = match validated {
            Some(_) if parsed.is_some_and(|p| p.validated.plain()) => &app.validated_plain_schema,
            Some(_) => &app.validated_schema,
            None => &app.schema,
        };
        let response = schema.execute(request).await;
        if let Some(parsed) = parsed.filter(|_| validated.is_none())
            && super::transport::executed(&response)
        {
            parsed.validated.set(&parsed.document);
        }
        response
    };
    let Ok(mut response) = tokio::time::timeout(app.options.request_timeout, execution).await
    else {
        return Err(timed_out(call));
    };
    if budget.checked().is_none() && super::transport::executed(&response) {
        // The price walk found invalid what validation let run: a bug to fix there. The
        // request still pays the failure floor (`respond`), and the resolvers' item cap held.
        tracing::warn!(
            request_id = call.request_id,
            operation = call.operation_name.as_deref().unwrap_or_default(),
            "a request ran without a price"
        );
    }
    if let Some(parsed) = parsed {
        let operation = call.operation_name.as_deref();
        reshape(&app.types, parsed, operation, &mut response);
    }
    // Parse and validation errors (unknown fields, wrong arguments) come from async-graphql
    // without a code; every error a client sees carries one.
    for error in &mut response.errors {
        let extensions = error
            .extensions
            .get_or_insert_with(ErrorExtensionValues::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
        }
    }
    failures::cap(&mut response.errors);
    Ok(response)
}

/// Holds the request's variables to their declared types (`graphql::variables`): `Err` is the
/// request error to answer with, as validation would have.
fn variables(
    inputs: &InputTypes,
    document: Option<&ExecutableDocument>,
    request: &async_graphql::Request,
) -> Result<(), async_graphql::ServerError> {
    let operation = document.and_then(|d| operation(d, request.operation_name.as_deref()));
    let Some(operation) = operation else {
        return Ok(());
    };
    inputs
        .check(operation, &request.variables)
        .map_err(invalid_request)
}

/// Prices the request (`graphql::pricing`) and puts the price through [`Budget::admit`]. A
/// document that does not parse, or that the price walk cannot follow, is not charged here:
/// async-graphql's validation refuses it, and it pays the failure floor (`respond`).
async fn admit(
    call: &Call<'_>,
    request: &async_graphql::Request,
    meta: &RequestMeta,
    budget: &Budget,
    checked: &Checked,
) -> Result<(), async_graphql::ServerError> {
    let app = call.app;
    let Some(parsed) = &checked.parsed else {
        return Ok(());
    };
    let price = parsed.price(&app.types, request, app.api.engine.settings());
    budget.admit(price, &app.api, Some(meta)).await
}

/// The answer to a request still running at its timeout (its backend calls are cancelled).
fn timed_out(call: &Call<'_>) -> Response {
    let (kind, timeout) = (call.kind, call.app.options.request_timeout);
    metric::GRAPHQL_REQUESTS
        .counter(&[("kind", kind), ("outcome", "timeout")])
        .increment(1);
    tracing::warn!(
        request_id = call.request_id,
        operation = call.operation_name.as_deref().unwrap_or_default(),
        kind,
        timeout_ms = timeout.as_millis() as u64,
        "graphql request timed out"
    );
    let message = format!("the request took longer than {} ms", timeout.as_millis());
    refuse(
        call.media,
        StatusCode::GATEWAY_TIMEOUT,
        "REQUEST_TIMEOUT",
        message,
        &call.request_id,
    )
}

/// The executed `response` of `parsed` put in the shape the specification gives it, where
/// async-graphql leaves it otherwise (`graphql::field_errors` says why and how).
fn reshape(
    types: &field_errors::OutputTypes,
    parsed: &crate::http::admission::documents::Parsed,
    operation: Option<&str>,
    response: &mut async_graphql::Response,
) {
    let document = &parsed.document;
    // A failed field's key is left out; the specification wants a null there, propagated
    // through non-null positions.
    field_errors::complete(types, document, operation, response);
    // An object's fields are written as they finish, not as they were selected.
    parsed
        .key_order
        .apply(document, operation, &mut response.data);
    schema_description::blank(document, operation, response);
}
