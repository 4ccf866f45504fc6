//! The API's answer to the page's query (`storefront.graphql`), read from the very bytes
//! `/graphql` would send for it, and what a failed answer means for a reader.

use axum::http::StatusCode;
use serde::Deserialize;

/// A GraphQL response: `data` (absent when the request never ran) and `errors`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Answer {
    #[serde(default)]
    pub data: Option<Data>,
    #[serde(default)]
    pub errors: Vec<ApiError>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Data {
    pub product: Option<Product>,
    /// How the shop verifies reviews (`--verification-statement`).
    #[serde(default)]
    pub verification_statement: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Product {
    pub sku: String,
    pub rating_summary: Option<RatingSummary>,
    pub comments: Option<Comments>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RatingSummary {
    pub total: u64,
    pub average: Option<f64>,
    pub counts: Vec<RatingCount>,
    #[serde(default)]
    pub verified_count: u64,
}

#[derive(Debug, Deserialize)]
pub(super) struct RatingCount {
    pub rating: u8,
    pub count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Comments {
    pub total_count: Option<u64>,
    pub start_offset: Option<u64>,
    pub nodes: Vec<Comment>,
    pub page_cursors: Option<PageCursors>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Comment {
    pub id: String,
    pub author: String,
    pub body: String,
    pub rating: u8,
    pub created_at: String,
    pub updated_at: Option<String>,
    /// A verified purchase (the badge).
    #[serde(default)]
    pub verified_purchase: bool,
    /// The shop's answer, if any.
    #[serde(default)]
    pub reply: Option<Reply>,
}

/// The shop's answer to a comment.
#[derive(Debug, Deserialize)]
pub(super) struct Reply {
    pub author: String,
    pub body: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PageCursors {
    pub first: PageLink,
    pub previous: Option<PageLink>,
    pub around: Vec<PageLink>,
    pub next: Option<PageLink>,
    pub last: PageLink,
    pub page_count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PageLink {
    pub page: u64,
    #[serde(default)]
    pub is_current: bool,
}

impl PageCursors {
    /// The page holding the connection's first edge, if it is one of the links.
    pub(super) fn current(&self) -> Option<u64> {
        std::iter::once(&self.first)
            .chain(&self.around)
            .chain(std::iter::once(&self.last))
            .find(|link| link.is_current)
            .map(|link| link.page)
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct ApiError {
    pub message: String,
    #[serde(default)]
    pub extensions: Option<Extensions>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Extensions {
    pub code: Option<String>,
}

impl ApiError {
    pub(super) fn code(&self) -> &str {
        self.extensions
            .as_ref()
            .and_then(|e| e.code.as_deref())
            .unwrap_or_default()
    }
}

/// Why an answer holds no comments, said for a reader: the page's title, the detail and the
/// HTTP status of the page that says it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Failure {
    pub status: StatusCode,
    pub title: &'static str,
    pub detail: String,
    /// The first error's code, which decides the links offered onward.
    pub code: String,
}

impl Failure {
    /// The failure of an answer without comments, by its first error's `extensions.code`.
    /// `status` is the HTTP status `/graphql` answered (429 when a budget refused it).
    pub(super) fn of(errors: &[ApiError], status: StatusCode, filtered: bool) -> Self {
        let (code, message) = errors
            .first()
            .map_or(("", "The server answered without data."), |e| {
                (e.code(), e.message.as_str())
            });
        let (status, title, detail) = match code {
            "NOT_FOUND" => (
                StatusCode::NOT_FOUND,
                "This comment is not here",
                if filtered {
                    "It was deleted, or its rating is not among the ones chosen."
                } else {
                    "It was deleted, or it belongs to another product."
                }
                .to_owned(),
            ),
            "BAD_USER_INPUT" | "PAGE_SIZE_EXCEEDED" | "BAD_CURSOR" => (
                StatusCode::BAD_REQUEST,
                "This link does not work",
                message.to_owned(),
            ),
            "RATE_LIMITED" => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests",
                message.to_owned(),
            ),
            _ if status.is_client_error() => {
                (status, "This link does not work", message.to_owned())
            }
            _ => {
                let status = if status.is_server_error() {
                    status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                (
                    status,
                    "The comments could not be loaded",
                    message.to_owned(),
                )
            }
        };
        Self {
            status,
            title,
            detail,
            code: code.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(code: &str) -> Vec<ApiError> {
        let json = serde_json::json!([{ "message": "why", "extensions": { "code": code } }]);
        serde_json::from_value(json).expect("errors")
    }

    #[test]
    fn each_failure_answers_its_status() {
        let ok = StatusCode::OK;
        let cases = [
            ("NOT_FOUND", ok, StatusCode::NOT_FOUND),
            ("BAD_USER_INPUT", ok, StatusCode::BAD_REQUEST),
            ("PAGE_SIZE_EXCEEDED", ok, StatusCode::BAD_REQUEST),
            (
                "RATE_LIMITED",
                StatusCode::TOO_MANY_REQUESTS,
                StatusCode::TOO_MANY_REQUESTS,
            ),
            ("STORE_UNAVAILABLE", ok, StatusCode::SERVICE_UNAVAILABLE),
            (
                "REQUEST_TIMEOUT",
                StatusCode::GATEWAY_TIMEOUT,
                StatusCode::GATEWAY_TIMEOUT,
            ),
            (
                "SERVICE_UNAVAILABLE",
                StatusCode::SERVICE_UNAVAILABLE,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
        ];
        for (code, answered, expected) in cases {
            assert_eq!(
                Failure::of(&errors(code), answered, false).status,
                expected,
                "{code}"
            );
        }
        assert_eq!(
            Failure::of(&[], StatusCode::OK, false).status,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
