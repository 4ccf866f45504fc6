//! The item codec: how a [`Comment`] is spelled as a DynamoDB item, and back.
//!
//! Attribute names live here and nowhere else. The decoder is generic over [`ItemAttribute`]
//! because DynamoDB Streams' SDK has its own `AttributeValue` type: the stream consumer decodes
//! its old and new images with the same function the store uses, so both read one format.
//! The number written as `helpfulRank` is computed in `super::helpful_rank`.
//!
//! The table also holds one item per helpful vote (`votes`), keyed as `super::vote_key`
//! spells it; a vote item has none of the GSI keys, so it never appears in a page.
//!
//! Numbers are written as decimal text and read back with `parse`, each checked against its
//! range (a version against [`crate::domain::MAX_VERSION`]): clippy refuses an `as` cast here
//! that could wrap or truncate.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

mod moderation;

pub(super) use self::moderation::{
    AUTHOR_KEY, AUTHOR_STATUS, DECIDED_AT, LOG_KEY, LOG_LIST, MODERATION_NOTE, MODERATION_REASON,
    Places, QUEUE_KEY, REPLY_AT, REPLY_BODY, REPLY_UPDATED_AT, REPORT_KEY, REPORTED, REPORTED_KEY,
    REPORTED_QUEUE, REPORTER, SKU_REPORTED, SKU_STATUS, STATUS, author_status, place_is_current,
    sku_status, time_key_in,
};

use super::attribute::ItemAttribute;
use super::helpful_rank::{helpful_rank, position_of_rank};
use crate::domain::{
    Comment, CommentId, OrderHash, Position, Rating, Sku, SortKey, version_is_valid,
};

pub(super) const ID: &str = "id";
pub(super) const SKU: &str = "sku";
pub(super) const SORT_KEY: &str = "sortKey";
pub(super) const SKU_RATING: &str = "skuRating";
pub(super) const AUTHOR: &str = "author";
pub(super) const AUTHOR_SUB: &str = "authorSub";
pub(super) const BODY: &str = "body";
pub(super) const RATING: &str = "rating";
pub(super) const CREATED_AT: &str = "createdAt";
pub(super) const UPDATED_AT: &str = "updatedAt";
pub(super) const VERSION: &str = "version";
pub(super) const HELPFUL_COUNT: &str = "helpfulCount";
/// The sort key of the GSIs by helpful votes: [`helpful_rank`](super::helpful_rank).
pub(super) const HELPFUL_RANK: &str = "helpfulRank";
/// The token of the last edit written (`writes::update`): a retried edit finds it and knows
/// its first attempt was written.
pub(super) const LAST_EDIT: &str = "lastEdit";

/// A verified comment's order hash.
pub(super) const PURCHASE: &str = "purchase";
/// The partition key of GSIs `byVerified` and `byVerifiedHelpful`: the SKU, on verified
/// comments only.
pub(super) const VERIFIED_SKU: &str = "verifiedSku";
/// The partition key of GSIs `byVerifiedRating` and `byVerifiedRatingHelpful`: `sku#rating`,
/// on verified comments only.
pub(super) const VERIFIED_SKU_RATING: &str = "verifiedSkuRating";

/// The attributes a verified comment's item carries (none for another).
pub(super) fn purchase_attributes(comment: &Comment) -> Vec<(String, AttributeValue)> {
    let Some(hash) = &comment.purchase else {
        return Vec::new();
    };
    vec![
        (PURCHASE.to_owned(), string_value(hash.as_str())),
        (VERIFIED_SKU.to_owned(), string_value(comment.sku.as_str())),
        (
            VERIFIED_SKU_RATING.to_owned(),
            string_value(sku_rating(&comment.sku, comment.rating)),
        ),
    ]
}

/// The partition key of GSI `byProductRating`: `sku#rating`. SKUs cannot contain `#`
/// ([`Sku::parse`]), so the value is unambiguous.
pub(super) fn sku_rating(sku: &Sku, rating: Rating) -> String {
    format!("{sku}#{}", rating.get())
}

/// The position of a `LastEvaluatedKey` of a query on a GSI by helpful votes.
pub(super) fn helpful_position_from_item<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<Position, ItemDecodeError> {
    let id: CommentId = string(item, ID)?
        .parse()
        .map_err(|_| bad(ID, "is not a comment id"))?;
    let rank = item
        .get(HELPFUL_RANK)
        .and_then(|rank| rank.as_number())
        .ok_or_else(|| bad(HELPFUL_RANK, "is missing"))?
        .parse()
        .map_err(|_| bad(HELPFUL_RANK, "is not a non-negative integer"))?;
    position_of_rank(rank, id).map_err(|problem| bad(HELPFUL_RANK, problem))
}

