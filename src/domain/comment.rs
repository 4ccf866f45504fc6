//! A product comment and the validated inputs that create or change one.

use chrono::{DateTime, Utc};

use super::ids::{CommentId, Rating, Sku};
use super::invalid::InvalidInput;
use super::moderation::{CommentStatus, Moderation, Reply};
use super::sort_key::SortKey;

/// The longest author name, in characters (a longer one is refused, or cut when it comes from
/// a token).
pub const MAX_AUTHOR_CHARS: usize = 100;
/// The longest comment body, in characters.
pub const MAX_BODY_CHARS: usize = 4_000;
/// The longest `author_sub` a comment from elsewhere may carry (`import`): OpenID Connect
/// Core 1.0 §2 says a `sub` "MUST NOT exceed 255 ASCII characters".
pub const MAX_AUTHOR_SUB_BYTES: usize = 255;

/// The highest version a comment may reach ([`Comment::version`]): 2^53 − 2, so that its
/// deletion's version (one more, [`super::ChangeEvent::removal`]) is 2^53 − 1.
///
/// Every copy of a version must hold it exactly, and the narrowest one bounds them all: the
/// Redis index compares and stores versions as Lua numbers (`apply.lua`), which are doubles,
/// exact only up to 2^53 (past it, 2^53 + 1 reads as 2^53 and a newer change looks as old as
/// the one it follows; past 10^17, Redis 7.0 writes them back in exponent form, which the
/// index's reader cannot parse). SQLite's INTEGER (i64), DynamoDB's numbers (38 digits) and
/// JavaScript's safe integers (2^53 − 1) all hold it. At one write a millisecond, a comment
/// takes 285,000 years to get there: only an import of a made-up version can.
pub const MAX_VERSION: u64 = (1 << 53) - 2;

/// Whether `version` is one a comment may have: 1 to [`MAX_VERSION`].
pub fn version_is_valid(version: u64) -> bool {
    (1..=MAX_VERSION).contains(&version)
}

/// A write that would take a comment past [`MAX_VERSION`]: it is refused, nothing written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "comment {id} is at version {version}, the highest a comment may reach ({MAX_VERSION}): it cannot be written again"
)]
pub struct VersionCeiling {
    /// The comment that would pass the ceiling.
    pub id: CommentId,
    /// The version it is at.
    pub version: u64,
}

/// A comment as stored. `created_at_ms` is the single source of its position ([`SortKey`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// The comment's id.
    pub id: CommentId,
    /// The product the comment is on.
    pub sku: Sku,
    /// The author's display name: cleaned, 1 to [`MAX_AUTHOR_CHARS`] characters.
    pub author: String,
    /// The `sub` of the token that wrote the comment, when the server verifies tokens
    /// (`--auth jwt`): only that subject, or a moderator, may change it. `None` for comments
    /// written with `--auth off` or seeded.
    pub author_sub: Option<String>,
    /// The comment's text: cleaned, 1 to [`MAX_BODY_CHARS`] characters.
    pub body: String,
    /// The star rating the author gave.
    pub rating: Rating,
    /// When the comment was created, in epoch milliseconds; it places the comment in every list.
    pub created_at_ms: u64,
    /// When the comment was last edited, in epoch milliseconds; `None` until its first edit (a
    /// helpful vote is not an edit).
    pub updated_at_ms: Option<u64>,
    /// How many times the comment has been written: 1 when it is created, one more for each edit
    /// (its deletion is the next one). Changes carry it to the index, which refuses a change older
    /// than the one it holds, so replays, retries and a reindex racing live writes cannot put an
    /// older state over a newer one (`docs/architecture.md`, a write). A helpful vote, or its
    /// withdrawal, is a write too: it moves the count, so it gives the comment its next version
    /// (caches and live subscribers learn the new count from that change).
    pub version: u64,
    /// How many voters marked the comment helpful (one vote each, [`super::Voter`]). It
    /// changes in the same atomic write as the vote that moves it.
    pub helpful_count: u64,
    /// Its status and the last moderation decision ([`Moderation`]): only a published comment
    /// is in the public partitions and sets.
    pub moderation: Moderation,
    /// The shop's public answer, if any (`replyToComment`): a write like an edit (the next
    /// version), though not an edit of the comment (`updated_at` stays).
    pub reply: Option<Box<Reply>>,
    /// The token subjects of the readers whose reports on the comment are open (distinct, in
    /// the order they reported, at most [`super::MAX_OPEN_REPORTS`]): what puts it in the
    /// `REPORTED` queue; a moderator's decision closes them and empties it ([`super::report`]).
    pub reporters: Vec<String>,
    /// The keyed hash of the order its author proved they bought the product in
    /// ([`super::OrderHash`]), when `addComment` came with a purchase proof: the comment is a
    /// verified purchase. Set when the comment is created, never by a client field, and kept
    /// by every edit and by an anonymizing erasure.
    pub purchase: Option<super::OrderHash>,
}

