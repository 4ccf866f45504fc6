//! The embedded store forgetting one thing of a person's ([`Forget`]) in one step under the
//! lock; the durable store's writer applies the same after committing it.

use super::MemoryStore;
use crate::domain::{ChangeEvent, Forget, IndexEntry};
use crate::store::{StoreError, VotePage, VoteQuery};

impl MemoryStore {
    /// See [`crate::store::CommentStore::forget`].
    pub(crate) fn forget_now(&self, what: &Forget) -> Result<bool, StoreError> {
        let Some(id) = what.comment() else {
            // A reporter's reports are all this store keeps of them.
            return Ok(false);
        };
        let mut tables = self.write();
        let existed = match what {
            Forget::Vote { comment, voter } => tables.has_vote(*comment, *voter),
            Forget::Report { comment, reporter } => {
                tables.reports.get(*comment, reporter).is_some()
            }
            Forget::Author { .. } | Forget::Reporter { .. } => false,
        };
        let old = tables.comments.get(&id).cloned();
        // Worked out before anything changes: a comment at the version ceiling refuses the
        // whole step.
        let new = match &old {
            Some(old) => what.next(old, existed)?,
            None => None,
        };
        match what {
            Forget::Vote { comment, voter } => tables.set_vote(*comment, *voter, false),
            Forget::Report { comment, reporter } => {
                tables.reports.remove(*comment, reporter);
            }
            Forget::Author { .. } | Forget::Reporter { .. } => {}
        }
        if let (Some(old), Some(new)) = (old, &new) {
            tables.replace(new.clone());
            self.emit(ChangeEvent::Upsert {
                old: Some(IndexEntry::from(&old)),
                new: IndexEntry::from(new),
            });
        }
        Ok(existed || new.is_some())
    }

    /// See [`crate::store::CommentStore::votes_by`].
    pub(crate) fn votes_by_now(&self, query: &VoteQuery) -> VotePage {
        let limit = self
            .max_items_per_response
            .map_or(query.limit, |cap| cap.min(query.limit));
        let comments = self.read().votes_by(query.voter, query.after, limit);
        let last_evaluated = (comments.len() == limit && limit > 0)
            .then(|| comments.last().copied())
            .flatten();
        VotePage {
            comments,
            last_evaluated,
        }
    }
}
