//! The start-up check: one `PING`, so settings that can never work (plaintext to a TLS port, a
//! certificate not trusted, a wrong password, an ACL user without `PING`) stop a command at
//! start-up, naming what to fix, instead of degrading every request later; then the user's
//! permissions for every command the process declared (`acl`). A Redis that is merely down
//! does not stop anything: the connection recovers by itself once it is back.
//!
//! It knows what to send only from the [`Need`]s it is given (and its own), never which
//! process or feature sends them; logging what it found is the caller's.

use redis::{ErrorKind, RedisError, ServerErrorKind};

use super::acl::{self, AclCheck, AclDenied};
use super::connection::Connection;
use super::error::{CallError, classify};
use super::need::own_needs;
use super::{Need, RedisHandle};

/// What the first contact at start-up found, when it found nothing that stops the process.
#[derive(Debug)]
pub enum FirstContact {
    /// Redis answered: the URL, TLS and credentials work; what the permission check found.
    Answered(AclCheck),
    /// Redis did not answer (refused, timed out, loading): the connection recovers by itself
    /// once it is back, so this is no reason not to start. Permissions are not checked.
    Unreachable(CallError),
}

/// Why the process must not start.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Settings that can never work, with what to fix and what Redis said.
    #[error("{0}")]
    Settings(String),
    /// The user may not run commands the process will send.
    #[error(transparent)]
    Permissions(#[from] AclDenied),
}

impl RedisHandle {
    /// Sends one `PING`, then dry-runs `needs` (and the connection layer's own: `PING`, and
    /// `CLUSTER SLOTS` on a Cluster) as the configured user (module comment).
    pub async fn first_contact(&self, needs: &[Need]) -> Result<FirstContact, Refused> {
        let err = match redis::cmd("PING")
            .query_async::<()>(&mut self.connection())
            .await
        {
            Ok(()) => {
                let mut all = own_needs(self.is_cluster());
                for need in needs {
                    if !all.contains(need) {
                        all.push(need.clone());
                    }
                }
                return Ok(FirstContact::Answered(acl::check(self, &all).await?));
            }
            Err(err) => err,
        };
        match settings_problem(&self.connection(), &err).await {
            Some(problem) => Err(Refused::Settings(problem)),
            None => Ok(FirstContact::Unreachable(classify(err))),
        }
    }
}

/// What a failed start-up `PING` says about the settings: a hint with what Redis said when
/// they can never work ([`settings_hint`]), `None` when Redis may merely be down.
///
/// A Cluster needs a second look. Its client turns the error of each failed connection to
/// a seed node into text (redis 1.8, `create_initial_connections`: "Failed to create initial
/// connections" and the cause's message, as an I/O error without a source), so a
/// certificate the CA does not sign, plaintext to a TLS-only port and a refused password all
/// read like an outage. The first seed node, connected on its own with the same TLS
/// settings and credentials, fails with the typed error that [`settings_hint`] reads.
async fn settings_problem(conn: &Connection, err: &RedisError) -> Option<String> {
    if let Some(hint) = settings_hint(err) {
        return Some(format!("{hint} (Redis said: {err})"));
    }
    let Connection::Cluster(_, seed) = conn else {
        return None;
    };
    let seed_err = seed.ping().await.err()?;
    settings_hint(&seed_err).map(|hint| {
        format!("{hint} (the first node of --redis-url said: {seed_err}; the Cluster: {err})")
    })
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
             URL and that the user's ACL allows the commands dynapage sends \
             (docs/operations/redis-tls-acl.md)",
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
