//! The Redis adapter of the page index: five sorted sets per product, one per rating
//! (DESIGN §3, and the layout in `keys`): member = the comment id's 16 bytes, score =
//! `createdAt` in epoch milliseconds. The product's whole list is the union of the five.
//!
//! Redis orders equal scores by member bytewise, and a comment id's bytes sort like the id
//! (`CommentId`), so `ZRANGE` rank order is exactly [`SortKey`] order: the order invariant that
//! makes this adapter answer every call like the embedded [`MemoryIndex`]
//! (`crate::index::memory::MemoryIndex`), which the contract tests check.
//!
//! This module owns the wire: key names and members (`keys`), the Lua scripts, the connection
//! and its error classification (`connection`). It knows nothing of DynamoDB or GraphQL. It
//! works with one Redis node or a Redis Cluster; every call touches one product's keys only,
//! and they share one hash slot.
//!
//! [`MemoryIndex`]: crate::index::memory::MemoryIndex

pub(crate) mod connection;
mod keys;
mod scan;
mod tls;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use self::connection::{Connection, LuaScript, classify};
use self::keys::{Keys, member, sort_key_of};
pub use self::tls::{CaFileError, TrustedCa};
use super::{Held, IndexError, PageIndex, Positions, Repair, Stale, TOMBSTONE_TTL};
use crate::domain::{
    AnchorRank, ChangeEvent, IndexEntry, Numbering, Order, PageLayout, PageLinks, Rating,
    RatingSet, Sku, SortKey,
};

/// Members read per `ZRANGE` (and fields per `HSCAN`) by [`RedisIndex::entries`]: big enough
/// to be fast, small enough that one reply never nears the response timeout.
const READ_CHUNK: isize = 10_000;
/// Changes per call of `apply.lua`: a script blocks Redis while it runs, and 256 changes take
/// about a millisecond or two.
const APPLY_CHUNK: usize = 256;

/// Where the index lives and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis[s]://[user:password@]host:port[/db]` URLs: one for a single node, the seed nodes
    /// for a Cluster. `rediss://` is TLS, checked against the system roots or [`Self::ca`].
    pub urls: Vec<String>,
    /// The CA a `rediss://` server's certificate must chain to, instead of the system roots
    /// (a private CA, or a self-signed one in tests).
    pub ca: Option<TrustedCa>,
    /// Prepended to every key, so several deployments or test runs can share one Redis.
    pub prefix: String,
    /// Talk to a Redis Cluster (through any of `urls`) rather than a single node.
    pub cluster: bool,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// How long one request (command, pipeline or script) may wait for its reply.
    pub response_timeout: Duration,
    /// How long a deletion's tombstone is kept ([`TOMBSTONE_TTL`]).
    pub tombstone_ttl: Duration,
}

impl RedisConfig {
    /// A configuration from the `--redis-url` value: one URL for a single node, or several
    /// comma-separated URLs, which name the seed nodes of a Redis Cluster.
    pub fn new(urls: &str, prefix: &str) -> Self {
        let urls: Vec<String> = urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        Self {
            cluster: urls.len() > 1,
            urls,
            ca: None,
            prefix: prefix.to_owned(),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(2),
            tombstone_ttl: TOMBSTONE_TTL,
        }
    }

    /// The same, trusting `ca` (instead of the system roots) for `rediss://` URLs.
    pub fn with_ca(mut self, ca: TrustedCa) -> Self {
        self.ca = Some(ca);
        self
    }

    /// The same, forcing Cluster mode (a cluster reached through a single seed URL).
    pub fn with_cluster(mut self, cluster: bool) -> Self {
        self.cluster = cluster;
        self
    }
}

/// The page index in Redis. Cloning shares the connection.
#[derive(Clone, Debug)]
pub struct RedisIndex {
    conn: Connection,
    keys: Keys,
    key_at: LuaScript,
    positions: LuaScript,
    apply: LuaScript,
    tombstone_ttl: Duration,
}

