//! The per-request memo of a connection's index answers: everything the connection derives from
//! the index (a deep offset's bound, `totalCount`, and the anchor's rank that `startOffset` and
//! every `pageCursors` read) is asked in one [`PageIndex::view`] call, and the answer is kept
//! with the page ([`Prefetched`]) for each field that reads it, however many of them (aliases
//! included) the client selected.
//!
//! The one call needs the page's anchor (its first edge) before the page is read, so the
//! engine predicts it: for a page read newest first from its start with nothing cut at its far
//! end (the `first`/`after`/`offset` pages), the first edge is the item at rank `skip` from the
//! start, which the index can find as it finds the bound at `skip - 1`. The page is then read
//! (after the bound, or concurrently with the call when no bound is needed), and its real first
//! edge checked against the prediction: they differ only while the index lags the store near
//! the page, and then a second call, from the real first edge, keeps every answer exact. Other
//! pages (`last`, windows between two cursors, `containing`) are read first and viewed from
//! their first edge: one call too, after the page. This module knows nothing of GraphQL.

use super::connection::{Connection, IndexSelection, Prefetched};
use super::{Engine, Page, Want};
use crate::domain::{Order, Position};
use crate::index::{PageIndex, Start, View, ViewAnchor, ViewRequest};
use crate::pagination::pager::ANCHOR_ONLY;
use crate::pagination::{CursorScope, PagePlan, PaginationError};
use crate::store::CommentStore;

/// Whether the page's first edge is the item at rank `skip` from its start: a page read in its
/// list's own order (a `first` page), with nothing cut at its far end, that has room for an
/// edge.
fn predictable(plan: &PagePlan) -> bool {
    plan.order == plan.forward && plan.stop.is_none() && plan.keep_last.is_none() && plan.take > 0
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    /// Serves the window `plan` with the one index view its selection needs (see the module
    /// paragraph). A failed view fails the page only when the page needed its bound; otherwise
    /// it is kept for the fields that read it.
    pub(super) async fn window_with_view(
        &self,
        scope: &CursorScope,
        plan: &PagePlan,
        want: Want,
        selection: &IndexSelection,
    ) -> Result<Connection, PaginationError> {
        let anchored = selection.positions;
        let request = |bound: Option<u64>, anchor: ViewAnchor| ViewRequest {
            start: Start {
                order: plan.order,
                after: plan.start,
            },
            bound,
            anchor: if anchored { anchor } else { ViewAnchor::None },
            layout: ANCHOR_ONLY,
        };
        let (mut page, view) = if !predictable(plan) {
            let page = self.page(&scope.sku, scope.listing(), plan, want).await?;
            let anchor = page.items.first().map(|c| scope.listing().position_of(c));
            let view = self
                .view(
                    scope,
                    request(None, anchor.map_or(ViewAnchor::None, ViewAnchor::Key)),
                )
                .await;
            (page, view)
        } else if self.skips_by_index(plan) {
            let request = request(Some(plan.skip - 1), ViewAnchor::Rank(plan.skip));
            let view = self.view(scope, request).await?;
            let page = self
                .page_with(&scope.sku, scope.listing(), plan, want, Some(view.bound))
                .await?;
            (page, Ok(view))
        } else {
            let request = request(None, ViewAnchor::Rank(plan.skip));
            let (page, view) = futures::join!(
                self.page(&scope.sku, scope.listing(), plan, want),
                self.view(scope, request)
            );
            (page?, view)
        };
        page.stats.index_calls += 1;
        let anchor = page.items.first().map(|c| scope.listing().position_of(c));
        let view = match view {
            Ok(view) if anchored && view.anchor != anchor => {
                // The index lags the store near the page: view it again from the real edge.
                page.stats.index_calls += 1;
                let anchor = anchor.map_or(ViewAnchor::None, ViewAnchor::Key);
                self.view(scope, request(None, anchor)).await
            }
            view => view,
        };
        Ok(memoized(page, anchor, anchored, view))
    }

    /// Views `scope` from `anchor` after its page was read (`containing`): one more call.
    pub(super) async fn view_from(
        &self,
        scope: &CursorScope,
        anchor: Option<Position>,
        selection: &IndexSelection,
    ) -> Prefetched<PaginationError> {
        let anchored = selection.positions;
        let anchor = anchor.filter(|_| anchored);
        let request = ViewRequest {
            start: Start {
                order: Order::NewestFirst,
                after: None,
            },
            bound: None,
            anchor: anchor.map_or(ViewAnchor::None, ViewAnchor::Key),
            layout: ANCHOR_ONLY,
        };
        Prefetched {
            anchored,
            positions: self.view(scope, request).await.map(|v| v.positions),
        }
    }

    async fn view(
        &self,
        scope: &CursorScope,
        request: ViewRequest,
    ) -> Result<View, PaginationError> {
        Ok(self
            .index()
            .view(&scope.sku, scope.listing(), request)
            .await?)
    }
}

/// A connection whose index answers are the one view's.
fn memoized(
    page: Page,
    anchor: Option<Position>,
    anchored: bool,
    view: Result<View, PaginationError>,
) -> Connection {
    Connection {
        page,
        anchor,
        prefetched: Some(Prefetched {
            anchored,
            positions: view.map(|v| v.positions),
        }),
    }
}
