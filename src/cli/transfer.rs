//! The JSON Lines form `export` writes and `import` reads: one comment per line, every field
//! a store keeps (ids, authors and their `sub`, `createdAt`/`updatedAt` in epoch
//! milliseconds, the version), in id order, so an export of the same comments is the same
//! bytes whichever store it came from. Helpful votes are not carried: an imported comment
//! starts with no votes and a `helpfulCount` of 0, so the count and the votes the target
//! store holds agree (`verify` checks them). A comment's moderation travels with it (`status`,
//! `moderationReason`, `moderationNote`, `decidedAtMs`), and so does the shop's reply
//! (`replyBody`, `replyAtMs`, `replyUpdatedAtMs`), each written only when it is not the default
//! (a published comment never moderated nor answered carries none, as before they existed),
//! and so do the readers whose reports are open on it (`reporters`; the reports themselves
//! have lines of their own, [`super::transfer_report`]), and a verified purchase's keyed order
//! hash (`purchase`).
//! A line with a field this version does not know is refused rather than half-read.

use serde::{Deserialize, Serialize};

use crate::domain::{
    Comment, CommentId, CommentStatus, MAX_NOTE_CHARS, MAX_VERSION, Moderation, ModerationReason,
    Rating, Reply, Sku, SortKey, decode_reporters, encode_reporters, version_is_valid,
};

/// One line of an export.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Line {
    pub id: String,
    pub sku: String,
    pub author: String,
    pub author_sub: Option<String>,
    pub body: String,
    pub rating: i64,
    pub created_at_ms: u64,
    pub updated_at_ms: Option<u64>,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation_note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_updated_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reporters: Vec<String>,
    /// The keyed hash of a verified purchase's order ([`crate::domain::OrderHash`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purchase: Option<String>,
}

impl From<&Comment> for Line {
    fn from(comment: &Comment) -> Self {
        Self {
            id: comment.id.to_string(),
            sku: comment.sku.as_str().to_owned(),
            author: comment.author.clone(),
            author_sub: comment.author_sub.clone(),
            body: comment.body.clone(),
            rating: i64::from(comment.rating.get()),
            created_at_ms: comment.created_at_ms,
            updated_at_ms: comment.updated_at_ms,
            version: comment.version,
            status: (!comment.moderation.status.is_public())
                .then(|| comment.moderation.status.as_str().to_owned()),
            moderation_reason: comment.moderation.reason.map(|r| r.as_str().to_owned()),
            moderation_note: comment.moderation.note.clone(),
            decided_at_ms: comment.moderation.decided_at_ms,
            reply_body: comment.reply.as_ref().map(|r| r.body.clone()),
            reply_at_ms: comment.reply.as_ref().map(|r| r.created_at_ms),
            reply_updated_at_ms: comment.reply.as_ref().and_then(|r| r.updated_at_ms),
            reporters: comment.reporters.clone(),
            purchase: comment.purchase.as_ref().map(|p| p.as_str().to_owned()),
        }
    }
}

/// The line as JSON, without its newline.
pub(super) fn encode(comment: &Comment) -> String {
    serde_json::to_string(&Line::from(comment)).unwrap_or_else(|_| unreachable!("plain data"))
}

