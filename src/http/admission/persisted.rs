//! The hook of persisted documents (`crate::persisted`) in the request path: before a request
//! is checked, it reads the request's `documentId` or `extensions.persistedQuery`, puts the
//! text they name in `query` (whose parse `documents` keeps, pinned for trusted documents), or
//! answers why nothing runs. A text sent with its hash is registered once the request ran,
//! validated and paid for from its client's budget: an attacker cannot fill the store for
//! free, and a document that does not validate is never stored.
//!
//! A request without either (and without `--require-trusted-documents`) costs two lookups in
//! empty maps here.

use std::any::TypeId;

use axum::http::StatusCode;
use axum::response::Response;

use crate::graphql::{Budget, bytes_floor};
use crate::http::AppState;
use crate::http::transport::{self, DocumentId, MediaType, Refusal};
use crate::persisted::{Asked, Refused, Registered, Resolved};
use crate::telemetry::metric;

/// Puts the text the request names in its `query`; `Ok(Some(hash))` when the text it sent is
/// to be registered under `hash` once it passes its check ([`register`]).
pub(in crate::http) async fn resolve(
    app: &AppState,
    request: &mut async_graphql::Request,
    media: MediaType,
    request_id: &str,
) -> Result<Option<String>, Response> {
    let persisted = &app.persisted;
    if request.extensions.is_empty() && request.data.is_empty() && !persisted.require_trusted() {
        return Ok(None);
    }
    let document_id = request
        .data
        .get(&TypeId::of::<DocumentId>())
        .and_then(|id| id.downcast_ref::<DocumentId>())
        .map(|id| id.0.as_str());
    let asked = Asked {
        query: &request.query,
        document_id,
        persisted_query: request.extensions.get("persistedQuery"),
    };
    match persisted.resolve(asked).await {
        Ok(Resolved::AsSent) => Ok(None),
        Ok(Resolved::Register(hash)) => Ok(Some(hash)),
        Ok(Resolved::Stored(text)) => {
            request.query = text.to_string();
            Ok(None)
        }
        Err(refused) => Err(refusal(&refused, media, request_id)),
    }
}

/// Registers the request's text under its hash (`registration`, from [`resolve`]) once the
/// request ran: only when it passed validation and its budget paid for it, so a client whose
/// budget is spent registers nothing ([`keep`] says what else it pays).
pub(in crate::http) async fn register(
    app: &AppState,
    registration: Option<(String, String)>,
    budget: &Budget,
) {
    let Some((hash, text)) = registration else {
        return;
    };
    if budget.checked().is_some_and(|c| c.refused().is_none()) {
        keep(app, budget, &hash, &text).await;
    }
}

/// Keeps `text` under `hash` for the client of `budget`, which pays for the bytes it stores
/// ([`bytes_floor`] of the text, beyond what its request paid to run) and spends one of its
/// registrations of the hour (`--rate-limit-registrations`). A text this server keeps already
/// costs nothing more. Why: a registration is a write that others' servers hold for a day, and
/// a text that ran for free (`{ __typename }` padded to 64 KiB) registered for free, so one
/// connection filled Redis at 18 MB a second (issue 42, item 4).
pub(in crate::http) async fn keep(app: &AppState, budget: &Budget, hash: &str, text: &str) {
    if app.persisted.keeps(hash) {
        return;
    }
    if budget.spend_more(bytes_floor(text.len())).await.is_err() {
        tracing::debug!(
            bytes = text.len(),
            "a persisted query's client could not pay to register it"
        );
        return;
    }
    if app.persisted.register(budget.client(), hash, text).await == Registered::OverLimit {
        tracing::debug!(client = %budget.client(), "a client registered its share of persisted queries this hour");
    }
}

/// The answer to a refused request, `no-store`. A missing or unsupported automatic persisted
/// query answers 200 under either media type: Apollo Client and urql read its error and send
/// the text (Apollo's protocol; under `application/graphql-response+json` a 400 would also do,
/// but some clients treat a 4xx as a network error and never retry).
fn refusal(refused: &Refused, media: MediaType, request_id: &str) -> Response {
    let status = match refused {
        Refused::NotFound | Refused::NotSupported => StatusCode::OK,
        _ => StatusCode::BAD_REQUEST,
    };
    metric::PERSISTED_REFUSALS
        .counter(&[("code", refused.code())])
        .increment(1);
    let refusal = Refusal {
        status,
        code: refused.code(),
        message: refused.to_string(),
    };
    transport::refusal(media, &refusal, request_id)
}
