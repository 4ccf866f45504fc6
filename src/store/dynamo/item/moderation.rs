//! A comment's moderation as item attributes: `status` (absent while published, as on every
//! item written before moderation), `moderationReason`, `moderationNote` and `decidedAt`, and
//! the shop's reply (`replyBody`, `replyAt`, `replyUpdatedAt`), each absent when it has no value.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::super::attribute::ItemAttribute;
use super::{HELPFUL_RANK, ItemDecodeError, SORT_KEY, bad, number, rank_is_current};
use crate::domain::{Comment, CommentStatus, Moderation, ModerationReason, Reply};

/// A comment's status, absent while it is published (every item written before moderation).
pub(in crate::store::dynamo) const STATUS: &str = "status";
/// The last moderation decision's reason.
pub(in crate::store::dynamo) const MODERATION_REASON: &str = "moderationReason";
/// The moderator's note to the author.
pub(in crate::store::dynamo) const MODERATION_NOTE: &str = "moderationNote";
/// When the last moderation decision was made.
pub(in crate::store::dynamo) const DECIDED_AT: &str = "decidedAt";
/// The shop's reply.
pub(in crate::store::dynamo) const REPLY_BODY: &str = "replyBody";
/// When the comment was first answered.
pub(in crate::store::dynamo) const REPLY_AT: &str = "replyAt";
/// When the answer was last replaced.
pub(in crate::store::dynamo) const REPLY_UPDATED_AT: &str = "replyUpdatedAt";

/// The attributes that spell the shop's reply (none without one).
pub(super) fn reply_attributes(reply: Option<&Reply>) -> Vec<(String, AttributeValue)> {
    let Some(reply) = reply else {
        return Vec::new();
    };
    let mut out = vec![
        (REPLY_BODY.to_owned(), AttributeValue::S(reply.body.clone())),
        (
            REPLY_AT.to_owned(),
            AttributeValue::N(reply.created_at_ms.to_string()),
        ),
    ];
    if let Some(updated) = reply.updated_at_ms {
        out.push((
            REPLY_UPDATED_AT.to_owned(),
            AttributeValue::N(updated.to_string()),
        ));
    }
    out
}

/// The shop's reply from an item: none without `replyBody`.
pub(super) fn decode_reply<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<Option<Reply>, ItemDecodeError> {
    let Some(body) = item.get(REPLY_BODY) else {
        return Ok(None);
    };
    Ok(Some(Reply {
        body: body
            .as_string()
            .ok_or_else(|| bad(REPLY_BODY, "is not a string"))?
            .to_owned(),
        created_at_ms: number(item, REPLY_AT)?.ok_or_else(|| bad(REPLY_AT, "is missing"))?,
        updated_at_ms: number(item, REPLY_UPDATED_AT)?,
    }))
}

/// Whether an item is in exactly the GSIs its comment belongs to: a published comment in all
/// four (its `sortKey`, and its count's `helpfulRank`), any other in none (neither key: the
/// GSIs are sparse). `reindex` puts the others in place ([`super::ranks`]).
pub(in crate::store::dynamo) fn place_is_current<A: ItemAttribute>(
    item: &HashMap<String, A>,
    comment: &Comment,
) -> bool {
    if comment.is_public() {
        item.contains_key(SORT_KEY) && rank_is_current(item, comment)
    } else {
        !item.contains_key(SORT_KEY) && !item.contains_key(HELPFUL_RANK)
    }
}

/// The attributes that spell `moderation` (none for a published comment never moderated).
pub(super) fn attributes(moderation: &Moderation) -> Vec<(String, AttributeValue)> {
    let mut out = Vec::new();
    if !moderation.status.is_public() {
        out.push((
            STATUS.to_owned(),
            AttributeValue::S(moderation.status.as_str().to_owned()),
        ));
    }
    if let Some(reason) = moderation.reason {
        out.push((
            MODERATION_REASON.to_owned(),
            AttributeValue::S(reason.as_str().to_owned()),
        ));
    }
    if let Some(note) = &moderation.note {
        out.push((MODERATION_NOTE.to_owned(), AttributeValue::S(note.clone())));
    }
    if let Some(decided) = moderation.decided_at_ms {
        out.push((
            DECIDED_AT.to_owned(),
            AttributeValue::N(decided.to_string()),
        ));
    }
    out
}

/// A comment's moderation from its item: no `status` is published.
pub(super) fn decode<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<Moderation, ItemDecodeError> {
    let text = |name: &'static str| -> Result<Option<&str>, ItemDecodeError> {
        item.get(name)
            .map(|value| {
                value
                    .as_string()
                    .ok_or_else(|| bad(name, "is not a string"))
            })
            .transpose()
    };
    Ok(Moderation {
        status: text(STATUS)?
            .map(CommentStatus::parse)
            .transpose()
            .map_err(|_| bad(STATUS, "is not a comment status"))?
            .unwrap_or_default(),
        reason: text(MODERATION_REASON)?
            .map(ModerationReason::parse)
            .transpose()
            .map_err(|_| bad(MODERATION_REASON, "is not a moderation reason"))?,
        note: text(MODERATION_NOTE)?.map(str::to_owned),
        decided_at_ms: number(item, DECIDED_AT)?,
    })
}
