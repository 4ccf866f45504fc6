//! `verify`'s check of helpful counts: every comment's `helpful_count` against the votes the
//! table holds for it (in DynamoDB, its vote items, met anywhere in the full scan).
//!
//! The store writes a vote and the count in one atomic write, so they can only disagree after
//! a write that bypassed it (a hand edit, a restore of part of a table, an older release's
//! put of a whole comment item): then the count is what clients see and the votes are who may
//! vote again, and this check says which comments to look at. It needs the whole table's votes,
//! so `verify --sku` (one product's partition, where no vote item is) does not run it.
//!
//! Held in memory during the scan: the comments with a count above 0 and the comments with
//! votes, about 40 bytes each; comments nobody voted for cost nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::domain::{CommentId, IndexEntry, Sku};
use crate::store::ScanPage;

/// A comment whose count is not the number of its votes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountMismatch {
    /// The comment's product.
    pub sku: Sku,
    /// The comment.
    pub id: CommentId,
    /// Its `helpfulCount`.
    pub count: u64,
    /// The votes the table holds for it.
    pub votes: u64,
}

/// What the check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HelpfulCheck {
    /// Comments compared (every comment of the table).
    pub comments: u64,
    /// Votes found for comments that exist.
    pub votes: u64,
    /// Comments whose count disagrees with their votes, newest first.
    pub mismatched: Vec<CountMismatch>,
    /// Votes for comments that no longer exist: a deleted comment's vote items stay in a
    /// DynamoDB table (nothing reads them; they cost storage only). Not drift.
    pub orphan_votes: u64,
    /// Comments out of place in the table's GSIs (`ScanPage::unranked`: by helpful votes, or
    /// keys that disagree with their status), newest first: `reindex` puts them right.
    pub unranked: Vec<(Sku, CommentId)>,
}

impl HelpfulCheck {
    /// Whether every count matches its votes and every comment is in place (orphan votes
    /// do not count).
    pub fn is_clean(&self) -> bool {
        self.mismatched.is_empty() && self.unranked.is_empty()
    }
}

/// The counts and votes of a scan, gathered page by page from concurrent segments.
#[derive(Debug, Default)]
pub(super) struct HelpfulTally {
    inner: Mutex<Gathered>,
}

#[derive(Debug, Default)]
struct Gathered {
    /// Comments with a count above 0.
    counts: HashMap<CommentId, u64>,
    /// Votes per comment.
    votes: HashMap<CommentId, u64>,
    /// Comments out of place by helpful votes.
    unranked: Vec<(Sku, CommentId)>,
}

impl HelpfulTally {
    pub(super) fn absorb(&self, page: &ScanPage) {
        let mut gathered = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for comment in page.items.iter().filter(|c| c.helpful_count > 0) {
            gathered.counts.insert(comment.id, comment.helpful_count);
        }
        for (id, votes) in &page.votes {
            *gathered.votes.entry(*id).or_default() += votes;
        }
        let unranked = page.unranked.iter().map(|c| (c.sku.clone(), c.id));
        gathered.unranked.extend(unranked);
    }

    /// Compares each comment of `table` (every comment the scan found) with its votes.
    pub(super) fn check(self, table: &BTreeMap<Sku, Vec<IndexEntry>>) -> HelpfulCheck {
        let Gathered {
            counts,
            mut votes,
            mut unranked,
        } = self.inner.into_inner().unwrap_or_else(|p| p.into_inner());
        unranked.sort_by_key(|(_, id)| std::cmp::Reverse(*id));
        let mut check = HelpfulCheck {
            unranked,
            ..HelpfulCheck::default()
        };
        for (sku, entries) in table {
            for entry in entries {
                let id = entry.key.id();
                let count = counts.get(&id).copied().unwrap_or(0);
                let found = votes.remove(&id).unwrap_or(0);
                check.comments += 1;
                check.votes += found;
                if count != found {
                    check.mismatched.push(CountMismatch {
                        sku: sku.clone(),
                        id,
                        count,
                        votes: found,
                    });
                }
            }
        }
        check.orphan_votes = votes.values().sum();
        check.mismatched.sort_by_key(|m| std::cmp::Reverse(m.id));
        check
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Comment, CommentDraft};

    fn comment(n: u64, count: u64) -> Comment {
        Comment {
            helpful_count: count,
            id: CommentId::from_parts(n, u128::from(n)),
            ..CommentDraft::new("A", "ann", "fine", 3)
                .expect("valid")
                .into_comment(n)
        }
    }

    #[test]
    fn counts_are_held_to_the_votes_found_anywhere_in_the_scan() {
        let (agrees, drifted, unvoted, counted_only) =
            (comment(1, 2), comment(2, 1), comment(3, 0), comment(4, 1));
        let gone = CommentId::from_parts(9, 9);
        let tally = HelpfulTally::default();
        tally.absorb(&ScanPage {
            items: vec![agrees.clone(), drifted.clone()],
            votes: vec![(agrees.id, 1), (gone, 2)],
            unranked: vec![drifted.clone()],
            log: Vec::new(),
            reports: Vec::new(),
            resume: None,
        });
        tally.absorb(&ScanPage {
            items: vec![unvoted.clone(), counted_only.clone()],
            votes: vec![(agrees.id, 1), (drifted.id, 3)],
            unranked: Vec::new(),
            log: Vec::new(),
            reports: Vec::new(),
            resume: None,
        });
        let sku = Sku::parse("A").expect("sku");
        let table = BTreeMap::from([(
            sku.clone(),
            [&agrees, &drifted, &unvoted, &counted_only]
                .into_iter()
                .map(IndexEntry::from)
                .collect(),
        )]);
        let check = tally.check(&table);
        assert_eq!(
            check.mismatched,
            vec![
                CountMismatch {
                    sku: sku.clone(),
                    id: counted_only.id,
                    count: 1,
                    votes: 0
                },
                CountMismatch {
                    sku,
                    id: drifted.id,
                    count: 1,
                    votes: 3
                },
            ]
        );
        assert_eq!((check.comments, check.votes, check.orphan_votes), (4, 5, 2));
        assert_eq!(check.unranked, vec![(drifted.sku.clone(), drifted.id)]);
        assert!(!check.is_clean());
    }
}
