//! A person's data and forgetting it (GDPR art. 17): what erasing a person changes in one
//! comment, vote or report ([`Forget`]), and what an anonymized comment keeps.
//!
//! A person is a token subject (`sub`): what a comment keeps of its author
//! ([`Comment::author_sub`]), what a report keeps of its reporter, and what a helpful vote's
//! pseudonym is made of ([`VoterId::of`]`("sub:<sub>")`). Comments written under `--auth off`
//! or seeded name nobody and are nobody's to erase.

use std::fmt;
use std::str::FromStr;

use super::comment::{Comment, VersionCeiling};
use super::ids::CommentId;
use super::vote::VoterId;

/// The author an anonymized comment shows ([`ErasureMode::Anonymize`]).
pub const FORMER_CUSTOMER: &str = "Former customer";

/// What erasing a person does with their comments (their votes and reports are always removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErasureMode {
    /// Removes every comment of theirs: the default, and what "erase my data" means to most.
    Delete,
    /// Keeps each comment's body, rating and place under the author [`FORMER_CUSTOMER`], with
    /// the subject removed: for a shop whose statement says reviews are kept for other buyers
    /// once nothing identifies their author (the body may still do so: a shop must read it).
    Anonymize,
}

impl ErasureMode {
    /// Its spelling on the command line (`delete`, `anonymize`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Anonymize => "anonymize",
        }
    }
}

impl fmt::Display for ErasureMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErasureMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "delete" => Ok(Self::Delete),
            "anonymize" => Ok(Self::Anonymize),
            other => Err(format!(
                "`{other}` is not an erasure mode (delete or anonymize)"
            )),
        }
    }
}

/// One thing of a person's that a store forgets
/// ([`crate::store::CommentStore::forget`]), each in one atomic write with what it changes in
/// the comment concerned, and each a no-op once done (so an erasure run again, after a crash
/// or to check, changes nothing more).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forget {
    /// `voter`'s helpful vote on `comment`, whatever the comment's status: the vote goes and
    /// the comment's count drops by one ([`Comment::after_vote`]); a vote left behind by a
    /// deleted comment goes alone.
    Vote {
        /// The comment voted on.
        comment: CommentId,
        /// The voter's pseudonym.
        voter: VoterId,
    },
    /// `reporter`'s report on `comment`, open or closed: the report goes, and, while it is open,
    /// the reporter leaves the comment's open reporters ([`Comment::without_reporter`]).
    Report {
        /// The comment reported.
        comment: CommentId,
        /// The reporter's subject.
        reporter: String,
    },
    /// `sub`'s authorship of `comment` ([`Comment::anonymized`]).
    Author {
        /// The comment.
        comment: CommentId,
        /// Its author's subject: a comment of anyone else is left as it is.
        sub: String,
    },
    /// What a store keeps of `reporter` beside their reports (DynamoDB: the counter item
    /// behind their reports' `totalCount`), once they have none left. Nothing elsewhere.
    Reporter {
        /// The reporter's subject.
        reporter: String,
    },
}

impl Forget {
    /// The comment this concerns, if any.
    pub fn comment(&self) -> Option<CommentId> {
        match self {
            Self::Vote { comment, .. }
            | Self::Report { comment, .. }
            | Self::Author { comment, .. } => Some(*comment),
            Self::Reporter { .. } => None,
        }
    }

    /// What the comment becomes when this is forgotten (its next version), or `None` when it
    /// is left as it is: the vote's count drop only when the vote `existed`, the reporter's
    /// leaving only while they are among its open reporters, the authorship only of `sub`'s.
    pub fn next(
        &self,
        comment: &Comment,
        existed: bool,
    ) -> Result<Option<Comment>, VersionCeiling> {
        match self {
            Self::Vote { .. } if existed => comment.after_vote(false).map(Some),
            Self::Vote { .. } => Ok(None),
            Self::Report { reporter, .. } => comment.without_reporter(reporter),
            Self::Author { sub, .. } => comment.anonymized(sub),
            Self::Reporter { .. } => Ok(None),
        }
    }
}

