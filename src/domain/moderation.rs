//! A comment's moderation: its status, and the decisions that move it.
//!
//! The status decides where a comment is seen, not a filter after a read: only a
//! [`CommentStatus::Published`] comment is in the public partitions of the store and the public
//! sets of the index, so a public page never reads one it would throw away. A decision is a
//! write like an edit (the comment's next version), so it travels the change stream and every
//! copy follows it in order.
//!
//! Nothing here looks at the rating: no reason, rule or transition depends on the stars (the US
//! FTC rule on consumer reviews, 16 CFR 465, forbids suppressing reviews for their rating).

use super::invalid::InvalidInput;

/// The longest moderator's note (the statement of reasons shown to the author), in characters:
/// as long as a comment's body may be (`MAX_BODY_CHARS`).
pub const MAX_NOTE_CHARS: usize = 4_000;

/// Where a comment stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommentStatus {
    /// Written under `--moderation pre` (or edited after publication there): waiting for a
    /// moderator; seen by its author and moderators only.
    Pending,
    /// Public: in every list, count and summary.
    #[default]
    Published,
    /// Taken down after publication; may be published again.
    Hidden,
    /// Refused before it was ever published.
    Rejected,
}

impl CommentStatus {
    /// Every status, in declaration order.
    pub const ALL: [CommentStatus; 4] = [
        CommentStatus::Pending,
        CommentStatus::Published,
        CommentStatus::Hidden,
        CommentStatus::Rejected,
    ];

    /// The status's name as stored and exported (`PUBLISHED`, …): the GraphQL enum's value.
    pub fn as_str(self) -> &'static str {
        match self {
            CommentStatus::Pending => "PENDING",
            CommentStatus::Published => "PUBLISHED",
            CommentStatus::Hidden => "HIDDEN",
            CommentStatus::Rejected => "REJECTED",
        }
    }

    /// The status a stored name spells ([`CommentStatus::as_str`]).
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
            .ok_or_else(|| {
                InvalidInput::new(
                    "status",
                    "must be one of PENDING, PUBLISHED, HIDDEN, REJECTED",
                )
            })
    }

    /// Whether the public sees comments in this status.
    pub fn is_public(self) -> bool {
        self == CommentStatus::Published
    }
}

/// What a moderator decides about a comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModerationDecision {
    /// Make it public: a pending comment, or a hidden or rejected one on appeal.
    Publish,
    /// Take a published comment down (it may be published again).
    Hide,
    /// Refuse a pending comment.
    Reject,
}

impl ModerationDecision {
    /// The status the decision leads to.
    pub fn status(self) -> CommentStatus {
        match self {
            ModerationDecision::Publish => CommentStatus::Published,
            ModerationDecision::Hide => CommentStatus::Hidden,
            ModerationDecision::Reject => CommentStatus::Rejected,
        }
    }

    /// Whether the decision applies to a comment in `status`, `reported` or not (a report is
    /// open on it): publishing to anything not published, and to a reported published comment
    /// (keeping it: its reports are dismissed); hiding to a published comment, and to a
    /// reported hidden one (hidden by `--report-hide-threshold`: its reports are upheld);
    /// rejecting to a pending one.
    pub fn applies_to(self, status: CommentStatus, reported: bool) -> bool {
        match self {
            ModerationDecision::Publish => status != CommentStatus::Published || reported,
            ModerationDecision::Hide => {
                status == CommentStatus::Published || (reported && status == CommentStatus::Hidden)
            }
            ModerationDecision::Reject => status == CommentStatus::Pending,
        }
    }

    /// The decision's name (`PUBLISH`, …): the GraphQL enum's value, and the audit action.
    pub fn as_str(self) -> &'static str {
        match self {
            ModerationDecision::Publish => "PUBLISH",
            ModerationDecision::Hide => "HIDE",
            ModerationDecision::Reject => "REJECT",
        }
    }
}

