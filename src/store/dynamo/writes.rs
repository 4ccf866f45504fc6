//! The adapter's writes, each conditional as [`CommentStore`](crate::store::CommentStore)
//! requires: `create` (`PutItem` unless the id exists), `update` (read and check, then an
//! `UpdateItem` of what changes, if the item still exists), `delete` (`DeleteItem` if it
//! exists, and is the author's when the caller is one), and the unconditional bulk
//! `put_batch` for seeding. Votes, which write two items at once, are in `votes`.
//!
//! An edit reads first: the access check needs the author, and `skuRating` (the product and
//! the new rating) needs the product, which an update expression cannot concatenate. Its write
//! then names only what it changes, so it commutes with votes (which move only the count and
//! the version): neither can undo the other, and neither fails because of the other.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    PutRequest, ReturnValue, ReturnValuesOnConditionCheckFailure, WriteRequest,
};
use futures::{StreamExt, TryStreamExt};

use super::batch::{self, BATCHES_IN_FLIGHT, RETRY, WRITE_CHUNK};
use super::error::{OnConditionFailed, internal, is_transaction_conflict};
use super::item::{
    AUTHOR_SUB, BELOW_CEILING, BODY, ID, LAST_EDIT, Places, RATING, SKU_RATING, STATUS, UPDATED_AT,
    VERSION, ceiling_value, item_from_comment, key_of, number_value, sku_rating, string_value,
    version_at_ceiling,
};
use super::{DynamoStore, decode, reads};
use crate::domain::{Access, Comment, CommentId, CommentPatch, CommentStatus, VersionCeiling};
use crate::store::StoreError;

/// Attempts of an edit or a deletion while a vote's transaction holds the comment
/// (`TransactionConflictException`: nothing was written, so sending it again is safe).
const CONFLICT_ATTEMPTS: u32 = 8;

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
    if let Some(hash) = &comment.purchase {
        return super::purchase::create(store, &comment, hash).await;
    }
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

/// Read (for the product and the author), check access, then one `UpdateItem` that sets
/// what the patch changes and adds one to the version, returning the new item. It is not
/// conditional on the version read: a vote moving the count and the version meanwhile
/// (`super::votes`) must not fail the edit, and an update expression changes only what it
/// names, so nothing a concurrent write changed is put back. A conflict with a vote's
/// transaction in flight is sent again, [`CONFLICT_ATTEMPTS`] times in all.
pub(super) async fn update(
    store: &DynamoStore,
    id: CommentId,
    patch: &CommentPatch,
    now_ms: u64,
    access: &Access,
) -> Result<Comment, StoreError> {
    for attempt in 0..CONFLICT_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        // Read on every attempt: an edit that sends a published comment back to review
        // (`CommentPatch::review`) depends on the status read, which a moderator may change.
        let old = reads::get(store, id)
            .await?
            .ok_or(StoreError::NotFound(id))?;
        // A comment's `authorSub` and `sku` never change, so checking the item read is
        // checking the item written (and `skuRating` can be computed here from the new rating).
        if !access.allows(&old) {
            return Err(StoreError::Forbidden(id));
        }
        // Refused before the write when the item read is at the ceiling already; the write's
        // own condition refuses a vote that got it there since.
        old.next_version()?;
        if let Some(new) = apply_patch(store, &old, patch, now_ms).await? {
            return Ok(new);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, "dynamodb update met a vote's transaction or a decision, retrying");
    }
    Err(StoreError::Unavailable(
        format!(
            "comment {id} stayed in other transactions during {CONFLICT_ATTEMPTS} update attempts"
        )
        .into(),
    ))
}

