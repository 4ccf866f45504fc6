//! Numbered pages over a list (the GraphQL `pageCursors` and `containing`): how a list of
//! `total` items splits into pages of one size, which page holds a given position, and which
//! item bounds each page.
//!
//! Pages are counted from one end of the list, its numbering's "start": the newest comment
//! (`FromNewest`) or the oldest (`FromOldest`). Page `p` holds the items at ranks
//! `(p - 1) * size .. p * size` counted from that end, and is bounded by the item just before
//! it, at rank `(p - 1) * size - 1`: the exclusive cursor of `first: size, after:` when counting
//! from the newest, of `last: size, before:` when counting from the oldest. Page 1 has no bound.
//!
//! Counted from the oldest, a full page's items and bound are older than every comment that can
//! still arrive (comments are added at the newest end), so its content and number never change
//! when comments are added; only the newest page fills up, and then page `count + 1` appears.
//! Counted from the newest, every page shifts by one item per new comment.
//!
//! Everything here is arithmetic on ranks. A pager's links need nothing more: they are offsets
//! (sealed as page cursors by `graphql::page_cursors`). Only `containing` needs a page's bound as
//! a sort key, which the index finds (`PageIndex::positions`) in the same round trip as the
//! counts. The Redis script `read.lua` repeats [`PageLayout::page_to_bound`], and the index
//! contract tests hold the two to the same answers.

use super::Order;

/// Which end of the list page 1 sits at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Numbering {
    /// Page 1 holds the newest comments.
    FromNewest,
    /// Page 1 holds the oldest comments.
    FromOldest,
}

impl Numbering {
    /// The order pages are counted in: page 1 starts the list read in this order.
    pub fn order(self) -> Order {
        match self {
            Numbering::FromNewest => Order::NewestFirst,
            Numbering::FromOldest => Order::OldestFirst,
        }
    }
}

/// Which page bound the index answers besides the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageLinks {
    /// None: only the total and the anchor's rank (`startOffset`, and every `pageCursors`,
    /// whose links are offsets).
    None,
    /// The bound of the page holding the anchor (`containing`).
    Current,
}

/// Page size, numbering and the links wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PageLayout {
    /// Items per page; at least 1.
    pub size: u64,
    /// Which end of the list page 1 sits at.
    pub numbering: Numbering,
    /// Which page bound the index answers besides the counts.
    pub links: PageLinks,
}

/// Where an item (the anchor: a page's first edge, or the comment `containing` names) sits in
/// a list: how many of the list's items are strictly newer and strictly older than it. The
/// anchor itself need not be in the list (the index may not have it yet); then the two add up
/// to the list's total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnchorRank {
    /// How many of the list's items are strictly newer than the anchor.
    pub newer: u64,
    /// How many of the list's items are strictly older than the anchor.
    pub older: u64,
}

/// The pages a pager shows: their count, the current one, and the run around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pager {
    /// How many pages the list fills ([`PageLayout::page_count`]): at least 1.
    pub count: u64,
    /// The page holding the anchor; page 1 of an empty list; `None` for an empty page of a
    /// list that has items (an offset or cursor past its end).
    pub current: Option<u64>,
    /// The `around` pages (fewer when the list has fewer) centred on the current page, or
    /// from page 1 when none is current.
    pub around: std::ops::RangeInclusive<u64>,
}

impl Pager {
    /// The page before the current one; `None` on page 1 or when no page is current.
    pub fn previous(&self) -> Option<u64> {
        self.current.filter(|&c| c > 1).map(|c| c - 1)
    }

    /// The page after the current one; `None` on the last page or when no page is current.
    pub fn next(&self) -> Option<u64> {
        self.current.filter(|&c| c < self.count).map(|c| c + 1)
    }
}

impl PageLayout {
    /// How many pages `total` items fill; an empty list has one, empty, page.
    pub fn page_count(&self, total: u64) -> u64 {
        total.div_ceil(self.size).max(1)
    }

