//! A product comment and the validated inputs that create or change one.

use chrono::{DateTime, Utc};

use super::ids::{CommentId, Rating, Sku};
use super::invalid::InvalidInput;
use super::sort_key::SortKey;

pub const MAX_AUTHOR_CHARS: usize = 100;
pub const MAX_BODY_CHARS: usize = 4_000;

/// A comment as stored. `created_at_ms` is the single source of its position ([`SortKey`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub id: CommentId,
    pub sku: Sku,
    pub author: String,
    /// The `sub` of the token that wrote the comment, when the server verifies tokens
    /// (`--auth jwt`): only that subject, or a moderator, may change it. `None` for comments
    /// written with `--auth off` or seeded.
    pub author_sub: Option<String>,
    pub body: String,
    pub rating: Rating,
    pub created_at_ms: u64,
    pub updated_at_ms: Option<u64>,
    /// How many times the comment has been written: 1 when it is created, one more for each
    /// edit (its deletion is the next one). Changes carry it to the index, which refuses a
    /// change older than the one it holds, so replays, retries and a reindex racing live
    /// writes cannot put an older state over a newer one (DESIGN §6). A helpful vote, or
    /// its withdrawal, is a write too: it moves the count, so it gives the comment its next
    /// version (caches and live subscribers learn the new count from that change).
    pub version: u64,
    /// How many voters marked the comment helpful (one vote each, [`super::Voter`]). It
    /// changes in the same atomic write as the vote that moves it.
    pub helpful_count: u64,
}

impl Comment {
    pub fn sort_key(&self) -> SortKey {
        // Comments are only built through `CommentDraft` or the stores' decoders, which both
        // validate the millisecond range, so this cannot be out of range.
        SortKey::new(self.created_at_ms.min(SortKey::MAX_MILLIS), self.id)
            .unwrap_or_else(|_| unreachable!("millis clamped to range"))
    }

    pub fn created_at(&self) -> DateTime<Utc> {
        millis_to_datetime(self.created_at_ms)
    }

    pub fn updated_at(&self) -> Option<DateTime<Utc>> {
        self.updated_at_ms.map(millis_to_datetime)
    }
}

fn millis_to_datetime(millis: u64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(millis as i64).unwrap_or_default()
}

/// A new comment's validated content; the store assigns nothing, so the draft is complete.
#[derive(Clone, Debug)]
pub struct CommentDraft {
    pub sku: Sku,
    pub author: String,
    pub author_sub: Option<String>,
    pub body: String,
    pub rating: Rating,
}

impl CommentDraft {
    pub fn new(sku: &str, author: &str, body: &str, rating: i64) -> Result<Self, InvalidInput> {
        Ok(Self {
            sku: Sku::parse(sku)?,
            author: check_text("author", author, MAX_AUTHOR_CHARS)?,
            author_sub: None,
            body: check_text("body", body, MAX_BODY_CHARS)?,
            rating: Rating::new(rating)?,
        })
    }

    /// The comment this draft becomes when created at `now_ms`.
    pub fn into_comment(self, now_ms: u64) -> Comment {
        Comment {
            id: CommentId::new(now_ms),
            sku: self.sku,
            author: self.author,
            author_sub: self.author_sub,
            body: self.body,
            rating: self.rating,
            created_at_ms: now_ms,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
        }
    }
}

/// Who may change a comment, as the store checks it when it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone: `--auth off`, or a moderator.
    Any,
    /// Only the author whose token had this `sub`.
    Author(String),
}

impl Access {
    /// Whether this access may change `comment`.
    pub fn allows(&self, comment: &Comment) -> bool {
        match self {
            Access::Any => true,
            Access::Author(sub) => comment.author_sub.as_deref() == Some(sub.as_str()),
        }
    }
}

/// A validated edit: at least one of `body` and `rating`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentPatch {
    pub body: Option<String>,
    pub rating: Option<Rating>,
}

impl CommentPatch {
    pub fn new(body: Option<&str>, rating: Option<i64>) -> Result<Self, InvalidInput> {
        if body.is_none() && rating.is_none() {
            return Err(InvalidInput::new("input", "must change `body` or `rating`"));
        }
        Ok(Self {
            body: body
                .map(|b| check_text("body", b, MAX_BODY_CHARS))
                .transpose()?,
            rating: rating.map(Rating::new).transpose()?,
        })
    }

    /// The comment after this edit at `now_ms`: its next version.
    pub fn apply(&self, comment: &Comment, now_ms: u64) -> Comment {
        Comment {
            body: self.body.clone().unwrap_or_else(|| comment.body.clone()),
            rating: self.rating.unwrap_or(comment.rating),
            updated_at_ms: Some(now_ms),
            version: comment.version + 1,
            ..comment.clone()
        }
    }
}

/// `value` cleaned ([`super::text`]): without bidirectional and control characters, trimmed,
/// with something visible, and at most `max_chars` long.
fn check_text(field: &'static str, value: &str, max_chars: usize) -> Result<String, InvalidInput> {
    let cleaned = super::text::clean(value);
    if cleaned.is_empty() {
        return Err(InvalidInput::new(field, "must not be empty"));
    }
    if !super::text::has_visible(&cleaned) {
        return Err(InvalidInput::new(
            field,
            "must hold a visible character (not only spaces or invisible ones)",
        ));
    }
    if cleaned.chars().count() > max_chars {
        return Err(InvalidInput::owned(
            field,
            format!("must be at most {max_chars} characters"),
        ));
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_refuses_blank_body_long_body_and_bad_rating() {
        assert!(CommentDraft::new("SKU", "ann", "  ", 3).is_err());
        assert!(CommentDraft::new("SKU", "ann", &"x".repeat(MAX_BODY_CHARS + 1), 3).is_err());
        assert!(CommentDraft::new("SKU", "ann", "fine", 6).is_err());
        assert!(CommentDraft::new("SKU", "", "fine", 3).is_err());
        assert!(CommentDraft::new("SKU", "ann", "\u{200B}\u{202E} \u{FEFF}", 3).is_err());
        assert!(CommentDraft::new("SKU", "\u{3164}", "fine", 3).is_err());
        let cleaned =
            CommentDraft::new("SKU", "\u{202E}nna", "a\u{1B}[2Jb\r\nc", 3).expect("valid");
        assert_eq!(
            (cleaned.author.as_str(), cleaned.body.as_str()),
            ("nna", "a[2Jb\nc")
        );
        let draft = CommentDraft::new("SKU", " ann ", " fine ", 3).expect("valid draft");
        assert_eq!(
            (draft.author.as_str(), draft.body.as_str()),
            ("ann", "fine")
        );
    }

    #[test]
    fn patch_needs_a_change_and_keeps_position() {
        assert!(CommentPatch::new(None, None).is_err());
        let comment = CommentDraft::new("SKU", "ann", "old", 2)
            .expect("valid")
            .into_comment(1_000);
        let edited = CommentPatch::new(Some("new"), Some(5))
            .expect("valid")
            .apply(&comment, 2_000);
        assert_eq!(edited.sort_key(), comment.sort_key());
        assert_eq!(
            (
                edited.body.as_str(),
                edited.rating.get(),
                edited.updated_at_ms,
                comment.version,
                edited.version
            ),
            ("new", 5, Some(2_000), 1, 2)
        );
    }
}
