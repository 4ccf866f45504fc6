//! How a helpful vote's item is keyed in the comments' table: `vote#<comment>#<voter>`. No
//! comment id can start so (they are ULIDs), so scans and the stream tell the two kinds of item
//! apart by [`is_vote_id`], and a vote item names its comment back ([`comment_of_vote`]) for the
//! reads that list or count a comment's votes.

use crate::domain::{CommentId, VoterId};

/// The attribute of a vote item that names its voter (a [`VoterId`]'s text): the partition key
/// of GSI `byVoter`, which lists a person's votes. Vote items written before it have none: they
/// are in no voter's list (`docs/privacy.md`).
pub(super) const VOTER: &str = "voter";

/// The start of every vote item's `id`.
pub(super) const VOTE_PREFIX: &str = "vote#";

/// Whether an item's `id` is a vote's rather than a comment's.
pub fn is_vote_id(id: &str) -> bool {
    id.starts_with(VOTE_PREFIX)
}

/// The `id` of `voter`'s vote item on comment `comment`.
pub(super) fn vote_id(comment: CommentId, voter: VoterId) -> String {
    format!("{VOTE_PREFIX}{comment}#{voter}")
}

/// The comment a vote item's `id` names; `None` when `id` is no vote's.
pub(super) fn comment_of_vote(id: &str) -> Option<CommentId> {
    let rest = id.strip_prefix(VOTE_PREFIX)?;
    let (comment, _voter) = rest.split_once('#')?;
    comment.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vote_id_names_its_comment_and_is_never_a_comment_id() {
        let comment = CommentId::from_parts(1_700_000_000_000, 9);
        let id = vote_id(comment, VoterId::of("sub:ann"));
        assert!(is_vote_id(&id));
        assert_eq!(comment_of_vote(&id), Some(comment));
        assert!(id.parse::<CommentId>().is_err());
        assert!(!is_vote_id(&comment.to_string()));
        assert_eq!(comment_of_vote(&comment.to_string()), None);
        assert_eq!(comment_of_vote("vote#nonsense"), None);
    }
}
