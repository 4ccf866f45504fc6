//! Numbered pages of a connection, as the engine serves them: the page that holds a comment
//! (`containing`), a pager's links and the page's start offset (`pageCursors`, `startOffset`),
//! and the one entry that serves a connection with what its client selected from the index
//! ([`Engine::connection`]). The arithmetic is `domain::pages`; ranks and bounds come from
//! [`PageIndex::positions`]. Cursors are not sealed here: the caller seals bounds as it seals
//! edges. This module knows nothing of GraphQL (the selection arrives as [`IndexSelection`]).
//!
//! # Where the single index round trip will go
//!
//! Everything a connection derives from the index (the bound of a deep offset, `totalCount`,
//! `startOffset`, every `pageCursors` link) can come from one script call: the caller says up
//! front what it selected ([`ConnectionRequest::index`]) and the answers travel with the page
//! ([`Connection::prefetched`]). Today [`Engine::connection`] makes the calls it always made: the
//! page's own (`key_at` for a deep offset, `positions` for `containing`), then one `positions`
//! call shared by `startOffset` and the first `pageCursors`; each `totalCount` and every other
//! `pageCursors` layout asks again when it resolves. Merging them is a change of the index's
//! contract, and it goes in [`Engine::connection`], where all of them are known.

use super::engine::{Page, PageStats, Want};
use super::{ConnectionArgs, CursorScope, Engine, PagePlan, PaginationError, PagingSettings};
use crate::domain::{
    AnchorRank, Comment, CommentId, Numbering, Order, PageLayout, PageLinks, SortKey,
};
use crate::index::{IndexError, PageIndex, Positions};
use crate::store::CommentStore;

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

/// Which page a connection serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageTarget {
    /// The window its cursors, sizes and offset describe.
    Window(PagePlan),
    /// The page of `layout` that holds `comment` (`containing`).
    Containing {
        comment: CommentId,
        layout: PageLayout,
    },
}

impl PageTarget {
    /// The page's size: what a pager over it defaults to.
    pub fn page_size(&self) -> u64 {
        match self {
            PageTarget::Window(plan) => plan.page_size(),
            PageTarget::Containing { layout, .. } => layout.size,
        }
    }
}

/// The parts of a connection that come from the index, as its client selected them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexSelection {
    /// `totalCount`. Not fetched with the page yet: each `totalCount` asks when it resolves
    /// ([`Engine::total_count`]), so an aliased second one asks again.
    pub total_count: bool,
    /// `startOffset`, or a `pageCursors` (whatever its arguments).
    pub positions: bool,
    /// The layout of the first `pageCursors` selected, when its arguments are valid.
    pub pager: Option<PageLayout>,
}

/// One connection request: whose comments, which page, and what of it the client selected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionRequest {
    pub scope: CursorScope,
    pub target: PageTarget,
    pub want: Want,
    pub index: IndexSelection,
}

/// Positions fetched with a page, and the layout they were fetched for. Generic over the error
/// so that a caller can keep a failure in the form it reports (the GraphQL layer converts, and
/// logs, it once however many fields read it).
#[derive(Clone, Debug)]
pub struct Prefetched<E> {
    pub layout: PageLayout,
    pub positions: Result<Positions, E>,
}

impl<E> Prefetched<E> {
    pub fn map_err<F>(self, convert: impl FnOnce(E) -> F) -> Prefetched<F> {
        Prefetched {
            layout: self.layout,
            positions: self.positions.map_err(convert),
        }
    }

    /// What a pager with `layout` can use: only positions fetched for the same layout carry its
    /// links.
    pub fn for_pager(&self, layout: PageLayout) -> Option<&Result<Positions, E>> {
        (self.layout == layout).then_some(&self.positions)
    }

    /// What `startOffset` can use: positions under any layout carry the anchor's rank.
    pub fn for_start_offset(&self) -> &Result<Positions, E> {
        &self.positions
    }
}

