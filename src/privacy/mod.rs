//! A person's data (GDPR arts. 15, 17 and 20): everything the store keeps about one token
//! subject, read for their export ([`export`]) and forgotten on request ([`erase`]).
//!
//! Both read through per-person indexes, never a scan: their comments from their author's list
//! (`Partition::Author`; DynamoDB GSI `byAuthor`), their helpful votes by their pseudonym
//! (`CommentStore::votes_by`; GSI `byVoter`), their reports by reporter (GSI `byReporter`).
//! Each page is at most [`PAGE`] items, so a person with 100,000 comments is exported and
//! erased in bounded memory.
//!
//! Erasing writes through the store like any change, so every derived copy follows it: the
//! index, counts and rating summaries, the response cache and CDN tags (purged by the change),
//! live subscribers (`DELETED`, or `UPDATED` with the new author or count). The Redis change
//! log holds no text or author (an entry is a comment's id, product, rating and version), so
//! nothing of the person is left there to replay. What it keeps on purpose: the moderation log
//! (decisions about the comments, by moderators: the shop must account for them, and an entry
//! names no author) and backups made before (`docs/privacy.md`).

mod erase;
mod export;
mod pages;

pub use erase::{Erasure, erase};
pub use export::{ExportError, ExportSummary, FORMAT as EXPORT_FORMAT, export};

/// Items one read of a person's lists asks for.
pub const PAGE: usize = 100;

/// The pseudonym a signed-in person's helpful votes are kept under
/// ([`crate::domain::Voter::signed_in`]).
pub fn voter_of(sub: &str) -> crate::domain::VoterId {
    crate::domain::Voter::signed_in(sub).id
}