    /// Items strictly before `anchor` in the numbering's order.
    pub fn ahead(&self, anchor: AnchorRank) -> u64 {
        match self.numbering {
            Numbering::FromNewest => anchor.newer,
            Numbering::FromOldest => anchor.older,
        }
    }

    /// The page that holds `anchor`.
    pub fn page_of(&self, total: u64, anchor: AnchorRank) -> u64 {
        (self.ahead(anchor) / self.size + 1).min(self.page_count(total))
    }

    /// The pager over `total` items around `anchor` (or around nothing, for an empty page),
    /// with a run of `around` pages centred on the current one.
    pub fn pager(&self, total: u64, anchor: Option<AnchorRank>, around: u64) -> Pager {
        let count = self.page_count(total);
        let current = match anchor {
            Some(anchor) => Some(self.page_of(total, anchor)),
            None if total == 0 => Some(1),
            None => None,
        };
        let around = around.min(count);
        let start = match current {
            Some(c) if around > 0 => c
                .saturating_sub((around - 1) / 2)
                .clamp(1, count - around + 1),
            _ => 1,
        };
        Pager {
            count,
            current,
            // An empty range when `around` is 0.
            around: start..=start + around - 1,
        }
    }

    /// The 0-based rank, in the numbering's order, of the item that bounds `page`; `None` for
    /// page 1.
    pub fn bound_rank(&self, page: u64) -> Option<u64> {
        (page > 1).then(|| (page - 1) * self.size - 1)
    }

    /// The offset of `page` for `first: size, offset:` (from the newest) or `last: size,
    /// offset:` (from the oldest).
    pub fn offset(&self, page: u64) -> u64 {
        (page - 1) * self.size
    }

