//! The adapter's writes, each conditional as [`CommentStore`](crate::store::CommentStore)
//! requires: `create` (`PutItem` unless the id exists), `update` (read, change, put back unless
//! the item changed meanwhile), `delete` (`DeleteItem` if it exists, and is the author's when
//! the caller is one), and the unconditional bulk `put_batch` for seeding.
//!
//! An edit is a read-check-write round, not an `UpdateExpression`: `skuRating` must be
//! recomputed from the new rating, which an update expression cannot concatenate.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::{
    PutRequest, ReturnValue, ReturnValuesOnConditionCheckFailure, WriteRequest,
};
use futures::{StreamExt, TryStreamExt};

use super::batch::{self, BATCHES_IN_FLIGHT, WRITE_CHUNK, backoff};
use super::error::{OnConditionFailed, internal, is_condition_failure};
use super::item::{
    AUTHOR_SUB, BODY, CREATED_AT, ID, RATING, UPDATED_AT, VERSION, item_from_comment, key_of,
    number_value, string_value,
};
use super::{DynamoStore, decode, reads};
use crate::domain::{Access, Comment, CommentId, CommentPatch};
use crate::store::StoreError;

/// Read-check-write rounds an `update` tries before a lost race is reported.
const UPDATE_ATTEMPTS: u32 = 5;

/// One `PutItem` at version 1, conditional on the id being free.
///
/// The SDK retries a `PutItem` that timed out or failed in transit, and the first attempt may
/// have been written: its retry then fails the condition on our own item. So a refused id is
/// read back (strongly consistent), and a stored comment equal to this one counts as written,
/// rather than telling the client that a write it made failed. Ids are fresh ULIDs, so an equal
/// item under the id can only be this write's.
pub(super) async fn create(store: &DynamoStore, comment: &Comment) -> Result<(), StoreError> {
    let comment = Comment {
        version: 1,
        ..comment.clone()
    };
    let written = store
        .client
        .put_item()
        .table_name(store.table.as_ref())
        .set_item(Some(item_from_comment(&comment)))
        .condition_expression("attribute_not_exists(#id)")
        .expression_attribute_names("#id", ID)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::AlreadyExists(comment.id)));
    match written {
        Err(StoreError::AlreadyExists(id)) => match reads::get(store, id).await? {
            Some(stored) if stored == comment => {
                tracing::info!(
                    comment_id = %id,
                    "a retried create found its own earlier attempt written"
                );
                Ok(())
            }
            _ => Err(StoreError::AlreadyExists(id)),
        },
        other => other.map(|_| ()),
    }
}

/// Read, check access, change and put back under [`replace_if_unchanged`]'s condition; a lost
/// race is retried with backoff, [`UPDATE_ATTEMPTS`] rounds in all.
pub(super) async fn update(
    store: &DynamoStore,
    id: CommentId,
    patch: &CommentPatch,
    now_ms: u64,
    access: &Access,
) -> Result<Comment, StoreError> {
    for attempt in 0..UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        let old = reads::get(store, id)
            .await?
            .ok_or(StoreError::NotFound(id))?;
        // A comment's `authorSub` never changes, and the write below is conditional on the
        // version read, so checking the item read is checking the item written.
        if !access.allows(&old) {
            return Err(StoreError::Forbidden(id));
        }
        let new = patch.apply(&old, now_ms);
        if replace_if_unchanged(store, &old, &new).await? {
            return Ok(new);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, "dynamodb update lost a race, retrying");
    }
    Err(StoreError::Unavailable(
        format!("comment {id} kept changing during {UPDATE_ATTEMPTS} update attempts").into(),
    ))
}