impl Comment {
    /// The comment's position in a list by time: `created_at_ms`, then its id.
    pub fn sort_key(&self) -> SortKey {
        // Comments are only built through `CommentDraft` or the stores' decoders, which both
        // validate the millisecond range, so this cannot be out of range.
        SortKey::new(self.created_at_ms.min(SortKey::MAX_MILLIS), self.id)
            .unwrap_or_else(|_| unreachable!("millis clamped to range"))
    }

    /// When the comment was created (`created_at_ms`).
    pub fn created_at(&self) -> DateTime<Utc> {
        millis_to_datetime(self.created_at_ms)
    }

    /// When the comment was last edited, if it was (`updated_at_ms`).
    pub fn updated_at(&self) -> Option<DateTime<Utc>> {
        self.updated_at_ms.map(millis_to_datetime)
    }

    /// This comment with its author and body held to the rules `addComment` applies to them
    /// ([`CommentDraft::new`]: cleaned, something visible, within the limits) and its
    /// `author_sub` to [`MAX_AUTHOR_SUB_BYTES`] of visible text: for comments that come from
    /// elsewhere (`import`), which must not reach the store past the API's rules. A comment the
    /// API wrote comes back unchanged.
    pub fn with_checked_text(self) -> Result<Self, InvalidInput> {
        let author_sub = match self.author_sub {
            Some(sub) if sub.is_empty() || sub.len() > MAX_AUTHOR_SUB_BYTES => {
                return Err(InvalidInput::owned(
                    "authorSub",
                    format!("must be 1 to {MAX_AUTHOR_SUB_BYTES} bytes"),
                ));
            }
            Some(sub) if sub.chars().any(char::is_control) => {
                return Err(InvalidInput::new(
                    "authorSub",
                    "must not hold control characters",
                ));
            }
            sub => sub,
        };
        let note = match self.moderation.note {
            Some(note) => Some(check_text("moderationNote", &note, MAX_BODY_CHARS)?),
            None => None,
        };
        let reply = match self.reply {
            Some(reply) => Some(Box::new(Reply {
                body: check_text("replyBody", &reply.body, MAX_BODY_CHARS)?,
                ..*reply
            })),
            None => None,
        };
        Ok(Self {
            author: check_text("author", &self.author, MAX_AUTHOR_CHARS)?,
            body: check_text("body", &self.body, MAX_BODY_CHARS)?,
            author_sub,
            moderation: Moderation {
                note,
                ..self.moderation
            },
            reply,
            ..self
        })
    }

    /// The version of this comment's next write; refused at [`MAX_VERSION`] (a checked add: a
    /// version out of range, which no decoder lets in, is refused too rather than wrapped).
    pub fn next_version(&self) -> Result<u64, VersionCeiling> {
        self.version
            .checked_add(1)
            .filter(|next| *next <= MAX_VERSION)
            .ok_or(VersionCeiling {
                id: self.id,
                version: self.version,
            })
    }
}

/// An instant in epoch milliseconds as a UTC time (the epoch itself for one out of range).
pub fn millis_to_datetime(millis: u64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(millis as i64).unwrap_or_default()
}

/// A new comment's validated content; the store assigns nothing, so the draft is complete.
#[derive(Clone, Debug)]
pub struct CommentDraft {
    /// The product the comment is for.
    pub sku: Sku,
    /// The author's display name, cleaned and at most [`MAX_AUTHOR_CHARS`] characters.
    pub author: String,
    /// The `sub` of the token that writes the comment (`--auth jwt`); `None` otherwise.
    pub author_sub: Option<String>,
    /// The comment's text, cleaned and at most [`MAX_BODY_CHARS`] characters.
    pub body: String,
    /// The star rating.
    pub rating: Rating,
    /// The order the author proved they bought the product in, when they did
    /// ([`Comment::purchase`]); `None` from [`CommentDraft::new`].
    pub purchase: Option<super::OrderHash>,
}

