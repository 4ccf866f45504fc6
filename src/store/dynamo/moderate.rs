//! A moderator's decision (`CommentStore::moderate`) and the shop's reply
//! (`CommentStore::reply`), each as one `UpdateItem` of everything either changes: the status,
//! reason, note and decision time, the reply, the next version, and the GSI keys the status
//! calls for (a published comment gets its `sortKey` and `helpfulRank` and loses its queue keys,
//! any other the reverse, so the sparse public GSIs hold published comments only and the queue
//! GSIs the others).
//!
//! The decision depends on the status read (hiding applies to a published comment only), so
//! the write is conditional on the version read: a vote or an edit in between fails it, and the
//! comment is read and decided again. A replay of a write that went through (the SDK resends
//! after a timeout) fails the same condition; the item DynamoDB returns with the failure is then
//! this decision's own, and is the answer.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::batch::RETRY;
use super::error::{OnConditionFailed, internal, is_transaction_conflict};
use super::item::{
    DECIDED_AT, ID, MODERATION_NOTE, MODERATION_REASON, Places, REPLY_AT, REPLY_BODY,
    REPLY_UPDATED_AT, STATUS, VERSION, key_of, number_value, string_value,
};
use super::{DynamoStore, decode, reads};
use crate::domain::{Comment, CommentId, Verdict};
use crate::store::StoreError;

/// Attempts while votes, edits or other decisions keep changing the comment.
const ATTEMPTS: u32 = 8;

/// See the module documentation.
pub(super) async fn moderate(
    store: &DynamoStore,
    id: CommentId,
    verdict: &Verdict,
    now_ms: u64,
) -> Result<Comment, StoreError> {
    rewrite(store, id, "moderation", |old| {
        Ok(Some(old.after_verdict(verdict, now_ms)?))
    })
    .await
}

/// See the module documentation.
pub(super) async fn reply(
    store: &DynamoStore,
    id: CommentId,
    body: Option<&str>,
    now_ms: u64,
) -> Result<Comment, StoreError> {
    rewrite(store, id, "reply", |old| Ok(old.after_reply(body, now_ms)?)).await
}

/// Reads comment `id`, writes what `next` makes of it if it is still at the version read (read
/// and made again while other writes win), and answers the comment as written; `next`
/// answering `None` writes nothing and answers the comment as read.
async fn rewrite(
    store: &DynamoStore,
    id: CommentId,
    what: &str,
    next: impl Fn(&Comment) -> Result<Option<Comment>, StoreError>,
) -> Result<Comment, StoreError> {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        let old = reads::get(store, id)
            .await?
            .ok_or(StoreError::NotFound(id))?;
        let Some(new) = next(&old)? else {
            return Ok(old);
        };
        if let Some(written) = write(store, &old, &new).await? {
            return Ok(written);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, write = what, "a decision or reply met another write, trying again");
    }
    Err(StoreError::Unavailable(
        format!("comment {id} kept changing during {ATTEMPTS} {what} attempts").into(),
    ))
}

