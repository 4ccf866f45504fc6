//! A connection as the engine serves it: the one entry ([`Engine::connection`]) that serves a
//! page (a window, or the numbered page that holds a comment: `containing`) together with what
//! its client selected from the index (the pager's rules and links are `pagination::pager`).
//! Ranks and bounds come from [`PageIndex::positions`]. Cursors are not sealed here: the caller
//! seals bounds as it seals edges. This module knows nothing of GraphQL (the selection arrives
//! as [`IndexSelection`]).
//!
//! # One index call per connection
//!
//! Everything a connection derives from the index (the bound of a deep offset, `totalCount`,
//! `startOffset`, every `pageCursors` link) comes from one [`PageIndex::view`] call: the caller
//! says up front what it selected ([`ConnectionRequest::index`]) and the answers travel with the
//! page ([`Connection::prefetched`], `super::view`). Only a second `pageCursors` under an alias
//! with other arguments asks again, and a `containing` page, which needs its own bound before its
//! anchor is known, makes two calls.

use super::{Engine, Page, PageStats, Want};
use crate::domain::{AnchorRank, CommentId, Numbering, PageLayout, PageLinks, Position};
use crate::index::{IndexError, PageIndex, Positions};
use crate::pagination::{ConnectionArgs, CursorScope, PagePlan, PaginationError};
use crate::store::CommentStore;

/// Which page a connection serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageTarget {
    /// The window its cursors, sizes and offset describe.
    Window(PagePlan),
    /// The page of `layout` that holds `comment` (`containing`).
    Containing {
        /// The comment the page must hold.
        comment: CommentId,
        /// The page size and numbering that decide where pages start.
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
    /// `totalCount` (answered by the view made for the page, however many are selected).
    pub total_count: bool,
    /// `startOffset`, or a `pageCursors` (whatever its arguments: a pager needs the anchor's
    /// rank and the total, nothing more).
    pub positions: bool,
}

/// One connection request: whose comments, which page, and what of it the client selected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionRequest {
    /// The product, rating filter and order of the list, which cursors are bound to.
    pub scope: CursorScope,
    /// The page to serve.
    pub target: PageTarget,
    /// The parts of the page the client selected.
    pub want: Want,
    /// The parts that come from the index the client selected.
    pub index: IndexSelection,
}

impl ConnectionRequest {
    /// Whether the client selected nothing of the connection but its `totalCount`: no edge, no
    /// flag, no position, no `containing` page. Its answer is then the count of the scope alone
    /// (cursors and an offset do not change a total), which a caller may read with other
    /// products' counts ([`PageIndex::rating_counts_many`], one round trip for all) instead of
    /// through [`Engine::connection`]'s view (one each).
    pub fn total_only(&self) -> bool {
        let Want {
            edges,
            has_next_page,
            has_previous_page,
        } = self.want;
        matches!(self.target, PageTarget::Window(_))
            && !(edges || has_next_page || has_previous_page)
            && self.index.total_count
            && !self.index.positions
    }
}

