//! The adapter's reads: a partition in sort-key order (`Query` on a GSI), comments by id
//! (`GetItem`, `BatchGetItem`) and the table in parallel segments (`Scan`, which meets vote
//! items too: they are tallied, never decoded as comments).
//!
//! Every read is one call (or one batch of calls) and reports what it read in
//! `dynapage_store_items_read_total`; none loops over `LastEvaluatedKey`, since the pagination
//! engine decides whether to read on. Nothing here writes.

use std::collections::HashMap;
use std::ops::Bound;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use futures::{StreamExt, TryStreamExt};

use super::audit;
use super::batch::{self, BATCHES_IN_FLIGHT, GET_CHUNK};
use super::error::{OnConditionFailed, internal};
use super::helpful_rank::helpful_rank;
use super::item::{
    AUTHOR_KEY, AUTHOR_STATUS, AUTHOR_SUB, HELPFUL_RANK, ID, QUEUE_KEY, REPORTED, REPORTED_KEY,
    REPORTED_QUEUE, SKU, SKU_RATING, SKU_REPORTED, SKU_STATUS, SORT_KEY, STATUS, author_status,
    helpful_position_from_item, key_of, number_value, place_is_current, sku_rating, sku_status,
    sort_key_from_item, string_value, time_key_in,
};
use super::schema::{
    BY_AUTHOR, BY_AUTHOR_STATUS, BY_PRODUCT, BY_PRODUCT_HELPFUL, BY_PRODUCT_QUEUE,
    BY_PRODUCT_RATING, BY_PRODUCT_RATING_HELPFUL, BY_PRODUCT_REPORTED, BY_QUEUE, BY_REPORTED,
};
use super::vote_key::{comment_of_vote, is_vote_id};
use super::{DynamoStore, decode};
use crate::domain::{Comment, CommentId, Order, Position, Queue, verified_product};
use crate::store::{KeyQuery, Partition, QueryPage, ScanPage, StoreError};
use crate::telemetry::metric;

/// Items per scan page, like the embedded store's (DynamoDB may still cut at 1 MB).
const SCAN_PAGE: i32 = 1_000;

/// The capacity units a call reports having consumed (0 when it reports none), for logs.
fn capacity_units(consumed: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>) -> f64 {
    consumed
        .and_then(|c| c.capacity_units())
        .unwrap_or_default()
}

