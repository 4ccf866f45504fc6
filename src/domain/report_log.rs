//! The moderation log's entries of reports: a decision's closing of a comment's open reports,
//! and the hiding `--report-hide-threshold` readers cause.

use super::audit::{LogAction, LogEntry};
use super::comment::Comment;
use super::report::{REPORT_THRESHOLD_ACTOR, ReportStatus};

impl LogEntry {
    /// The entry of a decision's closing of `old`'s open reports as `outcome`, by `actor`, at
    /// `now_ms`; its note counts them.
    pub fn closure(
        actor: &str,
        outcome: ReportStatus,
        old: &Comment,
        new: &Comment,
        now_ms: u64,
    ) -> Self {
        let action = match outcome {
            ReportStatus::Dismissed => LogAction::DismissReports,
            _ => LogAction::UpholdReports,
        };
        let n = old.report_count();
        let mut entry = LogEntry::of(actor, action, old, new, now_ms);
        entry.reason = None;
        entry.note = Some(format!(
            "{n} report{} {}",
            if n == 1 { "" } else { "s" },
            outcome.as_str().to_lowercase()
        ));
        entry
    }

    /// The entries a report that took `old` to `new` writes: one when it hid the comment
    /// (`--report-hide-threshold`), none otherwise.
    pub fn of_report(old: &Comment, new: &Comment, now_ms: u64) -> Vec<LogEntry> {
        if old.moderation.status == new.moderation.status {
            return Vec::new();
        }
        vec![LogEntry::of(
            REPORT_THRESHOLD_ACTOR,
            LogAction::HideOnReports,
            old,
            new,
            now_ms,
        )]
    }

    /// The entries a decision that took `old` to `new` writes, by `actor` at `now_ms`: the
    /// decision's, and the closing of its open reports when it had any.
    pub fn of_decision(
        actor: &str,
        action: LogAction,
        old: &Comment,
        new: &Comment,
        now_ms: u64,
    ) -> Vec<LogEntry> {
        let decision = LogEntry::of(actor, action, old, new, now_ms);
        let closure = old.closes_reports(new).map(|outcome| LogEntry {
            // Right after the decision's, so the log reads them in the order they were made.
            id: decision.id.next(),
            ..LogEntry::closure(actor, outcome, old, new, now_ms)
        });
        std::iter::once(decision).chain(closure).collect()
    }
}
