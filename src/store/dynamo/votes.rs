//! Helpful votes in the table: an item per vote, `id` = `vote#<comment>#<voter>` (and
//! `votedAt`), beside the comment's `helpfulCount`.
//!
//! A vote and the count move together in one `TransactWriteItems`: a `Put` of the vote item
//! on condition that it is absent (a `Delete` on condition that it is present, to take the vote
//! back) and an `Update` of the comment that adds one to (or takes one from) `helpfulCount`
//! and one to `version`, on condition that the comment exists below the highest version
//! (`crate::domain::MAX_VERSION`; at it the vote is refused) and, for a vote, that the voter
//! did not write it. Either both are written or neither, so the count is the number of vote
//! items whatever is retried or raced: a second vote fails its own condition and writes
//! nothing, and is answered as the no-op it is. A transaction that meets another one on the
//! same comment is cancelled (`TransactionConflict`) and sent again with backoff; the SDK's
//! own retries reuse the attempt's `ClientRequestToken`, so a retry of a transaction that was
//! written is answered as written rather than applied twice.
//!
//! The comment's new version makes the write a stream `MODIFY` of the comment (the vote item's
//! own `INSERT`/`REMOVE` records are skipped by `change`), which the index applies and live
//! subscribers see as an update with the new count.
//!
//! The same `Update` moves the comment's `helpfulRank` (its place in the GSIs by helpful
//! votes, `helpful_rank::helpful_rank`) by one vote's step, so the list by helpful votes
//! changes in the same transaction as the count.
//!
//! What it costs: a transactional write costs two write units per KB begun of each item it
//! writes (AWS pricing); the vote item is written twice (in the table and in GSI `byVoter`,
//! which lists a person's votes), and the comment seven times: in the table, in its two GSIs
//! by time (which project every attribute: pages read the count from them), and twice in each
//! GSI by helpful votes, whose sort key the vote moves (DynamoDB writes such a change as a
//! deletion and an insertion). So a vote costs `2 × (2 + 7 × ⌈comment KB⌉)` write units, 18
//! for a comment under 1 KB (an update is charged by the larger of the item before and after),
//! then one strongly consistent `GetItem` of the comment for the answer (1 read unit per 4 KB).
//! Measured in BENCHMARKS.md.
//!
//! Vote items of a deleted comment stay in the table until their voter is erased (GSI
//! `byVoter` finds them then; by comment, finding them would need a scan); they are skipped
//! everywhere, and `verify` counts them.

use std::collections::HashSet;

use aws_sdk_dynamodb::types::{
    CancellationReason, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use super::batch::{self, RETRY};
use super::error::{Cancellation, OnConditionFailed, cancellation, cancellation_reasons};
use super::helpful_rank::RANK_COUNT;
use super::item::{
    AUTHOR_SUB, BELOW_CEILING, HELPFUL_COUNT, HELPFUL_RANK, ID, SORT_KEY, VERSION, ceiling_value,
    key_of, number_value, string_value, version_at_ceiling,
};
use super::vote_key::{VOTER, comment_of_vote, is_vote_id, vote_id};
use super::{DynamoStore, reads};
use crate::domain::{CommentId, VersionCeiling, Voted, Voter, VoterId};
use crate::store::StoreError;
use crate::telemetry::metric;

/// Attempts of a vote while other votes' transactions hold its comment.
const CONFLICT_ATTEMPTS: u32 = 10;

const VOTED_AT: &str = "votedAt";

/// What one transaction did.
enum Outcome {
    Written,
    /// A condition on the vote item failed: the vote was already as asked.
    Unchanged,
    /// Another transaction held the comment: send again.
    Conflict,
}

/// See the module documentation.
pub(super) async fn mark_helpful(
    store: &DynamoStore,
    id: CommentId,
    voter: &Voter,
    helpful: bool,
    now_ms: u64,
) -> Result<Voted, StoreError> {
    for attempt in 0..CONFLICT_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        let changed = match transact(store, id, voter, helpful, now_ms).await? {
            Outcome::Written => true,
            Outcome::Unchanged => false,
            Outcome::Conflict => {
                metric::STORE_TRANSACTION_CONFLICTS
                    .counter(&[])
                    .increment(1);
                tracing::debug!(table = %store.table, comment_id = %id, attempt, "vote met another transaction, retrying");
                continue;
            }
        };
        // The comment as it is now: this vote's count, or a later one's.
        let comment = reads::get(store, id)
            .await?
            .ok_or(StoreError::NotFound(id))?;
        return Ok(Voted { comment, changed });
    }
    Err(StoreError::Unavailable(
        format!(
            "comment {id} stayed in other transactions during {CONFLICT_ATTEMPTS} vote attempts"
        )
        .into(),
    ))
}

