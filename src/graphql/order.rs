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
}

impl From<CommentOrder> for domain::CommentOrder {
    fn from(order: CommentOrder) -> Self {
        match order {
            CommentOrder::Newest => domain::CommentOrder::Newest,
            CommentOrder::Oldest => domain::CommentOrder::Oldest,
            CommentOrder::HighestRated => domain::CommentOrder::HighestRated,
            CommentOrder::LowestRated => domain::CommentOrder::LowestRated,
        }
    }
}
