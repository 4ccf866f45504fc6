//! Who pays for a request: the viewer its bearer token verifies to, and the budget it spends
//! (the viewer's when a token says who it is, else the client address's). Used by the handlers
//! (`graphql`) and by the refusals that charge a failed request (`failures`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::auth::{Auth, TokenError, Viewer};
use crate::graphql::Budget;
use crate::http::AppState;
use crate::http::transport::{self, MediaType, Refusal};
use crate::ratelimit::ClientKey;
use crate::telemetry::metric;

/// The verified viewer of a request under `--auth jwt`: `None` without an `Authorization`
/// header, a refusal when it holds a token that does not verify (even on a read: a client
/// should learn at once that its token went bad, not on its next write). Under `--auth off` the
/// header is not looked at. The refusal is not charged here: `failures::viewer` charges it.
pub(in crate::http) async fn viewer(
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
        metric::AUTH_REFUSALS.counter(&[]).increment(1);
        tracing::info!(request_id, reason = %error, "bearer token refused");
        let refusal = Refusal {
            status: StatusCode::UNAUTHORIZED,
            code: "UNAUTHENTICATED",
            message: error.to_string(),
        };
        let mut response = transport::refusal(media, &refusal, request_id);
        // RFC 6750 §3: the scheme, and that the token (not the request) is what failed.
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer error=\"invalid_token\""),
        );
        response
    })
}

/// Who pays for a request when no token says: its client's address; and the request's size,
/// which it pays for at least (`graphql::bytes_floor`).
#[derive(Clone, Copy, Debug)]
pub(in crate::http) struct Payer {
    pub address: IpAddr,
    pub bytes: usize,
}

/// The request's budget check: the viewer's budgets when a token says who it is, else its
/// address's. The budgets are checked after validation, before execution (`graphql::budget`).
pub(in crate::http) fn budget(
    app: &AppState,
    viewer: Option<&Viewer>,
    payer: Payer,
    writes: usize,
) -> Arc<Budget> {
    let client = ClientKey::new(viewer.map(|v| v.sub.as_str()), payer.address);
    let budget = Budget::new(app.options.rate_limiter.clone(), client, writes as u64);
    Arc::new(budget.for_bytes(payer.bytes))
}