impl CommentDraft {
    /// A draft of `addComment`'s input: `sku` parsed, `author` and `body` cleaned and checked
    /// (something visible, within the limits), `rating` 1 to 5, and no `author_sub`. `Err` names
    /// the first field refused.
    pub fn new(sku: &str, author: &str, body: &str, rating: i64) -> Result<Self, InvalidInput> {
        Ok(Self {
            sku: Sku::parse(sku)?,
            author: check_text("author", author, MAX_AUTHOR_CHARS)?,
            author_sub: None,
            body: check_text("body", body, MAX_BODY_CHARS)?,
            rating: Rating::new(rating)?,
            purchase: None,
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
            moderation: Moderation::default(),
            reply: None,
            reporters: Vec::new(),
            purchase: self.purchase,
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
    /// The new body (cleaned and checked), or `None` to keep the old one.
    pub body: Option<String>,
    /// The new rating, or `None` to keep the old one.
    pub rating: Option<Rating>,
    /// Whether the edit sends a published comment back to review (`--moderation pre`): it
    /// becomes pending, and leaves the public lists until a moderator publishes it again.
    pub review: bool,
}

impl CommentPatch {
    /// An edit of `updateComment`'s input: `body` cleaned and checked as a draft's is, `rating` 1
    /// to 5; refused when neither is given.
    pub fn new(body: Option<&str>, rating: Option<i64>) -> Result<Self, InvalidInput> {
        if body.is_none() && rating.is_none() {
            return Err(InvalidInput::new("input", "must change `body` or `rating`"));
        }
        Ok(Self {
            body: body
                .map(|b| check_text("body", b, MAX_BODY_CHARS))
                .transpose()?,
            rating: rating.map(Rating::new).transpose()?,
            review: false,
        })
    }

    /// This edit, sending a published comment back to review when `review` is set.
    pub fn reviewed(self, review: bool) -> Self {
        Self { review, ..self }
    }

    /// The status a comment in `status` has after this edit.
    pub fn status_after(&self, status: CommentStatus) -> CommentStatus {
        if self.review && status == CommentStatus::Published {
            CommentStatus::Pending
        } else {
            status
        }
    }

    /// The comment after this edit at `now_ms`: its next version ([`Comment::next_version`],
    /// refused at the ceiling).
    pub fn apply(&self, comment: &Comment, now_ms: u64) -> Result<Comment, VersionCeiling> {
        Ok(Comment {
            body: self.body.clone().unwrap_or_else(|| comment.body.clone()),
            rating: self.rating.unwrap_or(comment.rating),
            updated_at_ms: Some(now_ms),
            version: comment.next_version()?,
            moderation: Moderation {
                status: self.status_after(comment.moderation.status),
                ..comment.moderation.clone()
            },
            ..comment.clone()
        })
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
            .apply(&comment, 2_000)
            .expect("far from the ceiling");
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

    #[test]
    fn a_comment_from_elsewhere_is_held_to_the_api_s_text_rules() {
        let written = CommentDraft::new("SKU", "ann", "fine \u{1F44D}", 4)
            .expect("valid")
            .into_comment(1_000);
        assert_eq!(written.clone().with_checked_text(), Ok(written.clone()));
        let with = |author: &str, body: &str, sub: Option<&str>| Comment {
            author: author.to_owned(),
            body: body.to_owned(),
            author_sub: sub.map(str::to_owned),
            ..written.clone()
        };
        let cleaned = with(" \u{202E}nna", "a\r\nb\u{9B}", Some("auth0|1"))
            .with_checked_text()
            .expect("cleaned");
        assert_eq!(
            (cleaned.author.as_str(), cleaned.body.as_str()),
            ("nna", "a\nb")
        );
        for (author, body, sub) in [
            ("", "fine", None),
            ("ann", "\u{200B}\u{1BCA0}", None),
            ("ann", &"x".repeat(MAX_BODY_CHARS + 1), None),
            (&"a".repeat(MAX_AUTHOR_CHARS + 1), "fine", None),
            ("ann", "fine", Some("")),
            ("ann", "fine", Some(&"s".repeat(MAX_AUTHOR_SUB_BYTES + 1))),
            ("ann", "fine", Some("sub\nforged log line")),
        ] {
            assert!(
                with(author, body, sub).with_checked_text().is_err(),
                "{author:?} {body:?} {sub:?}"
            );
        }
    }

    #[test]
    fn a_comment_at_the_highest_version_takes_no_more_writes() {
        let mut comment = CommentDraft::new("SKU", "ann", "old", 2)
            .expect("valid")
            .into_comment(1_000);
        let patch = CommentPatch::new(Some("new"), None).expect("valid");
        comment.version = MAX_VERSION - 1;
        let last = patch.apply(&comment, 2_000).expect("the last version");
        assert_eq!(last.version, MAX_VERSION);
        let refused = VersionCeiling {
            id: comment.id,
            version: MAX_VERSION,
        };
        assert_eq!(patch.apply(&last, 3_000), Err(refused));
        assert_eq!(last.after_vote(true), Err(refused));
        assert!(refused.to_string().contains(&comment.id.to_string()));
        // Out of range (no decoder lets one in): refused, never wrapped to 0.
        comment.version = u64::MAX;
        assert!(patch.apply(&comment, 2_000).is_err());
        assert!(comment.after_vote(false).is_err());
        assert!(version_is_valid(MAX_VERSION) && version_is_valid(1));
        assert!(!version_is_valid(0) && !version_is_valid(MAX_VERSION + 1));
        // The deletion of a comment at the ceiling is still exact as a double (the Redis index).
        let deletion = MAX_VERSION + 1;
        assert_eq!(deletion as f64 as u64, deletion);
        assert_eq!(((deletion as f64) + 1.0) as u64, deletion + 1);
    }
}