/// One `UpdateItem` of the patch's attributes, `updatedAt` and the version; `Ok(None)` when a
/// transaction held the item.
///
/// The version is an increment, which a replay would apply twice: the SDK sends an attempt
/// again after a timeout, and the first may have been written. So the edit also writes a
/// token of its own (`lastEdit`) on the condition that the item does not hold it yet; a replay
/// fails that condition, finds its token in the item DynamoDB returns with the failure, and
/// answers that item, written once.
async fn apply_patch(
    store: &DynamoStore,
    old: &Comment,
    patch: &CommentPatch,
    now_ms: u64,
) -> Result<Option<Comment>, StoreError> {
    let token = ulid::Ulid::new().to_string();
    let mut sets = vec![
        "#updatedAt = :now",
        "#version = if_not_exists(#version, :one) + :one",
        "#lastEdit = :token",
    ];
    let mut request = store
        .client
        .update_item()
        .table_name(store.table.as_ref())
        .set_key(Some(key_of(old.id)))
        .expression_attribute_names("#id", ID)
        .expression_attribute_names("#updatedAt", UPDATED_AT)
        .expression_attribute_names("#version", VERSION)
        .expression_attribute_names("#lastEdit", LAST_EDIT)
        .expression_attribute_values(":now", number_value(now_ms))
        .expression_attribute_values(":one", number_value(1))
        .expression_attribute_values(":ceiling", ceiling_value())
        .expression_attribute_values(":token", string_value(token.clone()))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    if let Some(body) = &patch.body {
        sets.push("#body = :body");
        request = request
            .expression_attribute_names("#body", BODY)
            .expression_attribute_values(":body", string_value(body.as_str()));
    }
    let mut condition = format!(
        "attribute_exists(#id) AND (attribute_not_exists(#lastEdit) OR #lastEdit <> :token) \
         AND {BELOW_CEILING}"
    );
    let mut removes = String::new();
    if patch.status_after(old.moderation.status) != old.moderation.status {
        // Back to review: pending, out of the public GSIs and into the pending queues, if it
        // is still published.
        condition.push_str(" AND attribute_exists(#sortKey)");
        let (set, remove);
        (request, set, remove) = back_to_review(request, old);
        sets.extend(set);
        removes = format!(" REMOVE {}", remove.join(", "));
    }
    if let Some(rating) = patch.rating {
        sets.push("#rating = :rating");
        sets.push("#skuRating = :skuRating");
        if old.is_verified() {
            // The verified twin's GSIs by rating follow the rating too.
            sets.push("#verifiedSkuRating = :skuRating");
            request = request
                .expression_attribute_names("#verifiedSkuRating", super::item::VERIFIED_SKU_RATING);
        }
        request = request
            .expression_attribute_names("#rating", RATING)
            .expression_attribute_names("#skuRating", SKU_RATING)
            .expression_attribute_values(":rating", number_value(rating.get()))
            .expression_attribute_values(":skuRating", string_value(sku_rating(&old.sku, rating)));
    }
    let sent = request
        .condition_expression(condition)
        .update_expression(format!("SET {}{removes}", sets.join(", ")))
        .send()
        .await;
    match sent {
        Ok(output) => {
            let new = output
                .attributes
                .ok_or_else(|| internal("UpdateItem with ALL_NEW returned no attributes"))?;
            decode(&new).map(Some)
        }
        Err(err) if is_transaction_conflict(&err) => Ok(None),
        Err(err) => patch_refused(store, old, &token, err),
    }
}

/// The part of an edit that sends a published comment back to review: its `status` pending and
/// its places those of a pending comment (`Places`), with the names and values they use; the
/// `SET` clauses and the attributes to `REMOVE`.
fn back_to_review(
    mut request: UpdateItemFluentBuilder,
    old: &Comment,
) -> (
    UpdateItemFluentBuilder,
    Vec<&'static str>,
    Vec<&'static str>,
) {
    let mut pending = old.clone();
    pending.moderation.status = CommentStatus::Pending;
    let places = Places::of(&pending);
    for (placeholder, name) in Places::NAMES {
        request = request.expression_attribute_names(placeholder, name);
    }
    for (placeholder, value) in places.values {
        request = request.expression_attribute_values(placeholder, value);
    }
    request = request
        .expression_attribute_names("#status", STATUS)
        .expression_attribute_values(":pending", string_value(CommentStatus::Pending.as_str()));
    let mut sets = vec!["#status = :pending"];
    sets.extend(places.sets);
    (request, sets, places.removes)
}

