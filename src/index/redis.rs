//! The Redis adapter of the page index: a sorted set per product and one per product and
//! rating (DESIGN §3), member = comment id, score = `createdAt` in epoch milliseconds.
//!
//! Redis orders equal scores by member bytewise, and a comment id's string sorts like the id
//! (`CommentId`), so `ZRANGE`/`ZREVRANGE` rank order is exactly [`SortKey`] order: the order
//! invariant that makes this adapter answer every call like the embedded [`MemoryIndex`]
//! (`crate::index::memory::MemoryIndex`), which the contract tests check.
//!
//! This module owns the wire: key names (`keys`), the Lua scripts, the connection and its
//! error classification (`connection`). It knows nothing of DynamoDB or GraphQL. It works
//! with one Redis node or a Redis Cluster; every call touches one product's keys only, and
//! they share one hash slot.
//!
//! [`MemoryIndex`]: crate::index::memory::MemoryIndex

mod connection;
mod keys;
mod scan;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use redis::{Cmd, Pipeline, Script};

use self::connection::{Connection, classify};
use self::keys::Keys;
use super::{IndexError, PageIndex};
use crate::domain::{ChangeEvent, IndexEntry, Order, Rating, RatingSet, Sku, SortKey};

/// Members read per `ZRANGE` by [`RedisIndex::entries`]: big enough to be fast, small enough
/// that one reply never nears the response timeout.
const READ_CHUNK: isize = 10_000;
/// Entries written per pipeline by [`RedisIndex::stage`].
const STAGE_CHUNK: usize = 5_000;
/// Products committed concurrently by [`RedisIndex::commit`].
const COMMIT_CONCURRENCY: usize = 8;