impl Comment {
    /// The comment with its author forgotten, if `sub` wrote it: shown as [`FORMER_CUSTOMER`],
    /// no subject (so it leaves the author's lists), its next version. Body, rating, votes,
    /// status and reply stay; it is not an edit (`updated_at` stays). `None` for anyone else's.
    pub fn anonymized(&self, sub: &str) -> Result<Option<Comment>, VersionCeiling> {
        if self.author_sub.as_deref() != Some(sub) {
            return Ok(None);
        }
        Ok(Some(Comment {
            author: FORMER_CUSTOMER.to_owned(),
            author_sub: None,
            version: self.next_version()?,
            ..self.clone()
        }))
    }

    /// The comment without `reporter` among its open reporters (its next version; out of the
    /// `REPORTED` queues if they were the last), or `None` when they are not among them.
    pub fn without_reporter(&self, reporter: &str) -> Result<Option<Comment>, VersionCeiling> {
        if !self.reporters.iter().any(|r| r == reporter) {
            return Ok(None);
        }
        Ok(Some(Comment {
            reporters: self
                .reporters
                .iter()
                .filter(|r| *r != reporter)
                .cloned()
                .collect(),
            version: self.next_version()?,
            ..self.clone()
        }))
    }
}

/// How many things of a person an erasure removed or rewrote (or, dry, would).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureReceipt {
    /// Comments deleted (`delete`).
    pub comments_deleted: u64,
    /// Comments kept under [`FORMER_CUSTOMER`] (`anonymize`).
    pub comments_anonymized: u64,
    /// Helpful votes removed (each comment's count one lower).
    pub votes_removed: u64,
    /// Reports removed (open ones leave their comment's open reporters).
    pub reports_removed: u64,
}

impl ErasureReceipt {
    /// Everything counted.
    pub fn total(&self) -> u64 {
        self.comments_deleted + self.comments_anonymized + self.votes_removed + self.reports_removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::CommentDraft;

    fn comment(sub: Option<&str>) -> Comment {
        let draft = CommentDraft {
            author_sub: sub.map(str::to_owned),
            ..CommentDraft::new("SKU-1", "Ann", "Lovely.", 4).expect("as expected")
        };
        draft.into_comment(1_700_000_000_000)
    }

    #[test]
    fn anonymizing_forgets_the_author_of_their_comments_only() {
        let mine = comment(Some("ann"));
        let gone = mine
            .anonymized("ann")
            .expect("below the ceiling")
            .expect("changed");
        assert_eq!(gone.author, FORMER_CUSTOMER);
        assert_eq!(gone.author_sub, None);
        assert_eq!(gone.version, mine.version + 1);
        assert_eq!(
            (gone.body.as_str(), gone.rating),
            (mine.body.as_str(), mine.rating)
        );
        assert_eq!(gone.updated_at_ms, None, "not an edit");
        assert_eq!(
            gone.anonymized("ann").expect("as expected"),
            None,
            "done once"
        );
        assert_eq!(
            comment(Some("bob")).anonymized("ann").expect("as expected"),
            None
        );
        assert_eq!(comment(None).anonymized("ann").expect("as expected"), None);
    }

    #[test]
    fn a_forgotten_reporter_leaves_the_open_reporters_once() {
        let reported = Comment {
            reporters: vec!["bob".into(), "cy".into()],
            ..comment(Some("ann"))
        };
        let after = reported
            .without_reporter("bob")
            .expect("below the ceiling")
            .expect("changed");
        assert_eq!(after.reporters, vec!["cy".to_owned()]);
        assert_eq!(after.version, reported.version + 1);
        assert_eq!(after.without_reporter("bob").expect("as expected"), None);
    }

    #[test]
    fn a_forgotten_vote_lowers_the_count_only_if_it_existed() {
        let voted = Comment {
            helpful_count: 3,
            ..comment(Some("ann"))
        };
        let vote = Forget::Vote {
            comment: voted.id,
            voter: VoterId::of("sub:bob"),
        };
        assert_eq!(
            vote.next(&voted, true)
                .expect("below the ceiling")
                .expect("changed")
                .helpful_count,
            2
        );
        assert_eq!(vote.next(&voted, false).expect("as expected"), None);
    }

    #[test]
    fn modes_read_as_they_are_written() {
        for mode in [ErasureMode::Delete, ErasureMode::Anonymize] {
            assert_eq!(mode.as_str().parse::<ErasureMode>(), Ok(mode));
        }
        assert!("shred".parse::<ErasureMode>().is_err());
    }
}
