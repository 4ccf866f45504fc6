//! The embedded store's tables: the comments, each partition's positions and the votes,
//! kept consistent by the few operations here (under the store's lock).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::domain::{Comment, CommentId, Position, RatingSet, Sku, VoterId};
use crate::store::Partition;

#[derive(Debug, Default)]
pub(super) struct Tables {
    pub(super) comments: BTreeMap<CommentId, Comment>,
    /// Each partition's positions ([`Partition::position_of`]).
    partitions: HashMap<Partition, BTreeSet<Position>>,
    /// The moderation log.
    pub(super) log: super::log::Log,
    /// The reports.
    pub(super) reports: super::reports::Reports,
    /// Who marked each comment helpful (comments without votes have no entry).
    pub(super) votes: HashMap<CommentId, HashSet<VoterId>>,
    /// The same votes by voter, in comment-id order: a person's votes are read without a scan
    /// (`votes_by`, for their export and erasure).
    by_voter: HashMap<VoterId, BTreeSet<CommentId>>,
    /// The products whose partitions by helpful votes are held: those that have had a comment
    /// with votes. Until then every count is 0, a partition by helpful votes holds the same
    /// positions as its twin by time, and the twin answers for it ([`Tables::held`]): a product
    /// without votes holds each comment in two sets, not four. Made once, kept.
    by_helpful: HashSet<Sku>,
    /// The order hashes verified comments claimed ([`Comment::purchase`]): kept when their
    /// comment goes, so an order verifies one comment per product, ever.
    claims: HashSet<crate::domain::OrderHash>,
}

/// The partition by time with the comments of `partition` (itself for one by time).
fn by_time(partition: &Partition) -> Partition {
    match partition {
        Partition::ProductHelpful(sku) => Partition::Product(sku.clone()),
        Partition::ProductRatingHelpful(sku, rating) => {
            Partition::ProductRating(sku.clone(), *rating)
        }
        other => other.clone(),
    }
}

impl Tables {
    /// The set that answers for `partition`: its own, or its twin by time while its product
    /// has had no votes.
    pub(super) fn held(&self, partition: &Partition) -> Option<&BTreeSet<Position>> {
        let sku = match partition {
            Partition::ProductHelpful(sku) | Partition::ProductRatingHelpful(sku, _) => sku,
            Partition::Product(_)
            | Partition::ProductRating(..)
            | Partition::Queue(_)
            | Partition::Author(_) => {
                return self.partitions.get(partition);
            }
        };
        if self.by_helpful.contains(sku) {
            self.partitions.get(partition)
        } else {
            self.partitions.get(&by_time(partition))
        }
    }

    /// Starts holding `sku`'s partitions by helpful votes: copies of its partitions by time,
    /// every count being 0 so far.
    fn hold_by_helpful(&mut self, sku: &Sku) {
        let partitions = std::iter::once(Partition::ProductHelpful(sku.clone())).chain(
            RatingSet::ALL
                .iter()
                .map(|rating| Partition::ProductRatingHelpful(sku.clone(), rating)),
        );
        for partition in partitions {
            if let Some(set) = self.partitions.get(&by_time(&partition)).cloned() {
                self.partitions.insert(partition, set);
            }
        }
        self.by_helpful.insert(sku.clone());
    }

    /// Whether a verified comment claimed `hash` (see `claims`).
    pub(super) fn is_claimed(&self, hash: &crate::domain::OrderHash) -> bool {
        self.claims.contains(hash)
    }

    pub(super) fn insert(&mut self, comment: Comment) {
        self.reposition(None, Some(&comment));
        self.comments.insert(comment.id, comment);
    }

    /// Puts `comment` in place of the one with its id, if any, moving it only in the
    /// partitions where its position changes: a vote moves it in the lists by helpful votes
    /// and nowhere else, an edit of its body nowhere. Returns the comment it replaced.
    pub(super) fn replace(&mut self, comment: Comment) -> Option<Comment> {
        let old = self.comments.remove(&comment.id);
        self.reposition(old.as_ref(), Some(&comment));
        self.comments.insert(comment.id, comment);
        old
    }

    pub(super) fn remove(&mut self, id: CommentId) -> Option<Comment> {
        let comment = self.comments.remove(&id)?;
        self.reposition(Some(&comment), None);
        Some(comment)
    }