/// A strongly consistent read of one comment.
pub(super) async fn get(store: &DynamoStore, id: CommentId) -> Result<Option<Comment>, StoreError> {
    let output = store
        .client
        .get_item()
        .table_name(store.table.as_ref())
        .set_key(Some(key_of(id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    output.item.as_ref().map(decode).transpose()
}

/// The index, partition key attribute and value a partition is read from.
fn partition_key(partition: &Partition) -> (&'static str, &'static str, String) {
    if let Some(twin) = verified_partition_key(partition) {
        return twin;
    }
    match partition {
        Partition::Product(sku) => (BY_PRODUCT, SKU, sku.as_str().to_owned()),
        Partition::ProductRating(sku, rating) => {
            (BY_PRODUCT_RATING, SKU_RATING, sku_rating(sku, *rating))
        }
        Partition::ProductHelpful(sku) => (BY_PRODUCT_HELPFUL, SKU, sku.as_str().to_owned()),
        Partition::ProductRatingHelpful(sku, rating) => (
            BY_PRODUCT_RATING_HELPFUL,
            SKU_RATING,
            sku_rating(sku, *rating),
        ),
        Partition::Queue(queue) => match (queue.queue().status(), queue.sku()) {
            (Some(status), None) => (BY_QUEUE, STATUS, status.as_str().to_owned()),
            (Some(status), Some(sku)) => (BY_PRODUCT_QUEUE, SKU_STATUS, sku_status(sku, status)),
            (None, None) => (BY_REPORTED, REPORTED_QUEUE, REPORTED.to_owned()),
            (None, Some(sku)) => (BY_PRODUCT_REPORTED, SKU_REPORTED, sku.as_str().to_owned()),
        },
        Partition::Author(list) => match list.status() {
            None => (BY_AUTHOR, AUTHOR_SUB, list.sub().to_owned()),
            Some(status) => (
                BY_AUTHOR_STATUS,
                AUTHOR_STATUS,
                author_status(list.sub(), status),
            ),
        },
    }
}

/// The index, partition key attribute and value of a partition of a product's verified twin
/// (`crate::domain::verified_list`): the four GSIs on `verifiedSku` and `verifiedSkuRating`,
/// which only verified comments carry. `None` for any other partition.
fn verified_partition_key(partition: &Partition) -> Option<(&'static str, &'static str, String)> {
    use super::item::{VERIFIED_SKU, VERIFIED_SKU_RATING};
    use super::schema::{
        BY_VERIFIED, BY_VERIFIED_HELPFUL, BY_VERIFIED_RATING, BY_VERIFIED_RATING_HELPFUL,
    };
    let product = |list: &crate::domain::Sku| verified_product(list.as_str());
    Some(match partition {
        Partition::Product(list) => (BY_VERIFIED, VERIFIED_SKU, product(list)?.to_string()),
        Partition::ProductHelpful(list) => (
            BY_VERIFIED_HELPFUL,
            VERIFIED_SKU,
            product(list)?.to_string(),
        ),
        Partition::ProductRating(list, rating) => (
            BY_VERIFIED_RATING,
            VERIFIED_SKU_RATING,
            sku_rating(&product(list)?, *rating),
        ),
        Partition::ProductRatingHelpful(list, rating) => (
            BY_VERIFIED_RATING_HELPFUL,
            VERIFIED_SKU_RATING,
            sku_rating(&product(list)?, *rating),
        ),
        _ => return None,
    })
}

/// The sort key attribute of a partition by time: `queueKey` in a queue, `authorKey` in an
/// author's list, `sortKey` elsewhere.
fn time_key(partition: &Partition) -> &'static str {
    match partition {
        Partition::Queue(queue) if queue.queue() == Queue::Reported => REPORTED_KEY,
        Partition::Queue(_) => QUEUE_KEY,
        Partition::Author(_) => AUTHOR_KEY,
        _ => SORT_KEY,
    }
}

/// The key condition of `KeyQuery::from` (see [`KeyQuery::admits`]): the operator, the sort
/// key attribute and its value (`sortKey`, or `helpfulRank` in a partition by helpful votes).
fn bound_condition(query: &KeyQuery) -> Option<(&'static str, &'static str, AttributeValue)> {
    let (op, position) = match (&query.from, query.order) {
        (Bound::Unbounded, _) => return None,
        (Bound::Excluded(p), Order::NewestFirst) => ("<", p),
        (Bound::Included(p), Order::NewestFirst) => ("<=", p),
        (Bound::Excluded(p), Order::OldestFirst) => (">", p),
        (Bound::Included(p), Order::OldestFirst) => (">=", p),
    };
    Some(if query.partition.by_helpful() {
        let rank = helpful_rank(u64::from(position.group), &position.key);
        (op, HELPFUL_RANK, number_value(rank))
    } else {
        let attribute = time_key(&query.partition);
        (op, attribute, string_value(position.key.to_string()))
    })
}

/// The position a query's `LastEvaluatedKey` names, in its partition's order.
fn last_position(
    partition: &Partition,
    key: &HashMap<String, AttributeValue>,
) -> Result<Position, StoreError> {
    let position = match partition {
        Partition::Queue(_) | Partition::Author(_) => {
            time_key_in(key, time_key(partition)).map(Position::flat)
        }
        _ if partition.by_helpful() => helpful_position_from_item(key),
        _ => sort_key_from_item(key).map(Position::flat),
    };
    position.map_err(|err| StoreError::Internal(err.into()))
}

/// One `Query` on the partition's GSI. The bound is a key condition (never a filter), so
/// `Limit` counts exactly the items that come back and a cursor on a deleted comment still
/// positions the read.
pub(super) async fn query(store: &DynamoStore, query: &KeyQuery) -> Result<QueryPage, StoreError> {
    if query.limit == 0 {
        // DynamoDB refuses `Limit 0`; the embedded store answers an empty page.
        return Ok(QueryPage::default());
    }
    let (index, partition_attribute, partition_value) = partition_key(&query.partition);
    let mut condition = "#pk = :pk".to_owned();
    let mut request = store
        .client
        .query()
        .table_name(store.table.as_ref())
        .index_name(index)
        .expression_attribute_names("#pk", partition_attribute)
        .expression_attribute_values(":pk", string_value(partition_value.as_str()))
        .scan_index_forward(query.order == Order::OldestFirst)
        .limit(i32::try_from(query.limit).unwrap_or(i32::MAX))
        .return_consumed_capacity(ReturnConsumedCapacity::Total);
    if let Some((op, attribute, value)) = bound_condition(query) {
        condition.push_str(&format!(" AND #sk {op} :sk"));
        request = request
            .expression_attribute_names("#sk", attribute)
            .expression_attribute_values(":sk", value);
    }
    let output = request
        .key_condition_expression(condition)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    let items = output
        .items()
        .iter()
        .map(decode)
        .collect::<Result<Vec<_>, _>>()?;
    let last_evaluated = output
        .last_evaluated_key()
        .map(|key| last_position(&query.partition, key))
        .transpose()?;
    let consumed_rcu = capacity_units(output.consumed_capacity());
    tracing::debug!(
        table = %store.table,
        index,
        partition = %partition_value,
        items = items.len(),
        more = last_evaluated.is_some(),
        consumed_rcu,
        "dynamodb query"
    );
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "query")])
        .increment(items.len() as u64);
    Ok(QueryPage {
        items,
        last_evaluated,
    })
}

