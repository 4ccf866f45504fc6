//! Error policy of the API, in one place.
//!
//! * Client mistakes (bad arguments, cursors, ids) get a message that says what to fix and a
//!   stable `extensions.code` (`docs/api/errors.md`).
//! * Backend outages get `STORE_UNAVAILABLE` or `INDEX_UNAVAILABLE` on the field that needed the
//!   backend, so the rest of the response still carries data.
//! * A client over its rate limit gets `RATE_LIMITED` before anything executes
//!   (`graphql::budget`).
//! * Anything else is our bug: the client sees a generic message and the request id, and the
//!   full cause chain is logged once, here.

use async_graphql::ErrorExtensions;

use super::RequestMeta;
use super::global_id::GlobalId;
use crate::domain::{InvalidInput, ReportRefused};
use crate::index::IndexError;
use crate::pagination::PaginationError;
use crate::store::StoreError;
use crate::telemetry::metric;

/// The `extensions.code` values clients can rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// An argument or input is invalid; the message says which and why.
    BadUserInput,
    /// `first`, `last` or a pager's `size` is above the largest page size (`--max-page-size`).
    PageSizeExceeded,
    /// An `after` or `before` cursor does not open for this connection, or a page cursor is in the
    /// wrong place.
    BadCursor,
    /// What the request names is not there (or not in the connection it was looked for in).
    NotFound,
    /// A write without a valid bearer token, or with a token that was refused (`--auth jwt`).
    Unauthenticated,
    /// A write that is not allowed: someone else's comment, a helpful vote for one's own, or a
    /// comment at the highest version.
    Forbidden,
    /// The page index is down or unreachable; only the fields that needed it fail.
    IndexUnavailable,
    /// The comment store is unavailable (or its table is missing); only the fields that needed it
    /// fail.
    StoreUnavailable,
    /// The client's rate limit refused the request (HTTP 429 with `Retry-After`).
    RateLimited,
    /// The server holds `--max-subscriptions` (or the connection its per-connection maximum).
    TooManySubscriptions,
    /// A subscriber fell a whole buffer behind and was closed.
    SlowSubscriber,
    /// A subscription could not be given every change (resumed from too far back).
    EventsMissed,
    /// The request would read more items from the store than `--max-items-per-request`.
    TooManyItems,
    /// Anything else: a bug or a misconfiguration. The message gives only the request id; the
    /// cause is logged.
    Internal,
}

impl ErrorCode {
    /// The code as clients see it in `extensions.code` (`BAD_USER_INPUT`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadUserInput => "BAD_USER_INPUT",
            ErrorCode::PageSizeExceeded => "PAGE_SIZE_EXCEEDED",
            ErrorCode::BadCursor => "BAD_CURSOR",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::IndexUnavailable => "INDEX_UNAVAILABLE",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::TooManySubscriptions => "TOO_MANY_SUBSCRIPTIONS",
            ErrorCode::SlowSubscriber => "SLOW_SUBSCRIBER",
            ErrorCode::EventsMissed => "EVENTS_MISSED",
            ErrorCode::TooManyItems => "TOO_MANY_ITEMS",
            ErrorCode::Internal => "INTERNAL_SERVER_ERROR",
        }
    }
}

/// An error on its way to a client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// An input value was refused.
    #[error(transparent)]
    Input(#[from] InvalidInput),
    /// A connection's arguments or cursors were refused, or its reads failed.
    #[error(transparent)]
    Pagination(PaginationError),
    /// The comment store failed, or refused the write.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The page index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A request refused as given (a list argument too long, say), with the reason.
    #[error("{0}")]
    Refused(String),
    /// What the client named is not there (or not where it looked).
    #[error("{0}")]
    NotFound(String),
    /// A subscription refused or ended, with its code.
    #[error("{message}")]
    Live {
        /// The code the client gets.
        code: ErrorCode,
        /// What the client is told.
        message: String,
    },
    /// A write without a valid token, under `--auth jwt`.
    #[error("{0}")]
    Unauthenticated(String),
    /// A signed-in viewer without the role the field needs (a moderator's).
    #[error("{0}")]
    Forbidden(String),
    /// The request's reads would pass `--max-items-per-request`.
    #[error(
        "the request would read more than {max} items from the store: ask for smaller pages, \
         fewer ratings or fewer connections (offsets over the index threshold read no more than \
         page 1)"
    )]
    TooManyItems {
        /// The limit: `--max-items-per-request`.
        max: u64,
    },
}

