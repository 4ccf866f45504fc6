//! Change events: what the index must learn when a comment is written.
//!
//! Both the embedded store's feed and the DynamoDB Streams consumer produce these, and one
//! function applies them to any [`PageIndex`](crate::index::PageIndex): one code path.

use super::author::AuthorList;
use super::comment::Comment;
use super::ids::{Rating, Sku};
use super::moderation::CommentStatus;
use super::purchase::{verified_list, verified_product};
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
    /// queue's status; for an author's list ([`AuthorList`]), whether it is the author's. An
    /// upsert of an entry
    /// that is not takes the comment out of the list, like a deletion at the upsert's version
    /// (a withdrawal: [`ChangeEvent::withdraws`]); entries the index holds are all members.
    pub published: bool,
    /// The comment's status (the index keeps none: an entry it holds is published in a
    /// product's list and in the queue's status in a queue's; an author's list keeps it in the
    /// rating's place and says [`CommentStatus::Published`] here).
    pub status: CommentStatus,
    /// The `sub` of the comment's author ([`Comment::author_sub`]): which author's lists hold
    /// it. The index keeps none: an entry of any list, and one read back from the index, has
    /// `None` ([`IndexEntry::as_indexed`]).
    pub author: Option<String>,
    /// Whether a report is open on the comment ([`Comment::is_reported`]): which puts it in
    /// the `REPORTED` queues. The index keeps none: `false` in every list's entry.
    pub reported: bool,
    /// Whether the comment is a verified purchase ([`Comment::is_verified`]): which puts it in
    /// its product's verified twin ([`verified_list`]) while it is published. The index keeps
    /// none: `false` in every list's entry.
    pub verified: bool,
}

impl IndexEntry {
    /// The status of every member of the list the index keeps under `list`: a queue's,
    /// published in a product's, and, as a placeholder, in an author's (which keeps each
    /// member's status in its rating's place, [`AuthorList::slot`]).
    pub fn status_of_members(list: &Sku) -> CommentStatus {
        QueueList::from_index_name(list.as_str())
            .and_then(|queue| queue.queue().status())
            .unwrap_or(CommentStatus::Published)
    }

    /// This entry as the index keeps it: without its author or its reports.
    pub fn as_indexed(&self) -> IndexEntry {
        IndexEntry {
            author: None,
            reported: false,
            verified: false,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of `queue`: a member if the comment is in
    /// the queue's status and product, a withdrawal from it otherwise. Queues have no helpful
    /// order: the count is left out.
    pub fn in_queue(&self, queue: &QueueList) -> IndexEntry {
        IndexEntry {
            sku: queue.index_name(),
            published: queue.queue().holds(self.status, self.reported)
                && queue.sku().is_none_or(|sku| *sku == self.sku),
            helpful: 0,
            author: None,
            reported: false,
            verified: false,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of an author's `list`: a member if the
    /// comment is the author's, a withdrawal otherwise; kept in its status's slot where a
    /// product's list keeps the rating ([`AuthorList::slot`]), with no helpful order, and the
    /// placeholder status of the list's members ([`IndexEntry::status_of_members`]).
    pub fn in_author_list(&self, list: &AuthorList) -> IndexEntry {
        IndexEntry {
            sku: list.index_name(),
            published: self.author.as_deref() == Some(list.sub()),
            helpful: 0,
            rating: AuthorList::slot(self.status),
            status: CommentStatus::Published,
            author: None,
            reported: false,
            verified: false,
            ..self.clone()
        }
    }

    /// This entry (of a product's list) as the entry of its product's verified twin
    /// ([`verified_list`]): a member if the comment is published and verified, a withdrawal
    /// otherwise; placed as in the product's list (rating, helpful count).
    pub fn in_verified_list(&self) -> IndexEntry {
        IndexEntry {
            sku: verified_list(&self.sku),
            published: self.published && self.verified,
            author: None,
            reported: false,
            verified: false,
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
        if verified_product(list.as_str()).is_some() {
            return self.in_verified_list();
        }
        match AuthorList::from_index_name(list.as_str()) {
            Some(author) => self.in_author_list(&author),
            None => self.clone(),
        }
    }

    /// The lists other than its product's that this entry (of a product's list) makes its
    /// comment a member of: its two queues while it is not published, the two `REPORTED` ones
    /// while a report is open on it, its author's list when it has an author, and its product's
    /// verified twin when it is a verified purchase.
    pub fn side_lists(&self) -> Vec<Sku> {
        let mut lists: Vec<Sku> = QueueList::of(self.status, self.reported, &self.sku)
            .iter()
            .map(QueueList::index_name)
            .collect();
        if let Some(sub) = &self.author {
            lists.push(AuthorList::new(sub.as_str(), None).index_name());
        }
        if self.verified {
            lists.push(verified_list(&self.sku));
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
            reported: comment.is_reported(),
            verified: comment.is_verified(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::CommentId;

    fn entry(status: CommentStatus, author: Option<&str>) -> IndexEntry {
        IndexEntry {
            verified: false,
            sku: Sku::parse("A").expect("a SKU"),
            key: SortKey::new(5, CommentId::from_parts(5, 1)).expect("a key"),
            rating: Rating::ALL[2],
            version: 2,
            helpful: 3,
            published: status.is_public(),
            status,
            author: author.map(str::to_owned),
            reported: false,
        }
    }

    #[test]
    fn a_comment_is_in_its_product_or_queues_and_once_in_its_authors_list() {
        let pending = entry(CommentStatus::Pending, Some("u"));
        let lists: Vec<(String, Rating, bool)> = pending
            .memberships()
            .iter()
            .map(|m| (m.sku.to_string(), m.rating, m.published))
            .collect();
        let author = AuthorList::new("u", None).index_name().to_string();
        let slot = AuthorList::slot(CommentStatus::Pending);
        assert_eq!(
            lists,
            [
                ("!PENDING".to_owned(), Rating::ALL[2], true),
                ("!PENDING!A".to_owned(), Rating::ALL[2], true),
                (author.clone(), slot, true),
            ]
        );
        let published = entry(CommentStatus::Published, Some("u")).memberships();
        assert_eq!(published.len(), 2, "its product's list and its author's");
        assert_eq!(
            published[0].helpful, 3,
            "the product's list keeps the count"
        );
        assert_eq!(published[1].sku.as_str(), author);
        assert_eq!(published[1].helpful, 0);
        assert_eq!(entry(CommentStatus::Published, None).memberships().len(), 1);
    }

    #[test]
    fn a_status_change_moves_the_comment_between_slots_of_one_authors_list() {
        let change = ChangeEvent::Upsert {
            old: Some(entry(CommentStatus::Pending, Some("u"))),
            new: IndexEntry {
                version: 3,
                ..entry(CommentStatus::Published, Some("u"))
            },
        };
        let side: Vec<(String, Rating, bool)> = change
            .side_changes()
            .iter()
            .map(|c| {
                (
                    c.entry().sku.to_string(),
                    c.entry().rating,
                    c.entry().published,
                )
            })
            .collect();
        let author = AuthorList::new("u", None).index_name().to_string();
        let published = AuthorList::slot(CommentStatus::Published);
        assert_eq!(
            side,
            [
                (author, published, true),
                ("!PENDING".to_owned(), Rating::ALL[2], false),
                ("!PENDING!A".to_owned(), Rating::ALL[2], false),
            ]
        );
    }
}
