//! A moderator's decision (`CommentStore::moderate`) and the shop's reply
//! (`CommentStore::reply`), each as one `UpdateItem` of everything either changes: the status,
//! reason, note and decision time, the reply, the next version, and the GSI keys the status
//! calls for (a published comment gets its `sortKey` and `helpfulRank` and loses its queue keys,
//! any other the reverse, so the sparse public GSIs hold published comments only and the queue
//! GSIs the others).
//!
//! The decision depends on the status read (hiding applies to a published comment only), so
//! the write is conditional on the version read: a vote or an edit in between fails it, and the
//! comment is read and decided again. The update goes in one `TransactWriteItems` with the
//! moderation log's entries for it (`audit`) and, for a decision, the closing of the comment's
//! open reports (`reports`): all are written or none. The SDK's resend of a
//! transaction that went through (a timeout) carries the same client request token, and
//! DynamoDB answers it as done without writing again.

use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::audit;
use super::batch::RETRY;
use super::error::{Cancellation, OnConditionFailed, cancellation, cancellation_reasons};
use super::item::{
    AUTHOR, AUTHOR_SUB, DECIDED_AT, HELPFUL_COUNT, ID, MODERATION_NOTE, MODERATION_REASON, Places,
    REPLY_AT, REPLY_BODY, REPLY_UPDATED_AT, STATUS, VERSION, key_of, number_value, string_value,
};
use super::{DynamoStore, reads, report_item};
use crate::domain::{Comment, CommentId, LogEntry, Verdict};
use crate::store::StoreError;

/// Attempts while votes, edits or other decisions keep changing the comment.
const ATTEMPTS: u32 = 8;

/// See the module documentation.
pub(super) async fn moderate(
    store: &DynamoStore,
    id: CommentId,
    verdict: &Verdict,
    actor: &str,
    now_ms: u64,
) -> Result<Comment, StoreError> {
    let action = verdict.decision.logged();
    rewrite(
        store,
        id,
        "moderation",
        |old| Ok(Some(old.after_verdict(verdict, now_ms)?)),
        |old, new| LogEntry::of_decision(actor, action, old, new, now_ms),
        |old, new| match old.closes_reports(new) {
            Some(outcome) => report_item::closings(store, old, outcome, now_ms),
            None => Ok(Vec::new()),
        },
    )
    .await
}

/// See the module documentation.
pub(super) async fn reply(
    store: &DynamoStore,
    id: CommentId,
    body: Option<&str>,
    actor: &str,
    now_ms: u64,
) -> Result<Comment, StoreError> {
    rewrite(
        store,
        id,
        "reply",
        |old| Ok(old.after_reply(body, now_ms)?),
        |old, new| {
            vec![LogEntry::of(
                actor,
                LogEntry::reply_action(new),
                old,
                new,
                now_ms,
            )]
        },
        |_, _| Ok(Vec::new()),
    )
    .await
}

/// Reads comment `id`, writes what `next` makes of it if it is still at the version read (read
/// and made again while other writes win) with the log entries `entries` makes of the two and
/// the other items `extra` makes of them (the reports a decision closes), and answers the
/// comment as written; `next` answering `None` writes nothing and answers the comment as read.
async fn rewrite(
    store: &DynamoStore,
    id: CommentId,
    what: &str,
    next: impl Fn(&Comment) -> Result<Option<Comment>, StoreError>,
    entries: impl Fn(&Comment, &Comment) -> Vec<LogEntry>,
    extra: impl Fn(&Comment, &Comment) -> Result<Vec<TransactWriteItem>, StoreError>,
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
        let entries = entries(&old, &new);
        let token = entries
            .first()
            .map(|e| e.id.to_string())
            .unwrap_or_default();
        if write(store, &old, &new, &entries, extra(&old, &new)?, token).await? {
            return Ok(new);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, write = what, "a decision or reply met another write, trying again");
    }
    Err(StoreError::Unavailable(
        format!("comment {id} kept changing during {ATTEMPTS} {what} attempts").into(),
    ))
}

