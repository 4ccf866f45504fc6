//! The Redis adapter of the page index: sorted sets per product, by rating
//! (`docs/operations/table-layout.md`, and the layout in `keys`): two by time per rating (comments
//! without helpful votes, and those with them), member = the comment id in a compact binary form
//! (`keys`), score = `createdAt` in epoch milliseconds, and one by helpful count per rating. The
//! product's whole list by time is the union of the ten.
//!
//! Redis orders equal scores by member bytewise, and a comment id's bytes sort like the id
//! (`CommentId`), so `ZRANGE` rank order is exactly [`SortKey`] order: the order invariant that
//! makes this adapter answer every call like the embedded [`MemoryIndex`]
//! (`crate::index::memory::MemoryIndex`), which the contract tests check.
//!
//! This module owns the page index's wire: its key names and members (`keys`), its Lua scripts,
//! the reading of their replies (`replies`), and the commands it sends (`needs`, for the
//! start-up check). The connection, scripts' transport and error classification are
//! `crate::redis`'s, shared with the other Redis users; the change log of live comments, the
//! stream checkpoints and the rate limits are theirs (`crate::live`, `crate::sync`,
//! `crate::ratelimit`), and nothing here reads their keys. It knows nothing of DynamoDB or
//! GraphQL. It works with one Redis node or a Redis Cluster; every call touches one product's
//! keys only, and they share one hash slot.
//!
//! [`MemoryIndex`]: crate::index::memory::MemoryIndex

mod entries;
mod groups;
mod keys;
mod needs;
mod replies;
mod view;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use self::keys::Keys;
pub(crate) use self::keys::{member, sort_key_of};
pub use self::needs::{needs_to_read, needs_to_scan, needs_to_write};
use self::replies::{Change, held_arg, held_of, view_of};
use super::{
    Held, IndexError, PageIndex, Positions, ProductVersion, Repair, Stale, Start, TOMBSTONE_TTL,
    View, ViewAnchor, ViewRequest,
};
use crate::domain::{
    ChangeEvent, Grouping, IndexEntry, Listing, Numbering, Order, PageLayout, PageLinks, Position,
    Rating, RatingSet, Sku,
};
use crate::redis::{CallError, LuaScript, RedisConfig, RedisHandle};

/// Members read per `ZRANGE` (and fields per `HSCAN`) by [`RedisIndex::entries`]: big enough
/// to be fast, small enough that one reply never nears the response timeout.
const READ_CHUNK: isize = 10_000;
/// Changes per call of `apply.lua`: a script blocks Redis while it runs, and 256 changes take
/// about a millisecond or two.
const APPLY_CHUNK: usize = 256;
/// A layout that links no page: a view of the total (and the anchor's rank, if any) only.
const TOTAL_ONLY: PageLayout = PageLayout {
    size: 1,
    numbering: Numbering::FromNewest,
    links: PageLinks::None,
};

/// `read.lua`: everything a connection derives from the index (a deep offset's bound, the
/// total, the anchor's rank, the pages' bounds) in one call; `key_at` and `positions` are views.
/// `select.lua` (the union search) and `pick.lua` (the members at several indexes) come first:
/// Redis scripts cannot load one another.
const READ: &str = concat!(
    include_str!("redis/select.lua"),
    include_str!("redis/pick.lua"),
    include_str!("redis/read.lua")
);
/// `read.lua` for a list by rating: `concat.lua` replaces the union's search with the one-set
/// search of the set that holds each rank.
const READ_GROUPED: &str = concat!(
    include_str!("redis/select.lua"),
    include_str!("redis/pick.lua"),
    include_str!("redis/concat.lua"),
    include_str!("redis/read.lua")
);
/// `read.lua` for the list by helpful votes: `helpful.lua` makes it the union of the sets
/// without votes followed by the union of the sets by count.
const READ_HELPFUL: &str = concat!(
    include_str!("redis/select.lua"),
    include_str!("redis/pick.lua"),
    include_str!("redis/by_count.lua"),
    include_str!("redis/helpful.lua"),
    include_str!("redis/read.lua")
);
/// `apply.lua`: changes and repairs, versions and tombstones, atomically per product.
const APPLY: &str = concat!(
    include_str!("redis/by_count.lua"),
    include_str!("redis/apply.lua")
);

