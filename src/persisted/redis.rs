//! Automatic persisted queries in Redis, shared by every server of a deployment: one string
//! key per document, `<prefix>pq:<sha256 hex>`, written with a TTL (`SET … EX`), so the
//! store is bounded by what clients register in a TTL, and each registration is paid for from
//! the client's budget like any request. Each command names one key, so on a Redis Cluster
//! it goes to the node of that key's slot: no command spans two slots.
//!
//! The texts are public (any client may send them), so they are stored as sent.

use std::time::Duration;

use crate::redis::{CallError, KeyPrefix, Need, RedisHandle};

/// The feature the start-up check names for these commands.
const FEATURE: &str = "the automatic persisted queries";

/// The shared store of one deployment.
#[derive(Clone, Debug)]
pub struct RedisStore {
    redis: RedisHandle,
    ttl: Duration,
}

fn key(prefix: &KeyPrefix, hash: &str) -> String {
    prefix.key(format_args!("pq:{hash}"))
}

impl RedisStore {
    /// A store on `redis` whose documents live `ttl` after their last registration.
    pub fn new(redis: RedisHandle, ttl: Duration) -> Self {
        Self { redis, ttl }
    }

    /// The text registered under `hash`, if any.
    pub async fn get(&self, hash: &str) -> Result<Option<String>, CallError> {
        let mut get = ::redis::cmd("GET");
        get.arg(key(self.redis.prefix(), hash));
        self.redis.query(&get).await
    }

    /// Registers `text` under `hash` for the TTL.
    pub async fn set(&self, hash: &str, text: &str) -> Result<(), CallError> {
        let mut set = ::redis::cmd("SET");
        set.arg(key(self.redis.prefix(), hash))
            .arg(text)
            .arg("EX")
            .arg(self.ttl.as_secs().max(1));
        self.redis.query(&set).await
    }

    /// What the store sends, for the start-up check.
    pub fn needs(prefix: &KeyPrefix) -> Vec<Need> {
        let key = key(prefix, &"0".repeat(64));
        vec![
            Need::new(FEATURE, ["GET", key.as_str()]),
            Need::new(FEATURE, ["SET", key.as_str(), "{ a }", "EX", "1"]),
        ]
    }
}
