//! Batch reads and writes: chunking is done by the caller, this file sends one chunk and
//! retries what DynamoDB left unprocessed.
//!
//! `BatchGetItem` and `BatchWriteItem` succeed even when throttled partitions leave some keys
//! or writes undone (`UnprocessedKeys`, `UnprocessedItems`); the SDK does not retry those, so
//! each chunk resends its leftovers with exponential backoff and jitter, and reports the store
//! unavailable only when they keep coming back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, ReturnConsumedCapacity, WriteRequest,
};
use futures::{StreamExt, TryStreamExt};

use super::decode;
use super::error::{OnConditionFailed, classify};
use super::item::{ID, key_of};
use crate::backoff::Backoff;
use crate::domain::{Comment, CommentId};
use crate::store::StoreError;
use crate::telemetry::metric;

/// BatchGetItem accepts at most 100 keys per request.
pub(super) const GET_CHUNK: usize = 100;
/// BatchWriteItem accepts at most 25 writes per request.
pub(super) const WRITE_CHUNK: usize = 25;
/// Batch requests in flight at once during `put_batch` and `get_many`.
pub(super) const BATCHES_IN_FLIGHT: usize = 8;
/// Rounds of `UnprocessedKeys`/`UnprocessedItems` retries before giving up as unavailable.
const UNPROCESSED_ATTEMPTS: u32 = 10;

/// One BatchGetItem of at most 100 distinct ids, retrying unprocessed keys.
pub(super) async fn get_chunk(
    client: Client,
    table: Arc<str>,
    ids: Vec<CommentId>,
) -> Result<Vec<Comment>, StoreError> {
    let keys = ids.into_iter().map(key_of).collect();
    let items = get_items(&client, &table, keys, false).await?;
    items.iter().map(decode).collect()
}

/// The items whose `id`s are `ids` (repeats read once), in batches of [`GET_CHUNK`],
/// [`BATCHES_IN_FLIGHT`] at a time, as [`get_items`] reads them; in no particular order.
pub(super) async fn get_by_ids(
    client: &Client,
    table: &Arc<str>,
    mut ids: Vec<String>,
    ids_only: bool,
) -> Result<Vec<HashMap<String, AttributeValue>>, StoreError> {
    ids.sort_unstable();
    ids.dedup();
    let chunks: Vec<Vec<_>> = ids
        .chunks(GET_CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .map(|id| HashMap::from([(ID.to_owned(), AttributeValue::S(id.clone()))]))
                .collect()
        })
        .collect();
    let found: Vec<Vec<_>> = futures::stream::iter(chunks)
        .map(|keys| get_items(client, table, keys, ids_only))
        .buffer_unordered(BATCHES_IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// One BatchGetItem of at most 100 distinct keys, read consistently, retrying unprocessed
/// keys: the items found, whole or (`ids_only`) with only their `id`. Counts the read
/// capacity DynamoDB says it consumed in `dynapage_store_read_units_total`.
pub(super) async fn get_items(
    client: &Client,
    table: &Arc<str>,
    mut keys: Vec<HashMap<String, AttributeValue>>,
    ids_only: bool,
) -> Result<Vec<HashMap<String, AttributeValue>>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for attempt in 0..UNPROCESSED_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        let mut request = KeysAndAttributes::builder()
            .set_keys(Some(std::mem::take(&mut keys)))
            .consistent_read(true);
        if ids_only {
            request = request
                .projection_expression("#id")
                .expression_attribute_names("#id", ID);
        }
        let request = request
            .build()
            .map_err(|err| StoreError::Internal(err.into()))?;
        let mut output = client
            .batch_get_item()
            .request_items(table.as_ref(), request)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| classify(table, err, OnConditionFailed::Unexpected))?;
        let units: f64 = output
            .consumed_capacity()
            .iter()
            .filter_map(|c| c.capacity_units())
            .sum();
        let operation = if ids_only {
            "helpful_votes"
        } else {
            "get_many"
        };
        metric::STORE_READ_UNITS
            .counter(&[("operation", operation)])
            .increment(units.round() as u64);
        found.extend(
            output
                .responses
                .as_mut()
                .and_then(|r| r.remove(table.as_ref()))
                .unwrap_or_default(),
        );
        keys = output
            .unprocessed_keys
            .and_then(|mut u| u.remove(table.as_ref()))
            .map(|k| k.keys)
            .unwrap_or_default();
        if keys.is_empty() {
            return Ok(found);
        }
    }
    Err(StoreError::Unavailable(
        format!(
            "{} keys still unprocessed after {UNPROCESSED_ATTEMPTS} BatchGetItem rounds",
            keys.len()
        )
        .into(),
    ))
}

/// One BatchWriteItem of at most 25 puts, retrying unprocessed items.
pub(super) async fn write_chunk(
    client: Client,
    table: Arc<str>,
    mut requests: Vec<WriteRequest>,
) -> Result<(), StoreError> {
    for attempt in 0..UNPROCESSED_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        let output = client
            .batch_write_item()
            .request_items(table.as_ref(), std::mem::take(&mut requests))
            .send()
            .await
            .map_err(|err| classify(&table, err, OnConditionFailed::Unexpected))?;
        requests = output
            .unprocessed_items
            .and_then(|mut u| u.remove(table.as_ref()))
            .unwrap_or_default();
        if requests.is_empty() {
            return Ok(());
        }
    }
    Err(StoreError::Unavailable(
        format!(
            "{} writes still unprocessed after {UNPROCESSED_ATTEMPTS} BatchWriteItem rounds",
            requests.len()
        )
        .into(),
    ))
}

/// Exponential backoff with jitter for batch and transaction retries: 100 ms before the
/// second try, doubling to at most 3 s, each drawn from the upper half of its step so retries
/// of parallel batches spread out. `RETRY.pause(attempt)` before try `attempt + 1`.
pub(super) const RETRY: Backoff =
    Backoff::new(Duration::from_millis(100), Duration::from_secs(3)).with_jitter();