/// One conditional `UpdateItem` from `old` to `new`; `Ok(None)` when the comment changed
/// since it was read (or a transaction held it).
async fn write(
    store: &DynamoStore,
    old: &Comment,
    new: &Comment,
) -> Result<Option<Comment>, StoreError> {
    // Version 1 may be stored as no `version` at all (items written before versions).
    let condition = if old.version == 1 {
        "attribute_exists(#id) AND (attribute_not_exists(#version) OR #version = :read)"
    } else {
        "attribute_exists(#id) AND #version = :read"
    };
    let mut request = store
        .client
        .update_item()
        .table_name(store.table.as_ref())
        .set_key(Some(key_of(old.id)))
        .condition_expression(condition)
        .expression_attribute_names("#id", ID)
        .expression_attribute_names("#version", VERSION)
        .expression_attribute_names("#status", STATUS)
        .expression_attribute_names("#reason", MODERATION_REASON)
        .expression_attribute_names("#note", MODERATION_NOTE)
        .expression_attribute_names("#decidedAt", DECIDED_AT)
        .expression_attribute_names("#replyBody", REPLY_BODY)
        .expression_attribute_names("#replyAt", REPLY_AT)
        .expression_attribute_names("#replyUpdatedAt", REPLY_UPDATED_AT)
        .expression_attribute_values(":read", number_value(old.version))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    for (placeholder, name) in Places::NAMES {
        request = request.expression_attribute_names(placeholder, name);
    }
    let (expression, values) = expression(new);
    for (name, value) in values {
        request = request.expression_attribute_values(name, value);
    }
    match request.update_expression(expression).send().await {
        Ok(output) => {
            let item = output
                .attributes
                .ok_or_else(|| internal("UpdateItem with ALL_NEW returned no attributes"))?;
            decode(&item).map(Some)
        }
        Err(err) if is_transaction_conflict(&err) => Ok(None),
        Err(err) => refused(store, old, new, err),
    }
}

/// The update expression from any item of the comment to `new`, with its values: the next
/// version, the status (removed when published), the reason, note and time of the decision and
/// the reply (each removed when it has none), and the GSI keys the status calls for.
fn expression(new: &Comment) -> (String, Vec<(&'static str, AttributeValue)>) {
    let moderation = &new.moderation;
    let mut sets = vec!["#version = :next"];
    let mut removes = Vec::new();
    let mut values = vec![(":next", number_value(new.version))];
    if new.is_public() {
        removes.push("#status");
    } else {
        sets.push("#status = :status");
        values.push((":status", string_value(moderation.status.as_str())));
    }
    let places = Places::of(new);
    sets.extend(places.sets);
    removes.extend(places.removes);
    values.extend(places.values);
    let reply = new.reply.as_ref();
    let optional = [
        (
            "#reason = :reason",
            "#reason",
            ":reason",
            moderation.reason.map(|r| string_value(r.as_str())),
        ),
        (
            "#note = :note",
            "#note",
            ":note",
            moderation.note.as_deref().map(string_value),
        ),
        (
            "#decidedAt = :decidedAt",
            "#decidedAt",
            ":decidedAt",
            moderation.decided_at_ms.map(number_value),
        ),
        (
            "#replyBody = :replyBody",
            "#replyBody",
            ":replyBody",
            reply.map(|r| string_value(r.body.as_str())),
        ),
        (
            "#replyAt = :replyAt",
            "#replyAt",
            ":replyAt",
            reply.map(|r| number_value(r.created_at_ms)),
        ),
        (
            "#replyUpdatedAt = :replyUpdatedAt",
            "#replyUpdatedAt",
            ":replyUpdatedAt",
            reply.and_then(|r| r.updated_at_ms).map(number_value),
        ),
    ];
    for (set, name, placeholder, value) in optional {
        match value {
            Some(value) => {
                sets.push(set);
                values.push((placeholder, value));
            }
            None => removes.push(name),
        }
    }
    let mut expression = format!("SET {}", sets.join(", "));
    if !removes.is_empty() {
        expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
    }
    (expression, values)
}

/// What a failed condition means: the item returned is this decision already written (a
/// replay), or the comment changed (decide again), or it is gone.
fn refused(
    store: &DynamoStore,
    old: &Comment,
    new: &Comment,
    err: aws_sdk_dynamodb::error::SdkError<UpdateItemError>,
) -> Result<Option<Comment>, StoreError> {
    let held = match err.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(failed)) => failed.item.as_ref(),
        _ => None,
    };
    match held.filter(|item| !item.is_empty()).map(decode) {
        Some(Ok(stored)) if stored == *new => Ok(Some(stored)),
        Some(Ok(_)) => Ok(None),
        Some(Err(damaged)) => Err(damaged),
        None => Err(store.classify(err, OnConditionFailed::NotFound(old.id))),
    }
}
