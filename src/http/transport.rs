//! GraphQL over HTTP (the GraphQL-over-HTTP specification): which requests `/graphql` accepts,
//! and in which media type it answers.
//!
//! * Requests: POST with `Content-Type: application/json` (UTF-8, the only charset allowed), or
//!   GET with `query`, `operationName`, `variables` and `extensions` in the URL. A request may
//!   name a persisted document instead of sending `query`: `documentId`, or
//!   `extensions.persistedQuery` (`persisted` resolves both). A body that is
//!   not JSON, or JSON that is not a GraphQL request, is refused with 400 and a JSON body of the
//!   usual shape (`{"errors": [{"message", "extensions": {"code": "BAD_REQUEST"}}]}`); another
//!   content type with 415; a body over `--max-body-bytes` with 413 (`PAYLOAD_TOO_LARGE`,
//!   `super::body_limit`).
//! * Responses: `application/graphql-response+json` when the client asks for it (or ranks it
//!   first), `application/json` when it asks for that, for `*/*`, or sends no `Accept`; 406 when
//!   it accepts neither. Under `application/graphql-response+json`, a request that fails before
//!   execution (syntax, validation, variables) answers 400 and has no `data` entry; under
//!   `application/json` it answers 200, as legacy clients expect.
//!
//! Why not async-graphql-axum's extractor and response (7.2.1): the response always carries
//! `application/graphql-response+json`, whatever the client accepts, and a body it cannot read
//! is answered with 400, no content type and the Rust `Debug` text of the error. This module can
//! shrink when upstream negotiates; `tests/api/http/transport.rs` shows the bytes clients
//! get. Reading the request is `request`'s; negotiating and writing the answer is here.

mod request;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::graphql::raw_json;

pub(super) use self::request::{DocumentId, Read, Unread, get_request, post_request};

/// The media types `/graphql` answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MediaType {
    /// `application/graphql-response+json`: status codes say whether execution began.
    GraphQlResponse,
    /// `application/json`: 200 for every GraphQL result, for clients of before the spec.
    Json,
}

impl MediaType {
    pub(super) fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            MediaType::GraphQlResponse => "application/graphql-response+json; charset=utf-8",
            MediaType::Json => "application/json; charset=utf-8",
        })
    }

    /// The status of a GraphQL result: under `application/graphql-response+json`, a request
    /// that never reached execution (it has no `data`) is the client's error.
    pub(super) fn status(self, executed: bool) -> StatusCode {
        match (self, executed) {
            (MediaType::GraphQlResponse, false) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        }
    }
}

/// A request `/graphql` cannot take, answered before any GraphQL runs.
#[derive(Debug)]
pub(super) struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    fn bad_request(message: impl Into<String>) -> Self {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            code: "BAD_REQUEST",
            message: message.into(),
        }
    }
}

/// A body larger than `max_bytes` (`--max-body-bytes`), declared so or read so (`body_limit`).
pub(super) fn too_large(max_bytes: usize) -> Refusal {
    Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        code: "PAYLOAD_TOO_LARGE",
        message: format!(
            "the request body is larger than {max_bytes} bytes, the most this server accepts"
        ),
    }
}

/// Picks the response's media type from the request's `Accept` header: the supported type with
/// the highest quality, the earlier on a tie; `*/*` and `application/*` mean `application/json`;
/// no header (or an empty one) means `application/json`.
pub(super) fn negotiate(headers: &HeaderMap) -> Result<MediaType, Refusal> {
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if accept.is_empty() {
        return Ok(MediaType::Json);
    }
    let mut best: Option<(f32, MediaType)> = None;
    for range in accept {
        let mut parts = range.split(';').map(str::trim);
        let essence = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut quality = 1.0_f32;
        for parameter in parts {
            if let Some((name, value)) = parameter.split_once('=')
                && name.trim().eq_ignore_ascii_case("q")
            {
                quality = value.trim().parse().unwrap_or(0.0);
            }
        }
        let media = match essence.as_str() {
            "application/graphql-response+json" => MediaType::GraphQlResponse,
            "application/json" | "application/*" | "*/*" => MediaType::Json,
            _ => continue,
        };
        if quality > 0.0 && best.is_none_or(|(q, _)| quality > q) {
            best = Some((quality, media));
        }
    }
    best.map(|(_, media)| media).ok_or_else(|| Refusal {
        status: StatusCode::NOT_ACCEPTABLE,
        code: "BAD_REQUEST",
        message: "the server answers in application/graphql-response+json or application/json; \
                  the Accept header allows neither"
            .into(),
    })
}

/// Whether execution began: a request error (syntax, validation, variables) has no data and
/// errors that point nowhere into it.
pub(super) fn executed(response: &async_graphql::Response) -> bool {
    !(response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty()))
}

/// Writes `response` in `media`.
pub(super) fn respond(media: MediaType, response: &async_graphql::Response) -> Response {
    let executed = executed(response);
    let mut http = match body(response, executed) {
        Ok(bytes) => (media.status(executed), bytes).into_response(),
        // Values built from the schema always serialize; this is a bug, not a client's fault.
        Err(e) => {
            tracing::error!(error = %e, "response did not serialize");
            return refusal(
                media,
                &Refusal {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    code: "INTERNAL_SERVER_ERROR",
                    message: "internal error".into(),
                },
                "",
            );
        }
    };
    http.headers_mut()
        .insert(header::CONTENT_TYPE, media.content_type());
    http
}

/// The GraphQL response body: `data` only when execution began (the specification: "If an
/// error was raised before execution begins, the data entry should not be present"), written
/// by `graphql::raw_json` (which puts resolvers' JSON text in place), then `errors` and
/// `extensions` when there are any.
fn body(response: &async_graphql::Response, executed: bool) -> serde_json::Result<Vec<u8>> {
    // `"name":`, after a comma when a member came before.
    fn member(out: &mut Vec<u8>, name: &[u8]) {
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(name);
    }
    let mut out = Vec::with_capacity(4096);
    out.push(b'{');
    if executed {
        member(&mut out, b"\"data\":");
        raw_json::write_data(&mut out, &response.data);
    }
    if !response.errors.is_empty() {
        member(&mut out, b"\"errors\":");
        serde_json::to_writer(&mut out, &response.errors)?;
    }
    if !response.extensions.is_empty() {
        member(&mut out, b"\"extensions\":");
        serde_json::to_writer(&mut out, &response.extensions)?;
    }
    out.push(b'}');
    Ok(out)
}

/// A refusal in the GraphQL response shape, `no-store`.
pub(super) fn refusal(media: MediaType, refusal: &Refusal, request_id: &str) -> Response {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        errors: [Error<'a>; 1],
    }
    #[derive(serde::Serialize)]
    struct Error<'a> {
        message: &'a str,
        extensions: Extensions<'a>,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Extensions<'a> {
        code: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        request_id: &'a str,
    }
    let body = Body {
        errors: [Error {
            message: &refusal.message,
            extensions: Extensions {
                code: refusal.code,
                request_id,
            },
        }],
    };
    let text = serde_json::to_string(&body).unwrap_or_default();
    let mut response = (refusal.status, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, media.content_type());
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests;