    /// Moves a comment's positions from where `old` sits to where `new` sits, in the partitions
    /// where the two differ only (no `old`: an insertion; no `new`: a removal). A partition
    /// left empty is dropped; one by helpful votes is kept only once its product has had a
    /// vote ([`Tables::held`]).
    fn reposition(&mut self, old: Option<&Comment>, new: Option<&Comment>) {
        // A verified comment's claim, where it comes in (a create, an import, a load), not
        // on every later write of it.
        let old_purchase = old.and_then(|c| c.purchase.as_ref());
        if let Some(hash) = new
            .and_then(|c| c.purchase.as_ref())
            .filter(|hash| old_purchase != Some(*hash))
        {
            self.claims.insert(hash.clone());
        }
        if let Some(new) = new
            && new.helpful_count > 0
            && !self.by_helpful.contains(&new.sku)
        {
            self.hold_by_helpful(&new.sku);
            // Its verified twin's lists by helpful votes start with it, whatever it holds.
            self.hold_by_helpful(&crate::domain::verified_list(&new.sku));
        }
        // A published comment is in the public lists, any other in its queues (sparse GSIs in
        // DynamoDB).
        let placed = |c: Option<&Comment>| -> Vec<(Position, Partition)> {
            c.map_or_else(Vec::new, |c| {
                Partition::all_of(c)
                    .into_iter()
                    .map(|p| (p.position_of(c), p))
                    .collect()
            })
        };
        let (before, after) = (placed(old), placed(new));
        for (position, partition) in before.iter().filter(|place| !after.contains(place)) {
            if let Some(set) = self.partitions.get_mut(partition) {
                set.remove(position);
                if set.is_empty() {
                    self.partitions.remove(partition);
                }
            }
        }
        let held = new.is_some_and(|new| self.by_helpful.contains(&new.sku));
        for (position, partition) in after.into_iter().filter(|place| !before.contains(place)) {
            if partition.by_helpful() && !held {
                continue;
            }
            self.partitions
                .entry(partition)
                .or_default()
                .insert(position);
        }
    }
}

impl Tables {
    pub(super) fn has_vote(&self, id: CommentId, voter: VoterId) -> bool {
        self.votes
            .get(&id)
            .is_some_and(|voters| voters.contains(&voter))
    }

    pub(super) fn set_vote(&mut self, id: CommentId, voter: VoterId, helpful: bool) {
        if helpful {
            self.votes.entry(id).or_default().insert(voter);
            self.by_voter.entry(voter).or_default().insert(id);
            return;
        }
        if let Some(voters) = self.votes.get_mut(&id) {
            voters.remove(&voter);
            if voters.is_empty() {
                self.votes.remove(&id);
            }
        }
        self.forget_voter_of(id, voter);
    }

    /// Drops every vote on comment `id` (its deletion).
    pub(super) fn remove_votes(&mut self, id: CommentId) {
        for voter in self.votes.remove(&id).unwrap_or_default() {
            self.forget_voter_of(id, voter);
        }
    }

    fn forget_voter_of(&mut self, id: CommentId, voter: VoterId) {
        if let Some(ids) = self.by_voter.get_mut(&voter) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_voter.remove(&voter);
            }
        }
    }

    /// Up to `limit` of the comments `voter` voted on, in id order, after `after`.
    pub(super) fn votes_by(
        &self,
        voter: VoterId,
        after: Option<CommentId>,
        limit: usize,
    ) -> Vec<CommentId> {
        let Some(ids) = self.by_voter.get(&voter) else {
            return Vec::new();
        };
        let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        ids.range((from, std::ops::Bound::Unbounded))
            .take(limit)
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Rating, splitmix};
    use crate::generate::CommentGenerator;

    /// What every list of `sku` holds, as the store reads it.
    fn lists(tables: &Tables, sku: &Sku) -> Vec<Vec<Position>> {
        let mut partitions = vec![
            Partition::Product(sku.clone()),
            Partition::ProductHelpful(sku.clone()),
        ];
        for rating in Rating::ALL {
            partitions.push(Partition::ProductRating(sku.clone(), rating));
            partitions.push(Partition::ProductRatingHelpful(sku.clone(), rating));
        }
        partitions
            .iter()
            .map(|p| {
                tables
                    .held(p)
                    .map(|set| set.iter().copied().collect())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Replacing comments (votes given and withdrawn, ratings and bodies changed, new ones)
    /// leaves every list as inserting the final comments into empty tables does.
    #[test]
    fn replace_agrees_with_building_from_scratch() {
        let sku = Sku::parse("T").expect("sku");
        for seed in 0..20 {
            let mut comments: Vec<Comment> =
                CommentGenerator::new(sku.clone(), seed, 1_700_000_000_000)
                    .take(120)
                    .collect();
            let mut tables = Tables::default();
            for comment in &comments[..100] {
                tables.insert(comment.clone());
            }
            let mut present: Vec<bool> = (0..120).map(|i| i < 100).collect();
            let mut state = splitmix(seed);
            for _ in 0..400 {
                state = splitmix(state);
                let i = (state % 120) as usize;
                let mut next = comments[i].clone();
                match (state >> 8) % 5 {
                    4 => {
                        next.moderation.status =
                            crate::domain::CommentStatus::ALL[((state >> 16) % 4) as usize]
                    }
                    0 => next = next.after_vote(true).expect("far from the ceiling"),
                    1 => next = next.after_vote(false).expect("far from the ceiling"),
                    2 => next.rating = Rating::ALL[((state >> 16) % 5) as usize],
                    _ => next.body.push('!'),
                }
                let old = tables.replace(next.clone());
                assert_eq!(old.as_ref(), present[i].then_some(&comments[i]));
                present[i] = true;
                comments[i] = next;
            }
            let mut fresh = Tables::default();
            for (comment, _) in comments.iter().zip(&present).filter(|(_, p)| **p) {
                fresh.insert(comment.clone());
            }
            assert_eq!(lists(&tables, &sku), lists(&fresh, &sku), "seed {seed}");
            assert_eq!(tables.comments, fresh.comments);
        }
    }
}
