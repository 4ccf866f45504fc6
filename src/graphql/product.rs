//! `Product`'s fields. They live above the connection module (`Product.comments` resolves a
//! connection, and a connection's comments name their `Product`), so no two modules of the
//! GraphQL layer import each other.

use async_graphql::{Context, ID, Object};

use super::comments_field::object_with_comments;
use super::connection::resolve_connection;
use super::global_id::GlobalId;
use super::types::{Product, RatingSummary};
use crate::domain::verified_list;

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
        /// rating (what a rating filter shows beside its checkboxes). From the index (the counts
        /// follow it, like `totalCount`), read with every other product's counts the request
        /// asks for: a category page's `product(sku:) { ratingSummary }` aliases make one index
        /// call (one per hash slot on a Redis Cluster), as `ratingSummaries` does; the verified
        /// counts, when selected, are read in the same call. Null with `INDEX_UNAVAILABLE` when
        /// the index is down.
        async fn rating_summary(
            &self,
            ctx: &Context<'_>,
        ) -> async_graphql::Result<Option<RatingSummary>> {
            // Both counts are asked before either is awaited: one batch, one index call.
            let twin = verified_list(&self.sku);
            let verified = async {
                match RatingSummary::wants_verified(&ctx.look_ahead()) {
                    true => super::batch::rating_counts(ctx, &twin).await.map(Some),
                    false => Ok(None),
                }
            };
            let (counts, verified) =
                futures::future::join(super::batch::rating_counts(ctx, &self.sku), verified).await;
            if let Some(meta) = super::meta(ctx) {
                meta.read_product(&self.sku);
            }
            Ok(Some(RatingSummary::from_counts(counts?, verified?)))
        }
    }

    /// The product's comments as a Relay connection, in the order asked (`orderBy`, newest
    /// first by default).
    async fn comments(&self, ctx) -> |input| {
        resolve_connection(ctx, self.sku.clone(), input).await
    }
}
