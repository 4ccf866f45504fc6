//! Verified purchases in the comments' table: the claim item (`id` `purchase#<hash>`) that a
//! verified create puts in the same transaction as the comment, conditional on its absence: one
//! verified comment per order and product, ever. (The comment's own attributes, its hash and
//! the keys of its verified lists' GSIs, are spelled in `super::item`.)

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::DynamoStore;
use super::error::{Cancellation, OnConditionFailed, cancellation};
use super::item::{ID, item_from_comment, string_value};
use crate::domain::{Comment, OrderHash};
use crate::store::StoreError;

/// The start of every claim item's `id` (no comment id starts with lower case).
const PREFIX: &str = "purchase#";

/// Whether an item's `id` is a purchase claim's rather than a comment's.
pub(super) fn is_purchase_id(id: &str) -> bool {
    id.starts_with(PREFIX)
}

/// The claim item of `hash`: its id alone.
pub(super) fn claim(hash: &OrderHash) -> HashMap<String, AttributeValue> {
    HashMap::from([(
        ID.to_owned(),
        string_value(format!("{PREFIX}{}", hash.as_str())),
    )])
}

/// Creates a verified comment: its item and its claim in one `TransactWriteItems`, each
/// conditional on its id being free. The comment's id is the request token, so the SDK's retry
/// of a transaction that was written within ten minutes succeeds without writing twice.
pub(super) async fn create(
    store: &DynamoStore,
    comment: &Comment,
    hash: &OrderHash,
) -> Result<(), StoreError> {
    let put = |item: HashMap<String, AttributeValue>| {
        Put::builder()
            .table_name(store.table.as_ref())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#id)")
            .expression_attribute_names("#id", ID)
            .build()
            .map(|put| TransactWriteItem::builder().put(put).build())
            .map_err(|e| StoreError::Internal(e.into()))
    };
    let items = vec![put(item_from_comment(comment))?, put(claim(hash))?];
    let sent = store
        .client
        .transact_write_items()
        .set_transact_items(Some(items))
        .client_request_token(comment.id.to_string())
        .send()
        .await;
    let Err(err) = sent else {
        return Ok(());
    };
    match cancellation(&err) {
        Some(Cancellation::ConditionFailed(0)) => Err(StoreError::AlreadyExists(comment.id)),
        Some(Cancellation::ConditionFailed(_)) => Err(StoreError::PurchaseUsed),
        Some(Cancellation::Conflict | Cancellation::Throttled) => {
            Err(StoreError::Unavailable(err.into()))
        }
        _ => Err(store.classify(err, OnConditionFailed::Unexpected)),
    }
}
