//! `reindex`'s repair of an item's GSI places (`CommentStore::rerank`): an item written before
//! the GSIs by helpful votes existed has no rank and is in neither; one written by another tool
//! may have a rank that is not its count's, or keys that put a comment that is not published in
//! the public GSIs, or keep one out of its queues. Each is given its places (a published comment
//! its `sortKey` and its count's `helpfulRank` and no queue keys, any other its `queueKey` and
//! `skuStatus` and neither public key) with an `UpdateItem` conditional
//! on the version scanned, so that a vote or an edit in between is never undone: on a failed
//! condition the comment is read again (`BatchGetItem`, which `reindex` already may call) and
//! placed by what it now is (a vote on an item without a rank starts the rank from 0, `votes`,
//! which this then puts right).

use futures::{StreamExt, TryStreamExt};

use super::batch::BATCHES_IN_FLIGHT;
use super::error::OnConditionFailed;
use super::item::{ID, Places, VERSION, key_of, number_value};
use super::{DynamoStore, reads};
use crate::domain::Comment;
use crate::store::StoreError;

/// Attempts per comment while votes or edits keep changing it.
const ATTEMPTS: u32 = 5;

/// See the module documentation. Returns how many items it wrote.
pub(super) async fn rerank(store: &DynamoStore, comments: &[Comment]) -> Result<u64, StoreError> {
    let written: Vec<bool> = futures::stream::iter(comments.iter().cloned())
        .map(|comment| rerank_one(store, comment))
        .buffer_unordered(BATCHES_IN_FLIGHT)
        .try_collect()
        .await?;
    let written = written.into_iter().filter(|w| *w).count() as u64;
    if written > 0 {
        tracing::info!(table = %store.table, written, "helpful ranks written");
    }
    Ok(written)
}

/// Writes one comment's rank; `false` when it is gone.
async fn rerank_one(store: &DynamoStore, mut comment: Comment) -> Result<bool, StoreError> {
    for _ in 0..ATTEMPTS {
        // Version 1 may be stored as no `version` at all (items written before versions).
        let condition = if comment.version == 1 {
            "attribute_exists(#id) AND (attribute_not_exists(#version) OR #version = :version)"
        } else {
            "attribute_exists(#id) AND #version = :version"
        };
        let mut request = store
            .client
            .update_item()
            .table_name(store.table.as_ref())
            .set_key(Some(key_of(comment.id)))
            .condition_expression(condition)
            .expression_attribute_names("#id", ID)
            .expression_attribute_names("#version", VERSION)
            .expression_attribute_values(":version", number_value(comment.version));
        let (places, names) = Places::all_of(&comment);
        for (placeholder, name) in names {
            request = request.expression_attribute_names(placeholder, name);
        }
        for (placeholder, value) in places.values {
            request = request.expression_attribute_values(placeholder, value);
        }
        let request = request.update_expression(format!(
            "SET {} REMOVE {}",
            places.sets.join(", "),
            places.removes.join(", ")
        ));
        let sent = request.send().await;
        match sent {
            Ok(_) => return Ok(true),
            Err(err) if is_condition_failure(&err) => {
                match reads::get_many(store, &[comment.id]).await?.pop().flatten() {
                    Some(now) => comment = now,
                    None => return Ok(false),
                }
            }
            Err(err) => return Err(store.classify(err, OnConditionFailed::Unexpected)),
        }
    }
    Err(StoreError::Unavailable(
        format!(
            "comment {} changed during {ATTEMPTS} attempts to write its helpful rank",
            comment.id
        )
        .into(),
    ))
}

fn is_condition_failure(
    err: &aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::update_item::UpdateItemError,
    >,
) -> bool {
    err.as_service_error()
        .is_some_and(|e| e.is_conditional_check_failed_exception())
}