fn build_error(err: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(err.into())
}

/// The `Put` or `Delete` of the vote item, conditional on its absence or presence.
fn vote_write(
    store: &DynamoStore,
    id: CommentId,
    voter: VoterId,
    helpful: bool,
    now_ms: u64,
) -> Result<TransactWriteItem, StoreError> {
    let vote = vote_id(id, voter);
    let item = TransactWriteItem::builder();
    Ok(if helpful {
        let put = Put::builder()
            .table_name(store.table.as_ref())
            .item(ID, string_value(vote))
            .item(VOTED_AT, number_value(now_ms))
            .item(VOTER, string_value(voter.to_string()))
            .condition_expression("attribute_not_exists(#id)")
            .expression_attribute_names("#id", ID)
            .build()
            .map_err(build_error)?;
        item.put(put).build()
    } else {
        let delete = Delete::builder()
            .table_name(store.table.as_ref())
            .key(ID, string_value(vote))
            .condition_expression("attribute_exists(#id)")
            .expression_attribute_names("#id", ID)
            .build()
            .map_err(build_error)?;
        item.delete(delete).build()
    })
}

/// The `Update` of the comment's count and version, conditional on the comment below the
/// version ceiling (and, for a vote of a signed-in voter, on someone else having written it).
fn count_write(
    store: &DynamoStore,
    id: CommentId,
    voter: &Voter,
    helpful: bool,
) -> Result<TransactWriteItem, StoreError> {
    let mut update = Update::builder()
        .table_name(store.table.as_ref())
        .set_key(Some(key_of(id)))
        // The rank moves with the count, one vote's step (`helpful_rank::helpful_rank`). A
        // comment written before ranks existed has none until `reindex` writes it; here it would
        // start from 0, a wrong rank that `verify` reports and `reindex` puts right.
        .update_expression(
            "SET #count = if_not_exists(#count, :zero) + :delta, \
             #rank = if_not_exists(#rank, :zero) + :step, \
             #version = if_not_exists(#version, :one) + :one",
        )
        .expression_attribute_names("#id", ID)
        .expression_attribute_names("#count", HELPFUL_COUNT)
        .expression_attribute_names("#rank", HELPFUL_RANK)
        .expression_attribute_values(
            ":step",
            number_value(if helpful {
                RANK_COUNT.to_string()
            } else {
                format!("-{RANK_COUNT}")
            }),
        )
        .expression_attribute_names("#version", VERSION)
        .expression_attribute_values(":zero", number_value(0))
        .expression_attribute_values(":one", number_value(1))
        .expression_attribute_values(":ceiling", ceiling_value())
        .expression_attribute_values(":delta", number_value(if helpful { 1 } else { -1 }))
        // The item comes back with a failed condition: present means the voter's own comment.
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    // Only a published comment (one with a `sortKey`: the GSIs are sparse) takes votes.
    update = update.expression_attribute_names("#sortKey", SORT_KEY);
    update = match (&voter.sub, helpful) {
        (Some(sub), true) => update
            .condition_expression(format!(
                "attribute_exists(#id) AND attribute_exists(#sortKey) AND {BELOW_CEILING} \
                 AND (attribute_not_exists(#authorSub) OR #authorSub <> :sub)"
            ))
            .expression_attribute_names("#authorSub", AUTHOR_SUB)
            .expression_attribute_values(":sub", string_value(sub.as_str())),
        _ => update.condition_expression(format!(
            "attribute_exists(#id) AND attribute_exists(#sortKey) AND {BELOW_CEILING}"
        )),
    };
    Ok(TransactWriteItem::builder()
        .update(update.build().map_err(build_error)?)
        .build())
}