    /// The page whose bound this layout asks the index for: with `Current`, the anchor's page,
    /// unless it is page 1 (which has no bound).
    pub fn page_to_bound(&self, total: u64, anchor: Option<AnchorRank>) -> Option<u64> {
        match self.links {
            PageLinks::None => None,
            PageLinks::Current => self.pager(total, anchor, 0).current.filter(|&p| p > 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn layout(size: u64, numbering: Numbering) -> PageLayout {
        PageLayout {
            size,
            numbering,
            links: PageLinks::Current,
        }
    }

    fn at(newer: u64, older: u64) -> Option<AnchorRank> {
        Some(AnchorRank { newer, older })
    }

    #[test]
    fn counts_pages_with_one_empty_page_for_an_empty_list() {
        let l = layout(10, Numbering::FromNewest);
        assert_eq!(
            [0, 1, 10, 11, 95].map(|t| l.page_count(t)),
            [1, 1, 1, 2, 10]
        );
        let pager = l.pager(0, None, 5);
        assert_eq!((pager.count, pager.current), (1, Some(1)));
        assert_eq!(pager.around, 1..=1);
        assert_eq!(l.page_to_bound(0, None), None);
    }

    #[test]
    fn the_current_page_holds_the_anchor_counted_from_the_numbering_s_end() {
        // 95 items, the anchor has 37 newer and 57 older items.
        let newest = layout(10, Numbering::FromNewest);
        let oldest = layout(10, Numbering::FromOldest);
        assert_eq!(newest.pager(95, at(37, 57), 5).current, Some(4));
        assert_eq!(oldest.pager(95, at(37, 57), 5).current, Some(6));
        // The newest item is on page 1 counted from the newest, on the last page (10, which
        // holds 5 items) counted from the oldest.
        assert_eq!(newest.pager(95, at(0, 94), 5).current, Some(1));
        assert_eq!(oldest.pager(95, at(0, 94), 5).current, Some(10));
        // An anchor the list does not hold yet, older than all of it, is on the last page.
        assert_eq!(newest.pager(90, at(90, 0), 5).current, Some(9));
    }

    #[test]
    fn around_is_centred_and_kept_inside_the_list() {
        let l = layout(10, Numbering::FromNewest);
        let around = |newer: u64| l.pager(95, at(newer, 94 - newer), 5).around;
        assert_eq!(around(45), 3..=7);
        assert_eq!(around(0), 1..=5);
        assert_eq!(around(94), 6..=10);
        assert_eq!(
            layout(10, Numbering::FromNewest)
                .pager(95, at(45, 49), 4)
                .around,
            4..=7
        );
        assert_eq!(
            layout(10, Numbering::FromNewest)
                .pager(95, at(45, 49), 50)
                .around,
            1..=10
        );
        assert!(
            layout(10, Numbering::FromNewest)
                .pager(95, at(45, 49), 0)
                .around
                .is_empty()
        );
        // No current page: from page 1, and no previous or next.
        let empty = l.pager(95, None, 5);
        assert_eq!(
            (empty.current, empty.previous(), empty.next()),
            (None, None, None)
        );
        assert_eq!(empty.around, 1..=5);
    }

    #[test]
    fn bounds_name_the_item_just_before_each_page() {
        let l = layout(10, Numbering::FromOldest);
        assert_eq!(
            [1, 2, 3].map(|p| l.bound_rank(p)),
            [None, Some(9), Some(19)]
        );
        assert_eq!([1, 2, 3].map(|p| l.offset(p)), [0, 10, 20]);
        // Counted from the oldest, an anchor with 49 older items is on page 5.
        assert_eq!(l.page_to_bound(95, at(45, 49)), Some(5));
        assert_eq!(l.page_to_bound(95, at(94, 0)), None);
        let none = PageLayout {
            links: PageLinks::None,
            ..l
        };
        assert_eq!(none.page_to_bound(95, at(45, 49)), None);
    }

    proptest! {
        /// Against the list cut into pages by brute force: positions `0..total` counted from
        /// the numbering's end, chunked by `size`.
        #[test]
        fn agrees_with_the_list_cut_into_pages(
            total in 0u64..300,
            size in 1u64..40,
            around in 0u64..12,
            oldest in any::<bool>(),
            at in 0u64..300,
            member in any::<bool>(),
        ) {
            let numbering = if oldest { Numbering::FromOldest } else { Numbering::FromNewest };
            let l = layout(size, numbering);
            let chunks: Vec<Vec<u64>> = (0..total)
                .collect::<Vec<_>>()
                .chunks(size as usize)
                .map(<[u64]>::to_vec)
                .collect();
            let count = chunks.len().max(1) as u64;
            prop_assert_eq!(l.page_count(total), count);
            for page in 2..=count {
                // The bound is the position just before the page's first one.
                prop_assert_eq!(l.bound_rank(page), Some(chunks[page as usize - 1][0] - 1));
                prop_assert_eq!(l.offset(page), chunks[page as usize - 1][0]);
            }

            // An anchor with `ahead` items before it in the numbering's order, a member or not.
            let ahead = at.min(total.saturating_sub(u64::from(member)));
            let member = member && total > 0;
            let behind = total - ahead - u64::from(member);
            let anchor = match numbering {
                Numbering::FromNewest => AnchorRank { newer: ahead, older: behind },
                Numbering::FromOldest => AnchorRank { newer: behind, older: ahead },
            };
            let expected = chunks
                .iter()
                .position(|chunk| chunk.contains(&ahead))
                .map_or(count, |i| i as u64 + 1);
            let pager = l.pager(total, Some(anchor), around);
            prop_assert_eq!(pager.current, Some(expected));

            let run: Vec<u64> = pager.around.clone().collect();
            prop_assert_eq!(run.len() as u64, around.min(count));
            if let (Some(&first), Some(&last)) = (run.first(), run.last()) {
                prop_assert!(run.contains(&expected));
                prop_assert!(first >= 1 && last <= count);
                // Centred: as many pages before the current one as fit, up to half the run.
                let before = expected - first;
                let wanted = (run.len() as u64 - 1) / 2;
                prop_assert!(before == wanted.min(expected - 1) || last == count);
            }
            prop_assert_eq!(
                l.page_to_bound(total, Some(anchor)),
                (expected > 1).then_some(expected)
            );
        }
    }
}
