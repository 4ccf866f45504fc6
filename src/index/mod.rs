//! The page index: a sorted set per product (and per product and rating) that answers counts
//! and "which sort key sits at rank k" in O(log n), so `totalCount` and page jumps cost the
//! same at page 50,000 as at page 1.
//!
//! The index is derived from the store and eventually consistent with it (DESIGN §6). Its rank
//! order is the store's order, ties included (the order invariant, `domain::SortKey`).
//!
//! This layer knows nothing of DynamoDB or GraphQL.

pub mod memory;
pub mod redis;
mod treap;

use std::future::Future;

use crate::domain::{ChangeEvent, IndexEntry, Order, RatingSet, Sku, SortKey};
use crate::store::BoxError;

/// Why an index call failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Connection refused, reset, timed out: the index is down or unreachable.
    #[error("the page index is unavailable")]
    Unavailable(#[source] BoxError),
    #[error("unexpected page index error")]
    Internal(#[source] BoxError),
}

/// Ranks and counts over each product's comments, optionally restricted to a set of ratings.
pub trait PageIndex: Send + Sync + 'static {
    /// How many of `sku`'s comments have a rating in `ratings` (`ZCARD`, summed over sets).
    fn count(
        &self,
        sku: &Sku,
        ratings: RatingSet,
    ) -> impl Future<Output = Result<u64, IndexError>> + Send;

    /// The sort key `rank` places (0-based) into the list of `sku`'s comments with a rating in
    /// `ratings`, read in `order`, counting only items strictly beyond `after` in that order
    /// (whether or not `after` is itself a member: a cursor's comment may have been deleted).
    /// `None` when the list is shorter. One round trip.
    fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> impl Future<Output = Result<Option<SortKey>, IndexError>> + Send;

    /// Applies changes idempotently, in order, in one round trip.
    fn apply(&self, events: &[ChangeEvent]) -> impl Future<Output = Result<(), IndexError>> + Send;

    /// Every entry the index holds for `sku`, newest first (for `verify`).
    fn entries(
        &self,
        sku: &Sku,
    ) -> impl Future<Output = Result<Vec<IndexEntry>, IndexError>> + Send;

    /// Every product the index has entries for (for `verify` without `--sku`).
    fn products(&self) -> impl Future<Output = Result<Vec<Sku>, IndexError>> + Send;

    /// Adds entries to the staging area of rebuild `run` (nothing live changes).
    fn stage(
        &self,
        run: &str,
        entries: &[IndexEntry],
    ) -> impl Future<Output = Result<(), IndexError>> + Send;

    /// Swaps the staged sets of rebuild `run` in for each of `skus`, atomically per product; a
    /// product with nothing staged ends up empty. Staging for those products is consumed.
    fn commit(
        &self,
        run: &str,
        skus: &[Sku],
    ) -> impl Future<Output = Result<(), IndexError>> + Send;

    /// A cheap call that fails when the index cannot be reached (readiness).
    fn ping(&self) -> impl Future<Output = Result<(), IndexError>> + Send;
}

/// The index chosen at start-up (`--index`): static dispatch over the implementations.
#[derive(Clone, Debug)]
pub enum AnyIndex {
    Memory(memory::MemoryIndex),
    Redis(redis::RedisIndex),
}

macro_rules! dispatch_index {
    ($self:ident, $index:ident => $call:expr) => {
        match $self {
            AnyIndex::Memory($index) => $call,
            AnyIndex::Redis($index) => $call,
        }
    };
}

impl PageIndex for AnyIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        dispatch_index!(self, i => i.count(sku, ratings).await)
    }

    async fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Result<Option<SortKey>, IndexError> {
        dispatch_index!(self, i => i.key_at(sku, ratings, order, after, rank).await)
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<(), IndexError> {
        dispatch_index!(self, i => i.apply(events).await)
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        dispatch_index!(self, i => i.entries(sku).await)
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        dispatch_index!(self, i => i.products().await)
    }

    async fn stage(&self, run: &str, entries: &[IndexEntry]) -> Result<(), IndexError> {
        dispatch_index!(self, i => i.stage(run, entries).await)
    }

    async fn commit(&self, run: &str, skus: &[Sku]) -> Result<(), IndexError> {
        dispatch_index!(self, i => i.commit(run, skus).await)
    }

    async fn ping(&self) -> Result<(), IndexError> {
        dispatch_index!(self, i => i.ping().await)
    }
}
