//! The connection to Redis: one node or a Cluster, over TLS or not, as an ACL user or not.
//!
//! Both kinds of connection are built lazily: constructing one never talks to Redis, so a
//! server whose Redis is down at start-up still starts, serves the pages that need no index,
//! and recovers by itself when Redis returns (the [`ConnectionManager`] reconnects on the next
//! I/O error; the cluster client rediscovers its nodes). Short connect and response timeouts
//! make a dead or unreachable Redis fail a request in about a second instead of hanging it.
//!
//! This module knows nothing of key names, scripts or domain types: every Redis user of the
//! process (the page index, the change log, the rate limiter, the sync checkpoints) sends its
//! own commands over a clone of one [`Connection`], through [`super::RedisHandle`].

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::config::RedisConfig;
use super::error::{CallError, classify};

/// One connection handle, cheap to clone: clones share the same socket(s).
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    /// A Cluster, and its first seed node on its own (see `check::settings_problem`),
    /// behind an `Arc`: the handle is cloned for every request.
    Cluster(ClusterConnection, Arc<SeedNode>),
}

/// The first `--redis-url` of a Cluster as a single-node client with the Cluster's TLS settings
/// and credentials, used only to explain a failed start-up check.
#[derive(Clone)]
pub(crate) struct SeedNode {
    client: redis::Client,
    config: AsyncConnectionConfig,
}

impl SeedNode {
    /// One connection and a `PING` on it.
    pub(super) async fn ping(&self) -> RedisResult<()> {
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        redis::cmd("PING").query_async(&mut conn).await
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connection::Single(_) => f.write_str("Connection::Single"),
            Connection::Cluster(..) => f.write_str("Connection::Cluster"),
        }
    }
}

impl Connection {
    /// A lazily connected handle to one node (`config.urls` has one element) or to a Cluster,
    /// over TLS for `rediss://` URLs, as the ACL user a URL's `user:password@` names.
    ///
    /// Fails only on a malformed URL or CA; an unreachable Redis is reported by the first
    /// request.
    pub(super) fn open(config: &RedisConfig) -> Result<Self, CallError> {
        let (urls, connect_timeout, response_timeout) = (
            &config.urls,
            config.connect_timeout,
            config.response_timeout,
        );
        if config.ca.is_some() && !urls.iter().all(|url| url.starts_with("rediss://")) {
            return Err(CallError::Internal(
                "a CA file (--redis-ca-file / DYNAPAGE_REDIS_CA_FILE) is for TLS: every \
                 --redis-url must then start with rediss://"
                    .into(),
            ));
        }
        if config.cluster {
            // A redirect (`MOVED` after a failover) or a refused connection is retried up to
            // three times, 10 to 100 ms apart, each time on a refreshed view of the slots: long
            // enough to follow a promoted replica, short enough that a request to a slot with no
            // master yet fails within the response timeout. The user, password and TLS mode
            // come from the first URL.
            let mut builder = ClusterClient::builder(urls.iter().map(String::as_str))
                .connection_timeout(connect_timeout)
                .response_timeout(response_timeout)
                .retries(3)
                .min_retry_wait(10)
                .max_retry_wait(100);
            if let Some(ca) = &config.ca {
                builder = builder.certs(ca.certificates());
            }
            let client = builder.build().map_err(classify)?;
            let seed = Arc::new(SeedNode {
                client: single_node_client(&urls[0], config)?,
                config: AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(response_timeout)),
            });
            let config = ClusterConfig::new()
                .set_connection_timeout(connect_timeout)
                .set_response_timeout(response_timeout);
            return Ok(Connection::Cluster(
                client.get_pending_async_connection_with_config(config),
                seed,
            ));
        }
        let url = match urls.as_slice() {
            [url] => url,
            _ => {
                return Err(CallError::Internal(
                    "a single-node Redis takes exactly one URL".into(),
                ));
            }
        };
        let client = single_node_client(url, config)?;
        // One quick retry with a short back-off: the manager already reconnects on the next
        // request after a failure, and a request must not sit through a long retry schedule.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(response_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_lazy_with_config(client, config).map_err(classify)?;
        Ok(Connection::Single(manager))
    }
}

/// A client of the single node `url`, with `config`'s CA for `rediss://`.
fn single_node_client(url: &str, config: &RedisConfig) -> Result<redis::Client, CallError> {
    match &config.ca {
        Some(ca) => redis::Client::build_with_tls(url, ca.certificates()),
        None => redis::Client::open(url),
    }
    .map_err(classify)
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c, _) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c, _) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c, _) => c.get_db(),
        }
    }
}
