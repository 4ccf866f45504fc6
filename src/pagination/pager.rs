//! A numbered pager over a connection (`pageCursors`, `startOffset`): the layout its arguments
//! ask for, and its links. The arithmetic is `domain::page_numbers`; the list's total and the
//! anchor's rank come from one index call
//! ([`PageIndex::positions`](crate::index::PageIndex::positions)), and nothing else does: a
//! link is its page's offset, sealed as a page cursor
//! ([`CursorAt::Offset`](super::CursorAt::Offset)) that is followed like `offset:`. So a pager
//! costs its page no index work beyond the counts, however many pages it links, and the one
//! link a reader follows pays for its own bound.

use super::{PaginationError, PagingSettings};
use crate::domain::{CommentOrder, Numbering, Order, PageLayout, PageLinks};
use crate::index::Positions;

/// The most pages a pager's `around` may ask for.
pub const MAX_AROUND: i32 = 25;
/// A pager's `around` when not given.
pub const DEFAULT_AROUND: i32 = 5;

/// The layout `startOffset` reads when nothing was fetched with the page: only the anchor's rank.
pub const ANCHOR_ONLY: PageLayout = PageLayout {
    size: 1,
    numbering: Numbering::FromNewest,
    links: PageLinks::None,
};

/// What `pageCursors(size:, around:, numbering:)` asks for: its pages' size and numbering, and
/// how many pages to link around the current one. It asks the index for nothing but the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagerLayout {
    /// Comments per page, at least 1.
    pub size: u64,
    /// Which end of the list page 1 starts at.
    pub numbering: Numbering,
    /// How many pages to link in the run around the current one, 0 to [`MAX_AROUND`].
    pub around: u64,
}

/// One page of a numbered pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageLink {
    /// The page number, from 1.
    pub page: u64,
    /// The page's offset: `(page - 1) * size`, counted from the numbering's end.
    pub offset: u64,
    /// Whether this page holds the connection's first edge.
    pub is_current: bool,
}

/// The links of a numbered pager: the first, last, previous and next pages and the run around
/// the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagerLinks {
    /// Which end the pages (and their offsets) count from.
    pub numbering: Numbering,
    /// Page 1.
    pub first: PageLink,
    /// The last page (page 1 of an empty list).
    pub last: PageLink,
    /// The run of up to `around` consecutive pages centred on the current one (from page 1
    /// when none is current), in page order.
    pub around: Vec<PageLink>,
    /// The page before the current one; `None` on page 1 or when no page is current.
    pub previous: Option<PageLink>,
    /// The page after the current one; `None` on the last page or when no page is current.
    pub next: Option<PageLink>,
    /// How many pages the list fills; an empty list has one.
    pub page_count: u64,
}

impl PagerLinks {
    /// The pager of `layout` over the list `positions` counts (its total and the anchor's
    /// rank).
    pub fn new(layout: PagerLayout, positions: &Positions) -> Self {
        let PagerLayout {
            size,
            numbering,
            around,
        } = layout;
        // The page arithmetic; no bound is asked of the index for a pager.
        let layout = PageLayout {
            size,
            numbering,
            links: PageLinks::None,
        };
        let pager = layout.pager(positions.total, positions.anchor, around);
        let link = |page: u64| PageLink {
            page,
            offset: layout.offset(page),
            is_current: pager.current == Some(page),
        };
        Self {
            numbering,
            first: link(1),
            last: link(pager.count),
            around: pager.around.clone().map(link).collect(),
            previous: pager.previous().map(link),
            next: pager.next().map(link),
            page_count: pager.count,
        }
    }
}

/// Zero-based position of the anchor (the first edge) in the whole list, in its `order`.
pub fn start_offset(positions: &Positions, order: CommentOrder) -> Option<u64> {
    positions.anchor.map(|a| match order.forward() {
        Order::NewestFirst => a.newer,
        Order::OldestFirst => a.older,
    })
}

/// The layout `pageCursors(size:, around:, numbering:)` asks for, checked: `size` defaults to
/// the connection's own page size and is limited like `first`.
pub fn pager_layout(
    size: Option<i32>,
    around: i32,
    numbering: Numbering,
    page_size: u64,
    settings: &PagingSettings,
) -> Result<PagerLayout, PaginationError> {
    let size = match size {
        None => page_size.max(1),
        Some(n) if n < 1 => return Err(PaginationError::BelowOne { argument: "size" }),
        Some(n) if n as usize > settings.max_page_size => {
            return Err(PaginationError::PageSizeExceeded {
                argument: "size",
                max: settings.max_page_size,
            });
        }
        Some(n) => n as u64,
    };
    if !(0..=MAX_AROUND).contains(&around) {
        return Err(PaginationError::AroundOutOfRange { max: MAX_AROUND });
    }
    Ok(PagerLayout {
        size,
        numbering,
        around: around as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AnchorRank;

    #[test]
    fn pager_layouts_default_to_the_page_size_and_are_limited_like_first() {
        let settings = PagingSettings::default();
        let layout = pager_layout(None, 5, Numbering::FromOldest, 0, &settings).expect("valid");
        assert_eq!(
            layout,
            PagerLayout {
                size: 1,
                numbering: Numbering::FromOldest,
                around: 5,
            }
        );
        let refused = |size, around| {
            pager_layout(size, around, Numbering::FromNewest, 20, &settings)
                .map_err(|e| e.to_string())
                .err()
        };
        assert_eq!(
            refused(Some(0), 5).as_deref(),
            Some("`size` must be at least 1")
        );
        assert_eq!(
            refused(Some(101), 5).as_deref(),
            Some("`size` may be at most 100")
        );
        assert_eq!(
            refused(None, 26).as_deref(),
            Some("`around` must be between 0 and 25")
        );
        assert_eq!(refused(None, -1), refused(None, 26));
    }

    #[test]
    fn pager_links_name_each_page_s_offset_and_whether_it_is_current() {
        // 95 items in pages of 10 from the newest; the anchor has 37 newer items: page 4.
        let layout = PagerLayout {
            size: 10,
            numbering: Numbering::FromNewest,
            around: 3,
        };
        let anchor = Some(AnchorRank {
            newer: 37,
            older: 57,
        });
        let positions = Positions {
            total: 95,
            anchor,
            page_bound: None,
        };
        let links = PagerLinks::new(layout, &positions);
        assert_eq!(links.page_count, 10);
        assert_eq!(links.numbering, Numbering::FromNewest);
        assert_eq!(
            links.first,
            PageLink {
                page: 1,
                offset: 0,
                is_current: false
            }
        );
        assert_eq!(
            links.around.iter().map(|l| l.page).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        assert!(links.around[1].is_current);
        let previous = links.previous.expect("page 3");
        assert_eq!((previous.page, previous.offset), (3, 20));
        assert_eq!(links.next.map(|l| l.page), Some(5));
        assert_eq!((links.last.page, links.last.offset), (10, 90));
        assert_eq!(start_offset(&positions, CommentOrder::Newest), Some(37));
        assert_eq!(start_offset(&positions, CommentOrder::Oldest), Some(57));

        // An empty page past the end of a list that has items: no page is current.
        let past = PagerLinks::new(
            layout,
            &Positions {
                anchor: None,
                ..positions
            },
        );
        assert_eq!((past.previous, past.next), (None, None));
        assert!(past.around.iter().all(|l| !l.is_current));
    }
}