/// What a refused edit means: the item a failed condition returned holds `token` (this edit's
/// own first attempt was written: that item is the answer), or is at the version ceiling, or
/// the comment is gone (or the call failed otherwise).
fn patch_refused(
    store: &DynamoStore,
    old: &Comment,
    token: &str,
    err: aws_sdk_dynamodb::error::SdkError<UpdateItemError>,
) -> Result<Option<Comment>, StoreError> {
    let held = match err.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(failed)) => failed.item.as_ref(),
        _ => None,
    };
    let written = held.filter(|item| {
        item.get(LAST_EDIT)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
            == Some(token)
    });
    if let Some(item) = written {
        return decode(item).map(Some);
    }
    if let Some(version) = held.and_then(version_at_ceiling) {
        return Err(VersionCeiling {
            id: old.id,
            version,
        }
        .into());
    }
    if held.is_some_and(|item| !item.is_empty()) {
        // Present, below the ceiling, not this edit's: a decision took it out of the public
        // lists since it was read (the review condition). Read it again.
        return Ok(None);
    }
    Err(store.classify(err, OnConditionFailed::NotFound(old.id)))
}

/// One conditional `DeleteItem` (sent again while a vote's transaction holds the comment). For
/// an author, the condition also names their `sub`; when it fails, the item DynamoDB returns
/// with the failure tells someone else's comment (`Forbidden`) from a missing one
/// (`NotFound`), without a second read. The comment's vote items stay (see `super::votes`).
pub(super) async fn delete(
    store: &DynamoStore,
    id: CommentId,
    access: &Access,
) -> Result<Comment, StoreError> {
    for attempt in 0..CONFLICT_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        if let Some(old) = delete_once(store, id, access).await? {
            return Ok(old);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, "dynamodb delete met a vote's transaction, retrying");
    }
    Err(StoreError::Unavailable(
        format!(
            "comment {id} stayed in other transactions during {CONFLICT_ATTEMPTS} delete attempts"
        )
        .into(),
    ))
}

/// One `DeleteItem`; `Ok(None)` when a transaction held the item.
async fn delete_once(
    store: &DynamoStore,
    id: CommentId,
    access: &Access,
) -> Result<Option<Comment>, StoreError> {
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
    let output = match request.send().await {
        Ok(output) => output,
        Err(err) if is_transaction_conflict(&err) => return Ok(None),
        Err(err) => {
            let someone_elses = matches!(
                err.as_service_error(),
                Some(DeleteItemError::ConditionalCheckFailedException(failed)) if failed.item.is_some()
            );
            return Err(if someone_elses {
                StoreError::Forbidden(id)
            } else {
                store.classify(err, OnConditionFailed::NotFound(id))
            });
        }
    };
    let old = output
        .attributes
        .ok_or_else(|| internal("DeleteItem with ALL_OLD returned no attributes"))?;
    decode(&old).map(Some)
}

/// BatchWriteItem in chunks of 25, eight in flight. BatchWriteItem refuses two writes of
/// one key in a request, so a repeated id keeps only its last comment, which is also what
/// writing them one after another would leave. A verified comment's claim is put with it,
/// unconditionally like the comment.
pub(super) async fn put_batch(store: &DynamoStore, comments: &[Comment]) -> Result<(), StoreError> {
    let mut seen = std::collections::HashSet::new();
    let mut latest: Vec<&Comment> = comments
        .iter()
        .rev()
        .filter(|c| seen.insert(c.id))
        .collect();
    latest.reverse();
    // A verified comment's claim goes with it (an `import` restores both), once per hash.
    let mut claimed = std::collections::HashSet::new();
    let items: Vec<_> = latest
        .iter()
        .flat_map(|comment| {
            let claim = comment
                .purchase
                .as_ref()
                .filter(|hash| claimed.insert((*hash).clone()))
                .map(super::purchase::claim);
            std::iter::once(item_from_comment(comment)).chain(claim)
        })
        .collect();
    let mut chunks: Vec<Vec<WriteRequest>> = Vec::new();
    for item in items {
        let put = PutRequest::builder()
            .set_item(Some(item))
            .build()
            .map_err(|err| StoreError::Internal(err.into()))?;
        match chunks.last_mut().filter(|chunk| chunk.len() < WRITE_CHUNK) {
            Some(chunk) => chunk.push(WriteRequest::builder().put_request(put).build()),
            None => chunks.push(vec![WriteRequest::builder().put_request(put).build()]),
        }
    }
    futures::stream::iter(chunks)
        .map(|chunk| batch::write_chunk(store.client.clone(), store.table.clone(), chunk))
        .buffer_unordered(BATCHES_IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    tracing::debug!(table = %store.table, items = latest.len(), "dynamodb batch written");
    Ok(())
}
