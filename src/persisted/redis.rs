//! Automatic persisted queries in Redis, shared by every server of a deployment, in a store
//! bounded in bytes (`--persisted-queries-redis-bytes`):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<prefix>pq:{apq}` | hash | the texts, by their SHA-256 |
//! | `<prefix>pq:{apq}:at` | sorted set | when each was last registered (Redis's clock, ms) |
//! | `<prefix>pq:{apq}:bytes` | string | the bytes the store holds, as `register.lua` counts them |
//!
//! Why bounded, and not one key per text with a TTL as before: every registration was a key
//! that lived a day, so one connection wrote 50 MB into Redis in 2.8 s (issue 42, item 4), and
//! under a `maxmemory` policy that evicts, Redis would have made room by evicting the page
//! index, the budgets and the change log of every server. Now a registration drops texts older
//! than `--persisted-queries-ttl-secs`, then the least recently registered until it fits, in
//! one script call; each registration is also paid for and capped per client
//! (`crate::persisted`). The three keys share the hash tag `{apq}`, so on a Redis Cluster they
//! live in one slot and the script touches only it.
//!
//! The texts are public (any client may send them), so they are stored as sent.

use std::time::Duration;

use crate::redis::{CallError, KeyPrefix, LuaScript, Need, RedisHandle};

/// The feature the start-up check names for these commands.
const FEATURE: &str = "the automatic persisted queries";
const INSIDE: &str = "the automatic persisted queries, inside register.lua";

/// `register.lua`: one registration, within the bound.
const REGISTER: &str = include_str!("register.lua");

/// Bytes counted per text beyond its text and hash: Redis's own keeping of a hash field and a
/// sorted-set member (dict entries, skiplist node, allocator rounding), about 100 bytes for
/// short values on Redis 7 (`MEMORY USAGE` of the two keys, divided by their entries).
pub const ENTRY_OVERHEAD: usize = 128;

/// The shared store of one deployment.
#[derive(Clone, Debug)]
pub struct RedisStore {
    redis: RedisHandle,
    ttl: Duration,
    max_bytes: usize,
    script: LuaScript,
}

/// The store's keys: its texts, their times and its byte count.
fn keys(prefix: &KeyPrefix) -> [String; 3] {
    [
        prefix.key("pq:{apq}"),
        prefix.key("pq:{apq}:at"),
        prefix.key("pq:{apq}:bytes"),
    ]
}

/// What a registration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The text is now in the store.
    Added,
    /// It was there; its time was renewed.
    Renewed,
    /// It is larger than the whole store may hold.
    TooLarge,
}

impl RedisStore {
    /// A store on `redis` whose texts live `ttl` after their last registration, holding at most
    /// `max_bytes` (texts, hashes and [`ENTRY_OVERHEAD`] each).
    pub fn new(redis: RedisHandle, ttl: Duration, max_bytes: usize) -> Self {
        Self {
            redis,
            ttl,
            max_bytes,
            script: LuaScript::new(REGISTER),
        }
    }

    /// The text registered under `hash`, if any.
    pub async fn get(&self, hash: &str) -> Result<Option<String>, CallError> {
        let [texts, ..] = keys(self.redis.prefix());
        let mut get = ::redis::cmd("HGET");
        get.arg(texts).arg(hash);
        self.redis.query(&get).await
    }

    /// Registers `text` under `hash`, within the store's bound.
    pub async fn set(&self, hash: &str, text: &str) -> Result<Stored, CallError> {
        let mut call = self.script.call();
        for key in keys(self.redis.prefix()) {
            call.key(key);
        }
        call.arg(hash)
            .arg(text)
            .arg(self.ttl.as_millis().max(1) as u64)
            .arg(self.max_bytes)
            .arg(ENTRY_OVERHEAD);
        Ok(match call.invoke::<i64>(&self.redis).await? {
            1 => Stored::Added,
            0 => Stored::Renewed,
            _ => Stored::TooLarge,
        })
    }

    /// What the store sends, for the start-up check: `HGET`, the script, and what the script
    /// calls inside Redis.
    pub fn needs(prefix: &KeyPrefix) -> Vec<Need> {
        let keys = keys(prefix);
        let [texts, at, held] = keys.clone();
        let hash = "0".repeat(64);
        let mut needs = vec![Need::new(FEATURE, ["HGET", texts.as_str(), hash.as_str()])];
        let args = [hash.as_str(), "{ a }", "1", "1", "1"];
        needs.extend(LuaScript::new(REGISTER).needs(FEATURE, &keys, &args));
        needs.extend([
            Need::new(INSIDE, ["TIME"]),
            Need::new(INSIDE, ["HSTRLEN", texts.as_str(), &hash]),
            Need::new(INSIDE, ["HDEL", texts.as_str(), &hash]),
            Need::new(INSIDE, ["HEXISTS", texts.as_str(), &hash]),
            Need::new(INSIDE, ["HSET", texts.as_str(), &hash, "{ a }"]),
            Need::new(INSIDE, ["ZREM", at.as_str(), &hash]),
            Need::new(INSIDE, ["ZADD", at.as_str(), "1", &hash]),
            Need::new(INSIDE, ["ZRANGE", at.as_str(), "0", "0"]),
            Need::new(INSIDE, ["ZRANGEBYSCORE", at.as_str(), "-inf", "1"]),
            Need::new(INSIDE, ["GET", held.as_str()]),
            Need::new(INSIDE, ["SET", held.as_str(), "0"]),
            Need::new(INSIDE, ["INCRBY", held.as_str(), "1"]),
            Need::new(INSIDE, ["DECRBY", held.as_str(), "1"]),
        ]);
        needs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_the_script_calls_is_declared_for_the_start_up_check() {
        let declared: std::collections::BTreeSet<String> = RedisStore::needs(&KeyPrefix::new("p:"))
            .iter()
            .filter(|need| need.feature() == INSIDE)
            .map(|need| need.command()[0].clone())
            .collect();
        assert_eq!(declared, crate::redis::commands_called(REGISTER));
    }

    #[test]
    fn the_keys_share_one_cluster_slot_under_the_prefix() {
        let keys = keys(&KeyPrefix::new("shop:"));
        assert_eq!(keys[0], "shop:pq:{apq}");
        for key in &keys {
            assert!(key.starts_with("shop:pq:{apq}"), "{key}");
        }
    }
}
