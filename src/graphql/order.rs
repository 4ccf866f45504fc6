//! `CommentOrder`, the `orderBy:` argument of the comments connections.

use async_graphql::Enum;

use crate::domain;

/// The order a connection lists comments in. Every order pages alike: `first`/`after`,
/// `last`/`before`, `offset`, `totalCount`, `ratings`, `pageCursors`, `startOffset` and
/// `containing`. A cursor belongs to its order: used with another, it is `BAD_CURSOR`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Enum)]
#[graphql(name = "CommentOrder")]
pub enum CommentOrder {
    /// Newest first (the default).
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// Highest rating first; newest first within a rating.
    HighestRated,
    /// Lowest rating first; newest first within a rating.
    LowestRated,
    /// Most helpful votes first; newest first among equal counts. Counts move while a client
    /// pages: a cursor continues from the place it names (a count and a time) in the order as
    /// it is now, so every comment whose count does not change during the walk is seen exactly
    /// once, in order; one that gains or loses votes meanwhile may be seen twice or not at all.
    MostHelpful,
}

impl From<CommentOrder> for domain::CommentOrder {
    fn from(order: CommentOrder) -> Self {
        match order {
            CommentOrder::Newest => domain::CommentOrder::Newest,
            CommentOrder::Oldest => domain::CommentOrder::Oldest,
            CommentOrder::HighestRated => domain::CommentOrder::HighestRated,
            CommentOrder::LowestRated => domain::CommentOrder::LowestRated,
            CommentOrder::MostHelpful => domain::CommentOrder::MostHelpful,
        }
    }
}