/// BatchGetItem in chunks of 100 distinct ids (BatchGetItem refuses duplicates), read
/// consistently so a comment is visible right after its write, as in the embedded store.
pub(super) async fn get_many(
    store: &DynamoStore,
    ids: &[CommentId],
) -> Result<Vec<Option<Comment>>, StoreError> {
    let mut distinct = ids.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let chunks: Vec<Vec<CommentId>> = distinct.chunks(GET_CHUNK).map(<[_]>::to_vec).collect();
    let found: Vec<Vec<Comment>> = futures::stream::iter(chunks)
        .map(|chunk| batch::get_chunk(store.client.clone(), store.table.clone(), chunk))
        .buffer_unordered(BATCHES_IN_FLIGHT)
        .try_collect()
        .await?;
    let by_id: HashMap<CommentId, Comment> = found
        .into_iter()
        .flatten()
        .map(|comment| (comment.id, comment))
        .collect();
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "get_many")])
        .increment(by_id.len() as u64);
    Ok(ids.iter().map(|id| by_id.get(id).cloned()).collect())
}

/// One page of a parallel scan segment: its comments, and the comments its vote items name
/// (see [`ScanPage::votes`]). The table key is only `id`, so the resume token is the last
/// evaluated `id`, a comment's or a vote's.
pub(super) async fn scan(
    store: &DynamoStore,
    segment: u32,
    total_segments: u32,
    resume: Option<String>,
) -> Result<ScanPage, StoreError> {
    let start = resume.map(|token| HashMap::from([(ID.to_owned(), string_value(token))]));
    let to_i32 = |n: u32| i32::try_from(n).map_err(|err| StoreError::Internal(err.into()));
    let output = store
        .client
        .scan()
        .table_name(store.table.as_ref())
        .segment(to_i32(segment)?)
        .total_segments(to_i32(total_segments.max(1))?)
        .limit(SCAN_PAGE)
        .set_exclusive_start_key(start)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    let mut items = Vec::with_capacity(output.items().len());
    let mut unranked = Vec::new();
    let mut votes: HashMap<CommentId, u64> = HashMap::new();
    let mut log = Vec::new();
    let mut reports = Vec::new();
    for item in output.items() {
        let id = item.get(ID).and_then(|id| id.as_s().ok());
        if id.is_some_and(|id| audit::is_log_id(id)) {
            log.extend(audit::scanned(item).transpose()?);
            continue;
        }
        if id.is_some_and(|id| super::report_item::is_report_id(id)) {
            reports.extend(super::report_item::scanned(item).transpose()?);
            continue;
        }
        match id.filter(|id| is_vote_id(id) || super::purchase::is_purchase_id(id)) {
            // A purchase claim is no comment, and holds nothing a scan reads.
            Some(claim) if super::purchase::is_purchase_id(claim) => {}
            Some(vote) => {
                let comment = comment_of_vote(vote)
                    .ok_or_else(|| internal(format!("vote item `{vote}` names no comment")))?;
                *votes.entry(comment).or_default() += 1;
            }
            None => {
                let comment = decode(item)?;
                if !place_is_current(item, &comment) {
                    unranked.push(comment.clone());
                }
                items.push(comment);
            }
        }
    }
    let consumed_rcu = capacity_units(output.consumed_capacity());
    tracing::debug!(
        table = %store.table,
        segment,
        items = items.len(),
        votes = votes.values().sum::<u64>(),
        consumed_rcu,
        "dynamodb scan"
    );
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "scan")])
        .increment(output.items().len() as u64);
    let resume = output
        .last_evaluated_key()
        .map(|key| match key.get(ID).map(AttributeValue::as_s) {
            Some(Ok(id)) => Ok(id.clone()),
            _ => Err(internal("scan LastEvaluatedKey has no string `id`")),
        })
        .transpose()?;
    Ok(ScanPage {
        items,
        votes: votes.into_iter().collect(),
        unranked,
        log,
        reports,
        resume,
    })
}
