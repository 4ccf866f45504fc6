//! `GET /me/export` with `Authorization: Bearer <token>`: the signed-in person's data as one
//! JSON document (GDPR arts. 15 and 20; [`crate::privacy::export`]), streamed as the store is
//! read, so its size costs the server no memory. `401 UNAUTHENTICATED` without a verified token
//! (always under `--auth off`, where nobody is signed in). `no-store`: neither a browser nor a
//! CDN keeps a copy. Each export costs the person [`EXPORT_PRICE`] points of their cost budget
//! (`429 RATE_LIMITED` past it), so nobody makes the store read their data over and over.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use std::net::IpAddr;
use std::sync::Arc;

use super::AppState;
use super::admission::payer;
use super::transport::{self, MediaType, Refusal};
use crate::clock::now_ms;
use crate::graphql::Budget;
use crate::ratelimit::ClientKey;

/// What one export costs its person's cost budget: a minute of the default budget
/// (`--rate-limit-cost`), whatever the size of their data (which their writes bounded).
pub(super) const EXPORT_PRICE: u64 = 1_000;

/// Bytes the export may write ahead of the client reading them.
const BUFFER: usize = 64 * 1024;

pub(super) async fn export(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let request_id = headers
        .get(super::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let viewer = match payer::viewer(&app, &headers, MediaType::Json, &request_id).await {
        Ok(Some(viewer)) => viewer,
        Ok(None) => {
            let refusal = Refusal {
                status: StatusCode::UNAUTHORIZED,
                code: "UNAUTHENTICATED",
                message: "an export is of the signed-in person: send `Authorization: Bearer \
                          <token>` (the server must verify tokens, --auth jwt)"
                    .into(),
            };
            return transport::refusal(MediaType::Json, &refusal, &request_id);
        }
        Err(refused) => return refused,
    };
    let client = ClientKey::new(Some(&viewer.sub), IpAddr::from([0, 0, 0, 0]));
    let budget = Budget::new(app.options.rate_limiter.clone(), client, 0);
    if let Some(refused) = budget.charge_cached(EXPORT_PRICE).await.refused() {
        let wait = refused.retry_after.map_or("later".to_owned(), |d| {
            format!("in {} s", d.as_secs().max(1))
        });
        let refusal = Refusal {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: "RATE_LIMITED",
            message: format!("an export costs {EXPORT_PRICE} points of the budget: retry {wait}"),
        };
        return transport::refusal(MediaType::Json, &refusal, &request_id);
    }
    let store = app.api.engine.store().clone();
    let (mut writer, reader) = tokio::io::duplex(BUFFER);
    tokio::spawn(async move {
        match crate::privacy::export(&store, &viewer.sub, now_ms(), &mut writer).await {
            Ok(summary) => tracing::info!(
                request_id,
                comments = summary.comments,
                helpful_votes = summary.helpful_votes,
                reports = summary.reports,
                "person's data exported"
            ),
            // The client sees the document end early (invalid JSON), never a wrong one.
            Err(error) => tracing::warn!(request_id, %error, "a person's export stopped"),
        }
    });
    let mut response = Response::new(Body::from_stream(tokio_util::io::ReaderStream::new(reader)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"my-data.json\""),
    );
    response
}
