//! Change events: what the index must learn when a comment is written.
//!
//! Both the embedded store's feed and the DynamoDB Streams consumer produce these, and one
//! function applies them to any [`PageIndex`](crate::index::PageIndex): one code path.

use super::comment::Comment;
use super::ids::{Rating, Sku};
use super::moderation::CommentStatus;
use super::queue::QueueList;
use super::sort_key::SortKey;

/// What the index keeps of a comment: enough to place it in the product's sets, and the
/// version of the write it reflects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexEntry {
    /// The comment's product.
    pub sku: Sku,
    /// The comment's sort key: its `createdAt`, then its id.
    pub key: SortKey,
    /// The comment's rating: which rating set holds it.
    pub rating: Rating,
    /// The comment's [`Comment::version`].
    pub version: u64,
    /// Its [`Comment::helpful_count`]: where it sits in the list by helpful votes.
    pub helpful: u64,
    /// Whether the comment is a member of the list `sku` names: for a product, whether it is
    /// public ([`Comment::is_public`]); for a queue ([`QueueList`]), whether it is in the
    /// queue's status. An upsert of an entry that is not takes the comment out of the list,
    /// like a deletion at the upsert's version (a withdrawal: [`ChangeEvent::withdraws`]);
    /// entries the index holds are all members.
    pub published: bool,
    /// The comment's status (the index keeps none: an entry it holds is published in a
    /// product's list and in the queue's status in a queue's).
    pub status: CommentStatus,
}

impl IndexEntry {
    /// The status of every member of the list the index keeps under `list`: a queue's, or
    /// published in a product's.
    pub fn status_of_members(list: &Sku) -> CommentStatus {
        QueueList::from_index_name(list.as_str())
            .map_or(CommentStatus::Published, |queue| queue.status())
    }

    /// This entry (of a product's list) as the entry of `queue`: a member if the comment is in
    /// the queue's status and product, a withdrawal from it otherwise. Queues have no helpful
    /// order: the count is left out.
    pub fn in_queue(&self, queue: &QueueList) -> IndexEntry {
        IndexEntry {
            sku: queue.index_name(),
            published: queue.status() == self.status
                && queue.sku().is_none_or(|sku| *sku == self.sku),
            helpful: 0,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of the list the index keeps under
    /// `list`: itself for its product, [`IndexEntry::in_queue`] for a queue.
    pub fn in_list(&self, list: &Sku) -> IndexEntry {
        match QueueList::from_index_name(list.as_str()) {
            Some(queue) => self.in_queue(&queue),
            None => self.clone(),
        }
    }

    /// The entries of every list this entry (of a product's list) makes its comment a member
    /// of: its product's if it is published, its two queues otherwise.
    pub fn memberships(&self) -> Vec<IndexEntry> {
        match QueueList::of(self.status, &self.sku) {
            None => vec![self.clone()],
            Some(queues) => queues.iter().map(|q| self.in_queue(q)).collect(),
        }
    }
}

impl From<&Comment> for IndexEntry {
    fn from(comment: &Comment) -> Self {
        Self {
            sku: comment.sku.clone(),
            key: comment.sort_key(),
            rating: comment.rating,
            version: comment.version,
            helpful: comment.helpful_count,
            published: comment.is_public(),
            status: comment.moderation.status,
        }
    }
}

/// A change to the table, with the old image where there was one (streams give both).
///
/// Every change carries a version ([`ChangeEvent::version`]): the index applies a change only if it
/// is at least as new as what it holds for the comment (`docs/architecture.md`, a write), so
/// applying a change twice, or an older one after a newer one, leaves the index as the newest
/// change says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeEvent {
    /// A comment was created or edited; `new.version` is the change's version. `old` is the
    /// previous image of an edit, for logs and checks: the index places the comment from `new`
    /// alone (its product and `createdAt` never change, and an edit that changes the rating
    /// moves it out of whichever rating set held it).
    Upsert {
        /// The entry before the change, for an edit; `None` for a new comment.
        old: Option<IndexEntry>,
        /// The entry as written.
        new: IndexEntry,
    },
    /// A comment was deleted. `version` is newer than the deleted comment's
    /// ([`ChangeEvent::removal`]), so the deletion wins over every change that made it.
    Remove {
        /// The deleted comment's last entry.
        old: IndexEntry,
        /// The deletion's version, newer than `old.version` ([`ChangeEvent::removal`] makes it
        /// one more).
        version: u64,
    },
}

impl ChangeEvent {
    /// The deletion of the comment `old` describes: one version after it. Saturating: a
    /// comment's version is at most [`super::MAX_VERSION`], so this is exact for every comment
    /// a store holds; an entry out of range (none is decoded) still gets a deletion at least as
    /// new as it, never one wrapped to 0 that any change would win over.
    pub fn removal(old: IndexEntry) -> Self {
        let version = old.version.saturating_add(1);
        Self::Remove { old, version }
    }

