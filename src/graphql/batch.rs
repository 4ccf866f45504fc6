//! A request's batched reads: `product(sku:) { ratingSummary }`, a connection that selects
//! nothing but its `totalCount`, `node(id:)` and `nodes(ids:)` ask the request's
//! [`DataLoader`] (async-graphql's) rather than the backends, so that the same field used many
//! times in one request (aliases, products found by `nodes`, a page of comments that each name
//! their product) makes one read for all of them:
//!
//! * every product's rating counts in one index call ([`PageIndex::rating_counts_many`]: one
//!   Redis pipeline of ten `ZCARD`s per product; on a Cluster one pipeline per hash slot, all
//!   sent at once). A `totalCount` is the sum of its filter's counts ([`RatingSet::count_in`]),
//!   so a category page's stars and its products' totals share the call;
//! * every comment asked by id in one [`CommentStore::get_many`] (DynamoDB `BatchGetItem`, 100
//!   ids a call), each id read once however many fields ask for it;
//! * the viewer's helpful votes on comments read one at a time (`helpful`, whose loader reads
//!   them with one [`CommentStore::helpful_votes`]);
//! * every report asked by its comment and reader (a queue page's `openReports`, `node`) in
//!   one [`CommentStore::reports_of`] (`BatchGetItem`, 100 a call).
//!
//! The loader is the request's own (the HTTP layer makes one with the request's
//! [`RequestMeta`]): each batch adds what it read to the request's `extensions.cost` (its real
//! calls: `indexCalls`, `storeQueries`, `itemsRead`), and a failed batch is converted once, with
//! the request's id, into the error every field that waited for it answers, with the code it
//! had before batching (`INDEX_UNAVAILABLE`, `STORE_UNAVAILABLE`). Without a loader (a
//! subscription's event, a schema executed directly) each field reads on its own.
//!
//! What it costs: a field waits for the loader's tick (1 ms, on tokio's timer) before its batch
//! is read, so that the fields resolving beside it join the batch. What it does not change: the
//! price (`pricing`): each product and each id is still priced as a read of its own.
//!
//! [`PageIndex::rating_counts_many`]: crate::index::PageIndex::rating_counts_many
//! [`CommentStore::get_many`]: crate::store::CommentStore::get_many
//! [`CommentStore::helpful_votes`]: crate::store::CommentStore::helpful_votes
//! [`CommentStore::reports_of`]: crate::store::CommentStore::reports_of

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::Context;
use async_graphql::dataloader::{DataLoader, Loader};

use super::error::ApiError;
use super::{ApiState, RequestMeta};
use crate::domain::{self, CommentId, RatingSet, Sku};
use crate::index::{IndexError, PageIndex};
use crate::pagination::PageStats;
use crate::store::CommentStore;

/// Ids one store call of `get_many` fetches at most (DynamoDB's `BatchGetItem` takes 100), for
/// `storeQueries`.
const GET_MANY_BATCH: u64 = 100;

/// The request's loader, in its data.
pub type RequestLoader = DataLoader<BatchReads>;

/// What a request's loader reads with: the backends, and the request's [`RequestMeta`] that
/// each batch reports its cost to.
#[derive(Debug)]
pub struct BatchReads {
    pub(super) state: Arc<ApiState>,
    pub(super) meta: Arc<RequestMeta>,
}

impl BatchReads {
    /// A loader for one request (its batches run as tasks of their own on the runtime).
    pub fn loader(state: Arc<ApiState>, meta: Arc<RequestMeta>) -> RequestLoader {
        DataLoader::new(Self { state, meta }, tokio::spawn)
    }
}

/// A product's rating counts, `[ones, …, fives]`.
impl Loader<Sku> for BatchReads {
    type Value = [u64; 5];
    type Error = async_graphql::Error;

    async fn load(&self, skus: &[Sku]) -> Result<HashMap<Sku, [u64; 5]>, Self::Error> {
        let counts = read_counts(&self.state, Some(&self.meta), skus).await?;
        Ok(skus.iter().cloned().zip(counts).collect())
    }
}

/// A comment by id (absent from the map when there is none).
impl Loader<CommentId> for BatchReads {
    type Value = domain::Comment;
    type Error = async_graphql::Error;

    async fn load(
        &self,
        ids: &[CommentId],
    ) -> Result<HashMap<CommentId, domain::Comment>, Self::Error> {
        read_comments(&self.state, Some(&self.meta), ids).await
    }
}

/// A report by its comment and reader (absent from the map when there is none).
impl Loader<ReportKey> for BatchReads {
    type Value = domain::Report;
    type Error = async_graphql::Error;

    async fn load(
        &self,
        keys: &[ReportKey],
    ) -> Result<HashMap<ReportKey, domain::Report>, Self::Error> {
        read_reports(&self.state, Some(&self.meta), keys).await
    }
}