/// Whether an item's stored `helpfulRank` is the one its count and sort key give (an item
/// written before the GSIs by helpful votes existed has none until `reindex` writes it).
pub(super) fn rank_is_current<A: ItemAttribute>(
    item: &HashMap<String, A>,
    comment: &Comment,
) -> bool {
    let want = helpful_rank(comment.helpful_count, &comment.sort_key()).to_string();
    item.get(HELPFUL_RANK).and_then(|rank| rank.as_number()) == Some(want.as_str())
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The full item of a comment, including the derived GSI keys (`sortKey`, `skuRating`,
/// `helpfulRank`). The keys that put an item in a GSI's order (`sortKey`, `helpfulRank`) are
/// written only while the comment is published: the GSIs are sparse, so a public page never
/// reads a comment it would have to throw away.
pub(super) fn item_from_comment(comment: &Comment) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::from([
        (ID.to_owned(), s(comment.id.to_string())),
        (SKU.to_owned(), s(comment.sku.as_str())),
        (
            SKU_RATING.to_owned(),
            s(sku_rating(&comment.sku, comment.rating)),
        ),
        (AUTHOR.to_owned(), s(comment.author.as_str())),
        (BODY.to_owned(), s(comment.body.as_str())),
        (RATING.to_owned(), n(comment.rating.get())),
        (CREATED_AT.to_owned(), n(comment.created_at_ms)),
        (VERSION.to_owned(), n(comment.version)),
    ]);
    item.extend(gsi_places(comment));
    item.extend(purchase_attributes(comment));
    item.extend(moderation::author_places(comment));
    item.extend(moderation::reported_places(comment));
    item.extend(moderation::attributes(&comment.moderation));
    item.extend(moderation::reply_attributes(comment.reply.as_deref()));
    if let Some(updated) = comment.updated_at_ms {
        item.insert(UPDATED_AT.to_owned(), n(updated));
    }
    if let Some(sub) = &comment.author_sub {
        item.insert(AUTHOR_SUB.to_owned(), s(sub.as_str()));
    }
    // Absent means 0: a comment nobody voted for carries no count, and no bytes for one.
    if comment.helpful_count > 0 {
        item.insert(HELPFUL_COUNT.to_owned(), n(comment.helpful_count));
    }
    item
}

/// The GSI keys a comment's item carries: `sortKey` and `helpfulRank` while it is published,
/// `queueKey` and `skuStatus` otherwise.
pub(super) fn gsi_places(comment: &Comment) -> Vec<(String, AttributeValue)> {
    if !comment.is_public() {
        return moderation::queue_places(comment);
    }
    vec![
        (SORT_KEY.to_owned(), s(comment.sort_key().to_string())),
        (
            HELPFUL_RANK.to_owned(),
            n(helpful_rank(comment.helpful_count, &comment.sort_key())),
        ),
    ]
}

/// The condition that keeps a write from taking a comment past [`crate::domain::MAX_VERSION`]
/// (its update expression adds one to `#version`, with `:ceiling` bound by
/// [`ceiling_value`]): the increment is DynamoDB's, so the check must be too.
pub(super) const BELOW_CEILING: &str = "(attribute_not_exists(#version) OR #version < :ceiling)";

/// The value of `:ceiling` in [`BELOW_CEILING`].
pub(super) fn ceiling_value() -> AttributeValue {
    n(crate::domain::MAX_VERSION)
}

/// The version of an item a failed condition returned, if it is at the ceiling (or past it,
/// or unreadable as one): why a write that [`BELOW_CEILING`] guards was refused.
pub(super) fn version_at_ceiling(item: &HashMap<String, AttributeValue>) -> Option<u64> {
    let text = item.get(VERSION)?.as_n().ok()?;
    match text.parse::<u64>() {
        Ok(version) if version < crate::domain::MAX_VERSION => None,
        Ok(version) => Some(version),
        Err(_) => Some(u64::MAX),
    }
}

/// The table key of a comment (the table's only key attribute is `id`).
pub(super) fn key_of(id: CommentId) -> HashMap<String, AttributeValue> {
    HashMap::from([(ID.to_owned(), s(id.to_string()))])
}

pub(super) fn string_value(value: impl Into<String>) -> AttributeValue {
    s(value)
}

pub(super) fn number_value(value: impl ToString) -> AttributeValue {
    n(value)
}

/// An item that is not a well-formed comment: written by something else, or corrupted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}item attribute `{attribute}` {problem}", .item.as_deref().map_or(String::new(), |id| format!("item {id}: ")))]
pub struct ItemDecodeError {
    /// The item's `id`, when it has one that reads as text: which comment is damaged.
    pub item: Option<String>,
    /// The attribute at fault.
    pub attribute: &'static str,
    /// What is wrong with it: `is missing`, `is not a string`, ….
    pub problem: &'static str,
}

fn bad(attribute: &'static str, problem: &'static str) -> ItemDecodeError {
    ItemDecodeError {
        item: None,
        attribute,
        problem,
    }
}

fn string<'a, A: ItemAttribute>(
    item: &'a HashMap<String, A>,
    name: &'static str,
) -> Result<&'a str, ItemDecodeError> {
    item.get(name)
        .ok_or_else(|| bad(name, "is missing"))?
        .as_string()
        .ok_or_else(|| bad(name, "is not a string"))
}

