//! The page index: each product's comments in sort-key order, per rating, answering counts and
//! "which sort key sits at rank k" of any union of ratings in O(log n), so `totalCount` and page
//! jumps cost the same at page 50,000 as at page 1. A list by rating (`domain::Listing` with a
//! grouping) is its ratings' sets one after another, so its ranks are the same questions asked
//! of one set, after the counts of the groups ahead (in Redis: sorted sets per product and rating,
//! `redis::keys`; embedded: one treap with per-rating counts).
//!
//! The index is derived from the store and eventually consistent with it (`docs/architecture.md`, a
//! write). Its rank order is the store's order, ties included (the order invariant,
//! `domain::SortKey`).
//!
//! # Versions
//!
//! Every change carries the comment's version ([`ChangeEvent::version`]), and the index keeps
//! what it needs to refuse a change older than the state it holds for that comment:
//!
//! | the index holds | an upsert of version `v` applies if | a deletion of version `v` applies if |
//! |---|---|---|
//! | nothing | always | always (it leaves a tombstone) |
//! | the comment, at version `h` | `v >= h` (equal: a replay) | `v > h` |
//! | a tombstone of version `t` | `v > t` | `v > t` (it refreshes the tombstone) |
//!
//! So applying a change twice, or an older change after a newer one, in any interleaving,
//! leaves the index as the newest change says. The state is only kept where it carries
//! information: a comment at version 1 (never edited) is held by its membership alone, a
//! version from 2 up is one small record, and a deletion leaves a tombstone that expires after
//! [`TOMBSTONE_TTL`]. That bound is safe because no change older than a deletion can arrive
//! later than that: a DynamoDB stream keeps records 24 hours, and `reindex` applies what it
//! reads within seconds. (A change older than an expired tombstone would be applied, and
//! `verify` would report the comment as extra.)
//!
//! This layer knows nothing of DynamoDB or GraphQL.

mod listed;
pub mod memory;
pub mod redis;
mod treap;

use std::future::Future;
use std::time::Duration;

use crate::domain::{
    AnchorRank, ChangeEvent, IndexEntry, Listing, Order, PageLayout, Position, Rating, RatingSet,
    Sku, SortKey,
};
use crate::error::BoxError;

/// How long a deletion's tombstone is kept: the 24 hours a DynamoDB stream keeps a record (the
/// oldest change that can still arrive after a deletion), plus an hour of margin.
pub const TOMBSTONE_TTL: Duration = Duration::from_secs(25 * 3600);

/// What the index holds for one comment, as far as versions go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Held {
    /// Nothing: never seen, or deleted longer ago than the tombstone lifetime.
    Nothing,
    /// The comment is in the index at this version.
    Live {
        /// The comment's version.
        version: u64,
    },
    /// The comment was deleted; this is the deletion's version.
    Deleted {
        /// The deletion's version.
        version: u64,
    },
}

/// A change [`PageIndex::apply`] refused because the index holds a newer state of its comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stale {
    /// The change's position in the applied slice.
    pub event: usize,
    /// What the index held for the comment.
    pub held: Held,
}

/// A repair `reindex` makes where the index holds a newer state of a comment than the table
/// has (a table restored from a backup, an index changed by hand): the versions would refuse
/// the table's state, so the comment is set to it outright, but only if the index still holds
/// `expected`, so a change applied meanwhile is never overwritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repair {
    /// The comment's product.
    pub sku: Sku,
    /// The comment's sort key.
    pub key: SortKey,
    /// What the index held when the table was read.
    pub expected: Held,
    /// The comment as the table has it (with its version), or `None` if the table has no
    /// such comment.
    pub state: Option<IndexEntry>,
}

/// Where an anchor sits in a list and the sort key that bounds its page, when asked
/// ([`PageIndex::positions`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Positions {
    /// How many items the list has.
    pub total: u64,
    /// The anchor's rank, when an anchor was given.
    pub anchor: Option<AnchorRank>,
    /// The bound of the anchor's page ([`PageLayout::page_to_bound`]): asked with
    /// `PageLinks::Current`, and absent for page 1.
    pub page_bound: Option<Position>,
}

/// Where a view counts ranks from: the items strictly beyond `after` (member or not: a cursor's
/// comment may have been deleted) read in `order`, or the whole list in `order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The direction ranks are counted in.
    pub order: Order,
    /// The position ranks count from, exclusive; `None`: from the list's first item in `order`.
    pub after: Option<Position>,
}

/// The item a view ranks the list from (`Positions::anchor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewAnchor {
    /// None: the view has no anchor rank (an empty page, or `totalCount` alone).
    None,
    /// This position, member or not (a page's first edge, read already).
    Key(Position),
    /// The item at this 0-based rank from the view's [`Start`] (the first edge a page will
    /// have, when the index and the store agree); no anchor when the list is shorter.
    Rank(u64),
}

/// Everything one connection derives from the index, asked in one call ([`PageIndex::view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewRequest {
    /// Where ranks are counted from.
    pub start: Start,
    /// The rank from `start` whose sort key a deep offset continues after (`key_at`).
    pub bound: Option<u64>,
    /// The item whose rank the view answers.
    pub anchor: ViewAnchor,
    /// The pages to bound, as [`PageIndex::positions`] bounds them.
    pub layout: PageLayout,
}

