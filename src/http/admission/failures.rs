//! What a failed request costs, and how much of its failure a client is told.
//!
//! A request refused before it runs (by the check of its shape, by parsing or by validation)
//! still made the server work: it pays the failure floor from its client's budget
//! (`graphql::failure_floor`, charged here for the check's refusals and in `graphql::respond`
//! for async-graphql's), and is answered 429 like any other when the budget cannot pay. A long
//! document whose client could not pay its floor is refused before it is parsed
//! ([`refuse_unaffordable`]).
//!
//! An answer served from the response cache ran nothing, but it is not free either: it pays
//! [`charge_cached`] by the bytes it sends (`graphql::cached_answer_price`; a `304` nothing),
//! so a client whose budget is spent is refused hits too, and every hit shows the budget in the
//! `RateLimit` fields.
//!
//! A response carries at most [`MAX_ERRORS`] errors, then one saying how many more were cut.
//! Why: async-graphql reports every validation error it finds, one per unknown field, so a
//! 9.8 kB document of 4,900 unknown fields answered 695 kB of errors (issue 22, item 8): a
//! seventy-fold amplification that costs the server the serialisation and the bandwidth. The
//! first errors say what is wrong; the rest repeat it. The cut applies to every response, so a
//! document of many failing aliased fields is bounded alike (their `null`s stay in `data`).

use std::sync::Arc;

use async_graphql::{ErrorExtensionValues, ServerError};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::check::Rejection;
use super::cost;
use super::documents::MAX_TEXT_BYTES;
use super::payer::{self, Payer, budget};
use crate::auth::Viewer;
use crate::graphql::{Budget, Checked, cached_answer_price, retry_after_seconds};
use crate::http::AppState;
use crate::http::caching::Cacheability;
use crate::http::transport::{self, MediaType};
use crate::pagination::PageStats;
use crate::ratelimit::Throttle;

/// Errors one response carries before the cut.
pub(crate) const MAX_ERRORS: usize = 20;

/// Keeps the first [`MAX_ERRORS`] of `errors` and, if any were cut, appends one error
/// (`TOO_MANY_ERRORS`) that says how many.
pub(crate) fn cap(errors: &mut Vec<ServerError>) {
    let cut = errors.len().saturating_sub(MAX_ERRORS);
    if cut == 0 {
        return;
    }
    errors.truncate(MAX_ERRORS);
    let mut summary = ServerError::new(
        format!("{cut} more errors were cut: only the first {MAX_ERRORS} are reported"),
        None,
    );
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("code", "TOO_MANY_ERRORS");
    summary.extensions = Some(extensions);
    errors.push(summary);
}

/// A request the check refused (its shape, before validation), in the GraphQL response shape
/// with its `cost` extension: charged the failure floor like any request that fails
/// validation, and answered 429 when its budget cannot pay even that.
pub(in crate::http) async fn charge_rejection(
    app: &AppState,
    headers: &HeaderMap,
    media: MediaType,
    rejection: &Rejection,
    request_id: &str,
    at: Payer,
) -> Response {
    let budget = match payer(app, headers, media, request_id, at).await {
        Ok(budget) => budget,
        Err(refusal) => return refusal,
    };
    let checked = budget.charge_failure(at.bytes, 0).await;
    answer(media, &budget, &checked, Some(rejection), request_id)
}

/// What an answer from the response cache costs its client, taken like any request's charge:
/// the price of the `sent` bytes of its body as sent (`None`: a `304`, free). `Err` with the
/// 429 when the budget cannot pay it, else the budget to show in the `RateLimit` fields
/// (`None`: cost is not limited). The cache passes every request with `Authorization` by, so a
/// hit is anonymous and its address pays.
pub(in crate::http) async fn charge_cached(
    app: &AppState,
    media: MediaType,
    request_id: &str,
    at: Payer,
    sent: Option<usize>,
) -> Result<Option<Throttle>, Response> {
    if app.options.rate_limiter.is_none() {
        return Ok(None);
    }
    let budget = budget(app, None, at, 0);
    let points = sent.map_or(0, cached_answer_price);
    let checked = budget.charge_cached(points).await;
    if checked.refused().is_some() {
        return Err(answer(media, &budget, &checked, None, request_id));
    }
    Ok(checked.verdict.and_then(|v| v.cost))
}

/// A document too long to be kept parsed (over [`MAX_TEXT_BYTES`]: it is parsed every time it
/// comes) whose client's budget could not pay its failure floor is refused with 429 before it
/// is parsed: otherwise a client with a spent budget could still make the server parse 64 KiB
/// documents as fast as it sends them, and be refused only afterwards. Shorter documents, and
/// servers without a cost budget, pass on (`None`) without a check.
pub(in crate::http) async fn refuse_unaffordable(
    app: &AppState,
    headers: &HeaderMap,
    media: MediaType,
    request_id: &str,
    at: Payer,
) -> Option<Response> {
    if at.bytes <= MAX_TEXT_BYTES || app.options.rate_limiter.is_none() {
        return None;
    }
    let budget = match payer(app, headers, media, request_id, at).await {
        Ok(budget) => budget,
        Err(refusal) => return Some(refusal),
    };
    let checked = budget.unaffordable(at.bytes).await?;
    Some(answer(media, &budget, &checked, None, request_id))
}