impl RedisIndex {
    /// Builds the index without talking to Redis yet.
    ///
    /// Construction fails only on a bad configuration (no URL, a malformed URL), never
    /// because Redis is down: requests then fail with [`IndexError::Unavailable`] until Redis
    /// is back, and the connection recovers by itself.
    pub async fn connect(config: RedisConfig) -> Result<Self, IndexError> {
        if config.urls.is_empty() {
            return Err(IndexError::Internal("no Redis URL configured".into()));
        }
        let conn = Connection::open(&config)?;
        Ok(Self {
            conn,
            keys: Keys::new(&config.prefix),
            key_at: LuaScript::new(concat!(
                include_str!("redis/select.lua"),
                include_str!("redis/key_at.lua")
            )),
            positions: LuaScript::new(concat!(
                include_str!("redis/select.lua"),
                include_str!("redis/positions.lua")
            )),
            apply: LuaScript::new(include_str!("redis/apply.lua")),
            tombstone_ttl: config.tombstone_ttl,
        })
    }

    /// A handle on this index's connection (clones share its sockets), for the rate limiter's
    /// script, so a server keeps one connection to Redis.
    pub(crate) fn connection(&self) -> Connection {
        self.conn.clone()
    }

    /// The keys `key_at` and `count` read for `ratings`: the selected rating sets (all five for
    /// the unfiltered list).
    fn sets(&self, sku: &Sku, ratings: RatingSet) -> Vec<String> {
        ratings.iter().map(|r| self.keys.rating(sku, r)).collect()
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
                    let mut call = self.apply.call();
                    for key in self.keys.ratings(sku) {
                        call.key(key);
                    }
                    call.key(self.keys.versions(sku));
                    call.arg(ttl_ms);
                    for (_, change) in chunk {
                        call.key(self.keys.tombstone(sku, change.key.id()));
                        let (expected, expected_version) = held_arg(change.expected);
                        call.arg(change.kind)
                            .arg(member(&change.key))
                            .arg(change.key.millis())
                            .arg(change.rating.map_or(0, Rating::get))
                            .arg(change.version)
                            .arg(expected)
                            .arg(expected_version);
                    }
                    let reply: Vec<(usize, String, u64)> = call
                        .invoke(&mut self.conn.clone())
                        .await
                        .map_err(classify)?;
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
        let mut conn = self.conn.clone();
        let key = self.keys.versions(sku);
        let mut versions = HashMap::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, fields): (u64, Vec<(Vec<u8>, u64)>) = redis::cmd("HSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("COUNT")
                .arg(READ_CHUNK)
                .query_async(&mut conn)
                .await
                .map_err(classify)?;
            versions.extend(fields);
            if next == 0 {
                return Ok(versions);
            }
            cursor = next;
        }
    }

    /// All members of `key` with their scores, ascending, read in chunks.
    async fn read_all(&self, key: &str) -> Result<Vec<(Vec<u8>, f64)>, IndexError> {
        let mut conn = self.conn.clone();
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let chunk: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
                .arg(key)
                .arg(start)
                .arg(start + READ_CHUNK - 1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .map_err(classify)?;
            let done = (chunk.len() as isize) < READ_CHUNK;
            out.extend(chunk);
            if done {
                return Ok(out);
            }
            start += READ_CHUNK;
        }
    }
}

/// What the first request at start-up said.
#[derive(Debug)]
pub enum FirstContact {
    /// Redis answered: the URL, TLS and credentials work.
    Answered,
    /// Redis did not answer (refused, timed out, loading): the connection recovers by itself
    /// once it is back, so this is no reason not to start.
    Unreachable(IndexError),
}

impl RedisIndex {
    /// Sends one `PING`, so settings that can never work (plaintext to a TLS port, a server
    /// certificate not trusted, a wrong password, an ACL user without `PING`) stop a command at
    /// start-up, naming what to fix, instead of degrading every request to `INDEX_UNAVAILABLE`;
    /// while a Redis that is merely down does not (`Ok(FirstContact::Unreachable)`).
    pub async fn first_contact(&self) -> Result<FirstContact, IndexError> {
        let err = match redis::cmd("PING")
            .query_async::<()>(&mut self.conn.clone())
            .await
        {
            Ok(()) => return Ok(FirstContact::Answered),
            Err(err) => err,
        };
        match self.conn.settings_problem(&err).await {
            Some(problem) => Err(IndexError::Internal(problem.into())),
            None => Ok(FirstContact::Unreachable(classify(err))),
        }
    }
}

