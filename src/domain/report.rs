//! Reports: a signed-in reader's flag on a published comment (the EU Digital Services Act,
//! art. 16: a way to report content, and a decision on the report).
//!
//! A report is a record of its own (who, which comment, why, when, and how it ended), kept once
//! per reader and comment: a second report of the same comment by the same reader changes
//! nothing. The comment keeps the readers whose reports are open ([`Comment::reporters`]): that
//! list is what puts it in the `REPORTED` queue, what `reportCount` counts, and which report
//! records a moderator's decision closes (`UPHELD` when the comment ends hidden or rejected,
//! `DISMISSED` when it stays published), in the same atomic write as the decision. A report is a
//! write of the comment (its next version, so the queue follows it in order like any change),
//! though not an edit (`updated_at` stays) and nothing the public sees changes.
//!
//! At most [`MAX_OPEN_REPORTS`] reports are open on a comment at once: a decision closes them
//! in one atomic write (a DynamoDB transaction holds at most 100 items), and fifty readers
//! waiting on one comment have told the moderators what one more would. Later readers are told
//! so and may report again once a decision has closed the open ones.

use std::num::NonZeroU32;

use super::audit::EntryId;
use super::comment::{Comment, VersionCeiling};
use super::ids::{CommentId, Sku};
use super::invalid::InvalidInput;
use super::moderation::{CommentStatus, Moderation, ModerationReason};

/// The most reports open on one comment at once (see the module documentation).
pub const MAX_OPEN_REPORTS: usize = 50;
/// The longest `details` of a report, in characters.
pub const MAX_DETAILS_CHARS: usize = 1_000;
/// The actor the moderation log names for a comment hidden by `--report-hide-threshold`.
pub const REPORT_THRESHOLD_ACTOR: &str = "dynapage:report-hide-threshold";

/// Why a reader reports a comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportReason {
    /// Advertising, link farms, bots.
    Spam,
    /// Not about the product.
    OffTopic,
    /// Insults, harassment, hate.
    Abusive,
    /// Someone's personal data.
    PersonalData,
    /// Unlawful content.
    Illegal,
    /// Not a genuine review (paid, invented, by a competitor).
    Fake,
    /// Anything else (the details say what).
    Other,
}

impl ReportReason {
    /// Every reason, in declaration order.
    pub const ALL: [ReportReason; 7] = [
        ReportReason::Spam,
        ReportReason::OffTopic,
        ReportReason::Abusive,
        ReportReason::PersonalData,
        ReportReason::Illegal,
        ReportReason::Fake,
        ReportReason::Other,
    ];

    /// The reason's name as stored and exported: the GraphQL enum's value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportReason::Spam => "SPAM",
            ReportReason::OffTopic => "OFF_TOPIC",
            ReportReason::Abusive => "ABUSIVE",
            ReportReason::PersonalData => "PERSONAL_DATA",
            ReportReason::Illegal => "ILLEGAL",
            ReportReason::Fake => "FAKE",
            ReportReason::Other => "OTHER",
        }
    }

    /// The reason a stored name spells.
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        Self::ALL
            .into_iter()
            .find(|reason| reason.as_str() == name)
            .ok_or_else(|| InvalidInput::new("reason", "is not a report reason"))
    }
}

/// Where a report stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportStatus {
    /// Waiting for a moderator's decision on the comment.
    Open,
    /// The comment was hidden or rejected.
    Upheld,
    /// The comment stays published.
    Dismissed,
}

impl ReportStatus {
    /// Every status, in declaration order.
    pub const ALL: [ReportStatus; 3] = [
        ReportStatus::Open,
        ReportStatus::Upheld,
        ReportStatus::Dismissed,
    ];

