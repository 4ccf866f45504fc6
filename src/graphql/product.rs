//! `Product`'s fields. They live above the connection module (`Product.comments` resolves a
//! connection, and a connection's comments name their `Product`), so no two modules of the
//! GraphQL layer import each other.

use async_graphql::{Context, ID, Object};

use super::comments_field::object_with_comments;
use super::connection::{resolve_connection, state};
use super::error::ApiError;
use super::global_id::GlobalId;
use super::types::{Product, RatingSummary};

object_with_comments! {
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
                meta.read_product(&self.sku);
            }
            Ok(Some(RatingSummary::from_counts(counts)))
        }
    }

    /// The product's comments as a Relay connection, in the order asked (`orderBy`, newest
    /// first by default).
    async fn comments(&self, ctx) -> |input| {
        resolve_connection(ctx, self.sku.clone(), input).await
    }
}