/// The one place Redis errors become [`IndexError`]s: `CallError::Unavailable` is the index
/// down (`INDEX_UNAVAILABLE`), anything else an internal error.
impl From<CallError> for IndexError {
    fn from(err: CallError) -> Self {
        match err {
            CallError::Unavailable(source) => IndexError::Unavailable(source),
            CallError::Internal(source) => IndexError::Internal(source),
        }
    }
}

/// The page index in Redis. Cloning shares the connection.
#[derive(Clone, Debug)]
pub struct RedisIndex {
    redis: RedisHandle,
    keys: Keys,
    scripts: Arc<Scripts>,
    tombstone_ttl: Duration,
}

/// The index's scripts (shared by clones: each holds its text and hash).
#[derive(Debug)]
struct Scripts {
    read: LuaScript,
    read_grouped: LuaScript,
    read_helpful: LuaScript,
    apply: LuaScript,
}

impl RedisIndex {
    /// The index on `redis`'s connection (shared with its other users), without talking to
    /// Redis yet; tombstones are kept [`TOMBSTONE_TTL`].
    pub fn new(redis: &RedisHandle) -> Self {
        Self {
            redis: redis.clone(),
            keys: Keys::new(redis.prefix()),
            scripts: Arc::new(Scripts {
                read: LuaScript::new(READ),
                read_grouped: LuaScript::new(READ_GROUPED),
                read_helpful: LuaScript::new(READ_HELPFUL),
                apply: LuaScript::new(APPLY),
            }),
            tombstone_ttl: TOMBSTONE_TTL,
        }
    }

    /// [`Self::new`] on a connection of its own, opened from `config`.
    ///
    /// Fails only on a bad configuration (no URL, a malformed URL), never because Redis is
    /// down: requests then fail with [`IndexError::Unavailable`] until Redis is back, and the
    /// connection recovers by itself.
    pub async fn connect(config: RedisConfig) -> Result<Self, IndexError> {
        Ok(Self::new(&RedisHandle::open(config)?))
    }

    /// The same, keeping a deletion's tombstone `ttl` instead of [`TOMBSTONE_TTL`].
    pub fn with_tombstone_ttl(mut self, ttl: Duration) -> Self {
        self.tombstone_ttl = ttl;
        self
    }

    /// The Redis this index lives in (clones share its connection).
    pub fn redis(&self) -> &RedisHandle {
        &self.redis
    }

