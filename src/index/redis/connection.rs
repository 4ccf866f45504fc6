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

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture, RedisResult,
    ServerErrorKind, ToRedisArgs, Value,
};

use super::RedisConfig;
use crate::index::IndexError;

/// One connection handle, cheap to clone: clones share the same socket(s).
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connection::Single(_) => f.write_str("Connection::Single"),
            Connection::Cluster(_) => f.write_str("Connection::Cluster"),
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
            let config = ClusterConfig::new()
                .set_connection_timeout(connect_timeout)
                .set_response_timeout(response_timeout);
            return Ok(Connection::Cluster(
                client.get_pending_async_connection_with_config(config),
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
        let client = match &config.ca {
            Some(ca) => redis::Client::build_with_tls(url.as_str(), ca.certificates()),
            None => redis::Client::open(url.as_str()),
        }
        .map_err(classify)?;
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

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
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
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
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
pub(super) fn settings_problem(err: &RedisError) -> Option<&'static str> {
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
