//! The connection to Redis (one node or a Cluster) and the classification of its errors.
//!
//! Both kinds of connection are built lazily: constructing one never talks to Redis, so a
//! server whose Redis is down at start-up still starts, serves the pages that need no index,
//! and recovers by itself when Redis returns (the [`ConnectionManager`] reconnects on the next
//! I/O error; the cluster client rediscovers its nodes). Short connect and response timeouts
//! make a dead or unreachable Redis fail a request in about a second instead of hanging it.
//!
//! This module knows nothing of key names, scripts or domain types. The rate limiter
//! (`crate::ratelimit`) runs its script on the index's connection through it too.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture,
    RedisResult, ServerErrorKind, ToRedisArgs, Value,
};

use super::RedisConfig;
use crate::index::IndexError;

/// One connection handle, cheap to clone: clones share the same socket(s).
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    /// A Cluster, and its first seed node on its own (see [`Connection::settings_problem`]),
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
    async fn ping(&self) -> RedisResult<()> {
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
    pub(super) fn open(config: &RedisConfig) -> Result<Self, IndexError> {
        let (urls, connect_timeout, response_timeout) = (
            &config.urls,
            config.connect_timeout,
            config.response_timeout,
        );
        if config.ca.is_some() && !urls.iter().all(|url| url.starts_with("rediss://")) {
            return Err(IndexError::Internal(
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
                return Err(IndexError::Internal(
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

impl Connection {
    /// What a failed start-up `PING` says about the settings: a hint with what Redis said when
    /// they can never work ([`settings_hint`]), `None` when Redis may merely be down.
    ///
    /// A Cluster needs a second look. Its client turns the error of each failed connection to
    /// a seed node into text (redis 1.8, `create_initial_connections`: "Failed to create initial
    /// connections" and the cause's message, as an I/O error without a source), so a
    /// certificate the CA does not sign, plaintext to a TLS-only port and a refused password all
    /// read like an outage. The first seed node, connected on its own with the same TLS
    /// settings and credentials, fails with the typed error that [`settings_hint`] reads.
    pub(super) async fn settings_problem(&self, err: &RedisError) -> Option<String> {
        if let Some(hint) = settings_hint(err) {
            return Some(format!("{hint} (Redis said: {err})"));
        }
        let Connection::Cluster(_, seed) = self else {
            return None;
        };
        let seed_err = seed.ping().await.err()?;
        settings_hint(&seed_err).map(|hint| {
            format!("{hint} (the first node of --redis-url said: {seed_err}; the Cluster: {err})")
        })
    }
}

/// A client of the single node `url`, with `config`'s CA for `rediss://`.
fn single_node_client(url: &str, config: &RedisConfig) -> Result<redis::Client, IndexError> {
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

/// A Lua script, run by `EVALSHA` and, when the node answers `NOSCRIPT`, by `EVAL` with its
/// text, sent to the same node.
///
/// Why not `redis::Script`: on `NOSCRIPT` it sends `SCRIPT LOAD`, which the cluster client fans
/// out to every node it holds a connection to and which fails unless every one of them answers,
/// then `EVALSHA` again. Scripts are not replicated, so a promoted replica or a restarted node
/// has none, and a failover is exactly when some node may not answer: the script call would
/// then fail although the node holding the product's keys is fine. `EVAL`, like `EVALSHA`, is
/// routed by its first key to that one node, loads the script there, and costs one round trip
/// instead of two.
#[derive(Clone, Debug)]
pub(crate) struct LuaScript {
    source: &'static str,
    hash: String,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> Self {
        Self {
            source,
            hash: redis::Script::new(source).get_hash().to_owned(),
        }
    }

    /// A call of this script, to fill with keys and arguments.
    pub(crate) fn call(&self) -> ScriptCall<'_> {
        ScriptCall {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// One call of a [`LuaScript`]: its `KEYS` and `ARGV`.
pub(crate) struct ScriptCall<'a> {
    script: &'a LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall<'_> {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// Runs the script on the node that holds its first key.
    pub(crate) async fn invoke<T: FromRedisValue>(&self, conn: &mut Connection) -> RedisResult<T> {
        let command = |verb: &str, body: &str| {
            let mut cmd = redis::cmd(verb);
            cmd.arg(body)
                .arg(self.keys.len())
                .arg(&self.keys)
                .arg(&self.args);
            cmd
        };
        match command("EVALSHA", &self.script.hash)
            .query_async(conn)
            .await
        {
            Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                command("EVAL", self.script.source).query_async(conn).await
            }
            answer => answer,
        }
    }
}

/// What a failed first request says about the settings, for the start-up check: a hint when
/// they can never work (the server refused the handshake, the credentials or a command), `None`
/// when Redis is merely down or busy and may come back by itself.
///
/// Only failures that name a misconfiguration are hints: a refused, unreachable or silent
/// Redis is an outage, which must not stop the server (it serves what needs no index).
fn settings_hint(err: &RedisError) -> Option<&'static str> {
    let auth = matches!(
        err.kind(),
        ErrorKind::AuthenticationFailed | ErrorKind::Server(ServerErrorKind::NoPerm)
    ) || matches!(err.code(), Some("WRONGPASS" | "NOAUTH" | "NOPERM"));
    if auth {
        return Some(
            "Redis refused the user, the password or a command: check `user:password@` in the \
             URL and that the user's ACL allows the commands dynapage sends (README: Redis over \
             TLS and ACL users)",
        );
    }
    // The redis crate keeps an I/O error behind an `Arc`, which is what `source` returns.
    let io = std::error::Error::source(err).and_then(|source| {
        source.downcast_ref::<std::io::Error>().or_else(|| {
            source
                .downcast_ref::<std::sync::Arc<dyn std::error::Error + Send + Sync>>()
                .and_then(|inner| inner.downcast_ref::<std::io::Error>())
        })
    });
    match io.map(std::io::Error::kind) {
        Some(std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput) => Some(
            "the TLS handshake failed: a certificate from a private CA needs --redis-ca-file / \
             DYNAPAGE_REDIS_CA_FILE, and a port without TLS needs redis:// rather than rediss://",
        ),
        Some(
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe,
        ) => Some(
            "Redis accepted the connection and closed it without answering: a port that only \
             speaks TLS needs a rediss:// URL",
        ),
        _ => None,
    }
}

/// The one place Redis errors become [`IndexError`]s.
///
/// `Unavailable` means "Redis cannot answer right now" (refused, reset, timed out, a cluster
/// without a serving master, or one still moving slots after a failover: a `MOVED` or `ASK` the
/// client's retries did not get past): callers degrade (`INDEX_UNAVAILABLE`) and retry later.
/// Everything else (a script error, a type error, an unparsable reply) is a bug or a
/// misconfiguration and is `Internal`.
pub(crate) fn classify(err: RedisError) -> IndexError {
    let unavailable = err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || matches!(
            err.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::BusyLoading
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::Moved
                        | ServerErrorKind::Ask
                )
        );
    if unavailable {
        IndexError::Unavailable(Box::new(err))
    } else {
        IndexError::Internal(Box::new(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_connections_are_unavailable_and_script_errors_internal() {
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(matches!(classify(refused), IndexError::Unavailable(_)));
        let timed_out = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(matches!(classify(timed_out), IndexError::Unavailable(_)));
        let script = RedisError::from((ErrorKind::Server(ServerErrorKind::ResponseError), "bad"));
        assert!(matches!(classify(script), IndexError::Internal(_)));
        let parse = RedisError::from((ErrorKind::UnexpectedReturnType, "not an array"));
        assert!(matches!(classify(parse), IndexError::Internal(_)));
    }
}