/// A request error with `GRAPHQL_VALIDATION_FAILED`: the request is refused before it runs,
/// as async-graphql's validation refuses one (with no data).
pub fn invalid_request(message: impl Into<String>) -> async_graphql::ServerError {
    let mut error = async_graphql::ServerError::new(message, None);
    let extensions = error.extensions.get_or_insert_with(Default::default);
    extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
    error
}

impl ApiError {
    /// The `extensions.code` this error is sent with.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Input(_) | ApiError::Refused(_) => ErrorCode::BadUserInput,
            ApiError::Unauthenticated(_) => ErrorCode::Unauthenticated,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::TooManyItems { .. } => ErrorCode::TooManyItems,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::Live { code, .. } => *code,
            ApiError::Pagination(e) => match e {
                PaginationError::Negative { .. }
                | PaginationError::OffsetNeedsOneDirection
                | PaginationError::BelowOne { .. }
                | PaginationError::AroundOutOfRange { .. }
                | PaginationError::ContainingWithWindow
                | PaginationError::ContainingNeedsOneSize
                | PaginationError::ContainingEmptyPage => ErrorCode::BadUserInput,
                PaginationError::NotInConnection(_) => ErrorCode::NotFound,
                PaginationError::PageSizeExceeded { .. } => ErrorCode::PageSizeExceeded,
                PaginationError::BadCursor { .. } | PaginationError::PageCursorMisplaced { .. } => {
                    ErrorCode::BadCursor
                }
                PaginationError::Store(e) => store_code(e),
                PaginationError::Index(e) => index_code(e),
            },
            ApiError::Store(e) => store_code(e),
            ApiError::Index(e) => index_code(e),
        }
    }

    /// The GraphQL error for this failure, logged when it is not the client's fault.
    pub fn into_graphql(self, meta: Option<&RequestMeta>) -> async_graphql::Error {
        let code = self.code();
        let request_id = meta.map(|m| m.request_id.clone()).unwrap_or_default();
        let message = match code {
            ErrorCode::Internal => {
                tracing::error!(request_id, error = %chain(&self), "request failed");
                format!("internal error (request id {request_id})")
            }
            ErrorCode::StoreUnavailable | ErrorCode::IndexUnavailable => {
                metric::BACKEND_UNAVAILABLE
                    .counter(&[("code", code.as_str())])
                    .increment(1);
                tracing::warn!(request_id, code = code.as_str(), error = %chain(&self), "backend unavailable");
                self.to_string()
            }
            _ => self.to_string(),
        };
        async_graphql::Error::new(message).extend_with(|_, ext| {
            ext.set("code", code.as_str());
            if !request_id.is_empty() {
                ext.set("requestId", request_id.as_str());
            }
        })
    }
}

impl From<PaginationError> for ApiError {
    fn from(e: PaginationError) -> Self {
        match e {
            // The engine names comments by their id; clients know them by global id.
            PaginationError::NotInConnection(id) => ApiError::NotFound(format!(
                "comment `{}` is not in this connection (another product, filtered out by \
                 `ratings`, deleted, or not published)",
                GlobalId::Comment(id).encode()
            )),
            e => ApiError::Pagination(e),
        }
    }
}

fn store_code(e: &StoreError) -> ErrorCode {
    match e {
        StoreError::NotFound(_) => ErrorCode::NotFound,
        StoreError::Forbidden(_) | StoreError::OwnComment(_) | StoreError::VersionCeiling(_) => {
            ErrorCode::Forbidden
        }
        StoreError::Unavailable(_) | StoreError::MissingTable { .. } => ErrorCode::StoreUnavailable,
        StoreError::Decision(_) | StoreError::PurchaseUsed => ErrorCode::BadUserInput,
        StoreError::Report(refused) => match refused {
            ReportRefused::Own(_) | ReportRefused::Ceiling(_) => ErrorCode::Forbidden,
            ReportRefused::NotPublic(_) => ErrorCode::NotFound,
            ReportRefused::Full(_) => ErrorCode::BadUserInput,
        },
        StoreError::AlreadyExists(_) | StoreError::Internal(_) => ErrorCode::Internal,
    }
}

fn index_code(e: &IndexError) -> ErrorCode {
    match e {
        IndexError::Unavailable(_) => ErrorCode::IndexUnavailable,
        IndexError::Internal(_) => ErrorCode::Internal,
    }
}

/// `error: cause: cause`, for one log line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
