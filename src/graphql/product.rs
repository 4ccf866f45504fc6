//! `Product`'s fields. They live above the connection module (`Product.comments` resolves a
//! connection, and a connection's comments name their `Product`), so no two modules of the
//! GraphQL layer import each other.

use async_graphql::{Context, ID, Object};

use super::connection::{
    CommentConnection, ConnectionInput, connection_complexity, resolve_connection,
};
use super::global_id::GlobalId;
use super::types::Product;

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
    ) -> async_graphql::Result<CommentConnection> {
        let input = ConnectionInput {
            ratings,
            first,
            after,
            last,
            before,
            offset,
        };
        resolve_connection(ctx, self.sku.clone(), input).await
    }
}
