//! `Query.ratingSummaries`: the stars under every product of a category page, up to
//! [`MAX_SKUS`] products in one index round trip (Redis: ten `ZCARD`s per product in one
//! pipeline; on a Cluster one per hash slot), in one field. (Aliased `product { ratingSummary }`
//! lookups batch the same read: `batch`.)

use async_graphql::{Context, Object, SimpleObject};

use super::error::ApiError;
use super::state;
use super::types::RatingSummary;
use crate::domain::{Sku, verified_list};

/// Products one `ratingSummaries` call answers at most.
pub(super) const MAX_SKUS: usize = 100;

/// One product's rating summary, as `ratingSummaries` answers it.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct ProductRatingSummary {
    /// The product's SKU, as asked.
    pub sku: String,
    /// How the product's comments are rated.
    pub summary: RatingSummary,
}

/// `Query.ratingSummaries` (priced per SKU, `graphql::pricing`).
#[derive(Debug, Default)]
pub(super) struct SummariesQuery;

#[Object]
impl SummariesQuery {
    /// Rating summaries of up to 100 products in one call (a category page's stars), in the
    /// order asked. One index call for all of them (one per hash slot on a Redis Cluster); each
    /// SKU is priced as one item.
    async fn rating_summaries(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "SKUs, at most 100; a SKU asked twice is answered twice.")] skus: Vec<
            String,
        >,
    ) -> async_graphql::Result<Vec<ProductRatingSummary>> {
        let meta = super::meta(ctx);
        if skus.len() > MAX_SKUS {
            let refusal = ApiError::Refused(format!("`skus` may hold at most {MAX_SKUS} SKUs"));
            return Err(refusal.into_graphql(meta));
        }
        let parsed = skus
            .iter()
            .map(|sku| Sku::parse(sku))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::from(e).into_graphql(meta))?;
        if parsed.is_empty() {
            return Ok(Vec::new());
        }
        // The verified counts, when selected, in the same call: each product's verified list
        // after the products.
        let verified = RatingSummary::wants_verified(&ctx.look_ahead().field("summary"));
        let mut lists = parsed.clone();
        if verified {
            lists.extend(parsed.iter().map(verified_list));
        }
        let mut counts = super::batch::read_counts(state(ctx)?, meta, &lists).await?;
        let verified = verified.then(|| counts.split_off(parsed.len()));
        if let Some(meta) = meta {
            for sku in &parsed {
                meta.read_product(sku);
            }
        }
        Ok(skus
            .into_iter()
            .zip(counts)
            .enumerate()
            .map(|(at, (sku, counts))| ProductRatingSummary {
                sku,
                summary: RatingSummary::from_counts(counts, verified.as_ref().map(|v| v[at])),
            })
            .collect())
    }
}
