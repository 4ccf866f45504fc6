//! The orders a connection can list a product's comments in (GraphQL `CommentOrder`).

use super::Order;

/// The order of a connection's list: what its first edge is and what `first` reads towards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommentOrder {
    /// Newest first: descending sort key (the default, and the order of every cursor sealed
    /// before orders existed).
    #[default]
    Newest,
    /// Oldest first: the same list read from its other end.
    Oldest,
}

impl CommentOrder {
    /// The direction the list is read in by `first`: its own order, in sort-key terms.
    pub fn forward(self) -> Order {
        match self {
            CommentOrder::Newest => Order::NewestFirst,
            CommentOrder::Oldest => Order::OldestFirst,
        }
    }

    /// The byte a cursor's sealing binds it to its order with; `None` for newest first, so
    /// that every cursor sealed before orders existed stays valid. Not ASCII, so it can never
    /// be read as a SKU's character.
    pub fn cursor_tag(self) -> Option<u8> {
        match self {
            CommentOrder::Newest => None,
            CommentOrder::Oldest => Some(0x81),
        }
    }
}
