//! `Query`: products, their comments, and Relay's `node`/`nodes`.

use async_graphql::{Context, ID, Object};

use super::connection::{
    CommentConnection, ConnectionInput, connection_complexity, resolve_connection, state,
};
use super::error::ApiError;
use super::global_id::GlobalId;
use super::pages::PageNumbering;
use super::types::{Comment, Node, Product};
use crate::domain::{CommentId, Sku};
use crate::store::{CommentStore, StoreError};

/// The root of every read.
#[derive(Debug, Default)]
pub struct QueryRoot;

/// Reads: products, their comments, and Relay object refetching.
#[Object(name = "Query")]
impl QueryRoot {
    /// Any object by its global id (Relay refetching). Null, with a `NOT_FOUND` error, when the
    /// id names a comment that does not exist.
    async fn node(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "A global id from an object's `id` field.")] id: ID,
    ) -> async_graphql::Result<Option<Node>> {
        let meta = super::meta(ctx);
        let id = GlobalId::decode(&id).map_err(|e| ApiError::from(e).into_graphql(meta))?;
        let GlobalId::Comment(comment) = id else {
            // A product exists as soon as it is named.
            return Ok(fetch_nodes(ctx, &[id]).await?.pop().flatten());
        };
        match fetch_nodes(ctx, &[id]).await?.pop().flatten() {
            Some(node) => Ok(Some(node)),
            None => Err(ApiError::from(StoreError::NotFound(comment)).into_graphql(meta)),
        }
    }

    /// Several objects by global id, in the same order; null for ids that name nothing.
    async fn nodes(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Global ids, at most 100.")] ids: Vec<ID>,
    ) -> async_graphql::Result<Vec<Option<Node>>> {
        let meta = super::meta(ctx);
        let max = state(ctx)?.max_node_ids;
        if ids.len() > max {
            return Err(
                ApiError::Refused(format!("`ids` may hold at most {max} ids")).into_graphql(meta),
            );
        }
        let ids = ids
            .iter()
            .map(|id| GlobalId::decode(id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::from(e).into_graphql(meta))?;
        fetch_nodes(ctx, &ids).await
    }

    /// A product by SKU. Every valid SKU names a product, with or without comments.
    async fn product(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "1 to 64 characters from A-Z, a-z, 0-9, '_', '-' and '.'.")] sku: String,
    ) -> async_graphql::Result<Product> {
        let sku = Sku::parse(&sku).map_err(|e| ApiError::from(e).into_graphql(super::meta(ctx)))?;
        Ok(Product { sku })
    }

    /// A product's comments, newest first, as a Relay connection (the same as
    /// `product(sku:) { comments }`).
    #[graphql(complexity = "connection_complexity(first, last, child_complexity)")]
    #[allow(clippy::too_many_arguments)]
    async fn comments(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The product's SKU.")] sku: String,
        #[graphql(
            desc = "Only comments with one of these ratings (1-5, no repeats). Omit for all."
        )]
        ratings: Option<Vec<i32>>,
        #[graphql(
            desc = "Return at most this many comments from the top of the window. Without `first` or `last`, the server's default page size (20 unless configured); above its maximum (100 unless configured), `PAGE_SIZE_EXCEEDED`."
        )]
        first: Option<i32>,
        #[graphql(desc = "Start after this cursor (an edge's `cursor` or `pageInfo.endCursor`).")]
        after: Option<String>,
        #[graphql(
            desc = "Return at most this many comments from the bottom of the window. Above the server's maximum page size (100 unless configured), `PAGE_SIZE_EXCEEDED`."
        )]
        last: Option<i32>,
        #[graphql(desc = "End before this cursor (an edge's `cursor` or `pageInfo.startCursor`).")]
        before: Option<String>,
        #[graphql(
            desc = "Skip this many comments first: from the top with `first`, from the bottom with `last`. For page jumps: page p of size n is `first: n, offset: (p - 1) * n`."
        )]
        offset: Option<i32>,
        #[graphql(
            desc = "The page that holds this comment (a global id): `first` (or `last`) comments, aligned to the page boundaries of that size under `numbering`, so it is the page `pageCursors` numbers with the same size. Not with `after`, `before` or `offset`. `NOT_FOUND` when the comment is not in this connection (another product, filtered out by `ratings`, or deleted)."
        )]
        containing: Option<ID>,
        #[graphql(
            desc = "Which end pages are counted from, for `containing`.",
            default_with = "Some(PageNumbering::FromNewest)"
        )]
        numbering: Option<PageNumbering>,
    ) -> async_graphql::Result<CommentConnection> {
        let sku = Sku::parse(&sku).map_err(|e| ApiError::from(e).into_graphql(super::meta(ctx)))?;
        resolve_connection(
            ctx,
            sku,
            ConnectionInput {
                ratings,
                first,
                after,
                last,
                before,
                offset,
                containing,
                numbering: numbering.unwrap_or_default(),
            },
        )
        .await
    }
}

/// Resolves ids with one batched store read for all comments.
async fn fetch_nodes(
    ctx: &Context<'_>,
    ids: &[GlobalId],
) -> async_graphql::Result<Vec<Option<Node>>> {
    let meta = super::meta(ctx);
    let comment_ids: Vec<CommentId> = ids
        .iter()
        .filter_map(|id| {
            if let GlobalId::Comment(c) = id {
                Some(*c)
            } else {
                None
            }
        })
        .collect();
    let mut comments = if comment_ids.is_empty() {
        Vec::new()
    } else {
        state(ctx)?
            .engine
            .store()
            .get_many(&comment_ids)
            .await
            .map_err(|e| ApiError::from(e).into_graphql(meta))?
    }
    .into_iter();
    Ok(ids
        .iter()
        .map(|id| match id {
            GlobalId::Product(sku) => Some(Node::Product(Product { sku: sku.clone() })),
            GlobalId::Comment(_) => comments.next().flatten().map(|c| Node::Comment(Comment(c))),
        })
        .collect())
}