/// Why a moderator hid or rejected a comment (the DSA's statement of reasons, art. 17). None is
/// about the rating.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModerationReason {
    /// Advertising, links farms, bots.
    Spam,
    /// Not about the product.
    OffTopic,
    /// Insults, harassment, hate.
    Abusive,
    /// Someone's personal data.
    PersonalData,
    /// Unlawful content.
    Illegal,
    /// Written by someone with a stake (staff, a competitor, a paid reviewer).
    ConflictOfInterest,
    /// The same review again.
    Duplicate,
    /// Anything else (the note says what).
    Other,
}

impl ModerationReason {
    /// Every reason, in declaration order.
    pub const ALL: [ModerationReason; 8] = [
        ModerationReason::Spam,
        ModerationReason::OffTopic,
        ModerationReason::Abusive,
        ModerationReason::PersonalData,
        ModerationReason::Illegal,
        ModerationReason::ConflictOfInterest,
        ModerationReason::Duplicate,
        ModerationReason::Other,
    ];

    /// The reason's name as stored and exported (`SPAM`, …): the GraphQL enum's value.
    pub fn as_str(self) -> &'static str {
        match self {
            ModerationReason::Spam => "SPAM",
            ModerationReason::OffTopic => "OFF_TOPIC",
            ModerationReason::Abusive => "ABUSIVE",
            ModerationReason::PersonalData => "PERSONAL_DATA",
            ModerationReason::Illegal => "ILLEGAL",
            ModerationReason::ConflictOfInterest => "CONFLICT_OF_INTEREST",
            ModerationReason::Duplicate => "DUPLICATE",
            ModerationReason::Other => "OTHER",
        }
    }

    /// The reason a stored name spells ([`ModerationReason::as_str`]).
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        Self::ALL
            .into_iter()
            .find(|reason| reason.as_str() == name)
            .ok_or_else(|| InvalidInput::new("reason", "is not a moderation reason"))
    }
}

/// A comment's moderation as stored: its status and the last decision's reason, note and time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Moderation {
    /// Where the comment stands.
    pub status: CommentStatus,
    /// Why it was hidden or rejected (the last decision's reason; kept when it is published
    /// again, for the record, and shown with the status).
    pub reason: Option<ModerationReason>,
    /// The moderator's note to the author (cleaned, at most [`MAX_NOTE_CHARS`]).
    pub note: Option<String>,
    /// When the last decision was made, in epoch milliseconds; `None` before any.
    pub decided_at_ms: Option<u64>,
}

impl Moderation {
    /// A comment's moderation when it is written: published at once (`--moderation post`), or
    /// pending a moderator (`pre`).
    pub fn new(pending: bool) -> Self {
        Self {
            status: if pending {
                CommentStatus::Pending
            } else {
                CommentStatus::Published
            },
            ..Self::default()
        }
    }
}

/// The shop's public answer to a comment (one per comment; a new one replaces it). Its author
/// is the shop (`--shop-name`), not a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The answer: cleaned, 1 to [`MAX_NOTE_CHARS`] characters.
    pub body: String,
    /// When the comment was first answered, in epoch milliseconds.
    pub created_at_ms: u64,
    /// When the answer was last replaced, if it was.
    pub updated_at_ms: Option<u64>,
}

/// A reply's text as `replyToComment` takes it: cleaned ([`super::text`]), something visible,
/// at most [`MAX_NOTE_CHARS`] characters.
pub fn reply_text(body: &str) -> Result<String, InvalidInput> {
    let cleaned = super::text::clean(body);
    if !super::text::has_visible(&cleaned) {
        return Err(InvalidInput::new(
            "body",
            "must hold a visible character (or be null to remove the reply)",
        ));
    }
    if cleaned.chars().count() > MAX_NOTE_CHARS {
        return Err(InvalidInput::owned(
            "body",
            format!("must be at most {MAX_NOTE_CHARS} characters"),
        ));
    }
    Ok(cleaned)
}

/// A validated moderation call: the decision, with the reason hiding and rejecting need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What is decided.
    pub decision: ModerationDecision,
    /// Why (required to hide or reject).
    pub reason: Option<ModerationReason>,
    /// The note to the author, cleaned.
    pub note: Option<String>,
}

