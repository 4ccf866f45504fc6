//! `CommentConnection`: the one resolver behind `Query.comments` and `Product.comments`.

use std::sync::Arc;

use async_graphql::{Context, Object};

use super::ApiState;
use super::error::ApiError;
use super::types::{Comment, CommentEdge, PageInfo};
use crate::domain::{self, RatingSet, Sku};
use crate::pagination::{ConnectionArgs, CursorScope, PagePlan, PagingSettings, Want};

/// The connection arguments shared by both `comments` fields.
#[derive(Debug, Default)]
pub(super) struct ConnectionInput {
    pub ratings: Option<Vec<i32>>,
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
    pub offset: Option<i32>,
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
    let ratings = match &input.ratings {
        None => RatingSet::ALL,
        Some(values) => RatingSet::parse(&values.iter().map(|v| i64::from(*v)).collect::<Vec<_>>())
            .map_err(|e| fail(e.into()))?,
    };
    let scope = CursorScope {
        sku: sku.clone(),
        ratings,
    };
    let args = ConnectionArgs {
        first: input.first,
        after: input.after,
        last: input.last,
        before: input.before,
        offset: input.offset,
    };
    let plan = PagePlan::new(&args, state.engine.settings(), &state.codec, &scope)
        .map_err(|e| fail(e.into()))?;

    let look = ctx.look_ahead();
    let page_info = look.field("pageInfo");
    let want = Want {
        edges: look.field("edges").exists()
            || look.field("nodes").exists()
            || page_info.field("startCursor").exists()
            || page_info.field("endCursor").exists(),
        has_next_page: page_info.field("hasNextPage").exists(),
        has_previous_page: page_info.field("hasPreviousPage").exists(),
    };
    let page = state
        .engine
        .page(&sku, ratings, &plan, want)
        .await
        .map_err(|e| fail(e.into()))?;
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
    })
}

/// A page of a product's comments, newest first.
#[derive(Debug)]
pub struct CommentConnection {
    scope: CursorScope,
    items: Vec<domain::Comment>,
    has_next_page: bool,
    has_previous_page: bool,
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
            .map(|c| CommentEdge {
                cursor: self.cursor(state, c),
                node: Comment(c.clone()),
            })
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
