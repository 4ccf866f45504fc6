//! Redis as every Redis user of the process needs it: the connection (a single node or a
//! Cluster, over TLS or not, as an ACL user or not; `connection`, `tls`), its settings
//! ([`RedisConfig`]), the key prefix ([`KeyPrefix`]), Lua scripts (`script`), finding keys on
//! every node (`scan`), the classification of errors ([`CallError`]), and the start-up check
//! ([`RedisHandle::first_contact`]): the settings work, and the configured user may run every
//! command the process declared ([`Need`]).
//!
//! Its users are the page index (`index::redis`), the change log of live comments
//! (`live::redis_log`), the rate limiter (`ratelimit::redis`) and the stream consumer's
//! checkpoints (`sync::checkpoint`). Each spells its own keys and sends its own commands over a
//! [`RedisHandle`], and declares the commands it sends; this module knows none of them, nor
//! pages, budgets or feeds, and imports nothing of the layers above it.

mod acl;
mod check;
mod config;
mod connection;
mod error;
mod need;
mod prefix;
mod scan;
mod script;
mod tls;

use std::collections::HashMap;
use std::sync::Arc;

use redis::cluster_routing::Slot;
use redis::{Cmd, FromRedisValue, IntoConnectionInfo, Pipeline};

pub use self::acl::{AclCheck, AclDenied, Denied};
pub use self::check::{FirstContact, Refused};
pub use self::config::RedisConfig;
use self::connection::Connection;
pub use self::error::CallError;
use self::error::classify;
pub use self::need::{DRYRUN_RULE, Need, own_needs};
pub use self::prefix::KeyPrefix;
#[cfg(test)]
pub(crate) use self::script::commands_called;
pub(crate) use self::script::{LuaScript, ScriptCall};
pub use self::tls::{CaFileError, TrustedCa};

/// The user a URL without `user:` logs in as.
const DEFAULT_USER: &str = "default";

/// One deployment's Redis: a connection, its settings and its key prefix. Cloning shares the
/// connection (its socket or sockets), so a process keeps one, whatever uses it.
#[derive(Clone, Debug)]
pub struct RedisHandle {
    conn: Connection,
    /// Behind one `Arc`: a handle is small to hold (the page index keeps one) and to clone.
    settings: Arc<Settings>,
}

#[derive(Debug)]
struct Settings {
    config: RedisConfig,
    prefix: KeyPrefix,
    /// The ACL user the URLs log in as.
    user: String,
}

impl RedisHandle {
    /// A lazily connected handle: nothing is sent until the first request.
    ///
    /// Fails only on a bad configuration (no URL, a malformed URL or CA), never because Redis
    /// is down: requests then fail with [`CallError::Unavailable`] until Redis is back, and the
    /// connection recovers by itself.
    pub fn open(config: RedisConfig) -> Result<Self, CallError> {
        let Some(first) = config.urls.first() else {
            return Err(CallError::Internal("no Redis URL configured".into()));
        };
        let user = first
            .as_str()
            .into_connection_info()
            .ok()
            .and_then(|info| info.redis_settings().username().map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_USER.to_owned());
        Ok(Self {
            conn: Connection::open(&config)?,
            settings: Arc::new(Settings {
                prefix: KeyPrefix::new(&config.prefix),
                user,
                config,
            }),
        })
    }

    /// A handle with a connection of its own, for a command that blocks (`XREAD BLOCK`), which
    /// would hold up every other request on a shared connection.
    pub fn dedicated(&self) -> Result<Self, CallError> {
        Ok(Self {
            conn: Connection::open(&self.settings.config)?,
            ..self.clone()
        })
    }

    /// The key prefix every key of this deployment starts with (`--redis-prefix`).
    pub fn prefix(&self) -> &KeyPrefix {
        &self.settings.prefix
    }

    /// Whether the handle talks to a Redis Cluster rather than a single node.
    pub fn is_cluster(&self) -> bool {
        self.settings.config.cluster
    }

    /// The ACL user the connection logs in as (`default` when the URL names none).
    pub fn user(&self) -> &str {
        &self.settings.user
    }

    /// A clone of the connection, for one request.
    fn connection(&self) -> Connection {
        self.conn.clone()
    }

    /// Sends `cmd` (to the node holding its key, on a Cluster).
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, CallError> {
        self.reconnecting(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await
            .map_err(classify)
    }

    /// Sends `pipe` in one round trip (its keys must share one Cluster slot).
    pub(crate) async fn query_pipeline<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
    ) -> Result<T, CallError> {
        self.reconnecting(|mut conn| async move { pipe.query_async(&mut conn).await })
            .await
            .map_err(classify)
    }