    /// The status's name as stored and exported: the GraphQL enum's value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportStatus::Open => "OPEN",
            ReportStatus::Upheld => "UPHELD",
            ReportStatus::Dismissed => "DISMISSED",
        }
    }

    /// The status a stored name spells.
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
            .ok_or_else(|| InvalidInput::new("status", "is not a report status"))
    }

    /// How a decision that leaves a comment in `status` closes its open reports.
    pub fn closing_at(status: CommentStatus) -> Self {
        if status.is_public() {
            ReportStatus::Dismissed
        } else {
            ReportStatus::Upheld
        }
    }
}

/// A validated `reportComment` input: the reason, and the details cleaned and held to
/// [`MAX_DETAILS_CHARS`] (empty ones are none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportDraft {
    /// Why.
    pub reason: ReportReason,
    /// What the reader adds, cleaned.
    pub details: Option<String>,
}

impl ReportDraft {
    /// A draft of the input; `Err` for details over the limit.
    pub fn new(reason: ReportReason, details: Option<&str>) -> Result<Self, InvalidInput> {
        let details = match details.map(super::text::clean) {
            Some(details) if details.chars().count() > MAX_DETAILS_CHARS => {
                return Err(InvalidInput::owned(
                    "details",
                    format!("must be at most {MAX_DETAILS_CHARS} characters"),
                ));
            }
            Some(details) if super::text::has_visible(&details) => Some(details),
            _ => None,
        };
        Ok(Self { reason, details })
    }

    /// The report this draft becomes, by `reporter` on `comment` at `now_ms`.
    pub fn into_report(self, comment: &Comment, reporter: &str, now_ms: u64) -> Report {
        Report {
            id: EntryId::new(now_ms),
            comment: comment.id,
            sku: comment.sku.clone(),
            reporter: reporter.to_owned(),
            reason: self.reason,
            details: self.details,
            status: ReportStatus::Open,
            created_at_ms: now_ms,
            decided_at_ms: None,
        }
    }
}

/// One reader's report of one comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// A ULID made when the report was filed: the reporter's reports are read newest first by
    /// it, and its cursors name it.
    pub id: EntryId,
    /// The comment reported (it may have been deleted since).
    pub comment: CommentId,
    /// The comment's product.
    pub sku: Sku,
    /// The reader's token subject.
    pub reporter: String,
    /// Why.
    pub reason: ReportReason,
    /// What the reader added.
    pub details: Option<String>,
    /// Where it stands.
    pub status: ReportStatus,
    /// When it was filed, in epoch milliseconds.
    pub created_at_ms: u64,
    /// When a decision closed it.
    pub decided_at_ms: Option<u64>,
}

impl Report {
    /// The report as a decision at `now_ms` closes it: `outcome` (an open report only; a
    /// closed one stays as it was).
    pub fn closed(&self, outcome: ReportStatus, now_ms: u64) -> Report {
        if self.status != ReportStatus::Open {
            return self.clone();
        }
        Report {
            status: outcome,
            decided_at_ms: Some(now_ms),
            ..self.clone()
        }
    }

    /// The report's details (or a reporter's sub) held to the API's rules, for reports that
    /// come from elsewhere (`import`).
    pub fn is_well_formed(&self) -> bool {
        let details = self
            .details
            .as_ref()
            .is_none_or(|d| d.chars().count() <= MAX_DETAILS_CHARS);
        let reporter = !self.reporter.is_empty()
            && self.reporter.len() <= super::comment::MAX_AUTHOR_SUB_BYTES
            && !self.reporter.chars().any(char::is_control);
        let decided = (self.status == ReportStatus::Open) == self.decided_at_ms.is_none();
        details && reporter && decided
    }
}

/// Why a report wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportRefused {
    /// The reader wrote the comment.
    #[error("comment {0} is your own: its author cannot report it")]
    Own(CommentId),
    /// The comment is not published: the reader cannot see it.
    #[error("comment {0} not found")]
    NotPublic(CommentId),
    /// [`MAX_OPEN_REPORTS`] reports wait on the comment already.
    #[error(
        "comment {0} already has {MAX_OPEN_REPORTS} open reports waiting for a moderator; yours adds nothing until a decision closes them"
    )]
    Full(CommentId),
    /// The comment is at the highest version.
    #[error(transparent)]
    Ceiling(#[from] VersionCeiling),
}

