//! The orders a connection can list a product's comments in (GraphQL `CommentOrder`), and the
//! positions comments take in them.
//!
//! Every list is descending [`Position`] in its [`Order::NewestFirst`] direction: a position is
//! a group, then a sort key. Lists by time have one group (0), so a position is its sort key;
//! lists by rating put each rating in a group of its own (`HighestFirst`: group = rating, so
//! five stars come first; `LowestFirst`: group = 6 - rating), newest first within a group; the
//! list by helpful votes groups by count (`MostHelpful`: group = `helpfulCount`), so the most
//! voted come first. So one engine, one cursor format and one index contract serve every
//! order: "strictly beyond a position" is the same question whether the list is grouped or not.

use super::{Comment, Order, Rating, RatingSet, SortKey};

/// The order of a connection's list: what its first edge is and what `first` reads towards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommentOrder {
    /// Newest first: descending sort key (the default, and the order of every cursor sealed
    /// before orders existed).
    #[default]
    Newest,
    /// Oldest first: the same list read from its other end.
    Oldest,
    /// Highest rating first; newest first within a rating.
    HighestRated,
    /// Lowest rating first; newest first within a rating.
    LowestRated,
    /// Most helpful votes first; newest first among equal counts.
    MostHelpful,
}

impl CommentOrder {
    /// The direction the list is read in by `first`: its own order, in position terms.
    pub fn forward(self) -> Order {
        match self {
            CommentOrder::Oldest => Order::OldestFirst,
            CommentOrder::Newest
            | CommentOrder::HighestRated
            | CommentOrder::LowestRated
            | CommentOrder::MostHelpful => Order::NewestFirst,
        }
    }

    /// How the list groups its comments.
    pub fn grouping(self) -> Grouping {
        match self {
            CommentOrder::Newest | CommentOrder::Oldest => Grouping::Flat,
            CommentOrder::HighestRated => Grouping::HighestFirst,
            CommentOrder::LowestRated => Grouping::LowestFirst,
            CommentOrder::MostHelpful => Grouping::MostHelpful,
        }
    }

    /// The byte a cursor's sealing binds it to its order with; `None` for newest first, so
    /// that every cursor sealed before orders existed stays valid. Not ASCII, so it can never
    /// be read as a SKU's character.
    pub fn cursor_tag(self) -> Option<u8> {
        match self {
            CommentOrder::Newest => None,
            CommentOrder::Oldest => Some(0x81),
            CommentOrder::HighestRated => Some(0x82),
            CommentOrder::LowestRated => Some(0x83),
            CommentOrder::MostHelpful => Some(0x84),
        }
    }
}

/// How a list groups its comments ahead of their sort keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Grouping {
    /// One group: the list is by sort key alone.
    #[default]
    Flat,
    /// By rating, five stars first.
    HighestFirst,
    /// By rating, one star first.
    LowestFirst,
    /// By helpful votes, the most first: one group per count, the count itself.
    MostHelpful,
}

impl Grouping {
    /// The group of a comment of `rating` that `helpful` people marked helpful.
    pub fn group_of(self, rating: Rating, helpful: u64) -> u32 {
        match self {
            Grouping::Flat => 0,
            Grouping::HighestFirst => u32::from(rating.get()),
            Grouping::LowestFirst => 6 - u32::from(rating.get()),
            Grouping::MostHelpful => helpful_group(helpful),
        }
    }

    /// Whether the list groups by rating (one group per rating, read partition by partition).
    pub fn by_rating(self) -> bool {
        matches!(self, Grouping::HighestFirst | Grouping::LowestFirst)
    }

    /// Whether `group` is one this grouping can give: a rating's, 0 in a flat list, any
    /// count in a list by helpful votes.
    pub fn admits(self, group: u32) -> bool {
        match self {
            Grouping::Flat => group == 0,
            Grouping::HighestFirst | Grouping::LowestFirst => self.rating_of(group).is_some(),
            Grouping::MostHelpful => true,
        }
    }

