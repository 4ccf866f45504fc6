//! The `PageIndex` contract: one list of behaviours, written once as generic functions and run
//! against every backend (the embedded `MemoryIndex`, `RedisIndex` on a real `redis-server`,
//! and on a real six-node Redis Cluster), each compared with a model: a sorted `Vec` of sort
//! keys (`model`). The behaviours are grouped by what they ask of the index, each group run with
//! [`index_contract!`]. Redis-only checks are in `backends::redis_index`.
//!
//! Every dataset has timestamp ties, because the order invariant of `docs/architecture.md` is only
//! tested when equal scores must be ordered by id.

use std::time::Duration;

use dynapage::index::memory::MemoryIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;

use crate::support::redis_cluster::shared_cluster_urls;
use crate::support::redis_server::{shared_url, unique_prefix};

/// [`contract_suite!`] over every `PageIndex` backend, each a fresh index (a key prefix of its
/// own on Redis) whose tombstones live [`TOMBSTONE_TTL`]: a test per backend and behaviour.
macro_rules! index_contract {
    ($($behaviour:ident),+ $(,)?) => {
        use crate::contracts::index::{memory_index, redis_cluster_index, redis_index};

        contract_suite! {
            backends: {
                memory_index => memory_index(),
                redis_index => redis_index(),
                redis_cluster_index => redis_cluster_index(),
            },
            behaviours: [$($behaviour),+],
        }
    };
}

mod authors;
mod changes;
mod counts;
mod grouped;
mod listings;
mod model;
mod pages;
mod queues;
mod ranks;
mod withdrawals;

/// The tombstone lifetime of the indexes under test: short, so that its end can be watched,
/// and long enough that no other behaviour outlives a tombstone it relies on.
const TOMBSTONE_TTL: Duration = Duration::from_secs(3);

/// The embedded index.
async fn memory_index() -> MemoryIndex {
    MemoryIndex::new().with_tombstone_ttl(TOMBSTONE_TTL)
}

/// A Redis index on the shared single-node server, under a prefix of its own.
async fn redis_index() -> RedisIndex {
    RedisIndex::connect(RedisConfig::new(&shared_url(), &unique_prefix()))
        .await
        .expect("a Redis index from a valid configuration")
        .with_tombstone_ttl(TOMBSTONE_TTL)
}

/// A Redis index on the shared six-node Cluster, under a prefix of its own.
async fn redis_cluster_index() -> RedisIndex {
    RedisIndex::connect(RedisConfig::new(&shared_cluster_urls(), &unique_prefix()))
        .await
        .expect("a Redis Cluster index from a valid configuration")
        .with_tombstone_ttl(TOMBSTONE_TTL)
}