/// A line read back into a comment, every field checked.
pub(super) fn decode(text: &str) -> Result<Comment, String> {
    let line: Line = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let millis = |ms: u64, field: &str| match ms <= SortKey::MAX_MILLIS {
        true => Ok(ms),
        false => Err(format!("{field} is out of range")),
    };
    if !version_is_valid(line.version) {
        return Err(format!(
            "version {} is out of range: a comment's version is 1 to {MAX_VERSION}",
            line.version
        ));
    }
    Ok(Comment {
        id: line
            .id
            .parse::<CommentId>()
            .map_err(|e| format!("id: {e}"))?,
        sku: Sku::parse(&line.sku).map_err(|e| e.to_string())?,
        author: line.author,
        author_sub: line.author_sub,
        body: line.body,
        rating: Rating::new(line.rating).map_err(|e| e.to_string())?,
        created_at_ms: millis(line.created_at_ms, "createdAtMs")?,
        updated_at_ms: line
            .updated_at_ms
            .map(|ms| millis(ms, "updatedAtMs"))
            .transpose()?,
        version: line.version,
        helpful_count: 0,
        moderation: Moderation {
            status: line
                .status
                .as_deref()
                .map(CommentStatus::parse)
                .transpose()
                .map_err(|e| e.to_string())?
                .unwrap_or_default(),
            reason: line
                .moderation_reason
                .as_deref()
                .map(ModerationReason::parse)
                .transpose()
                .map_err(|e| e.to_string())?,
            note: match line.moderation_note {
                Some(note) if note.chars().count() > MAX_NOTE_CHARS => {
                    return Err(format!(
                        "moderationNote is longer than {MAX_NOTE_CHARS} characters"
                    ));
                }
                note => note,
            },
            decided_at_ms: line
                .decided_at_ms
                .map(|ms| millis(ms, "decidedAtMs"))
                .transpose()?,
        },
        reply: match (line.reply_body, line.reply_at_ms) {
            (None, None) if line.reply_updated_at_ms.is_none() => None,
            (Some(body), Some(at)) if body.chars().count() <= MAX_NOTE_CHARS => {
                Some(Box::new(Reply {
                    body,
                    created_at_ms: millis(at, "replyAtMs")?,
                    updated_at_ms: line
                        .reply_updated_at_ms
                        .map(|ms| millis(ms, "replyUpdatedAtMs"))
                        .transpose()?,
                }))
            }
            _ => {
                return Err(format!(
                    "a reply needs replyBody (at most {MAX_NOTE_CHARS} characters) and replyAtMs"
                ));
            }
        },
        reporters: checked_reporters(line.reporters)?,
        purchase: order_hash(line.purchase.as_deref())?,
    })
}

/// A line's keyed order hash, held to what a store keeps ([`crate::domain::OrderHash`]).
fn order_hash(text: Option<&str>) -> Result<Option<crate::domain::OrderHash>, String> {
    text.map(crate::domain::OrderHash::parse)
        .transpose()
        .map_err(|e| e.to_string())
}

/// A line's open reporters, held to what a store keeps ([`decode_reporters`]).
fn checked_reporters(reporters: Vec<String>) -> Result<Vec<String>, String> {
    match encode_reporters(&reporters) {
        Some(text) => decode_reporters(&text).map_err(|e| e.to_string()),
        None => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips_every_field_and_refuses_unknown_ones() {
        let comment = Comment {
            purchase: None,
            id: CommentId::from_parts(1_700_000_000_000, 42),
            sku: Sku::parse("SKU-1").expect("sku"),
            author: "ann \"quoted\"".into(),
            author_sub: Some("sub-1".into()),
            body: "line\nbreak ü".into(),
            rating: Rating::new(4).expect("rating"),
            created_at_ms: 1_700_000_000_000,
            updated_at_ms: Some(1_700_000_000_500),
            version: 3,
            helpful_count: 0,
            moderation: Moderation::default(),
            reply: None,
            reporters: Vec::new(),
        };
        let text = encode(&comment);
        assert!(!text.contains('\n'));
        assert!(
            !text.contains("status"),
            "a published comment's line is as before"
        );
        assert_eq!(decode(&text), Ok(comment.clone()));
        let hidden = Comment {
            moderation: Moderation {
                status: CommentStatus::Hidden,
                reason: Some(ModerationReason::Spam),
                note: Some("links only".into()),
                decided_at_ms: Some(1_700_000_001_000),
            },
            reply: Some(Box::new(Reply {
                body: "Sorry about that.".into(),
                created_at_ms: 1_700_000_002_000,
                updated_at_ms: Some(1_700_000_003_000),
            })),
            ..comment
        };
        assert_eq!(decode(&encode(&hidden)), Ok(hidden));
        assert!(decode(&text.replace("\"version\"", "\"votes\":1,\"version\"")).is_err());
        assert!(decode(&text.replace("\"rating\":4", "\"rating\":9")).is_err());
    }
}
