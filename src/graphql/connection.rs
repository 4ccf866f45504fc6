//! `CommentConnection`: the one resolver behind `Query.comments` and `Product.comments`.

use std::sync::Arc;

use async_graphql::{Context, ID, InputType, Object};

use super::ApiState;
use super::error::ApiError;
use super::global_id::GlobalId;
use super::pages::{self, DEFAULT_AROUND, PageCursors, PageNumbering};
use super::types::{Comment, CommentEdge, PageInfo};
use crate::domain::{self, Numbering, Order, PageLayout, PageLinks, RatingSet, Sku, SortKey};
use crate::index::{PageIndex, Positions};
use crate::pagination::{ConnectionArgs, CursorScope, PagePlan, PageStats, PagingSettings, Want};
use crate::store::CommentStore;

/// The connection arguments shared by both `comments` fields.
#[derive(Debug, Default)]
pub(super) struct ConnectionInput {
    pub ratings: Option<Vec<i32>>,
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
    pub offset: Option<i32>,
    pub containing: Option<ID>,
    pub numbering: PageNumbering,
}

/// Complexity of a connection: its page size times the cost of one edge. Complexity is counted
/// before any resolver runs, without the server's settings, so the default settings stand in:
/// no `first`/`last` counts as the default page size, and a size above the default maximum
/// counts as that maximum (such a request is refused with `PAGE_SIZE_EXCEEDED`, which says
/// more than a complexity refusal, unless `--max-page-size` allows it).
pub(super) fn connection_complexity(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    let PagingSettings {
        default_page_size,
        max_page_size,
        ..
    } = PagingSettings::default();
    let size = first
        .or(last)
        .map_or(default_page_size, |n| usize::try_from(n).unwrap_or(0))
        .clamp(1, max_page_size);
    size.saturating_mul(child).saturating_add(1)
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
        cursor: state.codec.seal(scope, &comment.sort_key()),
        node: Comment(comment),
    }
}

pub(super) fn state<'a>(ctx: &Context<'a>) -> async_graphql::Result<&'a Arc<ApiState>> {
    ctx.data::<Arc<ApiState>>()
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
    let scope = CursorScope {
        sku: sku.clone(),
        ratings,
    };
    let containing = input.containing.clone();
    let numbering = input.numbering;
    let args = ConnectionArgs {
        first: input.first,
        after: input.after,
        last: input.last,
        before: input.before,
        offset: input.offset,
    };
    let plan = PagePlan::new(&args, state.engine.settings(), &state.codec, &scope)
        .map_err(|e| fail(e.into()))?;
    let page_size = plan.keep_last.unwrap_or(plan.take) as u64;

    let look = ctx.look_ahead();
    let page_info = look.field("pageInfo");
    let want = Want {
        edges: look.field("edges").exists()
            || look.field("nodes").exists()
            || page_info.field("startCursor").exists()
            || page_info.field("endCursor").exists()
            || look.field("pageCursors").exists()
            || look.field("startOffset").exists(),
        has_next_page: page_info.field("hasNextPage").exists(),
        has_previous_page: page_info.field("hasPreviousPage").exists(),
    };
    let mut page = match containing {
        None => state
            .engine
            .page(&sku, ratings, &plan, want)
            .await
            .map_err(ApiError::from),
        Some(id) => {
            let layout = PageLayout {
                size: page_size,
                numbering: numbering.into(),
                links: PageLinks::Current,
            };
            page_containing(state, &scope, &args, &id, layout, want).await
        }
    }
    .map_err(fail)?;

    // `pageCursors` and `startOffset` share one index call, made now with the layout of the
    // first `pageCursors` selected (another `pageCursors`, under an alias with other
    // arguments, makes its own).
    let anchor = page.items.first().map(domain::Comment::sort_key);
    let prefetched = if look.field("pageCursors").exists() || look.field("startOffset").exists() {
        let layout = selected_pager_layout(&look, page_size, state.engine.settings()).unwrap_or(
            PageLayout {
                size: page_size.max(1),
                numbering: Numbering::FromNewest,
                links: PageLinks::None,
            },
        );
        page.stats.index_calls += 1;
        let positions = state
            .engine
            .index()
            .positions(&sku, ratings, anchor, layout)
            .await
            .map_err(|e| ApiError::from(e).into_graphql(meta));
        Some((layout, positions))
    } else {
        None
    };

    if let Some(meta) = meta {
        meta.add_cost(page.stats);
    }
    metrics::histogram!("dynapage_page_items_read").record(page.stats.items_read as f64);
    tracing::debug!(
        sku = sku.as_str(),
        edges = page.items.len(),
        items_read = page.stats.items_read,
        store_queries = page.stats.store_queries,
        index_calls = page.stats.index_calls,
        "page served"
    );
    Ok(CommentConnection {
        scope,
        items: page.items,
        has_next_page: page.has_next_page.unwrap_or(false),
        has_previous_page: page.has_previous_page.unwrap_or(false),
        page_size,
        anchor,
        prefetched,
    })
}