fn number<A: ItemAttribute>(
    item: &HashMap<String, A>,
    name: &'static str,
) -> Result<Option<u64>, ItemDecodeError> {
    let Some(value) = item.get(name) else {
        return Ok(None);
    };
    let text = value
        .as_number()
        .ok_or_else(|| bad(name, "is not a number"))?;
    text.parse()
        .map(Some)
        .map_err(|_| bad(name, "is not a non-negative integer"))
}

/// Decodes a full comment item (a `GetItem`/`Query` answer or a stream image).
///
/// The stored `sortKey` must agree with `createdAt` and `id`: both GSIs order by it, so an item
/// where they disagree would be paged in the wrong place, and is refused rather than served.
/// An item without `version` (written before versions existed) is at version 1: as far as
/// anyone can tell, it was written once. One without `helpfulCount` has no votes.
pub fn comment_from_item<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<Comment, ItemDecodeError> {
    decode_comment(item).map_err(|err| ItemDecodeError {
        item: item.get(ID).and_then(A::as_string).map(str::to_owned),
        ..err
    })
}

/// [`comment_from_item`], before the error is given the item's id.
///
/// A `version` must be one a comment may have ([`crate::domain::MAX_VERSION`]): one past it
/// (written by another tool) would lose its last digits in the Redis index, so the item is
/// refused here, where every read and every stream image passes.
fn decode_comment<A: ItemAttribute>(item: &HashMap<String, A>) -> Result<Comment, ItemDecodeError> {
    let id: CommentId = string(item, ID)?
        .parse()
        .map_err(|_| bad(ID, "is not a comment id"))?;
    let sku = Sku::parse(string(item, SKU)?).map_err(|_| bad(SKU, "is not a valid SKU"))?;
    let rating = number(item, RATING)?.ok_or_else(|| bad(RATING, "is missing"))?;
    let rating = i64::try_from(rating)
        .ok()
        .and_then(|r| Rating::new(r).ok())
        .ok_or_else(|| bad(RATING, "is not between 1 and 5"))?;
    let created_at_ms = number(item, CREATED_AT)?.ok_or_else(|| bad(CREATED_AT, "is missing"))?;
    let key = SortKey::new(created_at_ms, id).map_err(|_| bad(CREATED_AT, "is out of range"))?;
    if let Some(stored) = item.get(SORT_KEY) {
        if stored.as_string() != Some(key.to_string().as_str()) {
            return Err(bad(SORT_KEY, "does not match `createdAt#id`"));
        }
    }
    Ok(Comment {
        id,
        sku,
        author: string(item, AUTHOR)?.to_owned(),
        author_sub: item
            .get(AUTHOR_SUB)
            .map(|sub| {
                sub.as_string()
                    .map(str::to_owned)
                    .ok_or_else(|| bad(AUTHOR_SUB, "is not a string"))
            })
            .transpose()?,
        body: string(item, BODY)?.to_owned(),
        rating,
        created_at_ms,
        updated_at_ms: number(item, UPDATED_AT)?,
        version: Some(number(item, VERSION)?.unwrap_or(1))
            .filter(|v| version_is_valid(*v))
            .ok_or_else(|| {
                bad(
                    VERSION,
                    "is not between 1 and 2^53 - 2 (the highest version)",
                )
            })?,
        helpful_count: number(item, HELPFUL_COUNT)?.unwrap_or(0),
        moderation: moderation::decode(item)?,
        reply: moderation::decode_reply(item)?.map(Box::new),
        reporters: moderation::decode_reporters_of(item)?,
        purchase: item
            .get(PURCHASE)
            .map(|hash| {
                hash.as_string()
                    .and_then(|text| OrderHash::parse(text).ok())
                    .ok_or_else(|| bad(PURCHASE, "is not an order hash"))
            })
            .transpose()?,
    })
}

/// Decodes the `sortKey` of an item or of a GSI query's `LastEvaluatedKey`.
pub fn sort_key_from_item<A: ItemAttribute>(
    item: &HashMap<String, A>,
) -> Result<SortKey, ItemDecodeError> {
    string(item, SORT_KEY)?
        .parse()
        .map_err(|_| bad(SORT_KEY, "is not `<13 digits>#<ULID>`"))
}

#[cfg(test)]
mod tests;