impl Comment {
    /// How many reports are open on the comment (`reportCount`).
    pub fn report_count(&self) -> usize {
        self.reporters.len()
    }

    /// Whether a report is open on the comment: it is in the `REPORTED` queue.
    pub fn is_reported(&self) -> bool {
        !self.reporters.is_empty()
    }

    /// The comment after a new report by `reporter` at `now_ms` (who has none on it yet: the
    /// store checks): the reporter among its open reports, its next version, and, when that
    /// makes `hide_threshold` distinct reporters of a published comment, hidden pending review
    /// (reason `OTHER`, a note that says why). Refused for the comment's author, a comment that
    /// is not published, and a full one.
    pub fn after_report(
        &self,
        reporter: &str,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Comment, ReportRefused> {
        if self.author_sub.as_deref() == Some(reporter) {
            return Err(ReportRefused::Own(self.id));
        }
        if !self.is_public() {
            return Err(ReportRefused::NotPublic(self.id));
        }
        if self.reporters.len() >= MAX_OPEN_REPORTS {
            return Err(ReportRefused::Full(self.id));
        }
        let mut reporters = self.reporters.clone();
        reporters.push(reporter.to_owned());
        let count = reporters.len();
        let hide = hide_threshold.is_some_and(|n| count >= n.get() as usize);
        let moderation = if hide {
            Moderation {
                status: CommentStatus::Hidden,
                reason: Some(ModerationReason::Other),
                note: Some(format!(
                    "Hidden pending review: reported by {count} people. A moderator will look at it."
                )),
                decided_at_ms: Some(now_ms),
            }
        } else {
            self.moderation.clone()
        };
        Ok(Comment {
            reporters,
            moderation,
            version: self.next_version()?,
            ..self.clone()
        })
    }

    /// How a decision that took this comment to `new` closes its open reports: `None` when it
    /// had none.
    pub fn closes_reports(&self, new: &Comment) -> Option<ReportStatus> {
        self.is_reported()
            .then(|| ReportStatus::closing_at(new.moderation.status))
    }
}

/// A comment's open reporters ([`Comment::reporters`]) as one text, the way the stores keep
/// them (a JSON array: a DynamoDB string attribute, an SQLite column); `None` for none.
pub fn encode_reporters(reporters: &[String]) -> Option<String> {
    (!reporters.is_empty())
        .then(|| serde_json::to_string(reporters).unwrap_or_else(|_| unreachable!("strings")))
}

/// The reporters [`encode_reporters`] spelled; `Err` for anything else (not an array of
/// distinct, non-empty subjects, or more than [`MAX_OPEN_REPORTS`]).
pub fn decode_reporters(text: &str) -> Result<Vec<String>, InvalidInput> {
    let bad = || InvalidInput::new("reporters", "is not a list of open reporters");
    let reporters: Vec<String> = serde_json::from_str(text).map_err(|_| bad())?;
    let mut seen = std::collections::HashSet::new();
    let distinct = reporters.iter().all(|r| !r.is_empty() && seen.insert(r));
    if !distinct || reporters.len() > MAX_OPEN_REPORTS {
        return Err(bad());
    }
    Ok(reporters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CommentDraft, LogAction, LogEntry, ModerationDecision, Verdict};

    fn comment() -> Comment {
        let mut comment = CommentDraft::new("SKU", "ann", "fine", 1)
            .expect("valid")
            .into_comment(1_000);
        comment.author_sub = Some("ann".into());
        comment
    }

    #[test]
    fn a_report_adds_its_reader_and_refuses_the_author_the_hidden_and_the_full() {
        let c = comment();
        let reported = c.after_report("bob", None, 2_000).expect("a report");
        assert_eq!(
            (reported.report_count(), reported.version),
            (1, c.version + 1)
        );
        assert_eq!(reported.updated_at_ms, None, "a report is not an edit");
        assert_eq!(
            c.after_report("ann", None, 2_000),
            Err(ReportRefused::Own(c.id))
        );
        let mut hidden = c.clone();
        hidden.moderation.status = CommentStatus::Hidden;
        assert_eq!(
            hidden.after_report("bob", None, 2_000),
            Err(ReportRefused::NotPublic(c.id))
        );
        let mut full = c.clone();
        full.reporters = (0..MAX_OPEN_REPORTS).map(|i| format!("r{i}")).collect();
        assert_eq!(
            full.after_report("bob", None, 2_000),
            Err(ReportRefused::Full(c.id))
        );
    }

    #[test]
    fn the_threshold_hides_at_its_nth_reader_and_logs_it() {
        let two = NonZeroU32::new(2);
        let once = comment().after_report("bob", two, 2_000).expect("first");
        assert!(once.is_public());
        let twice = once.after_report("cy", two, 3_000).expect("second");
        assert_eq!(twice.moderation.status, CommentStatus::Hidden);
        assert_eq!(twice.moderation.reason, Some(ModerationReason::Other));
        let entries = LogEntry::of_report(&once, &twice, 3_000);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].action, LogAction::HideOnReports);
        assert_eq!(entries[0].actor, REPORT_THRESHOLD_ACTOR);
        assert!(LogEntry::of_report(&comment(), &once, 2_000).is_empty());
    }

    #[test]
    fn a_decision_closes_open_reports_upheld_or_dismissed() {
        let reported = comment().after_report("bob", None, 2_000).expect("report");
        let keep = Verdict::new(ModerationDecision::Publish, None, None).expect("valid");
        let kept = reported
            .after_verdict(&keep, 3_000)
            .expect("publish dismisses");
        assert!(!kept.is_reported());
        assert_eq!(
            reported.closes_reports(&kept),
            Some(ReportStatus::Dismissed)
        );
        let hide = Verdict::new(ModerationDecision::Hide, Some(ModerationReason::Spam), None)
            .expect("valid");
        let hidden = reported.after_verdict(&hide, 3_000).expect("hide upholds");
        assert_eq!(reported.closes_reports(&hidden), Some(ReportStatus::Upheld));
        let entries = LogEntry::of_decision("mod", LogAction::Hide, &reported, &hidden, 3_000);
        assert_eq!(
            entries.iter().map(|e| e.action).collect::<Vec<_>>(),
            [LogAction::Hide, LogAction::UpholdReports]
        );
        assert_eq!(entries[1].note.as_deref(), Some("1 report upheld"));
        assert!(
            entries[0].id < entries[1].id,
            "the closing reads after the decision"
        );
        // Publishing a published comment is a decision only while a report is open on it.
        assert!(comment().after_verdict(&keep, 3_000).is_err());
    }

    #[test]
    fn names_round_trip_and_details_are_bounded() {
        for reason in ReportReason::ALL {
            assert_eq!(ReportReason::parse(reason.as_str()), Ok(reason));
        }
        for status in ReportStatus::ALL {
            assert_eq!(ReportStatus::parse(status.as_str()), Ok(status));
        }
        let long = "x".repeat(MAX_DETAILS_CHARS + 1);
        assert!(ReportDraft::new(ReportReason::Spam, Some(&long)).is_err());
        let blank = ReportDraft::new(ReportReason::Spam, Some(" \u{200B} ")).expect("ok");
        assert_eq!(blank.details, None);
        let two = vec!["a\"b".to_owned(), "c".to_owned()];
        let text = encode_reporters(&two).expect("some");
        assert_eq!(decode_reporters(&text), Ok(two));
        assert_eq!(encode_reporters(&[]), None);
        assert!(decode_reporters(r#"["a","a"]"#).is_err());
        assert!(decode_reporters(r#"[""]"#).is_err());
    }
}
