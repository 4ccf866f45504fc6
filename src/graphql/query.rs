//! `Query`: products, their comments, Relay's `node`/`nodes`, and `ratingSummaries`
//! (`summaries`).

use std::collections::HashMap;

use async_graphql::{Context, ID, MergedObject, Object};

use super::comments_field::object_with_comments;
use super::connection::resolve_connection;
use super::error::ApiError;
use super::global_id::GlobalId;
use super::log::LogQueryRoot;
use super::own::ViewerQuery;
use super::queue::QueueQuery;
use super::state;
use super::stats::StatsQuery;
use super::summaries::SummariesQuery;
use super::types::{Comment, Node, Product};
use crate::domain::{CommentId, Sku};
use crate::store::StoreError;

/// Reads: products, their comments, and Relay object refetching.
#[derive(Debug, Default, MergedObject)]
#[graphql(name = "Query")]
pub struct QueryRoot(QueryFields);

/// `Query`'s fields, which the Federation subgraph's `Query` has too (`federation`). A type of
/// its own only while the schema is built: no field names it, so the SDL does not have it.
#[derive(Debug, Default, MergedObject)]
pub(super) struct QueryFields(
    NodeQuery,
    CatalogQuery,
    SummariesQuery,
    QueueQuery,
    LogQueryRoot,
    ViewerQuery,
    StatsQuery,
);

/// `Query.node` and `Query.nodes`: Relay refetching (`nodes` is priced per id,
/// `graphql::pricing`).
#[derive(Debug, Default)]
pub(super) struct NodeQuery;

#[Object]
impl NodeQuery {
    /// Any object by its global id (Relay refetching). Null, with a `NOT_FOUND` error, when the
    /// id names a comment that does not exist. A comment is read with the request's other
    /// `node` and `nodes` ids, in one store call for all.
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
    /// Each id is priced as one item read. Comments are read with the request's other `node`
    /// and `nodes` ids (aliases included), each id once, in one store call for all.
    async fn nodes(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Global ids, at most 100.")] ids: Vec<ID>,
    ) -> async_graphql::Result<Vec<Option<Node>>> {
        let meta = super::meta(ctx);
        let max = state(ctx)?.max_node_ids;
        if ids.len() > max {
            let refusal = ApiError::Refused(format!("`ids` may hold at most {max} ids"));
            return Err(refusal.into_graphql(meta));
        }
        let ids = ids
            .iter()
            .map(|id| GlobalId::decode(id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::from(e).into_graphql(meta))?;
        fetch_nodes(ctx, &ids).await
    }
}

/// `Query.product` and `Query.comments`.
#[derive(Debug, Default)]
pub(super) struct CatalogQuery;

object_with_comments! {
    #[Object]
    impl CatalogQuery {
        /// A product by SKU. Every valid SKU names a product, with or without comments.
        async fn product(
            &self,
            ctx: &Context<'_>,
            #[graphql(desc = "1 to 64 characters from A-Z, a-z, 0-9, '_', '-' and '.'.")]
            sku: String,
        ) -> async_graphql::Result<Product> {
            let sku = Sku::parse(&sku)
                .map_err(|e| ApiError::from(e).into_graphql(super::meta(ctx)))?;
            Ok(Product { sku })
        }

        /// How the shop verifies reviews, in its own words (`--verification-statement`): what
        /// the EU Omnibus directive asks a shop that publishes reviews to state, shown beside
        /// them. Null when the shop set none.
        async fn verification_statement(
            &self,
            ctx: &Context<'_>,
        ) -> async_graphql::Result<Option<String>> {
            Ok(super::state(ctx)?.verification_statement.clone())
        }
    }

    /// A product's comments as a Relay connection, in the order asked (`orderBy`, newest first
    /// by default); the same as `product(sku:) { comments }`.
    async fn comments(
        &self,
        ctx,
        #[graphql(desc = "The product's SKU.")] sku: String,
    ) -> |input| {
        let sku =
            Sku::parse(&sku).map_err(|e| ApiError::from(e).into_graphql(super::meta(ctx)))?;
        resolve_connection(ctx, sku, input).await
    }
}

/// Resolves ids: every comment among them is read with the request's other ids (`batch`: one
/// `get_many` for all the `node` and `nodes` fields that resolve together).
pub(super) async fn fetch_nodes(
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
    let found = if comment_ids.is_empty() {
        HashMap::new()
    } else {
        // Each field holds its ids against the items cap, read with others' or not.
        let items = comment_ids.len() as u64;
        let reserved = super::reserve_items(meta, state(ctx)?, items)?;
        let read = super::batch::comments(ctx, &comment_ids).await;
        if let Some(meta) = meta {
            meta.settle_items(reserved, items);
        }
        let read = read?;
        // A comment's changes change its product's version; an id that names nothing keeps
        // naming nothing (ids are never reused), so only found comments tie the response.
        if let Some(meta) = meta {
            for comment in read.values() {
                meta.read_product(&comment.sku);
            }
        }
        read
    };
    let entries = super::log::entries(ctx, ids).await?;
    let reports = super::report::reports(ctx, ids).await?;
    Ok(ids
        .iter()
        .map(|id| match id {
            GlobalId::Product(sku) => Some(Node::Product(Product { sku: sku.clone() })),
            GlobalId::ModerationEntry(entry) => entries
                .get(entry)
                .cloned()
                .map(|entry| Node::ModerationEntry(entry.into())),
            GlobalId::Report(comment, reporter) => reports
                .get(&(*comment, reporter.clone()))
                .cloned()
                .map(|report| Node::Report(report.into())),
            // A comment that is not published is nothing to anyone but its author and
            // moderators (`NOT_FOUND` for `node`, null in `nodes`).
            GlobalId::Comment(c) => found
                .get(c)
                .filter(|c| super::moderation::may_see(ctx, c))
                .cloned()
                .map(|c| Node::Comment(Comment(c))),
        })
        .collect())
}
