//! Numbered pages on a connection: `pageCursors`, `startOffset` and the `containing:` argument
//! (the arithmetic is `domain::pages`; the ranks and bounds come from one index call,
//! `PageIndex::positions`).
//!
//! A page's `cursor` is sealed like every edge cursor of the connection, so a client that
//! follows it gets the same cursors, and the same cache entries, as one that walks there.

use async_graphql::{Enum, SimpleObject};

use super::error::ApiError;
use crate::domain::{Numbering, PageLayout, PageLinks};
use crate::index::Positions;
use crate::pagination::{CursorCodec, CursorScope, PagingSettings};

/// The most pages `around` may ask for.
pub const MAX_AROUND: i32 = 25;
/// `around` when not given.
pub const DEFAULT_AROUND: i32 = 5;

/// Which end of the list page 1 is at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Enum)]
pub enum PageNumbering {
    /// Page 1 holds the newest comments. Every page shifts by one comment per new comment, so a
    /// page's content changes while its number stays.
    #[default]
    FromNewest,
    /// Page 1 holds the oldest comments; a full page never changes when comments are added (the
    /// newest page fills up, then a new page number appears). For page numbers in URLs that
    /// search engines index.
    FromOldest,
}

impl From<PageNumbering> for Numbering {
    fn from(numbering: PageNumbering) -> Self {
        match numbering {
            PageNumbering::FromNewest => Numbering::FromNewest,
            PageNumbering::FromOldest => Numbering::FromOldest,
        }
    }
}

/// One page of a numbered pager.
#[derive(Clone, Debug, PartialEq, Eq, SimpleObject)]
pub struct PageCursor {
    /// The page number, from 1.
    pub page: i32,
    /// Where this page starts: the exclusive bound for `first: size, after: cursor`
    /// (FROM_NEWEST) or `last: size, before: cursor` (FROM_OLDEST); null for page 1, which
    /// starts at its end of the list (`first: size` or `last: size` alone). A cursor of this
    /// connection, valid for the same product and rating filter.
    pub cursor: Option<String>,
    /// The page's offset for `first: size, offset:` (FROM_NEWEST) or `last: size, offset:`
    /// (FROM_OLDEST): `(page - 1) * size`.
    pub offset: i32,
    /// Whether this is the page that holds the connection's first edge.
    pub is_current: bool,
}

/// Links for a numbered pager over a connection (and its rating filter).
#[derive(Clone, Debug, PartialEq, Eq, SimpleObject)]
pub struct PageCursors {
    /// Page 1.
    pub first: PageCursor,
    /// The last page (page 1 when the list is empty).
    pub last: PageCursor,
    /// Up to `around` pages centred on the current one, in page order (fewer when the list has
    /// fewer pages; from page 1 when no page is current).
    pub around: Vec<PageCursor>,
    /// The page before the current one; null on page 1 or when no page is current.
    pub previous: Option<PageCursor>,
    /// The page after the current one; null on the last page or when no page is current.
    pub next: Option<PageCursor>,
    /// How many pages the list fills (1 for an empty list).
    pub page_count: i32,
}

/// The layout `pageCursors(size:, around:, numbering:)` asks for, checked: `size` defaults to
/// the connection's own page size and is limited like `first`.
pub fn pager_layout(
    size: Option<i32>,
    around: i32,
    numbering: PageNumbering,
    page_size: u64,
    settings: &PagingSettings,
) -> Result<PageLayout, ApiError> {
    let size = match size {
        None => page_size.max(1),
        Some(n) if n < 1 => return Err(ApiError::Refused("`size` must be at least 1".into())),
        Some(n) if n as usize > settings.max_page_size => {
            return Err(crate::pagination::PaginationError::PageSizeExceeded {
                argument: "size",
                max: settings.max_page_size,
            }
            .into());
        }
        Some(n) => n as u64,
    };
    if !(0..=MAX_AROUND).contains(&around) {
        return Err(ApiError::Refused(format!(
            "`around` must be between 0 and {MAX_AROUND}"
        )));
    }
    Ok(PageLayout {
        size,
        numbering: numbering.into(),
        links: PageLinks::Pager {
            around: around as u64,
        },
    })
}

/// The pager `positions` describes, its bounds sealed as cursors of `scope`.
pub fn page_cursors(
    layout: PageLayout,
    positions: &Positions,
    codec: &CursorCodec,
    scope: &CursorScope,
) -> Result<PageCursors, ApiError> {
    let pager = layout.pager(positions.total, positions.anchor);
    let int = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
    let cursor = |page: u64| -> Result<PageCursor, ApiError> {
        let cursor = match layout.bound_rank(page) {
            None => None,
            Some(_) => {
                let bound = positions.bounds.get(&page).ok_or_else(|| {
                    ApiError::Index(crate::index::IndexError::Internal(
                        format!("the index answered no bound for page {page}").into(),
                    ))
                })?;
                Some(codec.seal(scope, bound))
            }
        };
        Ok(PageCursor {
            page: int(page),
            cursor,
            offset: int(layout.offset(page)),
            is_current: pager.current == Some(page),
        })
    };
    Ok(PageCursors {
        first: cursor(1)?,
        last: cursor(pager.count)?,
        around: pager.around.clone().map(cursor).collect::<Result<_, _>>()?,
        previous: pager.previous().map(cursor).transpose()?,
        next: pager.next().map(cursor).transpose()?,
        page_count: int(pager.count),
    })
}
