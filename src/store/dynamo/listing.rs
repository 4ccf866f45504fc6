//! The reads the table's append-only lists share (the moderation log, `super::audit`; a
//! reader's reports, `super::reports`): one `Query` of a GSI partition in id order strictly
//! beyond a key (a key condition, never a filter), and a counter item's count.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};

use super::DynamoStore;
use super::error::{OnConditionFailed, internal};
use super::item::{ID, string_value};
use crate::domain::{EntryId, Order};
use crate::store::StoreError;
use crate::telemetry::metric;

/// The attribute of a counter item that holds its count.
pub(super) const COUNT: &str = "n";

/// Where a list lives: its GSI, the partition key attribute and value, and the sort key
/// attribute (an `EntryId`'s text).
pub(super) struct List<'a> {
    pub index: &'a str,
    pub partition: (&'static str, String),
    pub key: &'static str,
    /// The `operation` label of `dynapage_store_items_read_total`.
    pub operation: &'static str,
}

/// Up to `limit` (at least 1) items of `list` in `order` strictly beyond `after`, and the
/// `EntryId` the query stopped at when it stopped early (more *may* follow it).
pub(super) async fn query(
    store: &DynamoStore,
    list: &List<'_>,
    order: Order,
    after: Option<EntryId>,
    limit: usize,
) -> Result<(Vec<HashMap<String, AttributeValue>>, Option<EntryId>), StoreError> {
    let (partition_name, partition_value) = &list.partition;
    let mut request = store
        .client
        .query()
        .table_name(store.table.as_ref())
        .index_name(list.index)
        .expression_attribute_names("#list", *partition_name)
        .expression_attribute_values(":list", string_value(partition_value.as_str()))
        .scan_index_forward(order == Order::OldestFirst)
        .limit(i32::try_from(limit).unwrap_or(i32::MAX))
        .return_consumed_capacity(ReturnConsumedCapacity::Total);
    let mut condition = "#list = :list".to_owned();
    if let Some(after) = after {
        let op = match order {
            Order::NewestFirst => "<",
            Order::OldestFirst => ">",
        };
        condition.push_str(&format!(" AND #key {op} :after"));
        request = request
            .expression_attribute_names("#key", list.key)
            .expression_attribute_values(":after", string_value(after.to_string()));
    }
    let output = request
        .key_condition_expression(condition)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    metric::STORE_ITEMS_READ
        .counter(&[("operation", list.operation)])
        .increment(output.items().len() as u64);
    let last_evaluated = match output.last_evaluated_key() {
        None => None,
        Some(key) => Some(
            key.get(list.key)
                .and_then(|v| v.as_s().ok())
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    internal(format!(
                        "a {} query's LastEvaluatedKey without `{}`",
                        list.operation, list.key
                    ))
                })?,
        ),
    };
    Ok((output.items().to_vec(), last_evaluated))
}

/// The count the counter item `id` holds in its attribute `n` (0 before it is written), read
/// consistently.
pub(super) async fn count(store: &DynamoStore, id: String) -> Result<u64, StoreError> {
    let output = store
        .client
        .get_item()
        .table_name(store.table.as_ref())
        .key(ID, string_value(id))
        .consistent_read(true)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    Ok(output
        .item()
        .and_then(|item| item.get(COUNT))
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0))
}
