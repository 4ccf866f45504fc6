//! `Query.moderationStats`: the transparency report. How many comments are in each status,
//! by rating, across the shop or for one product, counting those created since a time. It
//! shows at a glance whether the stars decide what is published (16 CFR 465: a shop may not
//! suppress reviews for their rating or sentiment).
//!
//! Every number is a count of the index's lists: a product's published comments are its own
//! list, the others its queues (`domain::QueueList`), each kept by rating with `createdAt` as
//! the score, so a count since a time is one `ZCOUNT` per set. The shop's published comments
//! are the sum of every product's list: the report reads the counts of every product the
//! index holds (one round trip, one per hash slot on a Cluster). Moderators only.

use async_graphql::{Context, Object, SimpleObject};

use super::error::ApiError;
use super::moderation::{CommentStatus, moderated_scope};
use super::scalars::DateTime;
use super::state;
use crate::domain::{self, QueueList, Rating, Sku};
use crate::index::PageIndex;
use crate::pagination::{PageStats, PaginationError};

/// How many comments of one status and rating a report counted.
#[derive(Debug, SimpleObject)]
pub(super) struct ModerationCount {
    /// The comments' status.
    pub status: CommentStatus,
    /// The comments' rating (1 to 5).
    pub rating: i32,
    /// How many: exact, as the index holds them (within the stream delay on DynamoDB).
    pub count: i64,
}

/// `Query.moderationStats`.
#[derive(Debug, Default)]
pub(super) struct StatsQuery;

#[Object]
impl StatsQuery {
    /// The transparency report (moderators only): how many comments are in each status
    /// (pending, published, hidden, rejected) with each rating, across the shop or for one
    /// product, counting only those created at `since` or later (all without it). Twenty
    /// counts, every status and rating, zeros included, in that order. Exact: counted in the
    /// index's lists, never by reading comments.
    async fn moderation_stats(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Only this product's comments; omit for the whole shop.")] sku: Option<
            String,
        >,
        #[graphql(desc = "Count the comments created at this time or later; omit for all.")]
        since: Option<DateTime>,
    ) -> async_graphql::Result<Vec<ModerationCount>> {
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let state = state(ctx)?;
        let sku = moderated_scope(ctx, state, sku).map_err(fail)?;
        // Before 1970 counts everything; the index's scores are epoch milliseconds.
        let since_ms = since.map_or(0, |at| u64::try_from(at.0.timestamp_millis()).unwrap_or(0));
        let index = state.engine.index();
        let mut calls = 0;
        let products = match &sku {
            Some(sku) => vec![sku.clone()],
            None => {
                calls += 1;
                let listed = index.products().await;
                let listed = listed.map_err(|e| fail(ApiError::from(PaginationError::from(e))))?;
                listed
                    .into_iter()
                    .filter(|list| !list.is_reserved())
                    .collect()
            }
        };
        let queued = [
            domain::CommentStatus::Pending,
            domain::CommentStatus::Hidden,
            domain::CommentStatus::Rejected,
        ];
        let queues: Vec<Sku> = queued
            .iter()
            .filter_map(|status| domain::Queue::of_status(*status))
            .map(|queue| QueueList::new(queue, sku.clone()))
            .map(|queue| queue.index_name())
            .collect();
        let lists = [queues.as_slice(), products.as_slice()].concat();
        calls += index.rating_counts_calls(&lists);
        let counts = index.rating_counts_since(&lists, since_ms).await;
        if let Some(meta) = meta {
            meta.add_cost(PageStats {
                index_calls: calls,
                ..PageStats::default()
            });
        }
        let counts = counts.map_err(|e| fail(ApiError::from(PaginationError::from(e))))?;
        let mut published = [0; 5];
        for product in counts.iter().skip(queues.len()) {
            for (sum, count) in published.iter_mut().zip(product) {
                *sum += count;
            }
        }
        let of = |status: domain::CommentStatus| match queued.iter().position(|s| *s == status) {
            Some(at) => counts.get(at).copied().unwrap_or_default(),
            None => published,
        };
        Ok(domain::CommentStatus::ALL
            .into_iter()
            .flat_map(|status| {
                let counts = of(status);
                Rating::ALL.into_iter().map(move |rating| ModerationCount {
                    status: status.into(),
                    rating: i32::from(rating.get()),
                    count: i64::try_from(counts[rating.index()]).unwrap_or(i64::MAX),
                })
            })
            .collect())
    }
}