/// A connection's page and what was fetched with it.
#[derive(Debug)]
pub struct Connection {
    /// The page; its stats include every call made for the connection.
    pub page: Page,
    /// The first edge's sort key, where `pageCursors` and `startOffset` look from.
    pub anchor: Option<SortKey>,
    /// The positions `startOffset` and the first `pageCursors` read, when selected. A failure
    /// here is theirs alone: the page is still served.
    pub prefetched: Option<Prefetched<PaginationError>>,
}

/// One page of a numbered pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageLink {
    /// The page number, from 1.
    pub page: u64,
    /// The exclusive bound the page starts after; `None` for page 1.
    pub bound: Option<SortKey>,
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

/// Zero-based position of the anchor (the first edge) in the whole list, newest first.
pub fn start_offset(positions: &Positions) -> Option<u64> {
    positions.anchor.map(|a| a.newer)
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

/// The layout of `containing:`'s page: the connection's page size (its `first` or `last`, from
/// `plan`), counted under `numbering`. Refused with a cursor or an offset (the comment places
/// the page), with both `first` and `last`, and for an empty page.
pub fn containing_layout(
    args: &ConnectionArgs,
    plan: &PagePlan,
    numbering: Numbering,
) -> Result<PageLayout, PaginationError> {
    if args.after.is_some() || args.before.is_some() || args.offset.is_some() {
        return Err(PaginationError::ContainingWithWindow);
    }
    if args.first.is_some() && args.last.is_some() {
        return Err(PaginationError::ContainingNeedsOneSize);
    }
    let size = plan.page_size();
    if size == 0 {
        return Err(PaginationError::ContainingEmptyPage);
    }
    Ok(PageLayout {
        size,
        numbering,
        links: PageLinks::Current,
    })
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    /// Serves one connection: its page, then what the client selected from the index beside it
    /// (see "Where the single index round trip will go" above).
    pub async fn connection(
        &self,
        request: &ConnectionRequest,
    ) -> Result<Connection, PaginationError> {
        let ConnectionRequest {
            scope,
            target,
            want,
            index,
        } = request;
        let mut page = match target {
            PageTarget::Window(plan) => self.page(&scope.sku, scope.ratings, plan, *want).await?,
            PageTarget::Containing { comment, layout } => {
                self.page_containing(scope, *comment, *layout, *want)
                    .await?
            }
        };
        let anchor = page.items.first().map(Comment::sort_key);
        // `startOffset` and `pageCursors` share one call, made now with the layout of the first
        // `pageCursors` (another `pageCursors`, under an alias with other arguments, makes its
        // own), or, for `startOffset` alone, a layout of the page's size that links nothing.
        let prefetched = if index.positions {
            let layout = index.pager.unwrap_or(PageLayout {
                size: target.page_size().max(1),
                numbering: Numbering::FromNewest,
                links: PageLinks::None,
            });
            page.stats.index_calls += 1;
            let positions = self.positions(scope, anchor, layout).await;
            Some(Prefetched { layout, positions })
        } else {
            None
        };
        Ok(Connection {
            page,
            anchor,
            prefetched,
        })
    }

    /// The list of `scope` seen from `anchor` under `layout`: one index call.
    pub async fn positions(
        &self,
        scope: &CursorScope,
        anchor: Option<SortKey>,
        layout: PageLayout,
    ) -> Result<Positions, PaginationError> {
        Ok(self
            .index()
            .positions(&scope.sku, scope.ratings, anchor, layout)
            .await?)
    }

    /// The page of `layout.size` comments, aligned to the layout's page boundaries, that holds
    /// `comment`: one store read for the comment (its product, rating and sort key), one index
    /// call for its page's bound, then the page, read from the bound like any cursor page.
    async fn page_containing(
        &self,
        scope: &CursorScope,
        comment: CommentId,
        layout: PageLayout,
        want: Want,
    ) -> Result<Page, PaginationError> {
        let found = self
            .store()
            .get_many(&[comment])
            .await?
            .pop()
            .flatten()
            .filter(|c| c.sku == scope.sku && scope.ratings.contains(c.rating))
            .ok_or(PaginationError::NotInConnection(comment))?;
        let key = found.sort_key();
        let positions = self.positions(scope, Some(key), layout).await?;
        let anchor: AnchorRank = positions.anchor.ok_or_else(|| {
            IndexError::Internal("the index answered no rank for the anchor".into())
        })?;
        let current = layout.page_of(positions.total, anchor);
        let plan = PagePlan {
            order: layout.numbering.order(),
            start: positions.bounds.get(&current).copied(),
            stop: None,
            skip: 0,
            take: layout.size as usize,
            keep_last: None,
        };
        let want = Want {
            edges: true,
            ..want
        };
        let mut page = self.page(&scope.sku, scope.ratings, &plan, want).await?;
        page.stats += PageStats {
            store_queries: 1,
            items_read: 1,
            index_calls: 1,
        };
        if !page.items.iter().any(|c| c.id == comment) {
            // Only while the index lags the store around this comment (comments it does not
            // hold yet, or still holds after their deletion, between the bound and the
            // comment): the aligned page missed it, so serve the page that starts at it instead.
            tracing::warn!(
                sku = scope.sku.as_str(),
                page = current,
                "the aligned page missed the comment it should hold; serving the page that starts at it"
            );
            let from_the_comment = PagePlan {
                order: Order::NewestFirst,
                start: key.successor(),
                ..plan
            };
            let stats = page.stats;
            page = self
                .page(&scope.sku, scope.ratings, &from_the_comment, want)
                .await?;
            page.stats += stats;
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{RatingSet, Sku};

    fn key(millis: u64) -> SortKey {
        SortKey::new(millis, CommentId::from_parts(millis, 0)).expect("a valid sort key")
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
    fn containing_takes_one_size_and_no_window() {
        let scope = CursorScope {
            sku: Sku::parse("S").expect("sku"),
            ratings: RatingSet::ALL,
        };
        let layout = |args: ConnectionArgs| {
            let codec = super::super::CursorCodec::development();
            let plan = PagePlan::new(&args, &PagingSettings::default(), &codec, &scope)
                .expect("valid arguments");
            containing_layout(&args, &plan, Numbering::FromNewest).map_err(|e| e.to_string())
        };
        assert_eq!(
            layout(ConnectionArgs::default()).map(|l| (l.size, l.links)),
            Ok((20, PageLinks::Current))
        );
        let last = ConnectionArgs {
            last: Some(7),
            ..Default::default()
        };
        assert_eq!(layout(last).map(|l| l.size), Ok(7));
        for (args, message) in [
            (
                ConnectionArgs {
                    first: Some(5),
                    offset: Some(5),
                    ..Default::default()
                },
                "`containing` cannot be combined with `after`, `before` or `offset`",
            ),
            (
                ConnectionArgs {
                    first: Some(5),
                    last: Some(5),
                    ..Default::default()
                },
                "`containing` takes one of `first` and `last` as the page size",
            ),
            (
                ConnectionArgs {
                    first: Some(0),
                    ..Default::default()
                },
                "`containing` needs a page size of at least 1",
            ),
        ] {
            assert_eq!(layout(args).err().as_deref(), Some(message));
        }
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
        assert_eq!(start_offset(&positions), Some(37));

        let missing = Positions {
            bounds: Default::default(),
            ..positions
        };
        assert!(matches!(
            PagerLinks::new(layout, &missing),
            Err(PaginationError::Index(IndexError::Internal(_)))
        ));
    }

    #[test]
    fn prefetched_positions_serve_a_pager_of_their_own_layout_and_any_start_offset() {
        let prefetched: Prefetched<()> = Prefetched {
            layout: ANCHOR_ONLY,
            positions: Ok(Positions::default()),
        };
        let pager = PageLayout {
            links: PageLinks::Pager { around: 5 },
            ..ANCHOR_ONLY
        };
        assert!(prefetched.for_pager(ANCHOR_ONLY).is_some());
        assert!(prefetched.for_pager(pager).is_none());
        assert!(prefetched.for_start_offset().is_ok());
    }
}
