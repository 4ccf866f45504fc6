//! `CommentConnection`: the one resolver behind `Query.comments` and `Product.comments`. It
//! turns the arguments and the selection into one engine call ([`Engine::connection`]) and the
//! answer into types; `totalCount`, `startOffset` and the first `pageCursors` read the one index
//! view made with the page, and only another `pageCursors` layout asks the engine again. No
//! paging decision is made here.
//!
//! [`Engine::connection`]: crate::pagination::Engine::connection

use std::sync::{Arc, OnceLock};

use async_graphql::{Context, ID, Object};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::page_cursors::{PageCursors, PageNumbering};
use super::plain::{Edges, Nodes};
use super::plain_info::PlainPageInfo;
use super::plain_pager::Pager;
use super::pricing::ConnectionShape;
use super::types::{Comment, CommentEdge, PageInfo};
use super::{ApiState, state};
use crate::domain::{self, Position, RatingSet, Sku};
use crate::index::Positions;
use crate::pagination::{
    self, ANCHOR_ONLY, ConnectionArgs, ConnectionRequest, CursorScope, DEFAULT_AROUND,
    IndexSelection, Page, PagePlan, PageTarget, PagerLinks, Prefetched, Want,
};
use crate::telemetry::metric;

/// The connection arguments shared by both `comments` fields.
#[derive(Debug, Default)]
pub(super) struct ConnectionInput {
    pub ratings: Option<Vec<i32>>,
    /// Only verified purchases: the product's verified list ([`domain::verified_list`]).
    pub verified: bool,
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
    pub offset: Option<i32>,
    pub containing: Option<ID>,
    pub numbering: PageNumbering,
    pub order: domain::CommentOrder,
}

/// The `ratings:` argument of a connection or subscription: all ratings when omitted.
pub(super) fn rating_set(ratings: Option<&[i32]>) -> Result<RatingSet, domain::InvalidInput> {
    match ratings {
        None => Ok(RatingSet::ALL),
        Some(values) => RatingSet::parse(&values.iter().map(|v| i64::from(*v)).collect::<Vec<_>>()),
    }
}

/// `comment`'s edge in the connection `scope` names, with its sealed cursor.
pub(super) fn edge_of(
    state: &ApiState,
    scope: &CursorScope,
    comment: domain::Comment,
) -> CommentEdge {
    CommentEdge {
        cursor: state
            .codec
            .seal(scope, &scope.listing().position_of(&comment)),
        node: Comment(comment),
    }
}

/// Validates the arguments, asks the engine for exactly what the query selected, and records
/// what it cost.
pub(super) async fn resolve_connection(
    ctx: &Context<'_>,
    sku: Sku,
    input: ConnectionInput,
) -> async_graphql::Result<CommentConnection> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let ratings = rating_set(input.ratings.as_deref()).map_err(|e| fail(e.into()))?;
    let shape = ConnectionShape {
        first: input.first,
        last: input.last,
        offset: input.offset,
        ratings: input.ratings.as_ref().map(Vec::len),
        containing: input.containing.is_some(),
        grouped: input.order.grouping().by_rating(),
    };
    let scope = CursorScope {
        sku: match input.verified {
            true => domain::verified_list(&sku),
            false => sku,
        },
        ratings,
        order: input.order,
    };
    let args = ConnectionArgs {
        first: input.first,
        after: input.after,
        last: input.last,
        before: input.before,
        offset: input.offset,
    };
    let settings = state.engine.settings();
    let plan = PagePlan::new(&args, settings, &state.codec, &scope).map_err(|e| fail(e.into()))?;
    let page_size = plan.page_size();
    let target = match input.containing {
        None => PageTarget::Window(plan),
        Some(id) => {
            containing(&args, &plan, &id, input.numbering.in_order(scope.order)).map_err(fail)?
        }
    };
    let look = ctx.look_ahead();
    let index = selected_index_parts(&look);
    let request = ConnectionRequest {
        scope,
        target,
        want: selected_page_parts(&look),
        index,
    };
    if request.total_only() {
        if let Some(meta) = meta {
            meta.read_product(&request.scope.sku);
        }
        return Ok(CommentConnection::total_only(request.scope, page_size));
    }
    let reserved = super::reserve_items(meta, state, shape.max_reads(settings))?;
    let connection = state
        .engine
        .connection(&request)
        .await
        .map_err(|e| fail(e.into()))?;
    if let Some(meta) = meta {
        meta.settle_items(reserved, connection.page.stats.items_read);
    }
    let scope = request.scope;
    record_cost(meta, &scope.sku, &connection.page);
    super::helpful::expect_votes(ctx, &look, &connection.page.items);
    Ok(CommentConnection {
        scope,
        items: connection.page.items.into(),
        has_next_page: connection.page.has_next_page.unwrap_or(false),
        has_previous_page: connection.page.has_previous_page.unwrap_or(false),
        page_size,
        anchor: connection.anchor,
        prefetched: connection.prefetched.map(|p| p.map_err(|e| fail(e.into()))),
        ends: Default::default(),
    })
}