    /// Runs `changes` through `apply.lua`, in order per product: one script call per product
    /// and chunk, the products concurrently (they touch disjoint keys; on a Cluster they may
    /// live on different nodes). Returns the position and held state of each change the script
    /// did not make.
    async fn run_changes(&self, changes: &[Change<'_>]) -> Result<Vec<(usize, Held)>, IndexError> {
        let mut by_product: BTreeMap<&Sku, Vec<(usize, &Change<'_>)>> = BTreeMap::new();
        for (position, change) in changes.iter().enumerate() {
            by_product
                .entry(change.sku)
                .or_default()
                .push((position, change));
        }
        let ttl_ms = u64::try_from(self.tombstone_ttl.as_millis()).unwrap_or(u64::MAX);
        let refused = futures::future::try_join_all(by_product.into_iter().map(
            |(sku, changes)| async move {
                let mut refused = Vec::new();
                for chunk in changes.chunks(APPLY_CHUNK) {
                    let mut call = self.scripts.apply.call();
                    for key in self.keys.all_sets(sku) {
                        call.key(key);
                    }
                    call.key(self.keys.versions(sku));
                    call.arg(ttl_ms).arg(groups::version_start(sku));
                    for (_, change) in chunk {
                        call.key(self.keys.tombstone(sku, change.key.id()));
                        let (expected, expected_version) = held_arg(change.expected);
                        call.arg(change.kind)
                            .arg(member(&change.key))
                            .arg(change.key.millis())
                            .arg(change.rating.map_or(0, Rating::get))
                            .arg(change.version)
                            .arg(expected)
                            .arg(expected_version)
                            .arg(change.helpful);
                    }
                    call.key(self.keys.product_version(sku));
                    let reply: Vec<(usize, String, u64)> = call.invoke(&self.redis).await?;
                    for (i, state, version) in reply {
                        let position =
                            chunk.get(i).map(|(position, _)| *position).ok_or_else(|| {
                                IndexError::Internal("apply.lua named no change of its call".into())
                            })?;
                        refused.push((position, held_of(&state, version)?));
                    }
                }
                Ok::<_, IndexError>(refused)
            },
        ))
        .await?;
        let mut refused: Vec<(usize, Held)> = refused.into_iter().flatten().collect();
        refused.sort_by_key(|(position, _)| *position);
        Ok(refused)
    }

    /// The product's version records (member -> version, for comments at version 2 or more),
    /// read with `HSCAN` in chunks.
    async fn versions(&self, sku: &Sku) -> Result<HashMap<Vec<u8>, u64>, IndexError> {
        let key = self.keys.versions(sku);
        let mut versions = HashMap::new();
        let mut cursor: u64 = 0;
        loop {
            let mut hscan = redis::cmd("HSCAN");
            hscan.arg(&key).arg(cursor).arg("COUNT").arg(READ_CHUNK);
            let (next, fields): (u64, Vec<(Vec<u8>, u64)>) = self.redis.query(&hscan).await?;
            versions.extend(fields);
            if next == 0 {
                return Ok(versions);
            }
            cursor = next;
        }
    }

    /// All members of `key` with their scores, ascending, read in chunks.
    async fn read_all(&self, key: &str) -> Result<Vec<(Vec<u8>, f64)>, IndexError> {
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let mut zrange = redis::cmd("ZRANGE");
            zrange
                .arg(key)
                .arg(start)
                .arg(start + READ_CHUNK - 1)
                .arg("WITHSCORES");
            let chunk: Vec<(Vec<u8>, f64)> = self.redis.query(&zrange).await?;
            let done = (chunk.len() as isize) < READ_CHUNK;
            out.extend(chunk);
            if done {
                return Ok(out);
            }
            start += READ_CHUNK;
        }
    }
}

impl PageIndex for RedisIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        let mut pipe = redis::pipe();
        for key in self.sets(sku, ratings) {
            pipe.zcard(key);
        }
        let counts: Vec<u64> = self.redis.query_pipeline(&pipe).await?;
        Ok(counts.iter().sum())
    }

    async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], IndexError> {
        let mut counts = self.rating_counts_many(std::slice::from_ref(sku)).await?;
        counts
            .pop()
            .ok_or_else(|| IndexError::Internal("no counts".into()))
    }

    /// Ten `ZCARD`s per product (`groups`).
    async fn rating_counts_many(&self, skus: &[Sku]) -> Result<Vec<[u64; 5]>, IndexError> {
        self.counts_of(skus, None).await
    }

    async fn rating_counts_since(
        &self,
        lists: &[Sku],
        since_ms: u64,
    ) -> Result<Vec<[u64; 5]>, IndexError> {
        self.counts_of(lists, Some(since_ms)).await
    }

    fn rating_counts_calls(&self, skus: &[Sku]) -> u64 {
        self.counts_round_trips(skus)
    }

    async fn key_at(
        &self,
        sku: &Sku,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> Result<Option<Position>, IndexError> {
        let request = ViewRequest {
            start: Start { order, after },
            bound: Some(rank),
            anchor: ViewAnchor::None,
            layout: TOTAL_ONLY,
        };
        Ok(self.view(sku, listing, request).await?.bound)
    }

    async fn positions(
        &self,
        sku: &Sku,
        listing: Listing,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        let request = ViewRequest {
            start: Start {
                order: Order::NewestFirst,
                after: None,
            },
            bound: None,
            anchor: anchor.map_or(ViewAnchor::None, ViewAnchor::Key),
            layout,
        };
        Ok(self.view(sku, listing, request).await?.positions)
    }

    async fn view(
        &self,
        sku: &Sku,
        listing: Listing,
        request: ViewRequest,
    ) -> Result<View, IndexError> {
        let script = match listing.grouping {
            Grouping::Flat => &self.scripts.read,
            Grouping::HighestFirst | Grouping::LowestFirst => &self.scripts.read_grouped,
            Grouping::MostHelpful => &self.scripts.read_helpful,
        };
        let mut call = script.call();
        for key in view::keys(&self.keys, sku, listing) {
            call.key(key);
        }
        view::add_args(&mut call, listing, &request);
        let reply: Vec<redis::Value> = call.invoke(&self.redis).await?;
        let mut view = view_of(&reply)
            .ok_or_else(|| IndexError::Internal(format!("read.lua answered {reply:?}").into()))?;
        if let ViewAnchor::Key(key) = request.anchor {
            view.anchor = Some(key);
        }
        Ok(view)
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let changes: Vec<Change<'_>> = events
            .iter()
            .map(|event| match event {
                // A withdrawal (`ChangeEvent::withdraws`) is a deletion at its version: out of
                // the public sets, a tombstone against older changes.
                ChangeEvent::Upsert { new, .. } if !new.published => Change {
                    kind: "d",
                    sku: &new.sku,
                    key: new.key,
                    rating: None,
                    version: new.version,
                    expected: Held::Nothing,
                    helpful: 0,
                },
                ChangeEvent::Upsert { new, .. } => Change {
                    kind: "u",
                    sku: &new.sku,
                    key: new.key,
                    rating: Some(new.rating),
                    version: new.version,
                    expected: Held::Nothing,
                    helpful: new.helpful,
                },
                ChangeEvent::Remove { old, version } => Change {
                    kind: "d",
                    sku: &old.sku,
                    key: old.key,
                    rating: None,
                    version: *version,
                    expected: Held::Nothing,
                    helpful: 0,
                },
            })
            .collect();
        Ok(self
            .run_changes(&changes)
            .await?
            .into_iter()
            .map(|(event, held)| Stale { event, held })
            .collect())
    }

    async fn repair(&self, repairs: &[Repair]) -> Result<Vec<Repair>, IndexError> {
        let changes: Vec<Change<'_>> = repairs
            .iter()
            .map(|repair| Change {
                kind: if repair.state.is_some() { "r" } else { "x" },
                sku: &repair.sku,
                key: repair.key,
                rating: repair.state.as_ref().map(|e| e.rating),
                version: repair.state.as_ref().map_or(0, |e| e.version),
                expected: repair.expected,
                helpful: repair.state.as_ref().map_or(0, |e| e.helpful),
            })
            .collect();
        Ok(self
            .run_changes(&changes)
            .await?
            .into_iter()
            .map(|(position, _)| repairs[position].clone())
            .collect())
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        self.entries_of(sku).await
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        let keys = self
            .redis
            .matching_keys(&self.keys.rating_pattern())
            .await?;
        let mut skus: Vec<Sku> = keys
            .iter()
            .filter_map(|k| self.keys.sku_of_rating_key(k))
            .collect();
        skus.sort();
        skus.dedup();
        Ok(skus)
    }

    async fn ping(&self) -> Result<(), IndexError> {
        Ok(self.redis.query::<()>(&redis::cmd("PING")).await?)
    }

    /// One `GET` per product (`groups`).
    async fn product_versions(&self, skus: &[Sku]) -> Result<Vec<ProductVersion>, IndexError> {
        self.versions_of(skus).await
    }
}