/// A report's key: its comment and its reader's subject.
pub(super) type ReportKey = (CommentId, String);

/// The reports of `keys` that exist, with the request's other keys.
pub(super) async fn reports(
    ctx: &Context<'_>,
    keys: &[ReportKey],
) -> async_graphql::Result<HashMap<ReportKey, domain::Report>> {
    match ctx.data_opt::<RequestLoader>() {
        Some(loader) => loader.load_many(keys.iter().cloned()).await,
        None => read_reports(ctx.data::<Arc<ApiState>>()?, super::meta(ctx), keys).await,
    }
}

/// The reports of `keys` that exist, in one `reports_of`, recorded in `meta` like
/// [`read_comments`].
async fn read_reports(
    state: &ApiState,
    meta: Option<&RequestMeta>,
    keys: &[ReportKey],
) -> async_graphql::Result<HashMap<ReportKey, domain::Report>> {
    let read = state.engine.store().reports_of(keys).await;
    found(meta, keys, read)
}

/// What a batched read of `keys` found, by key (the absent ones left out), recorded in `meta`:
/// every key asked is an item read, found or not, in calls of [`GET_MANY_BATCH`].
fn found<K: Clone + Eq + std::hash::Hash, V>(
    meta: Option<&RequestMeta>,
    keys: &[K],
    read: Result<Vec<Option<V>>, crate::store::StoreError>,
) -> async_graphql::Result<HashMap<K, V>> {
    let items = keys.len() as u64;
    if let Some(meta) = meta {
        meta.add_cost(PageStats {
            items_read: items,
            store_queries: items.div_ceil(GET_MANY_BATCH),
            index_calls: 0,
        });
    }
    let read = read.map_err(|e| ApiError::from(e).into_graphql(meta))?;
    Ok(keys
        .iter()
        .cloned()
        .zip(read)
        .filter_map(|(key, value)| Some((key, value?)))
        .collect())
}

/// `sku`'s rating counts, `[ones, …, fives]`, with the request's other products.
pub(super) async fn rating_counts(ctx: &Context<'_>, sku: &Sku) -> async_graphql::Result<[u64; 5]> {
    let counts = match ctx.data_opt::<RequestLoader>() {
        Some(loader) => loader.load_one(sku.clone()).await?,
        None => {
            let one = std::slice::from_ref(sku);
            read_counts(ctx.data::<Arc<ApiState>>()?, super::meta(ctx), one)
                .await?
                .pop()
        }
    };
    counts.ok_or_else(|| {
        let missing = IndexError::Internal("a batch of counts left a product out".into());
        ApiError::from(missing).into_graphql(super::meta(ctx))
    })
}

/// How many of `sku`'s comments have a rating in `ratings` (a `totalCount`), with the request's
/// other products' counts.
pub(super) async fn total(
    ctx: &Context<'_>,
    sku: &Sku,
    ratings: RatingSet,
) -> async_graphql::Result<u64> {
    Ok(ratings.count_in(rating_counts(ctx, sku).await?))
}

/// The comments of `ids` that exist, by id, with the request's other ids.
pub(super) async fn comments(
    ctx: &Context<'_>,
    ids: &[CommentId],
) -> async_graphql::Result<HashMap<CommentId, domain::Comment>> {
    match ctx.data_opt::<RequestLoader>() {
        Some(loader) => loader.load_many(ids.iter().copied()).await,
        None => read_comments(ctx.data::<Arc<ApiState>>()?, super::meta(ctx), ids).await,
    }
}

/// The counts of `skus`, in their order, from the index in one call (one round trip, or one
/// per hash slot on a Cluster: each is an index call in `meta`'s cost).
pub(super) async fn read_counts(
    state: &ApiState,
    meta: Option<&RequestMeta>,
    skus: &[Sku],
) -> async_graphql::Result<Vec<[u64; 5]>> {
    let counts = state.engine.rating_counts_many(skus).await;
    if let Some(meta) = meta {
        meta.add_cost(PageStats {
            index_calls: state.engine.index().rating_counts_calls(skus),
            ..PageStats::default()
        });
    }
    let counts = counts.map_err(|e| ApiError::from(e).into_graphql(meta))?;
    if counts.len() != skus.len() {
        let wrong = IndexError::Internal("the index answered another number of products".into());
        return Err(ApiError::from(wrong).into_graphql(meta));
    }
    Ok(counts)
}

/// The comments of `ids` that exist, in one `get_many`, recorded in `meta`: what was asked of
/// the store, found or not (a `nodes` read is a read too).
async fn read_comments(
    state: &ApiState,
    meta: Option<&RequestMeta>,
    ids: &[CommentId],
) -> async_graphql::Result<HashMap<CommentId, domain::Comment>> {
    let read = state.engine.store().get_many(ids).await;
    found(meta, ids, read)
}
