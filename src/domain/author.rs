//! An author's own comments (`Viewer.comments`): those one signed-in subject wrote, in every
//! status, across products, newest first; all of them, or those in one status.
//!
//! Like a moderation queue ([`super::QueueList`]), an author's comments are a list the page
//! index keeps beside the products', fed by the same versioned changes, so its `totalCount`
//! and an `offset` jump cost what a product's do. The index keeps **one list per author**,
//! with each comment's status in the place a product's list keeps its rating
//! ([`AuthorList::slot`]): the whole list is all its "ratings", one status is one of them,
//! paged exactly as the `ratings` filter pages a product (a union of sets, counted and ranked
//! inside the index). One membership per comment, and most authors' lists are small: on Redis a
//! sorted set of a few members is a compact listpack, so the list costs little more than its
//! key. Its index name starts with `!@` (no SKU and no queue's name can) and carries the
//! subject base64url-encoded: a `sub` may hold any ASCII character (OpenID Connect Core 1.0
//! §2), braces included, which would otherwise split a Redis Cluster hash tag. Only comments
//! written under `--auth jwt` have a subject, so only they are in an author's list.
//!
//! The store holds the same comments in two partitions per author (all of them, and those of
//! one status: DynamoDB GSIs `byAuthor` and `byAuthorStatus`), which [`AuthorList`] names too.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{CommentStatus, Rating, RatingSet, Sku};

/// What starts every author list's index name.
const MARK: &str = "!@";

/// The comments of one author: all of them, or those in one status.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AuthorList {
    sub: String,
    status: Option<CommentStatus>,
}

impl AuthorList {
    /// The comments `sub` wrote in `status` (every status with `None`).
    pub fn new(sub: impl Into<String>, status: Option<CommentStatus>) -> Self {
        Self {
            sub: sub.into(),
            status,
        }
    }

    /// The store's two partitions a comment by `sub` in `status` is in: the author's whole
    /// one and the one of its status.
    pub fn of(sub: &str, status: CommentStatus) -> [AuthorList; 2] {
        [Self::new(sub, None), Self::new(sub, Some(status))]
    }

    /// The subject whose comments the list holds.
    pub fn sub(&self) -> &str {
        &self.sub
    }

    /// The status of the list's comments; `None` for every status.
    pub fn status(&self) -> Option<CommentStatus> {
        self.status
    }

    /// The place the index keeps a comment in `status` in, in an author's list: the rating of
    /// a product's list (pending 1, published 2, hidden 3, rejected 4).
    pub fn slot(status: CommentStatus) -> Rating {
        let at = CommentStatus::ALL
            .iter()
            .position(|s| *s == status)
            .unwrap_or_default();
        Rating::ALL[at]
    }

    /// The slots ([`AuthorList::slot`]) this list reads: one status's, or all of them.
    pub fn slots(&self) -> RatingSet {
        match self.status {
            Some(status) => RatingSet::from_ratings([Self::slot(status)]),
            None => RatingSet::ALL,
        }
    }

    /// The list of one status an index slot stands for (`None` for the fifth, unused one).
    pub fn at_slot(&self, slot: Rating) -> Option<AuthorList> {
        let status = CommentStatus::ALL.get(slot.index()).copied()?;
        Some(Self::new(self.sub.clone(), Some(status)))
    }

    /// The name the page index keeps the author's list under (one for every status):
    /// `!@<sub>`, the subject in base64url.
    pub fn index_name(&self) -> Sku {
        let sub = URL_SAFE_NO_PAD.encode(self.sub.as_bytes());
        Sku::list_name(format!("{MARK}{sub}"))
    }

    /// The author's whole list an index name names ([`AuthorList::index_name`]); `None` for
    /// anything else.
    pub fn from_index_name(name: &str) -> Option<Self> {
        let sub = name.strip_prefix(MARK)?;
        let sub = String::from_utf8(URL_SAFE_NO_PAD.decode(sub).ok()?).ok()?;
        (!sub.is_empty()).then_some(Self { sub, status: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{QueueList, list_name};

    #[test]
    fn names_go_and_come_back_and_no_product_or_queue_has_one() {
        for sub in ["auth0|1234", "a{b}c", "x!y@z", "ü"] {
            let list = AuthorList::new(sub, None);
            let name = list.index_name();
            assert!(Sku::parse(name.as_str()).is_err(), "{name}");
            assert!(name.is_reserved(), "{name}");
            assert!(!name.as_str().contains(['{', '}']), "{name}");
            assert_eq!(QueueList::from_index_name(name.as_str()), None);
            assert_eq!(AuthorList::from_index_name(name.as_str()), Some(list));
            assert_eq!(list_name(name.as_str()), Some(name.clone()));
            let hidden = AuthorList::new(sub, Some(CommentStatus::Hidden));
            assert_eq!(hidden.index_name(), name, "one list for every status");
        }
        for bad in ["!@", "!@***", "!PENDING", "@YQ", "!@YQ!"] {
            assert_eq!(AuthorList::from_index_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_status_has_a_slot_of_its_own_and_comes_back_from_it() {
        let all = AuthorList::new("u1", None);
        assert_eq!(all.slots(), RatingSet::ALL);
        let mut seen = Vec::new();
        for status in CommentStatus::ALL {
            let slot = AuthorList::slot(status);
            assert!(!seen.contains(&slot));
            seen.push(slot);
            let one = AuthorList::new("u1", Some(status));
            assert_eq!(one.slots(), RatingSet::from_ratings([slot]));
            assert_eq!(all.at_slot(slot), Some(one));
        }
        assert_eq!(all.at_slot(Rating::ALL[4]), None);
    }
}
