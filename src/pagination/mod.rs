//! Pagination: argument rules, sealed cursors and the connection algorithm (DESIGN §4, §5).
//!
//! The engine is generic over [`CommentStore`](crate::store::CommentStore) and
//! [`PageIndex`](crate::index::PageIndex) and knows nothing of HTTP, GraphQL or any SDK, so every
//! rule is checked once against the [`oracle`] and again against each real backend.

mod args;
pub mod cursor;
mod engine;
pub mod oracle;

pub use args::{ConnectionArgs, PagePlan, PagingSettings};
pub use cursor::{BadCursor, CursorCodec, CursorScope};
pub use engine::{Engine, Page, PageStats, Want};

use crate::index::IndexError;
use crate::store::StoreError;

/// Why a page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum PaginationError {
    #[error("`{argument}` must not be negative")]
    Negative { argument: &'static str },
    #[error("`{argument}` may be at most {max}")]
    PageSizeExceeded { argument: &'static str, max: usize },
    #[error("`offset` needs exactly one of `first` and `last`")]
    OffsetNeedsOneDirection,
    #[error("`{argument}` is not a valid cursor for this connection")]
    BadCursor { argument: &'static str },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
}