/// Writes `new` over `old` only if the stored item is still `old` (optimistic concurrency:
/// `skuRating` must be recomputed from the new rating, which an `UpdateExpression` cannot
/// concatenate, so the item is read, changed here and put back under a condition).
/// `Ok(false)` means another writer got there first.
///
/// The condition is the version read (an item without one, written before versions, is at
/// version 1), and also the content, so that a writer of an older release, which leaves the
/// version alone, cannot slip in between either.
async fn replace_if_unchanged(
    store: &DynamoStore,
    old: &Comment,
    new: &Comment,
) -> Result<bool, StoreError> {
    let mut condition = "attribute_exists(#id) AND #rating = :oldRating AND #body = :oldBody \
                         AND #createdAt = :oldCreatedAt"
        .to_owned();
    condition.push_str(if old.version == 1 {
        " AND (attribute_not_exists(#version) OR #version = :oldVersion)"
    } else {
        " AND #version = :oldVersion"
    });
    let mut request = store
        .client
        .put_item()
        .table_name(store.table.as_ref())
        .set_item(Some(item_from_comment(new)))
        .expression_attribute_names("#id", ID)
        .expression_attribute_names("#rating", RATING)
        .expression_attribute_names("#body", BODY)
        .expression_attribute_names("#createdAt", CREATED_AT)
        .expression_attribute_names("#updatedAt", UPDATED_AT)
        .expression_attribute_names("#version", VERSION)
        .expression_attribute_values(":oldVersion", number_value(old.version))
        .expression_attribute_values(":oldRating", number_value(old.rating.get()))
        .expression_attribute_values(":oldBody", string_value(old.body.as_str()))
        .expression_attribute_values(":oldCreatedAt", number_value(old.created_at_ms));
    match old.updated_at_ms {
        Some(updated) => {
            condition.push_str(" AND #updatedAt = :oldUpdatedAt");
            request = request.expression_attribute_values(":oldUpdatedAt", number_value(updated));
        }
        None => condition.push_str(" AND attribute_not_exists(#updatedAt)"),
    }
    match request.condition_expression(condition).send().await {
        Ok(_) => Ok(true),
        Err(err) if is_condition_failure(&err) => Ok(false),
        Err(err) => Err(store.classify(err, OnConditionFailed::NotFound(old.id))),
    }
}
/// One conditional `DeleteItem`. For an author, the condition also names their `sub`; when
/// it fails, the item DynamoDB returns with the failure tells someone else's comment
/// (`Forbidden`) from a missing one (`NotFound`), without a second read.
pub(super) async fn delete(
    store: &DynamoStore,
    id: CommentId,
    access: &Access,
) -> Result<Comment, StoreError> {
    let mut request = store
        .client
        .delete_item()
        .table_name(store.table.as_ref())
        .set_key(Some(key_of(id)))
        .expression_attribute_names("#id", ID)
        .return_values(ReturnValue::AllOld);
    request = match access {
        Access::Any => request.condition_expression("attribute_exists(#id)"),
        Access::Author(sub) => request
            .condition_expression("attribute_exists(#id) AND #authorSub = :sub")
            .expression_attribute_names("#authorSub", AUTHOR_SUB)
            .expression_attribute_values(":sub", string_value(sub.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld),
    };
    let output = request.send().await.map_err(|err| {
        let someone_elses = matches!(
            err.as_service_error(),
            Some(DeleteItemError::ConditionalCheckFailedException(failed)) if failed.item.is_some()
        );
        if someone_elses {
            StoreError::Forbidden(id)
        } else {
            store.classify(err, OnConditionFailed::NotFound(id))
        }
    })?;
    let old = output
        .attributes
        .ok_or_else(|| internal("DeleteItem with ALL_OLD returned no attributes"))?;
    decode(&old)
}

/// BatchWriteItem in chunks of 25, eight in flight. BatchWriteItem refuses two writes of
/// one key in a request, so a repeated id keeps only its last comment, which is also what
/// writing them one after another would leave.
pub(super) async fn put_batch(store: &DynamoStore, comments: &[Comment]) -> Result<(), StoreError> {
    let mut seen = std::collections::HashSet::new();
    let mut latest: Vec<&Comment> = comments
        .iter()
        .rev()
        .filter(|c| seen.insert(c.id))
        .collect();
    latest.reverse();
    let chunks = latest
        .chunks(WRITE_CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .map(|comment| {
                    let put = PutRequest::builder()
                        .set_item(Some(item_from_comment(comment)))
                        .build()
                        .map_err(|err| StoreError::Internal(err.into()))?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    futures::stream::iter(chunks)
        .map(|chunk| batch::write_chunk(store.client.clone(), store.table.clone(), chunk))
        .buffer_unordered(BATCHES_IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    tracing::debug!(table = %store.table, items = latest.len(), "dynamodb batch written");
    Ok(())
}
