//! Reading a GraphQL-over-HTTP request off the wire: a POST's `application/json` body (UTF-8,
//! at most `--max-body-bytes`, in time under `--body-timeout-ms`) or a GET's URL parameters,
//! into an `async_graphql::Request` and the bytes it came in ([`Read`]), or the refusal it gets
//! and the bytes read before it ([`Unread`]). A document named instead of sent (`documentId`,
//! `extensions.persistedQuery`) is passed on for `persisted` to resolve.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use serde::Deserialize;

use super::{Refusal, too_large};

/// Why a body could not be read: it did not arrive in time (`--body-timeout-ms`: the
/// connection is closed after this answer), or it is too large, or the connection failed.
fn body_refusal(error: &axum::Error, max_bytes: usize) -> Refusal {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(timeout) = cause.downcast_ref::<crate::http::BodyTimeout>() {
            return Refusal {
                status: StatusCode::REQUEST_TIMEOUT,
                code: "REQUEST_TIMEOUT",
                message: timeout.to_string(),
            };
        }
        source = cause.source();
    }
    too_large(max_bytes)
}

/// The parameters of a POST body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostParams {
    query: Option<serde_json::Value>,
    operation_name: Option<serde_json::Value>,
    variables: Option<serde_json::Value>,
    extensions: Option<serde_json::Value>,
    document_id: Option<serde_json::Value>,
}

/// The parameters of a GET URL (`variables` and `extensions` are JSON texts).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GetParams {
    query: Option<String>,
    operation_name: Option<String>,
    variables: Option<String>,
    extensions: Option<String>,
    document_id: Option<String>,
}

/// A request as read, with its size on the wire (the body, or the URL's query string), which it
/// pays for at least (`graphql::bytes_floor`).
pub(crate) type Read = (async_graphql::Request, usize);

/// A request refused as it was read, and the bytes the server read of it before refusing, which
/// it pays for like any failed request (`failures::charge_refused`): a body that is not JSON
/// took parsing all the same.
#[derive(Debug)]
pub(crate) struct Unread {
    pub refusal: Refusal,
    pub bytes: usize,
}

/// Reads a POST request: `application/json` in UTF-8, at most `max_bytes`.
pub(crate) async fn post_request(
    headers: &HeaderMap,
    body: Body,
    max_bytes: usize,
) -> Result<Read, Unread> {
    let unread = |bytes| move |refusal| Unread { refusal, bytes };
    check_content_type(headers).map_err(unread(0))?;
    let bytes = axum::body::to_bytes(body, max_bytes).await.map_err(|e| {
        let refusal = body_refusal(&e, max_bytes);
        // Too large: the limit was read; too slow: the time was the client's, not the CPU.
        let read = if refusal.status == StatusCode::PAYLOAD_TOO_LARGE {
            max_bytes
        } else {
            0
        };
        Unread {
            refusal,
            bytes: read,
        }
    })?;
    post_params(&bytes).map_err(unread(bytes.len()))
}

/// A POST body's parameters.
fn post_params(bytes: &[u8]) -> Result<Read, Refusal> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Refusal::bad_request(
            "the request has no body: send a JSON object with a `query`",
        ));
    }
    // Read straight into the parameters; only a body that does not fit is parsed again, to say
    // why (not JSON, a batch, not an object).
    let params: PostParams = serde_json::from_slice(bytes).map_err(
        |_| match serde_json::from_slice::<serde_json::Value>(bytes) {
            Err(e) => Refusal::bad_request(format!("the request body is not valid JSON: {e}")),
            Ok(serde_json::Value::Array(_)) => Refusal::bad_request(
                "batched requests (a JSON array) are not supported: send one object per request",
            ),
            Ok(_) => Refusal::bad_request("the request body must be a JSON object"),
        },
    )?;
    let document_id = match params.document_id {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(id)) => Some(id),
        Some(_) => return Err(Refusal::bad_request("`documentId` must be a string")),
    };
    let extensions = object(params.extensions, "extensions")?;
    let query = match params.query {
        Some(serde_json::Value::String(query)) => query,
        None | Some(serde_json::Value::Null) if names_a_document(&document_id, &extensions) => {
            String::new()
        }
        None | Some(serde_json::Value::Null) => {
            return Err(Refusal::bad_request(
                "the request has no `query`: send the GraphQL document as a string",
            ));
        }
        Some(_) => return Err(Refusal::bad_request("`query` must be a string")),
    };
    let operation_name = match params.operation_name {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(name)) => Some(name),
        Some(_) => return Err(Refusal::bad_request("`operationName` must be a string")),
    };
    let variables = object(params.variables, "variables")?;
    let request = request(query, operation_name, variables, extensions);
    Ok((with_document_id(request, document_id), bytes.len()))
}

