//! Forgetting one thing of a person's ([`Forget`]) in the table, and reading a voter's votes.
//!
//! Each is one `TransactWriteItems` of the comment's `Update` from the version read to its next
//! one (`moderate::write`: the author, the count and every GSI key as the new comment has them)
//! with the vote or report item's conditional `Delete` (and, for a report, its reporter's
//! counter one lower); alone when the comment is gone (a deleted comment's vote items and
//! reports stay in the table until their person is erased). A write that meets another is
//! read and worked out again; what is already forgotten writes nothing.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem, Update};

use super::batch::RETRY;
use super::error::OnConditionFailed;
use super::item::{ID, number_value, string_value};
use super::listing::COUNT;
use super::report_item::{build, counter_id, item_id};
use super::schema::BY_VOTER;
use super::vote_key::{VOTER, comment_of_vote, vote_id};
use super::{DynamoStore, moderate, reads};
use crate::domain::{CommentId, Forget};
use crate::store::{StoreError, VotePage, VoteQuery};
use crate::telemetry::metric;

/// Attempts while other writes keep changing the comment.
const ATTEMPTS: u32 = 8;

/// See [`crate::store::CommentStore::forget`].
pub(super) async fn forget(store: &DynamoStore, what: &Forget) -> Result<bool, StoreError> {
    let Some(id) = what.comment() else {
        let Forget::Reporter { reporter } = what else {
            unreachable!("only a reporter concerns no comment")
        };
        return alone(
            store,
            vec![drop_counter(store, reporter)?],
            ulid::Ulid::new().to_string(),
        )
        .await;
    };
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        let item = match what {
            Forget::Vote { comment, voter } => Some(vote_id(*comment, *voter)),
            Forget::Report { comment, reporter } => Some(item_id(*comment, reporter)),
            Forget::Author { .. } | Forget::Reporter { .. } => None,
        };
        let existed = match &item {
            Some(item) => exists(store, item).await?,
            None => false,
        };
        let mut extra = Vec::new();
        if let Some(item) = item.filter(|_| existed) {
            extra.push(delete(store, item)?);
            if let Forget::Report { reporter, .. } = what {
                extra.push(uncount(store, reporter)?);
            }
        }
        let old = reads::get(store, id).await?;
        let new = match &old {
            Some(old) => what.next(old, existed)?,
            None => None,
        };
        let token = ulid::Ulid::new().to_string();
        let written = match (old, new) {
            (Some(old), Some(new)) => moderate::write(store, &old, &new, &[], extra, token).await,
            (_, None) if extra.is_empty() => return Ok(false),
            (_, None) => alone(store, extra, token).await,
            (None, Some(_)) => unreachable!("a new comment is made from one read"),
        };
        match written {
            Ok(true) => return Ok(true),
            // Gone meanwhile: the item alone on the next attempt.
            Ok(false) | Err(StoreError::NotFound(_)) => {}
            Err(other) => return Err(other),
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, "forgetting met another write, trying again");
    }
    Err(StoreError::Unavailable(
        format!("comment {id} kept changing during {ATTEMPTS} attempts to forget").into(),
    ))
}

/// Whether the item `id` is there (a consistent read of its key alone).
async fn exists(store: &DynamoStore, id: &str) -> Result<bool, StoreError> {
    let output = store
        .client
        .get_item()
        .table_name(store.table.as_ref())
        .key(ID, string_value(id))
        .projection_expression("#id")
        .expression_attribute_names("#id", ID)
        .consistent_read(true)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    Ok(output.item().is_some_and(|item| !item.is_empty()))
}

/// The `Delete` of item `id`, only while it is there.
fn delete(store: &DynamoStore, id: String) -> Result<TransactWriteItem, StoreError> {
    let delete = Delete::builder()
        .table_name(store.table.as_ref())
        .key(ID, string_value(id))
        .condition_expression("attribute_exists(#id)")
        .expression_attribute_names("#id", ID)
        .build()
        .map_err(build)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

/// The `Delete` of `reporter`'s report counter, only while it counts none: a report filed
/// while their erasure ran keeps its count.
fn drop_counter(store: &DynamoStore, reporter: &str) -> Result<TransactWriteItem, StoreError> {
    let delete = Delete::builder()
        .table_name(store.table.as_ref())
        .key(ID, string_value(counter_id(reporter)))
        .condition_expression("attribute_exists(#id) AND #n <= :zero")
        .expression_attribute_names("#id", ID)
        .expression_attribute_names("#n", COUNT)
        .expression_attribute_values(":zero", number_value(0))
        .build()
        .map_err(build)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

/// The `Update` that takes one from `reporter`'s report counter.
fn uncount(store: &DynamoStore, reporter: &str) -> Result<TransactWriteItem, StoreError> {
    let update = Update::builder()
        .table_name(store.table.as_ref())
        .key(ID, string_value(counter_id(reporter)))
        .update_expression("ADD #n :less")
        .expression_attribute_names("#n", COUNT)
        .expression_attribute_values(":less", number_value(-1))
        .build()
        .map_err(build)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

/// The item writes alone (their comment is gone); `Ok(false)` when one's condition failed or
/// another transaction held one.
async fn alone(
    store: &DynamoStore,
    items: Vec<TransactWriteItem>,
    token: String,
) -> Result<bool, StoreError> {
    let sent = store
        .client
        .transact_write_items()
        .set_transact_items(Some(items))
        .client_request_token(token)
        .send()
        .await;
    match sent {
        Ok(_) => Ok(true),
        Err(err) => match super::error::cancellation(&err) {
            Some(super::error::Cancellation::Throttled) => Err(StoreError::Unavailable(err.into())),
            Some(_) => Ok(false),
            None => Err(store.classify(err, OnConditionFailed::Unexpected)),
        },
    }
}

/// See [`crate::store::CommentStore::votes_by`]: one `Query` of GSI `byVoter` (partition
/// `voter`, sort key the vote item's `id`, so in comment-id order), strictly after `after`.
pub(super) async fn votes_by(
    store: &DynamoStore,
    query: &VoteQuery,
) -> Result<VotePage, StoreError> {
    let mut request = store
        .client
        .query()
        .table_name(store.table.as_ref())
        .index_name(BY_VOTER)
        .expression_attribute_names("#voter", VOTER)
        .expression_attribute_names("#id", ID)
        .expression_attribute_values(":voter", string_value(query.voter.to_string()))
        .projection_expression("#id")
        .limit(i32::try_from(query.limit.max(1)).unwrap_or(i32::MAX));
    request = match query.after {
        Some(after) => request
            .key_condition_expression("#voter = :voter AND #id > :after")
            .expression_attribute_values(":after", string_value(vote_id(after, query.voter))),
        None => request.key_condition_expression("#voter = :voter"),
    };
    let output = request
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "votes_by")])
        .increment(output.items().len() as u64);
    let comments: Vec<CommentId> = output
        .items()
        .iter()
        .filter_map(|item| comment_of_vote(item.get(ID)?.as_s().ok()?))
        .collect();
    let last_evaluated = output
        .last_evaluated_key()
        .and_then(|key| comment_of_vote(key.get(ID)?.as_s().ok()?));
    Ok(VotePage {
        comments,
        last_evaluated,
    })
}
