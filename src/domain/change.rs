//! Change events: what the index must learn when a comment is written.
//!
//! Both the embedded store's feed and the DynamoDB Streams consumer produce these, and one
//! function applies them to any [`PageIndex`](crate::index::PageIndex): one code path.

use super::comment::Comment;
use super::ids::{Rating, Sku};
use super::sort_key::SortKey;

/// What the index keeps of a comment: enough to place it in the product's sets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexEntry {
    pub sku: Sku,
    pub key: SortKey,
    pub rating: Rating,
}

impl From<&Comment> for IndexEntry {
    fn from(comment: &Comment) -> Self {
        Self {
            sku: comment.sku.clone(),
            key: comment.sort_key(),
            rating: comment.rating,
        }
    }
}

/// A change to the table, with the old image where there was one (streams give both).
///
/// Applying an event is idempotent: replaying a batch after a crash leaves the same index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeEvent {
    /// A comment was created or edited. `old` is the previous image of an edit: when its rating
    /// differs, the member moves between rating sets.
    Upsert {
        old: Option<IndexEntry>,
        new: IndexEntry,
    },
    /// A comment was deleted.
    Remove { old: IndexEntry },
}