/// The layout of the first `pageCursors` in the selection, with its arguments' defaults, if
/// one is selected and its arguments are valid (if not, its resolver says why).
fn selected_pager_layout(
    look: &async_graphql::Lookahead<'_>,
    page_size: u64,
    settings: &PagingSettings,
) -> Option<PageLayout> {
    let field = look
        .field("pageCursors")
        .selection_fields()
        .into_iter()
        .next()?;
    let arguments = field.arguments().ok()?;
    let argument = |name: &str| {
        arguments
            .iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|(_, v)| v.clone())
    };
    let size = <Option<i32> as InputType>::parse(argument("size")).ok()?;
    let around = <Option<i32> as InputType>::parse(argument("around"))
        .ok()?
        .unwrap_or(DEFAULT_AROUND);
    let numbering = <Option<PageNumbering> as InputType>::parse(argument("numbering"))
        .ok()?
        .unwrap_or_default();
    pages::pager_layout(size, around, numbering, page_size, settings).ok()
}

/// The page of `layout.size` comments, aligned to the layout's page boundaries, that holds the
/// comment `id`: one store read for the comment (its product, rating and sort key), one index
/// call for its page's bound, then the page, read from the bound like any cursor page.
async fn page_containing(
    state: &ApiState,
    scope: &CursorScope,
    args: &ConnectionArgs,
    id: &ID,
    layout: PageLayout,
    want: Want,
) -> Result<crate::pagination::Page, ApiError> {
    if args.after.is_some() || args.before.is_some() || args.offset.is_some() {
        return Err(ApiError::Refused(
            "`containing` cannot be combined with `after`, `before` or `offset`".into(),
        ));
    }
    if args.first.is_some() && args.last.is_some() {
        return Err(ApiError::Refused(
            "`containing` takes one of `first` and `last` as the page size".into(),
        ));
    }
    if layout.size == 0 {
        return Err(ApiError::Refused(
            "`containing` needs a page size of at least 1".into(),
        ));
    }
    let id = GlobalId::comment(id).map_err(|e| domain::InvalidInput {
        field: "containing",
        ..e
    })?;
    let comment = state
        .engine
        .store()
        .get_many(&[id])
        .await?
        .pop()
        .flatten()
        .filter(|c| c.sku == scope.sku && scope.ratings.contains(c.rating))
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "comment `{}` is not in this connection (another product, filtered out by \
                 `ratings`, or deleted)",
                GlobalId::Comment(id).encode()
            ))
        })?;
    let key = comment.sort_key();
    let positions = state
        .engine
        .index()
        .positions(&scope.sku, scope.ratings, Some(key), layout)
        .await?;
    let anchor = positions.anchor.ok_or_else(|| {
        ApiError::Index(crate::index::IndexError::Internal(
            "the index answered no rank for the anchor".into(),
        ))
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
    let mut page = state
        .engine
        .page(
            &scope.sku,
            scope.ratings,
            &plan,
            Want {
                edges: true,
                ..want
            },
        )
        .await?;
    page.stats += PageStats {
        store_queries: 1,
        items_read: 1,
        index_calls: 1,
    };
    if !page.items.iter().any(|c| c.id == id) {
        // Only while the index lags the store around this comment (comments it does not hold
        // yet, or still holds after their deletion, between the bound and the comment): the
        // aligned page missed it, so serve the page that starts at the comment instead.
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
        page = state
            .engine
            .page(
                &scope.sku,
                scope.ratings,
                &from_the_comment,
                Want {
                    edges: true,
                    ..want
                },
            )
            .await?;
        page.stats += stats;
    }
    Ok(page)
}

/// A page of a product's comments, newest first.
#[derive(Debug)]
pub struct CommentConnection {
    scope: CursorScope,
    items: Vec<domain::Comment>,
    has_next_page: bool,
    has_previous_page: bool,
    /// The page size `pageCursors` defaults to.
    page_size: u64,
    /// The first edge's sort key, where `pageCursors` and `startOffset` look from (kept when
    /// only they were selected and the edges are not served).
    anchor: Option<SortKey>,
    /// The one index call of `pageCursors` and `startOffset`, and the layout it was made for.
    prefetched: Option<(PageLayout, async_graphql::Result<Positions>)>,
}

impl CommentConnection {
    fn cursor(&self, state: &ApiState, comment: &domain::Comment) -> String {
        state.codec.seal(&self.scope, &comment.sort_key())
    }
}

/// A page of a product's comments, newest first (a Relay connection).
#[Object]
impl CommentConnection {
    /// The page's comments with their cursors, newest first.
    async fn edges(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<CommentEdge>> {
        let state = state(ctx)?;
        Ok(self
            .items
            .iter()
            .map(|c| edge_of(state, &self.scope, c.clone()))
            .collect())
    }

    /// The page's comments, newest first (the edges without cursors).
    async fn nodes(&self) -> Vec<Comment> {
        self.items.iter().cloned().map(Comment).collect()
    }

    /// Where this page sits in the whole list.
    async fn page_info(&self, ctx: &Context<'_>) -> async_graphql::Result<PageInfo> {
        let state = state(ctx)?;
        Ok(PageInfo {
            has_next_page: self.has_next_page,
            has_previous_page: self.has_previous_page,
            start_cursor: self.items.first().map(|c| self.cursor(state, c)),
            end_cursor: self.items.last().map(|c| self.cursor(state, c)),
        })
    }

    /// How many comments the whole connection has (ignoring cursors and offset), from the page
    /// index. Null with an `INDEX_UNAVAILABLE` error when the index cannot be reached; the
    /// index follows writes within the stream's delay.
    async fn total_count(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<i32>> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let count = state
            .engine
            .total_count(&self.scope.sku, self.scope.ratings)
            .await
            .map_err(|e| ApiError::from(e).into_graphql(meta))?;
        if let Some(meta) = meta {
            meta.add_index_call();
        }
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
            default_with = "Some(PageNumbering::FromNewest)"
        )]
        numbering: Option<PageNumbering>,
    ) -> async_graphql::Result<Option<PageCursors>> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let layout = pages::pager_layout(
            size,
            around.unwrap_or(DEFAULT_AROUND),
            numbering.unwrap_or_default(),
            self.page_size,
            state.engine.settings(),
        )
        .map_err(fail)?;
        let positions = match &self.prefetched {
            Some((prefetched, positions)) if *prefetched == layout => positions.clone()?,
            _ => {
                if let Some(meta) = meta {
                    meta.add_index_call();
                }
                state
                    .engine
                    .index()
                    .positions(&self.scope.sku, self.scope.ratings, self.anchor, layout)
                    .await
                    .map_err(|e| fail(e.into()))?
            }
        };
        pages::page_cursors(layout, &positions, &state.codec, &self.scope)
            .map(Some)
            .map_err(fail)
    }

    /// Zero-based position of the first edge in the whole list (with its rating filter),
    /// newest first; null for an empty page. `first: n, offset: startOffset` serves this page
    /// again while no comment above it arrives or goes. From the page index (one call, shared
    /// with `pageCursors`); null with `INDEX_UNAVAILABLE` when it is down.
    async fn start_offset(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<i32>> {
        let Some(anchor) = self.anchor else {
            return Ok(None);
        };
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let positions = match &self.prefetched {
            Some((_, positions)) => positions.clone()?,
            None => {
                if let Some(meta) = meta {
                    meta.add_index_call();
                }
                let layout = PageLayout {
                    size: 1,
                    numbering: Numbering::FromNewest,
                    links: PageLinks::None,
                };
                state
                    .engine
                    .index()
                    .positions(&self.scope.sku, self.scope.ratings, Some(anchor), layout)
                    .await
                    .map_err(|e| ApiError::from(e).into_graphql(meta))?
            }
        };
        Ok(positions
            .anchor
            .map(|a| i32::try_from(a.newer).unwrap_or(i32::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::types::{TypeKind, TypeSystemDefinition};

    use crate::pagination::PagingSettings;

    /// The arguments of `Type.field` with their descriptions, from the printed schema.
    fn arguments(type_name: &str, field: &str) -> Vec<(String, String)> {
        let document =
            async_graphql::parser::parse_schema(crate::graphql::sdl()).expect("our SDL parses");
        for definition in document.definitions {
            let TypeSystemDefinition::Type(ty) = definition else {
                continue;
            };
            let (ty, TypeKind::Object(object)) = (&ty.node, &ty.node.kind) else {
                continue;
            };
            if ty.name.node != type_name {
                continue;
            }
            for f in &object.fields {
                if f.node.name.node == field {
                    return f
                        .node
                        .arguments
                        .iter()
                        .map(|a| {
                            let description = a.node.description.as_ref().map(|d| d.node.clone());
                            (
                                a.node.name.node.to_string(),
                                description.unwrap_or_default(),
                            )
                        })
                        .collect();
                }
            }
        }
        panic!("{type_name}.{field} is in the schema");
    }

    #[test]
    fn both_comments_fields_take_the_same_arguments_described_alike_with_the_default_settings() {
        let mut query = arguments("Query", "comments");
        assert_eq!(query.remove(0).0, "sku");
        let product = arguments("Product", "comments");
        assert_eq!(
            query, product,
            "Query.comments and Product.comments drifted apart"
        );

        let settings = PagingSettings::default();
        let first = &product
            .iter()
            .find(|(name, _)| name == "first")
            .expect("first")
            .1;
        let last = &product
            .iter()
            .find(|(name, _)| name == "last")
            .expect("last")
            .1;
        let default = format!("({} unless configured)", settings.default_page_size);
        let max = format!("({} unless configured)", settings.max_page_size);
        assert!(first.contains(&default) && first.contains(&max), "{first}");
        assert!(last.contains(&max), "{last}");
    }

    #[test]
    fn complexity_counts_the_requested_page_or_the_default_one() {
        assert_eq!(super::connection_complexity(Some(10), None, 3), 31);
        assert_eq!(super::connection_complexity(None, Some(0), 3), 4);
        assert_eq!(super::connection_complexity(None, None, 1), 21);
        assert_eq!(super::connection_complexity(Some(1000), None, 1), 101);
    }
}