/// Stream checkpoints of the sync worker (DESIGN §3 `sync:<table>:<shardId>`). They live
/// beside the index they describe, so a checkpoint never outlives (or predates) its index
/// when a deployment's Redis is replaced.
impl RedisIndex {
    /// The last sequence number applied from `shard` of `table`'s stream, if any.
    pub async fn load_checkpoint(
        &self,
        table: &str,
        shard: &str,
    ) -> Result<Option<String>, IndexError> {
        redis::cmd("GET")
            .arg(self.keys.sync_checkpoint(table, shard))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(classify)
    }

    /// Records that everything up to `sequence` of `shard` has been applied.
    pub async fn save_checkpoint(
        &self,
        table: &str,
        shard: &str,
        sequence: &str,
    ) -> Result<(), IndexError> {
        redis::cmd("SET")
            .arg(self.keys.sync_checkpoint(table, shard))
            .arg(sequence)
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(classify)
    }
}

/// A reply of an unexpected shape: a bug or a foreign server, never an outage.
pub(super) fn parsing(err: redis::ParsingError) -> IndexError {
    classify(err.into())
}

/// One change for `apply.lua`: its kind (`u`, `d`, `r`, `x`), the comment, the version it
/// leaves, and for a repair what the index must still hold.
struct Change<'a> {
    kind: &'static str,
    sku: &'a Sku,
    key: SortKey,
    rating: Option<Rating>,
    version: u64,
    expected: Held,
}

/// `apply.lua`'s spelling of a held state: `n`, `l` or `d`, and its version.
fn held_arg(held: Held) -> (&'static str, u64) {
    match held {
        Held::Nothing => ("n", 0),
        Held::Live { version } => ("l", version),
        Held::Deleted { version } => ("d", version),
    }
}

fn held_of(state: &str, version: u64) -> Result<Held, IndexError> {
    match state {
        "n" => Ok(Held::Nothing),
        "l" => Ok(Held::Live { version }),
        "d" => Ok(Held::Deleted { version }),
        other => Err(IndexError::Internal(
            format!("apply.lua answered the unknown state `{other}`").into(),
        )),
    }
}

/// `positions.lua`'s reply: `{total, newer, older, (page, member, score)*}`, with `-1` for
/// the ranks of no anchor. `None` for any other shape.
fn positions_of(reply: &[redis::Value]) -> Option<Positions> {
    let int = |v: &redis::Value| match v {
        redis::Value::Int(i) => Some(*i),
        _ => None,
    };
    let [total, newer, older, bounds @ ..] = reply else {
        return None;
    };
    let total = u64::try_from(int(total)?).ok()?;
    let anchor = match (int(newer)?, int(older)?) {
        (-1, -1) => None,
        (newer, older) => Some(AnchorRank {
            newer: u64::try_from(newer).ok()?,
            older: u64::try_from(older).ok()?,
        }),
    };
    let mut positions = Positions {
        total,
        anchor,
        ..Positions::default()
    };
    for bound in bounds.chunks(3) {
        let [
            page,
            redis::Value::BulkString(member),
            redis::Value::BulkString(score),
        ] = bound
        else {
            return None;
        };
        let page = u64::try_from(int(page)?).ok()?;
        let score: f64 = std::str::from_utf8(score).ok()?.parse().ok()?;
        positions.bounds.insert(page, sort_key(member, score).ok()?);
    }
    Some(positions)
}

/// A reply Redis gave that no key this adapter writes could have produced.
#[derive(Debug, thiserror::Error)]
enum WireError {
    #[error("index member `{0:02x?}` is not a comment id")]
    Member(Vec<u8>),
    #[error("index score `{0}` is not a millisecond timestamp")]
    Score(String),
}