/// Whether a request without `query` names its document instead (`persisted`).
fn names_a_document(
    document_id: &Option<String>,
    extensions: &Option<serde_json::Map<String, serde_json::Value>>,
) -> bool {
    document_id.is_some()
        || extensions
            .as_ref()
            .is_some_and(|e| e.contains_key("persistedQuery"))
}

/// A request's `documentId`, as read here, for `persisted`'s hook.
#[derive(Debug)]
pub(crate) struct DocumentId(pub String);

/// `documentId` (the GraphQL-over-HTTP persisted documents proposal) rides in the request's
/// data, which async-graphql's request has room for, to `persisted`'s hook.
fn with_document_id(
    request: async_graphql::Request,
    document_id: Option<String>,
) -> async_graphql::Request {
    match document_id {
        Some(id) => request.data(DocumentId(id)),
        None => request,
    }
}

/// Reads a GET request's parameters from its URL query.
pub(crate) fn get_request(uri: &axum::http::Uri) -> Result<Read, Unread> {
    let url_query = uri.query().unwrap_or_default();
    get_params(url_query).map_err(|refusal| Unread {
        refusal,
        bytes: url_query.len(),
    })
}

/// A GET request's parameters, from its URL's query string.
fn get_params(url_query: &str) -> Result<Read, Refusal> {
    let params: GetParams = serde_urlencoded::from_str(url_query)
        .map_err(|e| Refusal::bad_request(format!("the URL's query string is malformed: {e}")))?;
    let json = |text: Option<String>, name: &str| match text {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Refusal::bad_request(format!("`{name}` is not valid JSON: {e}"))),
    };
    let extensions = object(json(params.extensions, "extensions")?, "extensions")?;
    let query = match params.query {
        Some(query) => query,
        None if names_a_document(&params.document_id, &extensions) => String::new(),
        None => {
            return Err(Refusal::bad_request(
                "the request has no `query` parameter: send the GraphQL document in the URL",
            ));
        }
    };
    let variables = object(json(params.variables, "variables")?, "variables")?;
    let request = request(query, params.operation_name, variables, extensions);
    Ok((
        with_document_id(request, params.document_id),
        url_query.len(),
    ))
}

fn check_content_type(headers: &HeaderMap) -> Result<(), Refusal> {
    let unsupported = |message: String| Refusal {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        code: "BAD_REQUEST",
        message,
    };
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(unsupported(
            "the request has no Content-Type: send `application/json`".into(),
        ));
    };
    let value = value.to_str().unwrap_or_default();
    let mut parts = value.split(';').map(str::trim);
    let essence = parts.next().unwrap_or_default();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(unsupported(format!(
            "the request's Content-Type is `{value}`; the server reads `application/json`"
        )));
    }
    for parameter in parts {
        if let Some((name, charset)) = parameter.split_once('=')
            && name.trim().eq_ignore_ascii_case("charset")
            && !charset
                .trim()
                .trim_matches('"')
                .eq_ignore_ascii_case("utf-8")
        {
            return Err(unsupported(format!(
                "the request's charset is `{}`; the server reads UTF-8",
                charset.trim()
            )));
        }
    }
    Ok(())
}

/// A JSON object parameter, or nothing when absent or `null`.
fn object(
    value: Option<serde_json::Value>,
    name: &str,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, Refusal> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(Refusal::bad_request(format!(
            "`{name}` must be a JSON object"
        ))),
    }
}

fn request(
    query: String,
    operation_name: Option<String>,
    variables: Option<serde_json::Map<String, serde_json::Value>>,
    extensions: Option<serde_json::Map<String, serde_json::Value>>,
) -> async_graphql::Request {
    let mut request = async_graphql::Request::new(query);
    if let Some(name) = operation_name {
        request = request.operation_name(name);
    }
    if let Some(variables) = variables {
        request = request.variables(async_graphql::Variables::from_json(
            serde_json::Value::Object(variables),
        ));
    }
    for (name, value) in extensions.into_iter().flatten() {
        if let Ok(value) = async_graphql::Value::from_json(value) {
            request.extensions.insert(name, value);
        }
    }
    request
}