/// One `TransactWriteItems`: the comment's `Update` from `old` to `new`, conditional on the
/// version read, the log `entries`' items and the `extra` items; `Ok(false)` when the comment
/// changed since it was read, another item's condition failed (a report filed meanwhile) or a
/// transaction held one: read and try again. The client request `token` (a ULID of the write)
/// makes the SDK's own retries of a transaction that went through (a timeout) succeed without
/// writing twice.
pub(super) async fn write(
    store: &DynamoStore,
    old: &Comment,
    new: &Comment,
    entries: &[LogEntry],
    extra: Vec<TransactWriteItem>,
    token: String,
) -> Result<bool, StoreError> {
    // Version 1 may be stored as no `version` at all (items written before versions).
    let condition = if old.version == 1 {
        "attribute_exists(#id) AND (attribute_not_exists(#version) OR #version = :read)"
    } else {
        "attribute_exists(#id) AND #version = :read"
    };
    let mut update = Update::builder()
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
        .expression_attribute_names("#author", AUTHOR)
        .expression_attribute_names("#authorSub", AUTHOR_SUB)
        .expression_attribute_names("#helpfulCount", HELPFUL_COUNT)
        .expression_attribute_values(":read", number_value(old.version))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    let (expression, values, names) = expression(new);
    for (placeholder, name) in names {
        update = update.expression_attribute_names(placeholder, name);
    }
    for (name, value) in values {
        update = update.expression_attribute_values(name, value);
    }
    let update = update
        .update_expression(expression)
        .build()
        .map_err(|e| StoreError::Internal(e.into()))?;
    let mut items = vec![TransactWriteItem::builder().update(update).build()];
    items.extend(audit::writes(store, entries)?);
    items.extend(extra);
    let sent = store
        .client
        .transact_write_items()
        .set_transact_items(Some(items))
        .client_request_token(token)
        .send()
        .await;
    let err = match sent {
        Ok(_) => return Ok(true),
        Err(err) => err,
    };
    match cancellation(&err) {
        // Gone (no item came back), or changed since it was read: read and decide again.
        Some(Cancellation::ConditionFailed(0)) => match cancellation_reasons(&err)[0].item() {
            Some(item) if !item.is_empty() => Ok(false),
            _ => Err(StoreError::NotFound(old.id)),
        },
        Some(Cancellation::ConditionFailed(_)) => Ok(false),
        Some(Cancellation::Conflict) => Ok(false),
        Some(Cancellation::Throttled) => Err(StoreError::Unavailable(err.into())),
        _ => Err(store.classify(err, OnConditionFailed::Unexpected)),
    }
}

/// The update expression from any item of the comment to `new`, with its values: the next
/// version, the status (removed when published), the reason, note and time of the decision and
/// the reply (each removed when it has none), and the GSI keys the status calls for.
#[expect(
    clippy::type_complexity,
    reason = "the expression, its values and its names: the three parts of an UpdateItem"
)]
fn expression(
    new: &Comment,
) -> (
    String,
    Vec<(&'static str, AttributeValue)>,
    Vec<(&'static str, &'static str)>,
) {
    let moderation = &new.moderation;
    // The author and the count too: the same as read for a decision or a reply (the write is
    // conditional on the version read), what a person's erasure changes (`super::forget`).
    let mut sets = vec!["#version = :next", "#author = :author"];
    let mut removes = Vec::new();
    let mut values = vec![
        (":next", number_value(new.version)),
        (":author", string_value(new.author.as_str())),
    ];
    if new.is_public() {
        removes.push("#status");
    } else {
        sets.push("#status = :status");
        values.push((":status", string_value(moderation.status.as_str())));
    }
    let (places, names) = Places::all_of(new);
    sets.extend(places.sets);
    removes.extend(places.removes);
    values.extend(places.values);
    let optional = optional_attributes(new);
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
    (expression, values, names)
}

/// The attributes of `new` that an item has only when they have a value: each `SET` clause,
/// its attribute's name and placeholder, and the value (`None`: the attribute is removed).
fn optional_attributes(
    new: &Comment,
) -> [(
    &'static str,
    &'static str,
    &'static str,
    Option<AttributeValue>,
); 8] {
    let moderation = &new.moderation;
    let reply = new.reply.as_ref();
    [
        (
            "#authorSub = :authorSub",
            "#authorSub",
            ":authorSub",
            new.author_sub.as_deref().map(string_value),
        ),
        (
            "#helpfulCount = :helpfulCount",
            "#helpfulCount",
            ":helpfulCount",
            (new.helpful_count > 0).then(|| number_value(new.helpful_count)),
        ),
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
    ]
}