/// The index's answer to a [`ViewRequest`]: one consistent view of the list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// The position at the `bound` rank; `None` when not asked or past the list's end.
    pub bound: Option<Position>,
    /// The anchor's position: the one asked, or the one found at the asked rank.
    pub anchor: Option<Position>,
    /// The total, the anchor's rank and the layout's bounds.
    pub positions: Positions,
}

/// Why an index call failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Connection refused, reset, timed out: the index is down or unreachable.
    #[error("the page index is unavailable")]
    Unavailable(#[source] BoxError),
    /// Anything else: an unexpected reply or a bug, not an outage.
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

    /// How many of `sku`'s comments have each rating: `[ones, twos, threes, fours, fives]`.
    /// One round trip where the index has them (Redis: ten `ZCARD`s in one pipeline).
    fn rating_counts(
        &self,
        sku: &Sku,
    ) -> impl Future<Output = Result<[u64; 5], IndexError>> + Send {
        async move {
            let mut counts = [0; 5];
            for (slot, rating) in counts.iter_mut().zip(Rating::ALL) {
                *slot = self.count(sku, RatingSet::from_ratings([rating])).await?;
            }
            Ok(counts)
        }
    }

    /// [`Self::rating_counts`] of each of `skus`, in their order (repeats answered again). One
    /// round trip where the index has them together (Redis: one pipeline of ten `ZCARD`s per
    /// product).
    fn rating_counts_many(
        &self,
        skus: &[Sku],
    ) -> impl Future<Output = Result<Vec<[u64; 5]>, IndexError>> + Send {
        async move {
            let mut all = Vec::with_capacity(skus.len());
            for sku in skus {
                all.push(self.rating_counts(sku).await?);
            }
            Ok(all)
        }
    }

    /// [`Self::rating_counts_many`] counting only the comments created at `since_ms` (epoch
    /// milliseconds) or later: `[ones, …, fives]` of each list, in `lists`' order. As many round
    /// trips as [`Self::rating_counts_many`] (Redis: `ZCOUNT` from `since_ms` where that has
    /// `ZCARD`, the sets' scores being `createdAt`).
    fn rating_counts_since(
        &self,
        lists: &[Sku],
        since_ms: u64,
    ) -> impl Future<Output = Result<Vec<[u64; 5]>, IndexError>> + Send;

    /// How many round trips [`Self::rating_counts_many`] makes for `skus`, for `indexCalls`: one
    /// where the index reads them together (none for no product); on a Redis Cluster one per
    /// hash slot the products' keys occupy (its pipelines may not cross slots).
    fn rating_counts_calls(&self, skus: &[Sku]) -> u64 {
        u64::from(!skus.is_empty())
    }

    /// The position `rank` places (0-based) into `listing` (a list of `sku`'s comments), read
    /// in `order`, counting only items strictly beyond `after` in that order (whether or not
    /// `after` is itself a member: a cursor's comment may have been deleted). `None` when the
    /// list is shorter. One round trip.
    fn key_at(
        &self,
        sku: &Sku,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> impl Future<Output = Result<Option<Position>, IndexError>> + Send;

    /// `listing` (a list of `sku`'s comments) seen from `anchor` under `layout`: its total,
    /// the anchor's rank, and, with `PageLinks::Current`, the bound of the page that holds the
    /// anchor (`domain::page_numbers`). The anchor need not be a member. One round trip, and one
    /// consistent view of the list: the counts and the bound never disagree.
    fn positions(
        &self,
        sku: &Sku,
        listing: Listing,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> impl Future<Output = Result<Positions, IndexError>> + Send;

    /// Everything a connection derives from the index in one round trip and one consistent
    /// view of the list: a deep offset's bound, the total, the anchor's rank and the bound of
    /// the page `layout` asks for (as [`Self::key_at`] and [`Self::positions`] answer them).
    fn view(
        &self,
        sku: &Sku,
        listing: Listing,
        request: ViewRequest,
    ) -> impl Future<Output = Result<View, IndexError>> + Send;

    /// Applies changes in order, each only if it is at least as new as what the index holds for
    /// its comment (see "Versions" above), atomically per product and in one round trip per
    /// product. Returns the changes refused as stale.
    fn apply(
        &self,
        events: &[ChangeEvent],
    ) -> impl Future<Output = Result<Vec<Stale>, IndexError>> + Send;

    /// Makes each repair whose comment is still held as expected, atomically per product;
    /// returns the repairs not made because the index changed meanwhile.
    fn repair(
        &self,
        repairs: &[Repair],
    ) -> impl Future<Output = Result<Vec<Repair>, IndexError>> + Send;

    /// Every entry the index holds for `sku`, newest first (for `verify`).
    fn entries(
        &self,
        sku: &Sku,
    ) -> impl Future<Output = Result<Vec<IndexEntry>, IndexError>> + Send;

    /// Every product the index has entries for (for `verify` without `--sku`).
    fn products(&self) -> impl Future<Output = Result<Vec<Sku>, IndexError>> + Send;

    /// A cheap call that fails when the index cannot be reached (readiness).
    fn ping(&self) -> impl Future<Output = Result<(), IndexError>> + Send;

    /// Each product's version, in `skus`' order: a number that every change [`Self::apply`]
    /// or [`Self::repair`] makes to the product replaces with a different one (0 for a product
    /// never changed), with the epoch of the sequence it belongs to ([`ProductVersion`]). The
    /// response cache (`http::response_cache`) holds a response with the versions of the
    /// products it read and serves it again only while they are unchanged. One round trip (two
    /// the first time a product's epoch is made, on Redis). An index without versions answers
    /// an error, and nothing is cached.
    fn product_versions(
        &self,
        skus: &[Sku],
    ) -> impl Future<Output = Result<Vec<ProductVersion>, IndexError>> + Send {
        let _ = skus;
        async {
            Err(IndexError::Internal(
                "this index keeps no product versions".into(),
            ))
        }
    }
}

/// A product's version ([`PageIndex::product_versions`]) and the epoch it counts in.
///
/// Why an epoch: a version number alone can come back with other content. The embedded index
/// counts from 0 in every process (a restart with `--data-dir` counts again over the same
/// products), and a Redis index whose keys were flushed, restored from an older snapshot or
/// rebuilt starts its numbers over too. A response cache or a client holding an `ETag` made
/// from the old number would then take a new page for the old one. The epoch changes whenever
/// the numbers can start over (random per embedded index; on Redis a random value per product
/// made beside its version and lost with it), so `(epoch, number)` never names two states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProductVersion {
    /// The sequence's identity: equal epochs mean the numbers are comparable.
    pub epoch: u64,
    /// The version within the epoch (0 for a product never changed in it).
    pub number: u64,
}

/// A fresh epoch ([`ProductVersion::epoch`]): 64 random bits (a ULID's random part, from the
/// operating system's generator), so two sequences never share one by chance.
pub(crate) fn new_epoch() -> u64 {
    ulid::Ulid::new().random() as u64
}

/// The index chosen at start-up (`--index`): static dispatch over the implementations.
#[derive(Clone, Debug)]
pub enum AnyIndex {
    /// The index in this process (`--index memory`).
    Memory(memory::MemoryIndex),
    /// The Redis index, shared by every server (`--index redis`).
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

    async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], IndexError> {
        dispatch_index!(self, i => i.rating_counts(sku).await)
    }

    async fn rating_counts_many(&self, skus: &[Sku]) -> Result<Vec<[u64; 5]>, IndexError> {
        dispatch_index!(self, i => i.rating_counts_many(skus).await)
    }

    fn rating_counts_calls(&self, skus: &[Sku]) -> u64 {
        dispatch_index!(self, i => i.rating_counts_calls(skus))
    }

    async fn rating_counts_since(
        &self,
        lists: &[Sku],
        since_ms: u64,
    ) -> Result<Vec<[u64; 5]>, IndexError> {
        dispatch_index!(self, i => i.rating_counts_since(lists, since_ms).await)
    }

    async fn key_at(
        &self,
        sku: &Sku,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> Result<Option<Position>, IndexError> {
        dispatch_index!(self, i => i.key_at(sku, listing, order, after, rank).await)
    }

    async fn positions(
        &self,
        sku: &Sku,
        listing: Listing,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        dispatch_index!(self, i => i.positions(sku, listing, anchor, layout).await)
    }

    async fn view(
        &self,
        sku: &Sku,
        listing: Listing,
        request: ViewRequest,
    ) -> Result<View, IndexError> {
        dispatch_index!(self, i => i.view(sku, listing, request).await)
    }

    /// Applies `events` and the changes they make to the moderation queues and authors' lists
    /// ([`ChangeEvent::side_changes`]) in one call; only the given events' refusals are
    /// answered (a queue's copy of a change is refused exactly when the index holds a newer
    /// state of the comment in that queue, which is what keeps the queue order-proof).
    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let queued: Vec<ChangeEvent> = events.iter().flat_map(ChangeEvent::side_changes).collect();
        if queued.is_empty() {
            return dispatch_index!(self, i => i.apply(events).await);
        }
        let all = [events, &queued].concat();
        let stale = dispatch_index!(self, i => i.apply(&all).await)?;
        Ok(stale
            .into_iter()
            .filter(|s| s.event < events.len())
            .collect())
    }

    async fn repair(&self, repairs: &[Repair]) -> Result<Vec<Repair>, IndexError> {
        dispatch_index!(self, i => i.repair(repairs).await)
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        dispatch_index!(self, i => i.entries(sku).await)
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        dispatch_index!(self, i => i.products().await)
    }

    async fn ping(&self) -> Result<(), IndexError> {
        dispatch_index!(self, i => i.ping().await)
    }

    async fn product_versions(&self, skus: &[Sku]) -> Result<Vec<ProductVersion>, IndexError> {
        dispatch_index!(self, i => i.product_versions(skus).await)
    }
}
