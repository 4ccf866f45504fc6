//! A [`Listing`] over one product's [`Treap`]s: the embedded index's ranks of a list by time (the
//! treap's own, over its ratings), by rating (its groups one after another, each group one
//! rating's members by time) or by helpful votes (the treap of positions by helpful votes, or
//! the list by time while the product has no votes).

use super::treap::Treap;
use crate::domain::{Grouping, Listing, Order, Position, RatingSet};

/// One product's list as `listing` makes it of `treap` (or of `helpful`, by helpful votes).
pub(super) struct Listed<'a> {
    pub(super) treap: &'a Treap,
    /// The product's comments by helpful votes; `None` while none has votes, when the list by
    /// helpful votes is the list by time (one group, 0) and is read from `treap`.
    pub(super) helpful: Option<&'a Treap<Position>>,
    pub(super) listing: Listing,
}

impl Listed<'_> {
    /// The list's groups with their ratings, in `order`.
    fn groups(&self, order: Order) -> Vec<(u32, RatingSet)> {
        let mut groups = self.listing.groups();
        if order == Order::OldestFirst {
            groups.reverse();
        }
        groups
    }

    /// How many members the list has.
    pub(super) fn count(&self) -> u64 {
        self.treap.count(self.listing.ratings)
    }

    /// The treap of positions by helpful votes, when the list is by helpful votes and the
    /// product has comments with votes.
    fn by_helpful(&self) -> Option<&Treap<Position>> {
        self.helpful
            .filter(|_| self.listing.grouping == Grouping::MostHelpful)
    }

    /// Whether `position` is a member of the list.
    pub(super) fn holds(&self, position: &Position) -> bool {
        if let Some(helpful) = self.by_helpful() {
            return helpful
                .rating_of(position)
                .is_some_and(|rating| self.listing.ratings.contains(rating));
        }
        self.treap.rating_of(&position.key).is_some_and(|rating| {
            self.listing.ratings.contains(rating)
                && self.listing.grouping.group_of(rating, 0) == position.group
        })
    }

    /// How many members come at or before `position` when reading in `order` (`position`
    /// itself counted if it is a member).
    pub(super) fn count_through(&self, position: &Position, order: Order) -> u64 {
        if let Some(helpful) = self.by_helpful() {
            return helpful.count_through(position, order, self.listing.ratings);
        }
        self.groups(order)
            .into_iter()
            .map(|(group, ratings)| {
                if order.precedes(&group, &position.group) {
                    self.treap.count(ratings)
                } else if group == position.group {
                    self.treap.count_through(&position.key, order, ratings)
                } else {
                    0
                }
            })
            .sum()
    }

    /// The member at 0-based `rank`, read in `order`.
    pub(super) fn select(&self, mut rank: u64, order: Order) -> Option<Position> {
        if let Some(helpful) = self.by_helpful() {
            return helpful.select(rank, order, self.listing.ratings);
        }
        for (group, ratings) in self.groups(order) {
            let count = self.treap.count(ratings);
            if rank < count {
                let key = self.treap.select(rank, order, ratings)?;
                return Some(Position { group, key });
            }
            rank -= count;
        }
        None
    }

    /// The member `rank` places beyond `after` (or from the list's start), read in `order`.
    pub(super) fn select_after(
        &self,
        after: Option<Position>,
        rank: u64,
        order: Order,
    ) -> Option<Position> {
        let skipped = after.map_or(0, |p| self.count_through(&p, order));
        self.select(skipped.checked_add(rank)?, order)
    }
}