/// Where the index lives and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port[/db]` URLs: one for a single node, the seed nodes for a Cluster.
    pub urls: Vec<String>,
    /// Prepended to every key, so several deployments or test runs can share one Redis.
    pub prefix: String,
    /// Talk to a Redis Cluster (through any of `urls`) rather than a single node.
    pub cluster: bool,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// How long one request (command, pipeline or script) may wait for its reply.
    pub response_timeout: Duration,
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
            prefix: prefix.to_owned(),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(2),
        }
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
    key_at: Script,
    commit: Script,
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
        let conn = Connection::open(
            &config.urls,
            config.cluster,
            config.connect_timeout,
            config.response_timeout,
        )?;
        Ok(Self {
            conn,
            keys: Keys::new(&config.prefix),
            key_at: Script::new(include_str!("redis/key_at.lua")),
            commit: Script::new(include_str!("redis/commit.lua")),
        })
    }

    /// The keys `key_at` and `count` read for `ratings`: the product set when all five are
    /// selected (one `ZCARD`, one `ZRANGE`), otherwise the selected rating sets.
    fn sets(&self, sku: &Sku, ratings: RatingSet) -> Vec<String> {
        if ratings.is_all() {
            vec![self.keys.product(sku)]
        } else {
            ratings.iter().map(|r| self.keys.rating(sku, r)).collect()
        }
    }

    /// Redis commands that make `events` true, each tagged with the product whose keys it
    /// touches.
    ///
    /// An upsert also removes the member from the product's four other rating sets, and a
    /// remove clears all five, so a replay without (or with a stale) old image still leaves
    /// each comment in exactly one rating set, as the embedded index does.
    ///
    /// Members are comment ids, so a remove or a moved-away old image deletes the id whatever
    /// score it had; the embedded index matches the full sort key. The two differ only for an
    /// event whose image disagrees with the index on `createdAt`, which never changes.
    fn change_commands(&self, events: &[ChangeEvent]) -> Vec<(Sku, Cmd)> {
        let mut cmds = Vec::new();
        let remove = |cmds: &mut Vec<(Sku, Cmd)>, entry: &IndexEntry, keep: Option<Rating>| {
            let member = entry.key.id().to_string();
            if keep.is_none() {
                cmds.push((
                    entry.sku.clone(),
                    zrem(self.keys.product(&entry.sku), &member),
                ));
            }
            for rating in Rating::ALL.into_iter().filter(|r| Some(*r) != keep) {
                let key = self.keys.rating(&entry.sku, rating);
                cmds.push((entry.sku.clone(), zrem(key, &member)));
            }
        };
        for event in events {
            match event {
                ChangeEvent::Upsert { old, new } => {
                    if let Some(old) = old
                        .as_ref()
                        .filter(|o| o.sku != new.sku || o.key != new.key)
                    {
                        remove(&mut cmds, old, None);
                    }
                    remove(&mut cmds, new, Some(new.rating));
                    let (millis, member) = (new.key.millis(), new.key.id().to_string());
                    for key in [
                        self.keys.product(&new.sku),
                        self.keys.rating(&new.sku, new.rating),
                    ] {
                        let mut cmd = redis::cmd("ZADD");
                        cmd.arg(key).arg(millis).arg(&member);
                        cmds.push((new.sku.clone(), cmd));
                    }
                }
                ChangeEvent::Remove { old } => remove(&mut cmds, old, None),
            }
        }
        cmds
    }

    /// Runs `cmds` as MULTI/EXEC transactions, in order: one transaction (one round trip) on a
    /// single node; on a Cluster one per product, concurrently, since a transaction cannot span
    /// hash slots. Splitting by product keeps the meaning, because commands on different
    /// products touch disjoint keys.
    async fn transact(&self, cmds: Vec<(Sku, Cmd)>) -> Result<(), IndexError> {
        if cmds.is_empty() {
            return Ok(());
        }
        let mut groups: BTreeMap<Option<Sku>, Pipeline> = BTreeMap::new();
        let cluster = matches!(self.conn, Connection::Cluster(_));
        for (sku, cmd) in cmds {
            let group = if cluster { Some(sku) } else { None };
            groups
                .entry(group)
                .or_insert_with(|| {
                    let mut pipe = redis::pipe();
                    pipe.atomic();
                    pipe
                })
                .add_command(cmd)
                .ignore();
        }
        futures::future::try_join_all(groups.into_values().map(|pipe| {
            let mut conn = self.conn.clone();
            async move { pipe.exec_async(&mut conn).await.map_err(classify) }
        }))
        .await?;
        Ok(())
    }

    /// All members of `key` with their scores, ascending, read in chunks.
    async fn read_all(&self, key: &str) -> Result<Vec<(String, f64)>, IndexError> {
        let mut conn = self.conn.clone();
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let chunk: Vec<(String, f64)> = redis::cmd("ZRANGE")
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

    /// Swaps rebuild `run`'s staged sets of `sku` in, in one atomic script (`commit.lua`).
    async fn commit_product(&self, run: &str, sku: &Sku) -> Result<(), IndexError> {
        let mut call = self.commit.prepare_invoke();
        call.key(self.keys.product(sku));
        for rating in Rating::ALL {
            call.key(self.keys.rating(sku, rating));
        }
        call.key(self.keys.staged_product(run, sku));
        for rating in Rating::ALL {
            call.key(self.keys.staged_rating(run, sku, rating));
        }
        call.invoke_async::<()>(&mut self.conn.clone())
            .await
            .map_err(classify)
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

fn zrem(key: String, member: &str) -> Cmd {
    let mut cmd = redis::cmd("ZREM");
    cmd.arg(key).arg(member);
    cmd
}

/// A reply Redis gave that no key this adapter writes could have produced.
#[derive(Debug, thiserror::Error)]
enum WireError {
    #[error("index member `{0}` is not a comment id")]
    Member(String),
    #[error("index score `{0}` is not a millisecond timestamp")]
    Score(String),
}

/// The sort key a `(member, score)` pair stands for (`SortKey::new(score, member)`). Scores
/// are integer milliseconds below 2^53, so the `f64` Redis keeps them in is exact.
fn sort_key(member: &str, score: f64) -> Result<SortKey, IndexError> {
    let bad_score = || IndexError::Internal(Box::new(WireError::Score(score.to_string())));
    if !(score.is_finite() && score >= 0.0 && score.fract() == 0.0) {
        return Err(bad_score());
    }
    let id = member
        .parse()
        .map_err(|_| IndexError::Internal(Box::new(WireError::Member(member.to_owned()))))?;
    SortKey::new(score as u64, id).map_err(|_| bad_score())
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

    async fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Result<Option<SortKey>, IndexError> {
        let mut call = self.key_at.prepare_invoke();
        for key in self.sets(sku, ratings) {
            call.key(key);
        }
        call.arg(match order {
            Order::NewestFirst => "desc",
            Order::OldestFirst => "asc",
        });
        call.arg(rank);
        match after {
            Some(after) => call.arg(after.millis()).arg(after.id().to_string()),
            None => call.arg("").arg(""),
        };
        let found: Option<(String, f64)> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(classify)?;
        found
            .map(|(member, score)| sort_key(&member, score))
            .transpose()
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<(), IndexError> {
        self.transact(self.change_commands(events)).await
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        let mut entries = Vec::new();
        for rating in Rating::ALL {
            for (member, score) in self.read_all(&self.keys.rating(sku, rating)).await? {
                let key = sort_key(&member, score)?;
                entries.push(IndexEntry {
                    sku: sku.clone(),
                    key,
                    rating,
                });
            }
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.key));
        Ok(entries)
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        let keys = scan::matching_keys(&self.conn, &self.keys.product_pattern()).await?;
        let mut skus: Vec<Sku> = keys
            .iter()
            .filter_map(|k| self.keys.sku_of_product_key(k))
            .collect();
        skus.sort();
        skus.dedup();
        Ok(skus)
    }

    async fn stage(&self, run: &str, entries: &[IndexEntry]) -> Result<(), IndexError> {
        for chunk in entries.chunks(STAGE_CHUNK) {
            // One ZADD per key and chunk, with all its (score, member) pairs.
            let mut batches: BTreeMap<(Sku, String), Vec<(u64, String)>> = BTreeMap::new();
            for entry in chunk {
                let item = (entry.key.millis(), entry.key.id().to_string());
                for key in [
                    self.keys.staged_product(run, &entry.sku),
                    self.keys.staged_rating(run, &entry.sku, entry.rating),
                ] {
                    batches
                        .entry((entry.sku.clone(), key))
                        .or_default()
                        .push(item.clone());
                }
            }
            let cmds = batches
                .into_iter()
                .map(|((sku, key), items)| {
                    let mut cmd = redis::cmd("ZADD");
                    cmd.arg(key).arg(items);
                    (sku, cmd)
                })
                .collect();
            self.transact(cmds).await?;
        }
        Ok(())
    }

    async fn commit(&self, run: &str, skus: &[Sku]) -> Result<(), IndexError> {
        // Collected first: a stream holding the closure trips the compiler's `Send` inference.
        let calls: Vec<_> = skus
            .iter()
            .map(|sku| self.commit_product(run, sku))
            .collect();
        futures::stream::iter(calls)
            .buffer_unordered(COMMIT_CONCURRENCY)
            .try_collect::<()>()
            .await
    }

    async fn ping(&self) -> Result<(), IndexError> {
        redis::cmd("PING")
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(classify)
    }
}
