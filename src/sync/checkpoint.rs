//! Stream checkpoints: how far the stream consumer has applied each shard of a table's stream.
//!
//! A checkpoint is written only after the batch it ends has been applied to the index, so a
//! crash replays at most one batch (applying is idempotent) and never skips one. With the Redis
//! index the checkpoints live in Redis beside it (`<prefix>sync:<table>:<shardId>`, spelled by
//! the Redis adapter); with the embedded index they live in this process, as the index does,
//! and both start empty together.
//!
//! This module knows nothing of Redis commands or the streams SDK.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::index::redis::RedisIndex;
use crate::index::{AnyIndex, IndexError};

/// Where shard positions are kept. Cloning shares them.
#[derive(Clone, Debug)]
pub enum Checkpoints {
    /// In this process, for the embedded index.
    Memory(Arc<Mutex<HashMap<String, String>>>),
    /// In the Redis that holds the index, under the table's name.
    Redis { index: RedisIndex, table: String },
}

impl Checkpoints {
    /// Checkpoints that live as long as this process.
    pub fn in_memory() -> Self {
        Self::Memory(Arc::default())
    }

    /// The checkpoints that belong with `index` for `table`'s stream.
    pub fn for_index(index: &AnyIndex, table: &str) -> Self {
        match index {
            AnyIndex::Memory(_) => Self::in_memory(),
            AnyIndex::Redis(redis) => Self::Redis {
                index: redis.clone(),
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
            Self::Redis { index, table } => index.load_checkpoint(table, shard).await,
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
            Self::Redis { index, table } => index.save_checkpoint(table, shard, sequence).await,
        }
    }
}