/// Whose budget a failure spends: the verified viewer's, else the address's (a token that does
/// not verify is answered 401, as on any request, and charged: [`viewer`]).
async fn payer(
    app: &AppState,
    headers: &HeaderMap,
    media: MediaType,
    request_id: &str,
    payer: Payer,
) -> Result<Arc<Budget>, Response> {
    let viewer = viewer(app, headers, media, request_id, payer).await?;
    Ok(budget(app, viewer.as_ref(), payer, 0))
}

/// The request's verified viewer (`payer::viewer`). A token that does not verify is a failed
/// request like any other: its address pays the failure floor, and once it cannot, the answer
/// is 429 rather than 401. Why: bad tokens cost a signature check each and were free, so one
/// client could send them without limit (issue 42, item 3).
pub(in crate::http) async fn viewer(
    app: &AppState,
    headers: &HeaderMap,
    media: MediaType,
    request_id: &str,
    at: Payer,
) -> Result<Option<Viewer>, Response> {
    match payer::viewer(app, headers, media, request_id).await {
        Ok(viewer) => Ok(viewer),
        Err(unauthorized) => Err(charge_refused(app, media, request_id, at, unauthorized).await),
    }
}

/// Charges a request refused before it could run (a token that did not verify, a body that is
/// not a GraphQL request) the failure floor of its bytes, to its address: `refused` (its 401,
/// 400 or 413) when the budget pays it, else the 429.
pub(in crate::http) async fn charge_refused(
    app: &AppState,
    media: MediaType,
    request_id: &str,
    at: Payer,
    refused: Response,
) -> Response {
    if app.options.rate_limiter.is_none() {
        return refused;
    }
    let budget = budget(app, None, at, 0);
    let checked = budget.charge_failure(at.bytes, 0).await;
    if checked.refused().is_some() {
        return answer(media, &budget, &checked, None, request_id);
    }
    refused
}

/// The response to a failure `checked` against `budget`: the budget's refusal (429), else the
/// check's `rejection`, with the `cost` extension.
fn answer(
    media: MediaType,
    budget: &Budget,
    checked: &Checked,
    rejection: Option<&Rejection>,
    request_id: &str,
) -> Response {
    let refused = checked.refused();
    let error = budget
        .refusal_error(checked, Some(request_id))
        .unwrap_or_else(|| {
            let (message, code) = rejection.map_or_else(
                || ("internal error".to_owned(), "INTERNAL_SERVER_ERROR"),
                |r| (r.to_string(), r.code()),
            );
            let mut error = ServerError::new(message, None);
            let extensions = error.extensions.get_or_insert_with(Default::default);
            extensions.set("code", code);
            if !request_id.is_empty() {
                extensions.set("requestId", request_id);
            }
            error
        });
    let throttle = checked.verdict.and_then(|v| v.cost);
    let actual = Some(checked.cost).filter(|_| refused.is_none());
    let read = PageStats::default();
    let response = async_graphql::Response::from_errors(vec![error]).extension(
        "cost",
        cost::extension(Some(checked.cost), actual, throttle, read),
    );
    let mut http = transport::respond(media, &response);
    // `no-store`, and the budget in the `RateLimit` fields like every other response.
    let cacheability = Cacheability {
        over_get: false,
        error_free: false,
        authorization: false,
        tags_fit: true,
        throttle,
    };
    cacheability.apply(http.headers_mut());
    if let Some(refused) = refused {
        *http.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        if let Some(wait) = refused.retry_after {
            let seconds = HeaderValue::from(retry_after_seconds(wait));
            http.headers_mut().insert(header::RETRY_AFTER, seconds);
        }
    } else if rejection == Some(&Rejection::MutationOverGet) {
        *http.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        http.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    http
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(n: usize) -> Vec<ServerError> {
        (0..n)
            .map(|i| ServerError::new(format!("error {i}"), None))
            .collect()
    }

    #[test]
    fn twenty_errors_pass_untouched() {
        let mut twenty = errors(20);
        cap(&mut twenty);
        assert_eq!(twenty, errors(20));
    }

    #[test]
    fn beyond_twenty_one_error_says_how_many_were_cut() {
        let mut many = errors(4_900);
        cap(&mut many);
        assert_eq!(many.len(), MAX_ERRORS + 1);
        assert_eq!(many[19].message, "error 19");
        let summary = many.last().expect("the summary");
        assert_eq!(
            summary.message,
            "4880 more errors were cut: only the first 20 are reported"
        );
        let code = summary.extensions.as_ref().and_then(|e| e.get("code"));
        assert_eq!(code, Some(&async_graphql::Value::from("TOO_MANY_ERRORS")));
    }
}
