//! A comment's moderation as item attributes: `status` (absent while published, as on every
//! item written before moderation), `moderationReason`, `moderationNote` and `decidedAt`, and
//! the shop's reply (`replyBody`, `replyAt`, `replyUpdatedAt`), each absent when it has no value.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::super::attribute::ItemAttribute;
use super::{HELPFUL_RANK, ItemDecodeError, SORT_KEY, bad, number, rank_is_current};
use crate::domain::{
    Comment, CommentStatus, Moderation, ModerationReason, Reply, Sku, decode_reporters,
    encode_reporters,
};

/// A comment's status, absent while it is published (every item written before moderation).
pub(in crate::store::dynamo) const STATUS: &str = "status";
/// The last moderation decision's reason.
pub(in crate::store::dynamo) const MODERATION_REASON: &str = "moderationReason";
/// The moderator's note to the author.
pub(in crate::store::dynamo) const MODERATION_NOTE: &str = "moderationNote";
/// When the last moderation decision was made.
pub(in crate::store::dynamo) const DECIDED_AT: &str = "decidedAt";
/// The partition key of GSI `byProductQueue`: `sku#status`, only while not published.
pub(in crate::store::dynamo) const SKU_STATUS: &str = "skuStatus";
/// The sort key of GSIs `byQueue` and `byProductQueue`: the `sortKey` again, only while not
/// published.
pub(in crate::store::dynamo) const QUEUE_KEY: &str = "queueKey";
/// The sort key of GSIs `byAuthor` and `byAuthorStatus`: the `sortKey` again, on every comment
/// with an author (`authorSub`), whatever its status.
pub(in crate::store::dynamo) const AUTHOR_KEY: &str = "authorKey";
/// The partition key of GSI `byAuthorStatus`: `authorSub#status`, on every comment with an
/// author.
pub(in crate::store::dynamo) const AUTHOR_STATUS: &str = "authorStatus";
/// The partition key of GSI `byLog`: the moderation log an entry's item belongs to
/// (`store::dynamo::audit`).
pub(in crate::store::dynamo) const LOG_LIST: &str = "logList";
/// The sort key of GSI `byLog`: the entry's id.
pub(in crate::store::dynamo) const LOG_KEY: &str = "logKey";
/// The readers whose reports on the comment are open, as a JSON array
/// (`domain::encode_reporters`); absent without any.
pub(in crate::store::dynamo) const REPORTERS: &str = "reporters";
/// The partition key of GSI `byReported`: `REPORTED`, only while a report is open.
pub(in crate::store::dynamo) const REPORTED_QUEUE: &str = "reportedQueue";
/// The partition key of GSI `byProductReported`: the SKU, only while a report is open.
pub(in crate::store::dynamo) const SKU_REPORTED: &str = "skuReported";
/// The sort key of GSIs `byReported` and `byProductReported`: the `sortKey` again, only while
/// a report is open.
pub(in crate::store::dynamo) const REPORTED_KEY: &str = "reportedKey";
/// The value of [`REPORTED_QUEUE`].
pub(in crate::store::dynamo) const REPORTED: &str = "REPORTED";
/// The partition key of GSI `byReporter` on a report's item: the reader's subject.
pub(in crate::store::dynamo) const REPORTER: &str = "reporter";
/// The sort key of GSI `byReporter`: the report's id.
pub(in crate::store::dynamo) const REPORT_KEY: &str = "reportKey";
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

/// The value of [`SKU_STATUS`] for a comment of `sku` in `status`.
pub(in crate::store::dynamo) fn sku_status(sku: &Sku, status: CommentStatus) -> String {
    format!("{sku}#{}", status.as_str())
}

/// The queue GSIs' keys of a comment that is not published (none for a published one; its
/// `status` is written with its moderation).
pub(super) fn queue_places(comment: &Comment) -> Vec<(String, AttributeValue)> {
    if comment.is_public() {
        return Vec::new();
    }
    vec![
        (
            QUEUE_KEY.to_owned(),
            AttributeValue::S(comment.sort_key().to_string()),
        ),
        (
            SKU_STATUS.to_owned(),
            AttributeValue::S(sku_status(&comment.sku, comment.moderation.status)),
        ),
    ]
}

/// The `REPORTED` queues' keys of a comment with an open report (none without one), and its
/// open reporters.
pub(super) fn reported_places(comment: &Comment) -> Vec<(String, AttributeValue)> {
    let Some(reporters) = encode_reporters(&comment.reporters) else {
        return Vec::new();
    };
    vec![
        (REPORTERS.to_owned(), AttributeValue::S(reporters)),
        (
            REPORTED_QUEUE.to_owned(),
            AttributeValue::S(REPORTED.to_owned()),
        ),
        (
            SKU_REPORTED.to_owned(),
            AttributeValue::S(comment.sku.as_str().to_owned()),
        ),
        (
            REPORTED_KEY.to_owned(),
            AttributeValue::S(comment.sort_key().to_string()),
        ),
    ]
}

