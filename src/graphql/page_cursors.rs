//! The GraphQL types of numbered pages on a connection: `pageCursors`, and the `numbering` of
//! `pageCursors` and `containing:`. Which pages a pager links, and where they start, is the
//! engine's (`pagination::PagerLinks`); this module only names them for clients.
//!
//! A page's `cursor` is sealed like every cursor of the connection, but names the page's start
//! (its offset from the numbering's end), not a comment: a pager costs no index work per link,
//! and following a link reads its page like `offset:` does.

use async_graphql::{Enum, SimpleObject};

use crate::domain::{self, Numbering, Order};
use crate::pagination::{CursorCodec, CursorScope, PageLink, PagerLinks};

/// Which end of the list page 1 is at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Enum)]
#[expect(
    clippy::enum_variant_names,
    reason = "the GraphQL values are FROM_START, FROM_END, ..."
)]
pub enum PageNumbering {
    /// Page 1 holds the list's first comments in its order (`orderBy`): the newest under
    /// NEWEST, the oldest under OLDEST. Read a page with `first: size, after: cursor`.
    #[default]
    FromStart,
    /// Page 1 holds the list's last comments in its order; read a page with `last: size,
    /// before: cursor`. Under NEWEST, a full page never changes when comments are added (the
    /// newest page fills up, then a new page number appears): for page numbers in URLs that
    /// search engines index.
    FromEnd,
    /// Page 1 holds the newest comments (FROM_START under NEWEST, FROM_END under OLDEST; in an
    /// order by rating, FROM_START).
    #[graphql(deprecation = "Use FROM_START (or FROM_END under OLDEST).")]
    FromNewest,
    /// Page 1 holds the oldest comments (FROM_END under NEWEST, FROM_START under OLDEST; in an
    /// order by rating, FROM_END).
    #[graphql(deprecation = "Use FROM_END (or FROM_START under OLDEST).")]
    FromOldest,
}

impl PageNumbering {
    /// Which end of the list, in sort-key terms, page 1 is at in a list of `order`.
    pub fn in_order(self, order: domain::CommentOrder) -> Numbering {
        let end = match self {
            PageNumbering::FromStart => order.forward(),
            PageNumbering::FromEnd => order.forward().reverse(),
            PageNumbering::FromNewest => Order::NewestFirst,
            PageNumbering::FromOldest => Order::OldestFirst,
        };
        match end {
            Order::NewestFirst => Numbering::FromNewest,
            Order::OldestFirst => Numbering::FromOldest,
        }
    }
}

/// One page of a numbered pager.
#[derive(Clone, Debug, PartialEq, Eq, SimpleObject)]
pub(super) struct PageCursor {
    /// The page number, from 1.
    pub page: i32,
    /// Where this page starts, for `first: size, after: cursor` (FROM_START) or `last: size,
    /// before: cursor` (FROM_END); null for page 1, which starts at its end of the list
    /// (`first: size` or `last: size` alone). A cursor of this connection (same product, rating
    /// filter and order) that names the page's offset, not a comment: following it serves the
    /// page at `offset` as the list is then, as `offset:` does (through the page index, so
    /// `INDEX_UNAVAILABLE` while it is down). To continue exactly where a page ended, use its
    /// `pageInfo.endCursor`. It starts a page only: as the other bound, or under the other
    /// numbering, it is refused with `BAD_CURSOR`.
    pub cursor: Option<String>,
    /// The page's offset for `first: size, offset:` (FROM_START) or `last: size, offset:`
    /// (FROM_END): `(page - 1) * size`.
    pub offset: i32,
    /// Whether this is the page that holds the connection's first edge.
    pub is_current: bool,
}

/// Links for a numbered pager over a connection (and its rating filter).
#[derive(Clone, Debug, PartialEq, Eq, SimpleObject)]
pub(super) struct PageCursors {
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

impl PageCursors {
    /// The pager `links` describes, its pages' starts sealed as cursors of `scope`.
    pub(super) fn sealed(links: PagerLinks, codec: &CursorCodec, scope: &CursorScope) -> Self {
        let int = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        let numbering = links.numbering;
        let cursor = |link: PageLink| PageCursor {
            page: int(link.page),
            cursor: (link.offset > 0).then(|| codec.seal_offset(scope, numbering, link.offset)),
            offset: int(link.offset),
            is_current: link.is_current,
        };
        PageCursors {
            first: cursor(links.first),
            last: cursor(links.last),
            around: links.around.into_iter().map(cursor).collect(),
            previous: links.previous.map(cursor),
            next: links.next.map(cursor),
            page_count: int(links.page_count),
        }
    }
}
