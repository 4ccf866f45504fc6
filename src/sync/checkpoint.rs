//! Stream checkpoints: how far the stream consumer has applied each shard of a table's stream.
//!
//! A checkpoint is written only after the batch it ends has been applied to the index, so a
//! crash replays at most one batch (applying is idempotent) and never skips one. With the Redis
//! index the checkpoints live in Redis beside it (`<prefix>sync:<table>:<shardId>`, one string
//! each, spelled here), so a checkpoint never outlives (or predates) its index when a
//! deployment's Redis is replaced; with the embedded index they live in this process, as the
//! index does, and both start empty together.
//!
//! This module owns the checkpoint keys and their two commands (`GET`, `SET`, declared for the
//! start-up check by [`Checkpoints::needs`]) and reaches Redis through `crate::redis`. It knows
//! nothing of the index's keys or the streams SDK. A Redis failure is reported as the index's
//! (`IndexError`): the checkpoints are part of the index's Redis.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::index::IndexError;
use crate::redis::{KeyPrefix, Need, RedisHandle};

/// Where shard positions are kept. Cloning shares them.
#[derive(Clone, Debug)]
pub enum Checkpoints {
    /// In this process, for the embedded index.
    Memory(Arc<Mutex<HashMap<String, String>>>),
    /// In the Redis that holds the index, under the table's name.
    Redis {
        /// The Redis connection, whose prefix the keys go under.
        redis: RedisHandle,
        /// The table whose stream the positions are of.
        table: String,
    },
}

/// `<prefix>sync:<table>:<shardId>`: the last stream sequence number the stream consumer
/// applied from one shard of `table`'s stream.
fn key(prefix: &KeyPrefix, table: &str, shard: &str) -> String {
    prefix.key(format_args!("sync:{table}:{shard}"))
}

impl Checkpoints {
    /// Checkpoints that live as long as this process.
    pub fn in_memory() -> Self {
        Self::Memory(Arc::default())
    }

    /// The checkpoints that belong with the index for `table`'s stream: in `redis`, the Redis
    /// index's, or in this process for the embedded index (`None`).
    pub fn for_index(redis: Option<&RedisHandle>, table: &str) -> Self {
        match redis {
            None => Self::in_memory(),
            Some(redis) => Self::Redis {
                redis: redis.clone(),
                table: table.to_owned(),
            },
        }
    }

    /// The last sequence number applied from `shard`, `None` if the shard was never read.
    pub async fn load(&self, shard: &str) -> Result<Option<String>, IndexError> {
        match self {
            Self::Memory(map) => Ok(map
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(shard)
                .cloned()),
            Self::Redis {
                redis: handle,
                table,
            } => {
                let mut get = redis::cmd("GET");
                get.arg(key(handle.prefix(), table, shard));
                Ok(handle.query(&get).await?)
            }
        }
    }

    /// Records that `shard` has been applied up to and including `sequence`.
    pub async fn save(&self, shard: &str, sequence: &str) -> Result<(), IndexError> {
        match self {
            Self::Memory(map) => {
                map.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(shard.to_owned(), sequence.to_owned());
                Ok(())
            }
            Self::Redis {
                redis: handle,
                table,
            } => {
                let mut set = redis::cmd("SET");
                set.arg(key(handle.prefix(), table, shard)).arg(sequence);
                Ok(handle.query::<()>(&set).await?)
            }
        }
    }

    /// What checkpointing `table`'s stream in Redis sends, for the start-up check.
    pub fn needs(prefix: &KeyPrefix, table: &str) -> Vec<Need> {
        let key = key(prefix, table, "shardId-00000000000000000000-00000000");
        let feature = "the stream consumer's checkpoints";
        vec![
            Need::new(feature, ["GET", key.as_str()]),
            Need::new(feature, ["SET", key.as_str(), "49000000000000000000000000"]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_key_names_the_table_and_the_shard_under_the_prefix() {
        assert_eq!(
            key(&KeyPrefix::new("p:"), "comments", "shardId-0001"),
            "p:sync:comments:shardId-0001"
        );
    }
}