/// A comment's open reporters from its item: none without `reporters`.
pub(super) fn decode_reporters_of<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<Vec<String>, ItemDecodeError> {
    match item.get(REPORTERS) {
        None => Ok(Vec::new()),
        Some(value) => value
            .as_string()
            .and_then(|text| decode_reporters(text).ok())
            .ok_or_else(|| bad(REPORTERS, "is not a list of open reporters")),
    }
}

/// The value of [`AUTHOR_STATUS`] for a comment by `sub` in `status`.
pub(in crate::store::dynamo) fn author_status(sub: &str, status: CommentStatus) -> String {
    format!("{sub}#{}", status.as_str())
}

/// The author GSIs' keys of a comment with an author (none without one): `authorKey` and
/// `authorStatus`, whatever its status.
pub(super) fn author_places(comment: &Comment) -> Vec<(String, AttributeValue)> {
    let Some(sub) = &comment.author_sub else {
        return Vec::new();
    };
    vec![
        (
            AUTHOR_KEY.to_owned(),
            AttributeValue::S(comment.sort_key().to_string()),
        ),
        (
            AUTHOR_STATUS.to_owned(),
            AttributeValue::S(author_status(sub, comment.moderation.status)),
        ),
    ]
}

/// Whether an item is in exactly the GSIs its comment belongs to: a published comment in the
/// four public ones (its `sortKey`, and its count's `helpfulRank`) and no queue, any other in
/// its two queues (`queueKey` and its status's `skuStatus`) and no public one (the GSIs are
/// sparse); and one with an author in the author's two (`authorKey`, `authorStatus` of its
/// status), one without in neither. `reindex` puts the others in place ([`super::ranks`]).
pub(in crate::store::dynamo) fn place_is_current<A: ItemAttribute>(
    item: &HashMap<String, A>,
    comment: &Comment,
) -> bool {
    let text = |name| item.get(name).and_then(|value: &A| value.as_string());
    let author = match &comment.author_sub {
        Some(sub) => {
            text(AUTHOR_KEY) == Some(comment.sort_key().to_string().as_str())
                && text(AUTHOR_STATUS)
                    == Some(author_status(sub, comment.moderation.status).as_str())
        }
        None => !item.contains_key(AUTHOR_KEY) && !item.contains_key(AUTHOR_STATUS),
    };
    let reported = if comment.is_reported() {
        text(REPORTED_QUEUE) == Some(REPORTED)
            && text(SKU_REPORTED) == Some(comment.sku.as_str())
            && text(REPORTED_KEY) == Some(comment.sort_key().to_string().as_str())
    } else {
        !item.contains_key(REPORTED_QUEUE)
            && !item.contains_key(SKU_REPORTED)
            && !item.contains_key(REPORTED_KEY)
    };
    let status = if comment.is_public() {
        item.contains_key(SORT_KEY)
            && rank_is_current(item, comment)
            && !item.contains_key(QUEUE_KEY)
            && !item.contains_key(SKU_STATUS)
    } else {
        !item.contains_key(SORT_KEY)
            && !item.contains_key(HELPFUL_RANK)
            && text(QUEUE_KEY) == Some(comment.sort_key().to_string().as_str())
            && text(SKU_STATUS)
                == Some(sku_status(&comment.sku, comment.moderation.status).as_str())
    };
    author && reported && status
}

/// The part of an `UpdateItem` that puts a comment in the GSIs its status calls for
/// ([`place_is_current`]), with names `#sortKey`, `#rank`, `#queueKey`, `#skuStatus`,
/// `#authorKey` and `#authorStatus` ([`Places::NAMES`]): every clause names all six; and, apart
/// ([`Places::reports_of`], names [`Places::REPORT_NAMES`]), the open reporters and the
/// `REPORTED` GSIs' keys, which only a write conditional on the version it read may set (an
/// edit sending a comment back to review is not, and must not undo a report filed meanwhile).
pub(in crate::store::dynamo) struct Places {
    /// `SET` clauses.
    pub(in crate::store::dynamo) sets: Vec<&'static str>,
    /// Attributes to `REMOVE`.
    pub(in crate::store::dynamo) removes: Vec<&'static str>,
    /// The values the clauses name.
    pub(in crate::store::dynamo) values: Vec<(&'static str, AttributeValue)>,
}

impl Places {
    /// The expression attribute names the clauses use.
    pub(in crate::store::dynamo) const NAMES: [(&'static str, &'static str); 6] = [
        ("#sortKey", SORT_KEY),
        ("#rank", HELPFUL_RANK),
        ("#queueKey", QUEUE_KEY),
        ("#skuStatus", SKU_STATUS),
        ("#authorKey", AUTHOR_KEY),
        ("#authorStatus", AUTHOR_STATUS),
    ];