/// The sort key a `(member, score)` pair stands for ([`sort_key_of`]). Scores are integer
/// milliseconds below 2^53, so the `f64` Redis keeps them in is exact.
fn sort_key(member: &[u8], score: f64) -> Result<SortKey, IndexError> {
    if !(score.is_finite() && score >= 0.0 && score.fract() == 0.0) {
        return Err(IndexError::Internal(Box::new(WireError::Score(
            score.to_string(),
        ))));
    }
    sort_key_of(member, score as u64)
        .ok_or_else(|| IndexError::Internal(Box::new(WireError::Member(member.to_owned()))))
}

impl PageIndex for RedisIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        let mut pipe = redis::pipe();
        for key in self.sets(sku, ratings) {
            pipe.zcard(key);
        }
        let counts: Vec<u64> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(classify)?;
        Ok(counts.iter().sum())
    }

    async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], IndexError> {
        let mut pipe = redis::pipe();
        for key in self.sets(sku, RatingSet::ALL) {
            pipe.zcard(key);
        }
        let counts: Vec<u64> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(classify)?;
        <[u64; 5]>::try_from(counts)
            .map_err(|c| IndexError::Internal(format!("{} counts for 5 ratings", c.len()).into()))
    }

    async fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Result<Option<SortKey>, IndexError> {
        let mut call = self.key_at.call();
        for key in self.sets(sku, ratings) {
            call.key(key);
        }
        call.arg(match order {
            Order::NewestFirst => "desc",
            Order::OldestFirst => "asc",
        });
        call.arg(rank);
        match after {
            Some(after) => call.arg(after.millis()).arg(member(&after)),
            None => call.arg("").arg(""),
        };
        let found: Option<(Vec<u8>, f64)> = call
            .invoke(&mut self.conn.clone())
            .await
            .map_err(classify)?;
        found
            .map(|(member, score)| sort_key(&member, score))
            .transpose()
    }

    async fn positions(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        anchor: Option<SortKey>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        let mut call = self.positions.call();
        for key in self.sets(sku, ratings) {
            call.key(key);
        }
        match anchor {
            Some(anchor) => call.arg(anchor.millis()).arg(member(&anchor)),
            None => call.arg("").arg(""),
        };
        call.arg(layout.size).arg(match layout.numbering {
            Numbering::FromNewest => "newest",
            Numbering::FromOldest => "oldest",
        });
        match layout.links {
            PageLinks::None => call.arg("none").arg(0),
            PageLinks::Current => call.arg("current").arg(0),
            PageLinks::Pager { around } => call.arg("pager").arg(around),
        };
        let reply: Vec<redis::Value> = call
            .invoke(&mut self.conn.clone())
            .await
            .map_err(classify)?;
        positions_of(&reply)
            .ok_or_else(|| IndexError::Internal(format!("positions.lua answered {reply:?}").into()))
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let changes: Vec<Change<'_>> = events
            .iter()
            .map(|event| match event {
                ChangeEvent::Upsert { new, .. } => Change {
                    kind: "u",
                    sku: &new.sku,
                    key: new.key,
                    rating: Some(new.rating),
                    version: new.version,
                    expected: Held::Nothing,
                },
                ChangeEvent::Remove { old, version } => Change {
                    kind: "d",
                    sku: &old.sku,
                    key: old.key,
                    rating: None,
                    version: *version,
                    expected: Held::Nothing,
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
        let versions = self.versions(sku).await?;
        let mut entries = Vec::new();
        for rating in Rating::ALL {
            for (member, score) in self.read_all(&self.keys.rating(sku, rating)).await? {
                let version = versions.get(&member).copied().unwrap_or(1);
                entries.push(IndexEntry {
                    sku: sku.clone(),
                    key: sort_key(&member, score)?,
                    rating,
                    version,
                });
            }
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.key));
        Ok(entries)
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        let keys = scan::matching_keys(&self.conn, &self.keys.rating_pattern()).await?;
        let mut skus: Vec<Sku> = keys
            .iter()
            .filter_map(|k| self.keys.sku_of_rating_key(k))
            .collect();
        skus.sort();
        skus.dedup();
        Ok(skus)
    }

    async fn ping(&self) -> Result<(), IndexError> {
        redis::cmd("PING")
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(classify)
    }
}
