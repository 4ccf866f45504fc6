//! The one place where the SDK's errors become [`StoreError`]s (STYLE 5, docs.rs
//! `convert_errors`).
//!
//! The policy: anything a later attempt may cure (throttling, timeouts, connection failures,
//! 5xx) is [`StoreError::Unavailable`], which the API reports as `STORE_UNAVAILABLE`; a failed
//! write condition is the domain error the caller's condition stood for; a missing table is
//! [`StoreError::MissingTable`] so start-up can say how to create it; everything else is a bug
//! or a misconfiguration and becomes [`StoreError::Internal`]. The SDK has already retried
//! (standard mode) before an error reaches this function.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::CancellationReason;

use crate::domain::CommentId;
use crate::store::StoreError;

/// What a failed `ConditionExpression` means for the call that set it.
#[derive(Clone, Copy, Debug)]
pub(super) enum OnConditionFailed {
    /// The call set no condition: a failure would be a bug.
    Unexpected,
    /// `attribute_not_exists(id)` on a create.
    AlreadyExists(CommentId),
    /// `attribute_exists(id)` on an update or delete.
    NotFound(CommentId),
}

/// Error codes that mean "later" (shared with the stream source, `super::stream`).
pub(super) const THROTTLING: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "ServiceUnavailable",
    "InternalServerError",
];

const CONDITION_FAILED: &str = "ConditionalCheckFailedException";
/// A write to an item that a transaction in flight holds (a vote, `super::votes`), or a
/// transaction that met another: nothing was written, and the same call may be sent again.
const TRANSACTION_CONFLICT: &str = "TransactionConflictException";
const MISSING_TABLE: &str = "ResourceNotFoundException";

/// Whether `err` is a write refused because a transaction held its item (an edit or a
/// deletion racing a vote): retried by the callers, as it wrote nothing.
pub(super) fn is_transaction_conflict(err: &impl ProvideErrorMetadata) -> bool {
    err.code() == Some(TRANSACTION_CONFLICT)
}

/// Why DynamoDB cancelled a `TransactWriteItems`, once the caller has read what its own
/// conditions' failures mean (`CancellationReasons` are per item, in the request's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cancellation {
    /// An item's condition failed (the first such reason's position).
    ConditionFailed(usize),
    /// Another transaction held an item (`TransactionConflict`): nothing was written, and the
    /// same call may be sent again.
    Conflict,
    /// Throttled, or the service was busy: a later attempt may succeed.
    Throttled,
    /// Anything else (a validation error, a bug).
    Other,
}

/// The [`Cancellation`] of `err`, if it is a cancelled transaction; `None` for any other error.
pub(super) fn cancellation(
    err: &SdkError<TransactWriteItemsError, HttpResponse>,
) -> Option<Cancellation> {
    let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        err.as_service_error()
    else {
        return None;
    };
    let codes: Vec<Option<&str>> = cancelled
        .cancellation_reasons()
        .iter()
        .map(CancellationReason::code)
        .collect();
    if let Some(at) = codes
        .iter()
        .position(|c| *c == Some("ConditionalCheckFailed"))
    {
        return Some(Cancellation::ConditionFailed(at));
    }
    let present = || codes.iter().flatten();
    Some(if present().any(|c| *c == "TransactionConflict") {
        Cancellation::Conflict
    } else if present().any(|c| {
        matches!(*c, "ThrottlingError" | "ProvisionedThroughputExceeded") || THROTTLING.contains(c)
    }) {
        Cancellation::Throttled
    } else {
        Cancellation::Other
    })
}

/// The reasons of a cancelled transaction (empty for any other error), for callers that read
/// the items their conditions returned.
pub(super) fn cancellation_reasons(
    err: &SdkError<TransactWriteItemsError, HttpResponse>,
) -> &[CancellationReason] {
    match err.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
            cancelled.cancellation_reasons()
        }
        _ => &[],
    }
}

/// Whether `err` says the table does not exist.
pub(super) fn is_missing_table(err: &impl ProvideErrorMetadata) -> bool {
    err.code() == Some(MISSING_TABLE)
}

/// Classifies an SDK error for a call on `table`.
pub(super) fn classify<E>(
    table: &str,
    err: SdkError<E, HttpResponse>,
    on_condition_failed: OnConditionFailed,
) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            return StoreError::Unavailable(err.into());
        }
        SdkError::ConstructionFailure(_) => return StoreError::Internal(err.into()),
        SdkError::ServiceError(_) => {}
        // `SdkError` is non-exhaustive; an unknown kind is treated as not retryable.
        _ => return StoreError::Internal(err.into()),
    }
    let code = err.code().unwrap_or_default();
    if code == CONDITION_FAILED {
        return match on_condition_failed {
            OnConditionFailed::AlreadyExists(id) => StoreError::AlreadyExists(id),
            OnConditionFailed::NotFound(id) => StoreError::NotFound(id),
            OnConditionFailed::Unexpected => StoreError::Internal(err.into()),
        };
    }
    if code == MISSING_TABLE {
        return StoreError::MissingTable {
            table: table.to_owned(),
        };
    }
    let server_error = err
        .raw_response()
        .is_some_and(|response| response.status().is_server_error());
    if THROTTLING.contains(&code) || server_error {
        return StoreError::Unavailable(err.into());
    }
    StoreError::Internal(err.into())
}

/// An internal error with a plain message, for answers the SDK accepted but that make no sense.
pub(super) fn internal(message: impl Into<String>) -> StoreError {
    StoreError::Internal(message.into().into())
}
