//! A numbered pager over a connection (`pageCursors`, `startOffset`): the layout its arguments
//! ask for, and the links the index's positions give. The arithmetic is `domain::pages`; the
//! positions come from one index call
//! ([`PageIndex::positions`](crate::index::PageIndex::positions)).

use super::{PaginationError, PagingSettings};
use crate::domain::{CommentOrder, Numbering, Order, PageLayout, PageLinks, Position};
use crate::index::{IndexError, Positions};

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

/// One page of a numbered pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageLink {
    /// The page number, from 1.
    pub page: u64,
    /// The exclusive bound the page starts after; `None` for page 1.
    pub bound: Option<Position>,
    /// The page's offset: `(page - 1) * size`.
    pub offset: u64,
    /// Whether this page holds the connection's first edge.
    pub is_current: bool,
}

/// The links of a numbered pager: the first, last, previous and next pages and the run around
/// the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagerLinks {
    pub first: PageLink,
    pub last: PageLink,
    pub around: Vec<PageLink>,
    pub previous: Option<PageLink>,
    pub next: Option<PageLink>,
    pub page_count: u64,
}

impl PagerLinks {
    /// The pager `positions` (fetched for `layout`) describes.
    pub fn new(layout: PageLayout, positions: &Positions) -> Result<Self, PaginationError> {
        let pager = layout.pager(positions.total, positions.anchor);
        let link = |page: u64| -> Result<PageLink, PaginationError> {
            let bound = match layout.bound_rank(page) {
                None => None,
                Some(_) => Some(*positions.bounds.get(&page).ok_or_else(|| {
                    IndexError::Internal(
                        format!("the index answered no bound for page {page}").into(),
                    )
                })?),
            };
            Ok(PageLink {
                page,
                bound,
                offset: layout.offset(page),
                is_current: pager.current == Some(page),
            })
        };
        Ok(Self {
            first: link(1)?,
            last: link(pager.count)?,
            around: pager.around.clone().map(link).collect::<Result<_, _>>()?,
            previous: pager.previous().map(link).transpose()?,
            next: pager.next().map(link).transpose()?,
            page_count: pager.count,
        })
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
) -> Result<PageLayout, PaginationError> {
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
    Ok(PageLayout {
        size,
        numbering,
        links: PageLinks::Pager {
            around: around as u64,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AnchorRank, CommentId, SortKey};

    fn key(millis: u64) -> Position {
        Position::flat(
            SortKey::new(millis, CommentId::from_parts(millis, 0)).expect("a valid sort key"),
        )
    }

    #[test]
    fn pager_layouts_default_to_the_page_size_and_are_limited_like_first() {
        let settings = PagingSettings::default();
        let layout = pager_layout(None, 5, Numbering::FromOldest, 0, &settings).expect("valid");
        assert_eq!(
            layout,
            PageLayout {
                size: 1,
                numbering: Numbering::FromOldest,
                links: PageLinks::Pager { around: 5 },
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
    fn pager_links_name_each_page_s_bound_offset_and_whether_it_is_current() {
        // 95 items in pages of 10 from the newest; the anchor has 37 newer items: page 4.
        let layout = PageLayout {
            size: 10,
            numbering: Numbering::FromNewest,
            links: PageLinks::Pager { around: 3 },
        };
        let anchor = Some(AnchorRank {
            newer: 37,
            older: 57,
        });
        let bounds = layout
            .pages_to_bound(95, anchor)
            .into_iter()
            .map(|page| (page, key(page)))
            .collect();
        let positions = Positions {
            total: 95,
            anchor,
            bounds,
        };
        let links = PagerLinks::new(layout, &positions).expect("every bound answered");
        assert_eq!(links.page_count, 10);
        assert_eq!(
            links.first,
            PageLink {
                page: 1,
                bound: None,
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
        assert_eq!(
            (previous.page, previous.bound, previous.offset),
            (3, Some(key(3)), 20)
        );
        assert_eq!(links.next.map(|l| l.page), Some(5));
        assert_eq!(links.last.bound, Some(key(10)));
        assert_eq!(start_offset(&positions, CommentOrder::Newest), Some(37));
        let anchor = positions.anchor.expect("an anchor");
        assert_eq!(
            start_offset(&positions, CommentOrder::Oldest),
            Some(anchor.older)
        );

        let missing = Positions {
            bounds: Default::default(),
            ..positions
        };
        assert!(matches!(
            PagerLinks::new(layout, &missing),
            Err(PaginationError::Index(IndexError::Internal(_)))
        ));
    }
}
