//! A moderator's verdict, or the shop's reply, applied to a comment: the one place each becomes
//! the comment's next state (`CommentStore::moderate` and `CommentStore::reply` in every store
//! call these).

use super::comment::{Comment, VersionCeiling};
use super::moderation::{DecisionRefused, Moderation, Reply, Verdict};

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
    /// its next version, and its open reports closed ([`Comment::closes_reports`] says how).
    /// Refused when the decision does not apply to its status.
    pub fn after_verdict(&self, verdict: &Verdict, now_ms: u64) -> Result<Comment, VerdictRefused> {
        let status = self.moderation.status;
        if !verdict.decision.applies_to(status, self.is_reported()) {
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
            reporters: Vec::new(),
            ..self.clone()
        })
    }

    /// The comment with the shop's reply set to `body` (a first reply, or a replacement that
    /// keeps when it was first given), or removed (`None`), at `now_ms`; `None` when that
    /// changes nothing (no reply to remove, or the same text again), so nothing is written.
    pub fn after_reply(
        &self,
        body: Option<&str>,
        now_ms: u64,
    ) -> Result<Option<Comment>, VersionCeiling> {
        let reply = match (body, &self.reply) {
            (None, None) => return Ok(None),
            (Some(body), Some(old)) if old.body == body => return Ok(None),
            (None, Some(_)) => None,
            (Some(body), old) => Some(Box::new(Reply {
                body: body.to_owned(),
                created_at_ms: old.as_ref().map_or(now_ms, |old| old.created_at_ms),
                updated_at_ms: old.as_ref().map(|_| now_ms),
            })),
        };
        Ok(Some(Comment {
            reply,
            version: self.next_version()?,
            ..self.clone()
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::CommentDraft;

    #[test]
    fn a_reply_is_set_replaced_and_removed_and_a_change_of_nothing_writes_nothing() {
        let comment = CommentDraft::new("SKU", "ann", "fine", 4)
            .expect("valid")
            .into_comment(1_000);
        assert_eq!(comment.after_reply(None, 2_000), Ok(None));
        let answered = comment
            .after_reply(Some("Thank you!"), 2_000)
            .expect("below the ceiling")
            .expect("a change");
        let reply = answered.reply.clone().expect("a reply");
        assert_eq!(
            (reply.created_at_ms, reply.updated_at_ms, answered.version),
            (2_000, None, 2)
        );
        assert_eq!(answered.after_reply(Some("Thank you!"), 3_000), Ok(None));
        let replaced = answered
            .after_reply(Some("Thanks, Ann!"), 3_000)
            .expect("below the ceiling")
            .expect("a change");
        let reply = replaced.reply.clone().expect("a reply");
        assert_eq!(
            (reply.created_at_ms, reply.updated_at_ms),
            (2_000, Some(3_000))
        );
        let removed = replaced
            .after_reply(None, 4_000)
            .expect("below the ceiling")
            .expect("a change");
        assert_eq!((removed.reply.clone(), removed.version), (None, 4));
        assert_eq!(
            removed.updated_at_ms, comment.updated_at_ms,
            "a reply is not an edit"
        );
    }

    #[test]
    fn the_body_and_note_limits_agree() {
        assert_eq!(super::super::MAX_NOTE_CHARS, super::super::MAX_BODY_CHARS);
    }
}
