//! The one place the redis crate's errors are classified: a call failed because Redis cannot
//! answer right now (callers degrade and retry), or for a reason retrying will not fix.
//!
//! Each Redis user turns [`CallError`] into its own layer's error (the page index into
//! `IndexError`, the rate limiter into its in-process fallback), so this module knows none of
//! them.

use redis::{ErrorKind, RedisError, ServerErrorKind};

use crate::error::BoxError;

/// Why a Redis call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Refused, reset, timed out, a Cluster without a serving master: Redis cannot answer
    /// right now and may by itself later.
    #[error("Redis is unavailable")]
    Unavailable(#[source] BoxError),
    /// A script error, a type error, an unparsable reply: a bug or a misconfiguration.
    #[error("unexpected Redis error")]
    Internal(#[source] BoxError),
}

/// Classifies a redis crate error.
///
/// `Unavailable` means "Redis cannot answer right now" (refused, reset, timed out, a cluster
/// without a serving master, or one still moving slots after a failover: a `MOVED` or `ASK` the
/// client's retries did not get past): callers degrade and retry later. Everything else (a
/// script error, a type error, an unparsable reply) is a bug or a misconfiguration and is
/// `Internal`.
pub(crate) fn classify(err: RedisError) -> CallError {
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
        CallError::Unavailable(Box::new(err))
    } else {
        CallError::Internal(Box::new(err))
    }
}

/// A reply of an unexpected shape: a bug or a foreign server, never an outage.
pub(crate) fn parsing(err: redis::ParsingError) -> CallError {
    classify(err.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_connections_are_unavailable_and_script_errors_internal() {
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(matches!(classify(refused), CallError::Unavailable(_)));
        let timed_out = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(matches!(classify(timed_out), CallError::Unavailable(_)));
        let script = RedisError::from((ErrorKind::Server(ServerErrorKind::ResponseError), "bad"));
        assert!(matches!(classify(script), CallError::Internal(_)));
        let parse = RedisError::from((ErrorKind::UnexpectedReturnType, "not an array"));
        assert!(matches!(classify(parse), CallError::Internal(_)));
    }
}