impl Verdict {
    /// A verdict of `moderateComment`'s input: `HIDE` and `REJECT` need a reason; the note is
    /// cleaned and held to [`MAX_NOTE_CHARS`] (an empty one is no note).
    pub fn new(
        decision: ModerationDecision,
        reason: Option<ModerationReason>,
        note: Option<&str>,
    ) -> Result<Self, InvalidInput> {
        if decision != ModerationDecision::Publish && reason.is_none() {
            return Err(InvalidInput::owned(
                "reason",
                format!(
                    "is required to {} a comment (the statement of reasons its author is shown)",
                    decision.as_str()
                ),
            ));
        }
        let note = match note.map(super::text::clean) {
            Some(note) if note.chars().count() > MAX_NOTE_CHARS => {
                return Err(InvalidInput::owned(
                    "note",
                    format!("must be at most {MAX_NOTE_CHARS} characters"),
                ));
            }
            Some(note) if super::text::has_visible(&note) => Some(note),
            _ => None,
        };
        Ok(Self {
            decision,
            reason,
            note,
        })
    }
}

/// A decision that does not apply to the comment's status (hiding a pending comment, rejecting
/// a published one, publishing a published one): nothing is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {status} comment cannot be given the decision {decision}", status = .status.as_str(), decision = .decision.as_str())]
pub struct DecisionRefused {
    /// The comment's status.
    pub status: CommentStatus,
    /// The decision refused.
    pub decision: ModerationDecision,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Comment, CommentDraft};

    fn comment(status: CommentStatus) -> Comment {
        let mut comment = CommentDraft::new("SKU", "ann", "fine", 1)
            .expect("valid")
            .into_comment(1_000);
        comment.moderation.status = status;
        comment
    }

    #[test]
    fn each_decision_applies_to_the_statuses_it_names() {
        use CommentStatus::*;
        use ModerationDecision::*;
        let table = [
            (Publish, [true, false, true, true]),
            (Hide, [false, true, false, false]),
            (Reject, [true, false, false, false]),
        ];
        for (decision, allowed) in table {
            for (status, ok) in [Pending, Published, Hidden, Rejected]
                .into_iter()
                .zip(allowed)
            {
                let verdict =
                    Verdict::new(decision, Some(ModerationReason::Spam), None).expect("valid");
                let after = comment(status).after_verdict(&verdict, 2_000);
                assert_eq!(after.is_ok(), ok, "{decision:?} of {status:?}");
                if let Ok(after) = after {
                    assert_eq!(after.moderation.status, decision.status());
                    assert_eq!(after.version, 2);
                    assert_eq!(after.moderation.decided_at_ms, Some(2_000));
                }
            }
        }
    }

    #[test]
    fn hiding_and_rejecting_need_a_reason_and_notes_are_bounded() {
        assert!(Verdict::new(ModerationDecision::Hide, None, None).is_err());
        assert!(Verdict::new(ModerationDecision::Reject, None, None).is_err());
        assert!(Verdict::new(ModerationDecision::Publish, None, None).is_ok());
        let long = "x".repeat(MAX_NOTE_CHARS + 1);
        assert!(Verdict::new(ModerationDecision::Publish, None, Some(&long)).is_err());
        let blank =
            Verdict::new(ModerationDecision::Publish, None, Some(" \u{200B} ")).expect("ok");
        assert_eq!(blank.note, None);
        let cleaned = Verdict::new(
            ModerationDecision::Publish,
            None,
            Some(" see \u{202E}rule 4 "),
        )
        .expect("ok");
        assert_eq!(cleaned.note.as_deref(), Some("see rule 4"));
    }

    #[test]
    fn names_round_trip() {
        for status in CommentStatus::ALL {
            assert_eq!(CommentStatus::parse(status.as_str()), Ok(status));
        }
        for reason in ModerationReason::ALL {
            assert_eq!(ModerationReason::parse(reason.as_str()), Ok(reason));
        }
        assert!(CommentStatus::parse("published").is_err());
    }
}