/// The page `containing:` names: its layout is checked first (a cursor, an offset or both sizes
/// are refused whatever the id), then the id.
fn containing(
    args: &ConnectionArgs,
    plan: &PagePlan,
    id: &ID,
    numbering: domain::Numbering,
) -> Result<PageTarget, ApiError> {
    let layout = pagination::containing_layout(args, plan, numbering)?;
    let comment = GlobalId::comment(id).map_err(|e| domain::InvalidInput {
        field: "containing",
        ..e
    })?;
    Ok(PageTarget::Containing { comment, layout })
}

/// The parts of the page the selection reads.
fn selected_page_parts(look: &async_graphql::Lookahead<'_>) -> Want {
    let page_info = look.field("pageInfo");
    Want {
        edges: look.field("edges").exists()
            || look.field("nodes").exists()
            || page_info.field("startCursor").exists()
            || page_info.field("endCursor").exists()
            || look.field("pageCursors").exists()
            || look.field("startOffset").exists(),
        has_next_page: page_info.field("hasNextPage").exists(),
        has_previous_page: page_info.field("hasPreviousPage").exists(),
    }
}

/// The parts of the connection the selection reads from the index.
fn selected_index_parts(look: &async_graphql::Lookahead<'_>) -> IndexSelection {
    IndexSelection {
        total_count: look.field("totalCount").exists(),
        positions: look.field("pageCursors").exists() || look.field("startOffset").exists(),
    }
}

/// Logs and counts what serving `page` cost.
fn record_cost(meta: Option<&super::RequestMeta>, sku: &Sku, page: &Page) {
    if let Some(meta) = meta {
        meta.add_cost(page.stats);
        meta.read_product(sku);
    }
    metric::PAGE_ITEMS_READ
        .histogram(&[])
        .record(page.stats.items_read as f64);
    tracing::debug!(
        sku = sku.as_str(),
        edges = page.items.len(),
        items_read = page.stats.items_read,
        store_queries = page.stats.store_queries,
        index_calls = page.stats.index_calls,
        "page served"
    );
}

/// A page of a product's comments, in the connection's order (`orderBy`).
#[derive(Debug)]
pub(super) struct CommentConnection {
    scope: CursorScope,
    items: Arc<[domain::Comment]>,
    has_next_page: bool,
    has_previous_page: bool,
    /// The page size `pageCursors` defaults to.
    page_size: u64,
    /// The first edge's sort key, where `pageCursors` and `startOffset` look from (kept when
    /// only they were selected and the edges are not served).
    anchor: Option<Position>,
    /// The one index call of `totalCount`, `pageCursors` and `startOffset`, made with the page,
    /// its failure converted (and logged) once.
    prefetched: Option<Prefetched<async_graphql::Error>>,
    /// The first and the last edge's cursors, sealed once for `edges` and `pageInfo` (their
    /// `startCursor` and `endCursor` are the same cursors).
    ends: [OnceLock<String>; 2],
}

impl CommentConnection {
    /// A connection whose client selected only `totalCount`: nothing is read now, and the total
    /// is read with the request's other counts when its field resolves (`batch`).
    fn total_only(scope: CursorScope, page_size: u64) -> Self {
        Self {
            scope,
            items: Arc::new([]),
            has_next_page: false,
            has_previous_page: false,
            page_size,
            anchor: None,
            prefetched: None,
            ends: Default::default(),
        }
    }

    fn cursor(&self, state: &ApiState, comment: &domain::Comment) -> String {
        state
            .codec
            .seal(&self.scope, &self.scope.listing().position_of(comment))
    }

    /// The cursor of the page's `at`th comment, the first's and the last's sealed only once.
    fn cursor_at(&self, state: &ApiState, at: usize) -> Option<String> {
        let comment = self.items.get(at)?;
        let end = match at {
            0 => &self.ends[0],
            _ if at + 1 == self.items.len() => &self.ends[1],
            _ => return Some(self.cursor(state, comment)),
        };
        Some(end.get_or_init(|| self.cursor(state, comment)).clone())
    }

