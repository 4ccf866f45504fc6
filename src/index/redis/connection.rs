//! The connection to Redis (one node or a Cluster) and the classification of its errors.
//!
//! Both kinds of connection are built lazily: constructing one never talks to Redis, so a
//! server whose Redis is down at start-up still starts, serves the pages that need no index,
//! and recovers by itself when Redis returns (the [`ConnectionManager`] reconnects on the next
//! I/O error; the cluster client rediscovers its nodes). Short connect and response timeouts
//! make a dead or unreachable Redis fail a request in about a second instead of hanging it.
//!
//! This module knows nothing of key names, scripts or domain types.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind, Value};

use crate::index::IndexError;

/// One connection handle, cheap to clone: clones share the same socket(s).
#[derive(Clone)]
pub(super) enum Connection {
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
    /// A lazily connected handle to one node (`urls` has one element) or to a Cluster.
    ///
    /// Fails only on a malformed URL; an unreachable Redis is reported by the first request.
    pub(super) fn open(
        urls: &[String],
        cluster: bool,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Result<Self, IndexError> {
        if cluster {
            let client = ClusterClient::builder(urls.iter().map(String::as_str))
                .connection_timeout(connect_timeout)
                .response_timeout(response_timeout)
                .retries(1)
                .build()
                .map_err(classify)?;
            let config = ClusterConfig::new()
                .set_connection_timeout(connect_timeout)
                .set_response_timeout(response_timeout);
            return Ok(Connection::Cluster(
                client.get_pending_async_connection_with_config(config),
            ));
        }
        let url = match urls {
            [url] => url,
            _ => {
                return Err(IndexError::Internal(
                    "a single-node Redis takes exactly one URL".into(),
                ));
            }
        };
        let client = redis::Client::open(url.as_str()).map_err(classify)?;
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

/// The one place Redis errors become [`IndexError`]s.
///
/// `Unavailable` means "Redis cannot answer right now" (refused, reset, timed out, a cluster
/// without a serving master): callers degrade (`INDEX_UNAVAILABLE`) and retry later. Everything
/// else (a script error, a type error, an unparsable reply) is a bug or a misconfiguration and
/// is `Internal`.
pub(super) fn classify(err: RedisError) -> IndexError {
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