    /// The expression attribute names [`Places::reports_of`] uses.
    pub(in crate::store::dynamo) const REPORT_NAMES: [(&'static str, &'static str); 4] = [
        ("#reporters", REPORTERS),
        ("#reportedQueue", REPORTED_QUEUE),
        ("#skuReported", SKU_REPORTED),
        ("#reportedKey", REPORTED_KEY),
    ];

    /// The clauses for `comment` as it will be.
    pub(in crate::store::dynamo) fn of(comment: &Comment) -> Self {
        let key = AttributeValue::S(comment.sort_key().to_string());
        let mut places = if comment.is_public() {
            let rank = super::helpful_rank(comment.helpful_count, &comment.sort_key());
            Self {
                sets: vec!["#sortKey = :sortKey", "#rank = :rank"],
                removes: vec!["#queueKey", "#skuStatus"],
                values: vec![
                    (":sortKey", key.clone()),
                    (":rank", AttributeValue::N(rank.to_string())),
                ],
            }
        } else {
            let status = sku_status(&comment.sku, comment.moderation.status);
            Self {
                sets: vec!["#queueKey = :queueKey", "#skuStatus = :skuStatus"],
                removes: vec!["#sortKey", "#rank"],
                values: vec![
                    (":queueKey", key.clone()),
                    (":skuStatus", AttributeValue::S(status)),
                ],
            }
        };
        match &comment.author_sub {
            Some(sub) => {
                let status = author_status(sub, comment.moderation.status);
                places
                    .sets
                    .extend(["#authorKey = :authorKey", "#authorStatus = :authorStatus"]);
                places.values.extend([
                    (":authorKey", key),
                    (":authorStatus", AttributeValue::S(status)),
                ]);
            }
            None => places.removes.extend(["#authorKey", "#authorStatus"]),
        }
        places
    }

    /// The clauses that set `comment`'s open reporters and put it in the `REPORTED` GSIs while
    /// a report is open (out of them otherwise), with names [`Places::REPORT_NAMES`].
    pub(in crate::store::dynamo) fn reports_of(comment: &Comment) -> Self {
        match encode_reporters(&comment.reporters) {
            Some(reporters) => Self {
                sets: vec![
                    "#reporters = :reporters",
                    "#reportedQueue = :reportedQueue",
                    "#skuReported = :skuReported",
                    "#reportedKey = :reportedKey",
                ],
                removes: Vec::new(),
                values: vec![
                    (":reporters", AttributeValue::S(reporters)),
                    (":reportedQueue", AttributeValue::S(REPORTED.to_owned())),
                    (
                        ":skuReported",
                        AttributeValue::S(comment.sku.as_str().to_owned()),
                    ),
                    (
                        ":reportedKey",
                        AttributeValue::S(comment.sort_key().to_string()),
                    ),
                ],
            },
            None => Self {
                sets: Vec::new(),
                removes: vec![
                    "#reporters",
                    "#reportedQueue",
                    "#skuReported",
                    "#reportedKey",
                ],
                values: Vec::new(),
            },
        }
    }

    /// Every clause of `comment`'s places and of its reports ([`Places::of`] and
    /// [`Places::reports_of`]), with the names both use: for the writes conditional on the
    /// version they read.
    pub(in crate::store::dynamo) fn all_of(
        comment: &Comment,
    ) -> (Self, Vec<(&'static str, &'static str)>) {
        let mut places = Self::of(comment);
        let reports = Self::reports_of(comment);
        places.sets.extend(reports.sets);
        places.removes.extend(reports.removes);
        places.values.extend(reports.values);
        let names = Self::NAMES.into_iter().chain(Self::REPORT_NAMES).collect();
        (places, names)
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

/// The sort key an item holds again under `attribute` (`queueKey`, `authorKey`).
pub(in crate::store::dynamo) fn time_key_in<A: ItemAttribute>(
    item: &HashMap<String, A>,
    attribute: &'static str,
) -> Result<crate::domain::SortKey, ItemDecodeError> {
    item.get(attribute)
        .and_then(|value| value.as_string())
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| bad(attribute, "is not `<13 digits>#<ULID>`"))
}