    /// Sends the commands of every group (`(a key of the group, its commands)`; a group's keys
    /// share one Cluster slot, as a product's do) and answers their replies in the groups'
    /// order: one round trip on a single node; on a Cluster one pipeline per slot, all sent at
    /// once. Why not one pipeline there: a Cluster pipeline whose keys cross slots is refused
    /// (`CrossSlot`), and a page of many products' data crosses them.
    pub(crate) async fn query_groups<T: FromRedisValue>(
        &self,
        groups: &[(String, Vec<Cmd>)],
    ) -> Result<Vec<T>, CallError> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let pipeline = |members: &[usize]| {
            let mut pipe = redis::pipe();
            for cmd in members.iter().flat_map(|&g| &groups[g].1) {
                pipe.add_command(cmd.clone());
            }
            pipe
        };
        if !self.is_cluster() {
            let all: Vec<usize> = (0..groups.len()).collect();
            return self.query_pipeline(&pipeline(&all)).await;
        }
        let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (g, (key, _)) in groups.iter().enumerate() {
            by_slot.entry(Slot::for_key(key)).or_default().push(g);
        }
        let batches: Vec<Vec<usize>> = by_slot.into_values().collect();
        let replies =
            futures::future::try_join_all(batches.iter().map(|members| async move {
                self.query_pipeline::<Vec<T>>(&pipeline(members)).await
            }))
            .await?;
        let mut per_group: Vec<Vec<T>> = groups.iter().map(|_| Vec::new()).collect();
        for (members, replies) in batches.iter().zip(replies) {
            let mut replies = replies.into_iter();
            for &g in members {
                per_group[g].extend(replies.by_ref().take(groups[g].1.len()));
            }
        }
        Ok(per_group.into_iter().flatten().collect())
    }

    /// How many round trips [`Self::query_groups`] makes for groups with these keys: one on a
    /// single node (none for no group), one per slot on a Cluster.
    pub(crate) fn group_round_trips<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> u64 {
        let mut keys = keys.into_iter().peekable();
        if keys.peek().is_none() {
            return 0;
        }
        if !self.is_cluster() {
            return 1;
        }
        let slots: std::collections::HashSet<Slot> = keys.map(Slot::for_key).collect();
        slots.len() as u64
    }

    /// Runs `call` on the connection, and once more if it failed on a connection that had
    /// dropped or could not be made.
    ///
    /// Why: a single node's connection manager reports the failure of a socket that died while
    /// nobody used it (Redis restarted, a failover) to the first request after it, and only then
    /// reconnects. Without the second try, the first request after every Redis restart failed
    /// although Redis was back (`INDEX_UNAVAILABLE` for one `totalCount`). The second try waits
    /// for that reconnection; while Redis is really down it fails too, after one more connection
    /// attempt (at most the connect timeout). Every call made through here is safe to repeat:
    /// reads, the index's versioned changes, and budget checks (a repeat after a reply lost in
    /// a reset charges a budget twice, once). A Cluster connection retries by itself.
    pub(crate) async fn reconnecting<T, F, Fut>(&self, call: F) -> redis::RedisResult<T>
    where
        F: Fn(Connection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        match call(self.connection()).await {
            Err(err)
                if !self.is_cluster()
                    && (err.is_connection_dropped() || err.is_connection_refusal()) =>
            {
                tracing::debug!(error = %err, "redis connection lost; trying once more");
                call(self.connection()).await
            }
            answer => answer,
        }
    }

    /// Every key matching `pattern` (a `SCAN MATCH` glob, see [`KeyPrefix::pattern`]), from
    /// every node that holds keys.
    pub(crate) async fn matching_keys(&self, pattern: &str) -> Result<Vec<String>, CallError> {
        scan::matching_keys(&self.conn, pattern).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_user_is_the_one_the_first_url_names_or_default() {
        let user = |urls: &str| {
            RedisHandle::open(RedisConfig::new(urls, "p:"))
                .expect("a valid configuration")
                .user()
                .to_owned()
        };
        assert_eq!(user("redis://dynapage:pw@127.0.0.1:6379"), "dynapage");
        assert_eq!(user("redis://:pw@127.0.0.1:6379"), "default");
        assert_eq!(user("redis://127.0.0.1:6379"), "default");
        assert!(RedisHandle::open(RedisConfig::new("", "p:")).is_err());
    }
}
