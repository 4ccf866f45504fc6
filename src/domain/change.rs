//! Change events: what the index must learn when a comment is written.
//!
//! Both the embedded store's feed and the DynamoDB Streams consumer produce these, and one
//! function applies them to any [`PageIndex`](crate::index::PageIndex): one code path.

use super::author::AuthorList;
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
    /// public ([`Comment::is_public`]); for a queue ([`QueueList`]) or an author's list
    /// ([`AuthorList`]), whether it is in the list's status (and author). An upsert of an entry
    /// that is not takes the comment out of the list, like a deletion at the upsert's version
    /// (a withdrawal: [`ChangeEvent::withdraws`]); entries the index holds are all members.
    pub published: bool,
    /// The comment's status (the index keeps none: an entry it holds is published in a
    /// product's list and in the list's status in a queue or an author's list of one status;
    /// an author's whole list says [`CommentStatus::Published`] for every member).
    pub status: CommentStatus,
    /// The `sub` of the comment's author ([`Comment::author_sub`]): which author's lists hold
    /// it. The index keeps none: an entry of any list, and one read back from the index, has
    /// `None` ([`IndexEntry::as_indexed`]).
    pub author: Option<String>,
}

impl IndexEntry {
    /// The status of every member of the list the index keeps under `list`: a queue's, an
    /// author's list's of one status, published in a product's (and, as a placeholder, in an
    /// author's whole list).
    pub fn status_of_members(list: &Sku) -> CommentStatus {
        if let Some(queue) = QueueList::from_index_name(list.as_str()) {
            return queue.status();
        }
        AuthorList::from_index_name(list.as_str())
            .and_then(|list| list.status())
            .unwrap_or(CommentStatus::Published)
    }

    /// This entry as the index keeps it: without its author.
    pub fn as_indexed(&self) -> IndexEntry {
        IndexEntry {
            author: None,
            ..self.clone()
        }
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
            author: None,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of an author's `list`: a member if the
    /// comment is the author's (and in the list's status), a withdrawal otherwise. No helpful
    /// order, and the status of the list's members ([`IndexEntry::status_of_members`]).
    pub fn in_author_list(&self, list: &AuthorList) -> IndexEntry {
        IndexEntry {
            sku: list.index_name(),
            published: list.admits(self.author.as_deref(), self.status),
            helpful: 0,
            status: list.status().unwrap_or(CommentStatus::Published),
            author: None,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of the list the index keeps under
    /// `list`: itself for its product, [`IndexEntry::in_queue`] for a queue,
    /// [`IndexEntry::in_author_list`] for an author's list.
    pub fn in_list(&self, list: &Sku) -> IndexEntry {
        if let Some(queue) = QueueList::from_index_name(list.as_str()) {
            return self.in_queue(&queue);
        }
        match AuthorList::from_index_name(list.as_str()) {
            Some(author) => self.in_author_list(&author),
            None => self.clone(),
        }
    }

    /// The lists other than its product's that this entry (of a product's list) makes its
    /// comment a member of: its two queues while it is not published, and its author's two
    /// lists when it has an author.
    pub fn side_lists(&self) -> Vec<Sku> {
        let mut lists: Vec<Sku> = QueueList::of(self.status, &self.sku)
            .map(|queues| queues.iter().map(QueueList::index_name).collect())
            .unwrap_or_default();
        if let Some(sub) = &self.author {
            lists.extend(
                AuthorList::of(sub, self.status)
                    .iter()
                    .map(AuthorList::index_name),
            );
        }
        lists
    }

    /// The entries of every list this entry (of a product's list) makes its comment a member
    /// of: its product's if it is published, its side lists ([`IndexEntry::side_lists`]).
    pub fn memberships(&self) -> Vec<IndexEntry> {
        let own = self.published.then(|| self.clone());
        own.into_iter()
            .chain(self.side_lists().iter().map(|list| self.in_list(list)))
            .collect()
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
            author: comment.author_sub.clone(),
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

    /// The changes this change (of a product's list) makes to its side lists (the queues,
    /// [`QueueList`], and the author's lists, [`AuthorList`]; [`IndexEntry::side_lists`]): the
    /// comment enters (or stays in, at the new version) the lists of its new state, and leaves
    /// those of its old one, at this change's version, so that a late older change never brings
    /// it back. An upsert without an old image (a replay, `reindex`) says only where the comment
    /// is now; `reindex` finds the lists that still hold it by reading them. None for a change
    /// of a side list itself.
    pub fn side_changes(&self) -> Vec<ChangeEvent> {
        let (old, new) = match self {
            Self::Upsert { old, new } => (old.as_ref(), Some(new)),
            Self::Remove { old, .. } => (Some(old), None),
        };
        if self.entry().sku.is_reserved() {
            return Vec::new();
        }
        let lists =
            |entry: Option<&IndexEntry>| entry.map(IndexEntry::side_lists).unwrap_or_default();
        let (entered, left) = (lists(new), lists(old));
        let mut changes = Vec::new();
        if let Some(new) = new {
            changes.extend(entered.iter().map(|list| Self::Upsert {
                old: None,
                new: new.in_list(list),
            }));
        }
        for list in left.iter().filter(|list| !entered.contains(list)) {
            changes.push(match (new, old) {
                (Some(new), _) => Self::Upsert {
                    old: None,
                    new: new.in_list(list),
                },
                (None, Some(old)) => Self::Remove {
                    old: old.in_list(list),
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