    /// The version of the comment this change leaves (for a deletion, of the deletion).
    pub fn version(&self) -> u64 {
        match self {
            Self::Upsert { new, .. } => new.version,
            Self::Remove { version, .. } => *version,
        }
    }

    /// Whether this change takes its comment out of the public sets without deleting it (an
    /// upsert of a comment that is not published: pending, hidden or rejected). The index
    /// applies it as a deletion at its version, so a late change older than the decision
    /// never puts the comment back.
    pub fn withdraws(&self) -> bool {
        matches!(self, Self::Upsert { new, .. } if !new.published)
    }

    /// Whether the comment was public before this change: an earlier image that was, or, for
    /// an upsert without one (a replay, `reindex`), a public edit in place (version above 1).
    pub fn was_public(&self) -> bool {
        match self {
            Self::Upsert { old: Some(old), .. } => old.published,
            Self::Upsert { old: None, new } => new.version > 1 && new.published,
            Self::Remove { old, .. } => old.published,
        }
    }

    /// Whether the comment is public after this change.
    pub fn is_public(&self) -> bool {
        matches!(self, Self::Upsert { new, .. } if new.published)
    }

    /// The changes this change (of a product's list) makes to the queues ([`QueueList`]): the
    /// comment enters (or stays in, at the new version) the two queues of its new status, and
    /// leaves those of its old one, at this change's version, so that a late older change
    /// never brings it back. An upsert without an old image (a replay, `reindex`) says only
    /// where the comment is now; `reindex` finds the queues that still hold it by reading them.
    /// None for a change of a queue's list, or of a comment that was and is published.
    pub fn queue_changes(&self) -> Vec<ChangeEvent> {
        let (old, new) = match self {
            Self::Upsert { old, new } => (old.as_ref(), Some(new)),
            Self::Remove { old, .. } => (Some(old), None),
        };
        if self.entry().sku.is_queue() {
            return Vec::new();
        }
        let queues = |entry: Option<&IndexEntry>| -> Vec<QueueList> {
            entry
                .and_then(|e| QueueList::of(e.status, &e.sku))
                .map(Vec::from)
                .unwrap_or_default()
        };
        let (entered, left) = (queues(new), queues(old));
        let mut changes = Vec::new();
        if let Some(new) = new {
            changes.extend(entered.iter().map(|queue| Self::Upsert {
                old: None,
                new: new.in_queue(queue),
            }));
        }
        for queue in left.iter().filter(|queue| !entered.contains(queue)) {
            changes.push(match (new, old) {
                (Some(new), _) => Self::Upsert {
                    old: None,
                    new: new.in_queue(queue),
                },
                (None, Some(old)) => Self::Remove {
                    old: old.in_queue(queue),
                    version: self.version(),
                },
                (None, None) => continue,
            });
        }
        changes
    }

    /// The comment's entry this change is about (the new image, or the deleted one).
    pub fn entry(&self) -> &IndexEntry {
        match self {
            Self::Upsert { new, .. } => new,
            Self::Remove { old, .. } => old,
        }
    }
}