    /// The total and the first edge's rank, what `pageCursors` and `startOffset` read: the view
    /// made with the page, or, when the page made none with its anchor, one index call.
    async fn anchored_positions(&self, ctx: &Context<'_>) -> async_graphql::Result<Positions> {
        if let Some(positions) = self.prefetched.as_ref().and_then(|p| p.anchored()) {
            return positions.clone();
        }
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        if let Some(meta) = meta {
            meta.add_index_call();
        }
        state
            .engine
            .positions(&self.scope, self.anchor, ANCHOR_ONLY)
            .await
            .map_err(|e| ApiError::from(e).into_graphql(meta))
    }
}

/// A page of a product's comments in the order asked (`orderBy`, newest first by default): a
/// Relay connection.
#[Object]
impl CommentConnection {
    /// The page's comments with their cursors, in the connection's order.
    async fn edges(&self, ctx: &Context<'_>) -> async_graphql::Result<Edges> {
        let state = state(ctx)?;
        let cursors = (0..self.items.len())
            .map(|at| self.cursor_at(state, at).unwrap_or_default())
            .collect();
        Ok(Edges {
            comments: self.items.clone(),
            cursors,
        })
    }

    /// The page's comments, in the connection's order (the edges without cursors).
    async fn nodes(&self) -> Nodes {
        Nodes(self.items.clone())
    }

    /// Where this page sits in the whole list.
    async fn page_info(&self, ctx: &Context<'_>) -> async_graphql::Result<PlainPageInfo> {
        let state = state(ctx)?;
        Ok(PlainPageInfo(PageInfo {
            has_next_page: self.has_next_page,
            has_previous_page: self.has_previous_page,
            start_cursor: self.cursor_at(state, 0),
            end_cursor: self
                .items
                .len()
                .checked_sub(1)
                .and_then(|last| self.cursor_at(state, last)),
        }))
    }

    /// How many comments the whole connection has (ignoring cursors and offset), from the page
    /// index. Null with an `INDEX_UNAVAILABLE` error when the index cannot be reached; the
    /// index follows writes within the stream's delay. Selected alone (no edges, flags or
    /// pager), it is read with every other product's counts the request asks for: many
    /// connections' totals make one index call (one per hash slot on a Redis Cluster).
    async fn total_count(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<i32>> {
        let count = match &self.prefetched {
            Some(prefetched) => prefetched.total()?,
            None => super::batch::total(ctx, &self.scope.sku, self.scope.ratings).await?,
        };
        Ok(Some(i32::try_from(count).unwrap_or(i32::MAX)))
    }

    /// Links for a numbered pager over this connection (and its rating filter): the first,
    /// last, previous, next and `around` pages, each with its number, cursor and offset, and
    /// the page count. The current page is the one holding the first edge; on an empty page of
    /// a list that has comments (past its end), none is. From the page index, in one call
    /// shared with `startOffset`; null with `INDEX_UNAVAILABLE` when it is down. Pages follow
    /// the index, which follows writes within the stream's delay.
    async fn page_cursors(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "Comments per page; the connection's own page size (its `first` or `last`) when omitted; at most the server's maximum page size (100 unless configured)."
        )]
        size: Option<i32>,
        #[graphql(
            desc = "How many page links to centre on the current page (0 to 25).",
            default_with = "Some(DEFAULT_AROUND)"
        )]
        around: Option<i32>,
        #[graphql(
            desc = "Which end page 1 is at.",
            default_with = "Some(PageNumbering::FromStart)"
        )]
        numbering: Option<PageNumbering>,
    ) -> async_graphql::Result<Option<Pager>> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let fail = |e: pagination::PaginationError| ApiError::from(e).into_graphql(meta);
        let layout = pagination::pager_layout(
            size,
            around.unwrap_or(DEFAULT_AROUND),
            numbering.unwrap_or_default().in_order(self.scope.order),
            self.page_size,
            state.engine.settings(),
        )
        .map_err(fail)?;
        let positions = self.anchored_positions(ctx).await?;
        let links = PagerLinks::new(layout, &positions);
        Ok(Some(Pager(PageCursors::sealed(
            links,
            &state.codec,
            &self.scope,
        ))))
    }

    /// Zero-based position of the first edge in the whole list (with its rating filter),
    /// in its order; null for an empty page. `first: n, offset: startOffset` serves this page
    /// again while no comment above it arrives or goes. From the page index (one call, shared
    /// with `pageCursors`); null with `INDEX_UNAVAILABLE` when it is down.
    async fn start_offset(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<i32>> {
        if self.anchor.is_none() {
            return Ok(None);
        }
        let positions = self.anchored_positions(ctx).await?;
        Ok(pagination::start_offset(&positions, self.scope.order)
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
    }
}