async fn transact(
    store: &DynamoStore,
    id: CommentId,
    voter: &Voter,
    helpful: bool,
    now_ms: u64,
) -> Result<Outcome, StoreError> {
    let sent = store
        .client
        .transact_write_items()
        .transact_items(vote_write(store, id, voter.id, helpful, now_ms)?)
        .transact_items(count_write(store, id, voter, helpful)?)
        .client_request_token(ulid::Ulid::new().to_string())
        .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
        .send()
        .await;
    let err = match sent {
        Ok(output) => {
            let units: f64 = output
                .consumed_capacity()
                .iter()
                .filter_map(|c| c.capacity_units())
                .sum();
            metric::STORE_WRITE_UNITS
                .counter(&[("operation", "mark_helpful")])
                .increment(units.round() as u64);
            tracing::debug!(table = %store.table, comment_id = %id, helpful, consumed_wcu = units, "dynamodb vote written");
            return Ok(Outcome::Written);
        }
        Err(err) => err,
    };
    let Some(cancelled) = cancellation(&err) else {
        return Err(store.classify(err, OnConditionFailed::Unexpected));
    };
    let reasons = cancellation_reasons(&err);
    let code = |i: usize| reasons.get(i).and_then(CancellationReason::code);
    if code(1) == Some("ConditionalCheckFailed") {
        let held = reasons[1].item().filter(|item| !item.is_empty());
        return match held.and_then(version_at_ceiling) {
            // The vote was as asked already: nothing to write, the ceiling or not.
            Some(_) if code(0) == Some("ConditionalCheckFailed") => Ok(Outcome::Unchanged),
            Some(version) => Err(VersionCeiling { id, version }.into()),
            // Published and below the ceiling: the author condition failed.
            None if held.is_some_and(|item| item.contains_key(SORT_KEY)) => {
                Err(StoreError::OwnComment(id))
            }
            // Gone, or not published: nobody votes on what the public cannot see.
            None => Err(StoreError::NotFound(id)),
        };
    }
    match cancelled {
        Cancellation::ConditionFailed(_) => Ok(Outcome::Unchanged),
        Cancellation::Conflict => Ok(Outcome::Conflict),
        Cancellation::Throttled => Err(StoreError::Unavailable(err.into())),
        Cancellation::Other => Err(store.classify(err, OnConditionFailed::Unexpected)),
    }
}

/// `BatchGetItem` of `voter`'s vote items for `ids` (distinct ids, 100 a call, eight calls in
/// flight; only the `id` attribute is read), strongly consistent, so a vote shows at once.
pub(super) async fn helpful_votes(
    store: &DynamoStore,
    voter: VoterId,
    ids: &[CommentId],
) -> Result<Vec<bool>, StoreError> {
    let keys = ids.iter().map(|id| vote_id(*id, voter)).collect();
    let found = batch::get_by_ids(&store.client, &store.table, keys, true).await?;
    let voted: HashSet<CommentId> = found
        .iter()
        .filter_map(|item| item.get(ID)?.as_s().ok())
        .filter(|id| is_vote_id(id))
        .filter_map(|id| comment_of_vote(id))
        .collect();
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "helpful_votes")])
        .increment(voted.len() as u64);
    Ok(ids.iter().map(|id| voted.contains(id)).collect())
}
