//! Pagination: argument rules, sealed cursors, the connection algorithm and numbered pages
//! (`docs/api/connections.md`, `docs/api/errors.md`). Every paging decision is made here; a
//! resolver turns arguments into one engine call and its answer into types.
//!
//! The engine is generic over [`CommentStore`](crate::store::CommentStore) and
//! [`PageIndex`](crate::index::PageIndex) and knows nothing of HTTP, GraphQL or any SDK, so every
//! rule is checked once against the [`oracle`] and again against each real backend.

mod args;
pub mod cursor;
mod engine;
pub mod oracle;
mod pager;

pub use args::{ConnectionArgs, PagePlan, PagingSettings};
pub use cursor::{BadCursor, CursorAt, CursorCodec, CursorScope};
pub use engine::{
    Connection, ConnectionRequest, Engine, IndexSelection, Page, PageStats, PageTarget, Prefetched,
    Want, containing_layout,
};
pub use pager::{
    ANCHOR_ONLY, DEFAULT_AROUND, MAX_AROUND, PageLink, PagerLayout, PagerLinks, pager_layout,
    start_offset,
};

use crate::domain::CommentId;
use crate::index::IndexError;
use crate::store::StoreError;

/// Why a page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum PaginationError {
    /// `first`, `last` or `offset` is below zero.
    #[error("`{argument}` must not be negative")]
    Negative {
        /// The argument's GraphQL name.
        argument: &'static str,
    },
    /// `first`, `last` or a pager's `size` is larger than the largest page size.
    #[error("`{argument}` may be at most {max}")]
    PageSizeExceeded {
        /// The argument's GraphQL name.
        argument: &'static str,
        /// The largest page size accepted ([`PagingSettings::max_page_size`]).
        max: usize,
    },
    /// `offset` is given with both or neither of `first` and `last`.
    #[error("`offset` needs exactly one of `first` and `last`")]
    OffsetNeedsOneDirection,
    /// `after` or `before` does not open as a cursor of this connection (malformed, forged,
    /// or sealed for another product, filter or order).
    #[error("`{argument}` is not a valid cursor for this connection")]
    BadCursor {
        /// The argument's GraphQL name.
        argument: &'static str,
    },
    /// A numbered page's cursor names where a page starts, counted from one end: it starts a
    /// page read from that end and bounds nothing else.
    #[error(
        "`{argument}` holds a page cursor (`pageCursors`), which starts a page: pass it as \
         `after` with `first` when its pager numbers FROM_START, as `before` with `last` when \
         FROM_END"
    )]
    PageCursorMisplaced {
        /// The argument's GraphQL name.
        argument: &'static str,
    },
    /// A pager's `size` is zero or negative.
    #[error("`{argument}` must be at least 1")]
    BelowOne {
        /// The argument's GraphQL name.
        argument: &'static str,
    },
    /// A pager's `around` is negative or above [`MAX_AROUND`].
    #[error("`around` must be between 0 and {max}")]
    AroundOutOfRange {
        /// The largest `around` accepted ([`MAX_AROUND`]).
        max: i32,
    },
    /// `containing` is given with `after`, `before` or `offset`.
    #[error("`containing` cannot be combined with `after`, `before` or `offset`")]
    ContainingWithWindow,
    /// `containing` is given with both `first` and `last`.
    #[error("`containing` takes one of `first` and `last` as the page size")]
    ContainingNeedsOneSize,
    /// `containing` is given with a page size of 0.
    #[error("`containing` needs a page size of at least 1")]
    ContainingEmptyPage,
    /// The comment `containing` names is not in the connection: another product's, filtered
    /// out by the rating filter, or deleted.
    #[error("comment {0} is not in this connection")]
    NotInConnection(CommentId),
    /// Reading the comment store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading the page index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
}