/// A connection's page and what was fetched with it.
#[derive(Debug)]
pub struct Connection {
    /// The page; its stats include every call made for the connection.
    pub page: Page,
    /// The first edge's position, where `pageCursors` and `startOffset` look from.
    pub anchor: Option<Position>,
    /// The view `totalCount`, `startOffset` and the first `pageCursors` read, when selected. A
    /// failure here is theirs alone: the page is still served.
    pub prefetched: Option<Prefetched<PaginationError>>,
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
    /// Serves one connection: its page, and what the client selected from the index beside it
    /// (see "One index call per connection" above).
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
        let wants_view = index.total_count || index.positions;
        match target {
            PageTarget::Window(plan) if wants_view => {
                self.window_with_view(scope, plan, *want, index).await
            }
            PageTarget::Window(plan) => {
                let page = self.page(&scope.sku, scope.listing(), plan, *want).await?;
                let anchor = page.items.first().map(|c| scope.listing().position_of(c));
                Ok(Connection {
                    page,
                    anchor,
                    prefetched: None,
                })
            }
            PageTarget::Containing { comment, layout } => {
                let mut page = self
                    .page_containing(scope, *comment, *layout, *want)
                    .await?;
                let anchor = page.items.first().map(|c| scope.listing().position_of(c));
                let prefetched = if wants_view {
                    page.stats.index_calls += 1;
                    Some(self.view_from(scope, anchor, index).await)
                } else {
                    None
                };
                Ok(Connection {
                    page,
                    anchor,
                    prefetched,
                })
            }
        }
    }

    /// The list of `scope` seen from `anchor` under `layout`: one index call.
    pub async fn positions(
        &self,
        scope: &CursorScope,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> Result<Positions, PaginationError> {
        Ok(self
            .index()
            .positions(&scope.sku, scope.listing(), anchor, layout)
            .await?)
    }

    /// The page of `layout.size` comments, aligned to the layout's page boundaries, that holds
    /// `comment` (a published one of this connection): one store read for the comment (its product, rating and sort key), one index
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
            // Only a published comment is in a connection: any other is not, and a page
            // "containing" it would not hold it (nor may it say that it exists).
            .filter(|c| {
                c.is_public() && c.is_in_list(&scope.sku) && scope.ratings.contains(c.rating)
            })
            .ok_or(PaginationError::NotInConnection(comment))?;
        let at = scope.listing().position_of(&found);
        let positions = self.positions(scope, Some(at), layout).await?;
        let anchor: AnchorRank = positions.anchor.ok_or_else(|| {
            IndexError::Internal("the index answered no rank for the anchor".into())
        })?;
        let current = layout.page_of(positions.total, anchor);
        let plan = PagePlan {
            order: layout.numbering.order(),
            forward: scope.order.forward(),
            start: positions.page_bound,
            stop: None,
            skip: 0,
            skip_through_index: false,
            take: layout.size as usize,
            keep_last: None,
        };
        let want = Want {
            edges: true,
            ..want
        };
        let mut page = self.page(&scope.sku, scope.listing(), &plan, want).await?;
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
                order: plan.forward,
                start: plan
                    .forward
                    .reverse()
                    .step(&at.key)
                    .map(|key| Position { key, ..at }),
                ..plan
            };
            let stats = page.stats;
            page = self
                .page(&scope.sku, scope.listing(), &from_the_comment, want)
                .await?;
            page.stats += stats;
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CommentOrder, RatingSet, Sku};
    use crate::pagination::{CursorCodec, PagingSettings};

    #[test]
    fn only_a_window_that_selects_its_total_alone_is_total_only() {
        let scope = CursorScope {
            sku: Sku::parse("S").expect("sku"),
            ratings: RatingSet::ALL,
            order: CommentOrder::Oldest,
        };
        let codec = CursorCodec::development();
        let args = ConnectionArgs::default();
        let plan = PagePlan::new(&args, &PagingSettings::default(), &codec, &scope).expect("plan");
        let nothing = Want {
            edges: false,
            has_next_page: false,
            has_previous_page: false,
        };
        let total = IndexSelection {
            total_count: true,
            ..IndexSelection::default()
        };
        let request = ConnectionRequest {
            scope,
            target: PageTarget::Window(plan),
            want: nothing,
            index: total,
        };
        assert!(request.total_only());
        for want in [
            Want::ALL,
            Want {
                has_previous_page: true,
                ..nothing
            },
        ] {
            let paged = ConnectionRequest {
                want,
                ..request.clone()
            };
            assert!(!paged.total_only(), "{want:?}");
        }
        let pager = IndexSelection {
            positions: true,
            ..total
        };
        let untotalled = IndexSelection::default();
        for index in [pager, untotalled] {
            let other = ConnectionRequest {
                index,
                ..request.clone()
            };
            assert!(!other.total_only(), "{index:?}");
        }
        let containing = ConnectionRequest {
            target: PageTarget::Containing {
                comment: CommentId::from_parts(1, 1),
                layout: containing_layout(
                    &args,
                    &PagePlan::new(&args, &PagingSettings::default(), &codec, &request.scope)
                        .expect("plan"),
                    Numbering::FromNewest,
                )
                .expect("layout"),
            },
            ..request
        };
        assert!(!containing.total_only(), "containing reads its comment");
    }

    #[test]
    fn containing_takes_one_size_and_no_window() {
        let scope = CursorScope {
            sku: Sku::parse("S").expect("sku"),
            ratings: RatingSet::ALL,
            order: CommentOrder::Newest,
        };
        let layout = |args: ConnectionArgs| {
            let codec = CursorCodec::development();
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
}

/// The index's answers fetched with a page. Generic over the error so that a caller can keep a
/// failure in the form it reports (the GraphQL layer converts, and logs, it once however many
/// fields read it).
#[derive(Clone, Debug)]
pub struct Prefetched<E> {
    /// Whether the positions hold the page's anchor (its rank), or only the total.
    pub anchored: bool,
    /// The list's total and, when `anchored`, the anchor's rank; or why the index could not
    /// give them.
    pub positions: Result<Positions, E>,
}

impl<E> Prefetched<E> {
    /// The same answers with the error, if any, converted by `convert`.
    pub fn map_err<F>(self, convert: impl FnOnce(E) -> F) -> Prefetched<F> {
        Prefetched {
            anchored: self.anchored,
            positions: self.positions.map_err(convert),
        }
    }

    /// What `startOffset` and every `pageCursors` can use: positions fetched with the anchor.
    pub fn anchored(&self) -> Option<&Result<Positions, E>> {
        self.anchored.then_some(&self.positions)
    }

    /// What `totalCount` can use: every view has the total.
    pub fn total(&self) -> Result<u64, E>
    where
        E: Clone,
    {
        self.positions.as_ref().map(|p| p.total).map_err(E::clone)
    }
}