    /// The rating whose comments make up `group`, in a list by rating.
    pub fn rating_of(self, group: u32) -> Option<Rating> {
        let rating = match self {
            Grouping::Flat | Grouping::MostHelpful => return None,
            Grouping::HighestFirst => i64::from(group),
            Grouping::LowestFirst => 6 - i64::from(group),
        };
        Rating::new(rating).ok()
    }
}

/// The group of a comment with `helpful` votes in a list by helpful votes: the count, held
/// to `u32` (four billion votes on one comment are not met; beyond, comments tie on the cap
/// and stay newest first among themselves).
pub fn helpful_group(helpful: u64) -> u32 {
    u32::try_from(helpful).unwrap_or(u32::MAX)
}

/// A comment's place in a list: its group (0 in a list by time), then its sort key. Lists are
/// descending positions in their newest-first direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// The comment's group in the list ([`Grouping::group_of`]); 0 in a list by time.
    pub group: u32,
    /// The comment's sort key, which orders it within its group.
    pub key: SortKey,
}

impl Position {
    /// The position of `key` in a list by time.
    pub fn flat(key: SortKey) -> Self {
        Self { group: 0, key }
    }
}

/// A list of one product's comments: the ratings it holds and how it groups them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Listing {
    /// The ratings whose comments the list holds.
    pub ratings: RatingSet,
    /// How the list groups its comments ahead of their sort keys.
    pub grouping: Grouping,
}

impl Listing {
    /// The list by time of the comments with a rating in `ratings`.
    pub fn flat(ratings: RatingSet) -> Self {
        Self {
            ratings,
            grouping: Grouping::Flat,
        }
    }

    /// Where a comment of `rating` with `helpful` votes at `key` sits in this list (in it or
    /// not).
    pub fn position(&self, rating: Rating, helpful: u64, key: SortKey) -> Position {
        Position {
            group: self.grouping.group_of(rating, helpful),
            key,
        }
    }

    /// Where `comment` sits in this list.
    pub fn position_of(&self, comment: &Comment) -> Position {
        self.position(comment.rating, comment.helpful_count, comment.sort_key())
    }

    /// Each of the list's ratings with its group, in ascending group order (a list by rating).
    pub fn ratings_by_group(&self) -> Vec<(u32, Rating)> {
        let mut ratings: Vec<(u32, Rating)> = self
            .ratings
            .iter()
            .map(|r| (self.grouping.group_of(r, 0), r))
            .collect();
        ratings.sort_unstable_by_key(|(group, rating)| (*group, rating.get()));
        ratings
    }

    /// The list's groups, each with the ratings it holds, in descending group order (one
    /// group, all the list's ratings, when it is flat). A list by helpful votes has a group
    /// per count its comments have, which only the index knows: it is given as one group, 0.
    pub fn groups(&self) -> Vec<(u32, RatingSet)> {
        match self.grouping {
            Grouping::Flat | Grouping::MostHelpful => vec![(0, self.ratings)],
            Grouping::HighestFirst | Grouping::LowestFirst => self
                .ratings_by_group()
                .into_iter()
                .rev()
                .map(|(group, rating)| (group, RatingSet::from_ratings([rating])))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_put_the_first_rating_of_the_order_at_the_top_of_the_list() {
        let all = Listing {
            ratings: RatingSet::ALL,
            grouping: Grouping::HighestFirst,
        };
        let ratings = |listing: Listing| -> Vec<u8> {
            listing
                .groups()
                .iter()
                .map(|(g, _)| listing.grouping.rating_of(*g).expect("a rating").get())
                .collect()
        };
        assert_eq!(ratings(all), [5, 4, 3, 2, 1]);
        let lowest = Listing {
            grouping: Grouping::LowestFirst,
            ratings: RatingSet::parse(&[4, 1, 2]).expect("ratings"),
        };
        assert_eq!(ratings(lowest), [1, 2, 4]);
        assert_eq!(
            Listing::flat(RatingSet::ALL).groups(),
            [(0, RatingSet::ALL)]
        );
        for grouping in [Grouping::HighestFirst, Grouping::LowestFirst] {
            for rating in RatingSet::ALL.iter() {
                assert_eq!(
                    grouping.rating_of(grouping.group_of(rating, 7)),
                    Some(rating)
                );
            }
            assert_eq!(grouping.rating_of(0), None);
        }
    }
}
