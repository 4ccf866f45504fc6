//! The moderation log: an append-only record of every decision and reply (who, what, the status
//! before and after, the reason and note, when), kept in the store beside the comments, never
//! edited, kept when its comment is deleted. The EU Digital Services Act asks a shop to account
//! for what it took down and why; this is where the answer is read (`moderationLog`).

use std::fmt;
use std::str::FromStr;

use super::comment::Comment;
use super::ids::{CommentId, Sku};
use super::invalid::InvalidInput;
use super::moderation::{CommentStatus, ModerationDecision, ModerationReason};

/// A log entry's id: a ULID made when the entry is written, so ids order like their times
/// (the log is read newest first by id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(CommentId);

impl EntryId {
    /// A new id at `millis` (ids made by one process in one millisecond increase).
    pub fn new(millis: u64) -> Self {
        Self(CommentId::new(millis))
    }

    /// The id right after this one (its value plus one; this one at the very top): the entry
    /// written with another in one step, which must read after it whatever the clock did.
    pub fn next(self) -> Self {
        let value = u128::from_be_bytes(self.to_bytes());
        Self::from_bytes(value.saturating_add(1).to_be_bytes())
    }

    /// The id whose big-endian bytes are `bytes` (for a store that keeps it as a blob).
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(CommentId::from_bytes(bytes))
    }

    /// The id's big-endian bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_bytes()
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for EntryId {
    type Err = InvalidInput;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self)
    }
}

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogAction {
    /// A moderator published the comment.
    Publish,
    /// A moderator hid the comment.
    Hide,
    /// A moderator rejected the comment.
    Reject,
    /// The shop answered the comment (or replaced its answer).
    Reply,
    /// The shop removed its answer.
    RemoveReply,
    /// `--report-hide-threshold` readers reported the comment: hidden pending review.
    HideOnReports,
    /// A decision closed the comment's open reports as upheld (it ended hidden or rejected).
    UpholdReports,
    /// A decision closed the comment's open reports as dismissed (it stays published).
    DismissReports,
}

impl LogAction {
    /// Every action.
    pub const ALL: [LogAction; 8] = [
        LogAction::Publish,
        LogAction::Hide,
        LogAction::Reject,
        LogAction::Reply,
        LogAction::RemoveReply,
        LogAction::HideOnReports,
        LogAction::UpholdReports,
        LogAction::DismissReports,
    ];

    /// The action's name as stored and shown (`PUBLISH`, `REMOVE_REPLY`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LogAction::Publish => "PUBLISH",
            LogAction::Hide => "HIDE",
            LogAction::Reject => "REJECT",
            LogAction::Reply => "REPLY",
            LogAction::RemoveReply => "REMOVE_REPLY",
            LogAction::HideOnReports => "HIDE_ON_REPORTS",
            LogAction::UpholdReports => "UPHOLD_REPORTS",
            LogAction::DismissReports => "DISMISS_REPORTS",
        }
    }

    /// The action a stored name spells.
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        Self::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
            .ok_or_else(|| InvalidInput::new("action", "is not a moderation log action"))
    }
}

/// One entry of the moderation log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The entry's id (and its place in the log).
    pub id: EntryId,
    /// The comment it is about.
    pub comment: CommentId,
    /// The comment's product.
    pub sku: Sku,
    /// Who acted: the token subject of the moderator or merchant.
    pub actor: String,
    /// What they did.
    pub action: LogAction,
    /// The comment's status before.
    pub previous: CommentStatus,
    /// The comment's status after.
    pub status: CommentStatus,
    /// The decision's reason, if it gave one.
    pub reason: Option<ModerationReason>,
    /// The note to the author of a decision, or the reply's text.
    pub note: Option<String>,
    /// When, in epoch milliseconds.
    pub at_ms: u64,
}

impl LogEntry {
    /// The entry for `actor`'s `action` that took `old` to `new` at `now_ms`: a decision's
    /// reason and note, or a reply's text as its note.
    pub fn of(actor: &str, action: LogAction, old: &Comment, new: &Comment, now_ms: u64) -> Self {
        let note = match action {
            LogAction::Reply => new.reply.as_ref().map(|reply| reply.body.clone()),
            LogAction::RemoveReply => None,
            _ => new.moderation.note.clone(),
        };
        let reason = match action {
            LogAction::Hide | LogAction::Reject | LogAction::HideOnReports => new.moderation.reason,
            _ => None,
        };
        Self {
            id: EntryId::new(now_ms),
            comment: new.id,
            sku: new.sku.clone(),
            actor: actor.to_owned(),
            action,
            previous: old.moderation.status,
            status: new.moderation.status,
            reason,
            note,
            at_ms: now_ms,
        }
    }

    /// The action of a reply that leaves `new`: answered or removed.
    pub fn reply_action(new: &Comment) -> LogAction {
        if new.reply.is_some() {
            LogAction::Reply
        } else {
            LogAction::RemoveReply
        }
    }
}

impl ModerationDecision {
    /// The log action this decision is recorded as.
    pub fn logged(self) -> LogAction {
        match self {
            ModerationDecision::Publish => LogAction::Publish,
            ModerationDecision::Hide => LogAction::Hide,
            ModerationDecision::Reject => LogAction::Reject,
        }
    }
}
