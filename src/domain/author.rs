//! An author's own lists (`Viewer.comments`): the comments one signed-in subject wrote, in
//! every status, across products, newest first; all of them, or those in one status.
//!
//! Like a moderation queue ([`super::QueueList`]), an author's list is a list the page index
//! keeps beside the products', fed by the same versioned changes, so its `totalCount` and an
//! `offset` jump cost what a product's do. Its index name starts with `!@` (no SKU and no
//! queue's name can) and carries the subject base64url-encoded: a `sub` may hold any ASCII
//! character (OpenID Connect Core 1.0 §2), braces included, which would otherwise split a
//! Redis Cluster hash tag. Only comments written under `--auth jwt` have a subject, so only
//! they are in an author's lists.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{CommentStatus, Sku};

/// What starts every author list's index name.
const MARK: &str = "!@";
/// The name's part that stands for every status.
const EVERY_STATUS: &str = "ALL";

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

    /// The two lists a comment by `sub` in `status` is in: the author's whole list and the
    /// one of its status.
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

    /// Whether a comment by `sub` (if any) in `status` belongs to this list.
    pub fn admits(&self, sub: Option<&str>, status: CommentStatus) -> bool {
        sub == Some(self.sub.as_str()) && self.status.is_none_or(|s| s == status)
    }

    /// The name the page index keeps this list under: `!@ALL!<sub>` or `!@PENDING!<sub>`, the
    /// subject in base64url.
    pub fn index_name(&self) -> Sku {
        let status = self.status.map_or(EVERY_STATUS, CommentStatus::as_str);
        let sub = URL_SAFE_NO_PAD.encode(self.sub.as_bytes());
        Sku::list_name(format!("{MARK}{status}!{sub}"))
    }

    /// The list an index name names ([`AuthorList::index_name`]); `None` for anything else.
    pub fn from_index_name(name: &str) -> Option<Self> {
        let (status, sub) = name.strip_prefix(MARK)?.split_once('!')?;
        let status = match status {
            EVERY_STATUS => None,
            status => Some(CommentStatus::parse(status).ok()?),
        };
        let sub = String::from_utf8(URL_SAFE_NO_PAD.decode(sub).ok()?).ok()?;
        (!sub.is_empty()).then_some(Self { sub, status })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{QueueList, list_name};

    #[test]
    fn names_go_and_come_back_and_no_product_or_queue_has_one() {
        for sub in ["auth0|1234", "a{b}c", "x!y@z", "ü"] {
            for status in [
                None,
                Some(CommentStatus::Published),
                Some(CommentStatus::Hidden),
            ] {
                let list = AuthorList::new(sub, status);
                let name = list.index_name();
                assert!(Sku::parse(name.as_str()).is_err(), "{name}");
                assert!(name.is_reserved(), "{name}");
                assert!(!name.as_str().contains(['{', '}']), "{name}");
                assert_eq!(QueueList::from_index_name(name.as_str()), None);
                assert_eq!(AuthorList::from_index_name(name.as_str()), Some(list));
                assert_eq!(list_name(name.as_str()), Some(name));
            }
        }
        for bad in [
            "!@ALL!",
            "!@NOPE!YQ",
            "!@ALL",
            "!PENDING",
            "@ALL!YQ",
            "!@ALL!***",
        ] {
            assert_eq!(AuthorList::from_index_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_list_admits_its_authors_comments_of_its_status() {
        let all = AuthorList::new("u1", None);
        let hidden = AuthorList::new("u1", Some(CommentStatus::Hidden));
        assert!(all.admits(Some("u1"), CommentStatus::Pending));
        assert!(!all.admits(Some("u2"), CommentStatus::Pending));
        assert!(!all.admits(None, CommentStatus::Pending));
        assert!(hidden.admits(Some("u1"), CommentStatus::Hidden));
        assert!(!hidden.admits(Some("u1"), CommentStatus::Published));
    }
}
