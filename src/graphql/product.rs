//! `Product`'s fields. They live above the connection module (`Product.comments` resolves a
//! connection, and a connection's comments name their `Product`), so no two modules of the
//! GraphQL layer import each other.

use async_graphql::{Context, ID, Object};

use super::connection::state;
use super::connection::{
    CommentConnection, ConnectionInput, connection_complexity, resolve_connection,
};
use super::error::ApiError;
use super::global_id::GlobalId;
use super::pages::PageNumbering;
use super::types::{Product, RatingSummary};

/// A product. It exists as soon as it is named: a product without comments has an empty
/// connection and a `totalCount` of 0.
#[Object]
impl Product {
    /// Globally unique, opaque id of the product.
    pub(super) async fn id(&self) -> ID {
        ID(GlobalId::Product(self.sku.clone()).encode())
    }

    /// The product's SKU.
    async fn sku(&self) -> &str {
        self.sku.as_str()
    }

    /// How the product's comments are rated: the total, the average, and the count of each
    /// rating (what a rating filter shows beside its checkboxes). One index call (the counts
    /// follow the index, like `totalCount`); null with `INDEX_UNAVAILABLE` when it is down.
    async fn rating_summary(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Option<RatingSummary>> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let counts = state
            .engine
            .rating_counts(&self.sku)
            .await
            .map_err(|e| ApiError::from(e).into_graphql(meta))?;
        if let Some(meta) = meta {
            meta.add_index_call();
        }
        Ok(Some(RatingSummary::from_counts(counts)))
    }

    /// The product's comments, newest first, as a Relay connection.
    #[graphql(complexity = "connection_complexity(first, last, child_complexity)")]
    #[allow(clippy::too_many_arguments)]
    async fn comments(
        &self,
        ctx: &Context<'_>,
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
        let input = ConnectionInput {
            ratings,
            first,
            after,
            last,
            before,
            offset,
            containing,
            numbering: numbering.unwrap_or_default(),
        };
        resolve_connection(ctx, self.sku.clone(), input).await
    }
}
