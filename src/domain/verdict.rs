//! A moderator's verdict applied to a comment: the one place a decision becomes the comment's
//! next state (`CommentStore::moderate` in every store calls it).

use super::comment::{Comment, VersionCeiling};
use super::moderation::{DecisionRefused, Moderation, Verdict};

/// Why [`Comment::after_verdict`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerdictRefused {
    /// The decision does not apply to the comment's status.
    #[error(transparent)]
    Decision(#[from] DecisionRefused),
    /// The comment is at the highest version.
    #[error(transparent)]
    Ceiling(#[from] VersionCeiling),
}

impl Comment {
    /// Whether the public sees this comment.
    pub fn is_public(&self) -> bool {
        self.moderation.status.is_public()
    }

    /// The comment after `verdict` at `now_ms`: its new status, reason, note and decision time,
    /// and its next version. Refused when the decision does not apply to its status.
    pub fn after_verdict(&self, verdict: &Verdict, now_ms: u64) -> Result<Comment, VerdictRefused> {
        let status = self.moderation.status;
        if !verdict.decision.applies_to(status) {
            return Err(DecisionRefused {
                status,
                decision: verdict.decision,
            }
            .into());
        }
        Ok(Comment {
            moderation: Moderation {
                status: verdict.decision.status(),
                reason: verdict.reason.or(self.moderation.reason),
                note: verdict.note.clone(),
                decided_at_ms: Some(now_ms),
            },
            version: self.next_version()?,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_body_and_note_limits_agree() {
        assert_eq!(super::super::MAX_NOTE_CHARS, super::super::MAX_BODY_CHARS);
    }
}
