//! The start-up check of the configured user's permissions: `ACL DRYRUN <user> <command>
//! <args…>` for every command the process declared ([`Need`]), on every node that serves its
//! keys. A command the user may not run stops start-up with its name and the feature that needs
//! it ([`AclDenied`]), instead of failing every request, or retrying a batch for ever, later.
//!
//! `ACL DRYRUN` exists from Redis 7.0 and needs the `acl|dryrun` permission; without either the
//! check is skipped with a reason the caller logs, never failed: it can only add certainty.
//! It checks a command and its keys against the user's ACL without running it, so it writes
//! nothing and `ACL LOG` records nothing, except one entry when the user may not run `ACL
//! DRYRUN` itself (one command is tried alone first, so there is only one).

use std::fmt;

use redis::{RedisError, Value};

use super::error::{CallError, classify};
use super::need::DRYRUN_RULE;
use super::scan::{every_node, on_node};
use super::{Need, RedisHandle};

/// What the permission check found, when it found nothing to refuse.
#[derive(Debug, PartialEq, Eq)]
pub enum AclCheck {
    /// The user may run every one of `allowed` commands; `unchecked` lists those Redis could
    /// not dry-run, with its answer (worth a warning, not a refusal).
    Done {
        /// How many commands the dry run allowed.
        allowed: usize,
        /// The commands Redis could not dry-run, each with its answer.
        unchecked: Vec<String>,
    },
    /// Not checked, and why: a Redis older than 7.0, a user without `acl|dryrun`, a Redis that
    /// stopped answering.
    Skipped(String),
}

/// A command the user may not run, and what needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// `XADD`, `CLUSTER SLOTS`.
    pub command: String,
    /// What sends it.
    pub features: Vec<&'static str>,
    /// Redis's own words: "This user has no permissions to run the 'xadd' command".
    pub said: String,
}

/// The configured user may not run commands the process will send: start-up stops.
#[derive(Debug, thiserror::Error)]
pub struct AclDenied {
    /// The ACL user the connection logs in as.
    pub user: String,
    /// Every command it may not run.
    pub denied: Vec<Denied>,
}

impl fmt::Display for AclDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the Redis user `{}` may not run: ", self.user)?;
        for (i, denied) in self.denied.iter().enumerate() {
            let separator = if i == 0 { "" } else { "; " };
            write!(
                f,
                "{separator}{}, needed by {} (Redis said: {})",
                denied.command,
                denied.features.join(" and "),
                denied.said
            )?;
        }
        write!(
            f,
            ". Allow these commands in the user's ACL (docs/operations/redis-tls-acl.md)"
        )
    }
}

/// What one dry run said.
enum Reply {
    Allowed,
    Denied(String),
    /// Redis cannot dry-run anything: the whole check is skipped, with this reason.
    NoDryRun(String),
    /// Redis could not dry-run this one command (its answer).
    Unchecked(String),
}

/// Dry-runs `needs` as `handle`'s user on every node (module comment).
pub(super) async fn check(handle: &RedisHandle, needs: &[Need]) -> Result<AclCheck, AclDenied> {
    let nodes = match every_node(&handle.connection()).await {
        Ok(nodes) => nodes,
        Err(err) => return Ok(AclCheck::Skipped(no_nodes(err))),
    };
    let mut denied = Vec::<Denied>::new();
    let mut unchecked = vec![None; needs.len()];
    for route in &nodes {
        let dry_run = |need: &Need| {
            let mut cmd = redis::cmd("ACL");
            cmd.arg("DRYRUN").arg(handle.user()).arg(need.command());
            async move { reply_of(on_node(&handle.connection(), cmd, route.as_ref()).await) }
        };
        // One first, alone: a Redis or a user that cannot dry-run says so once (a refused
        // `ACL DRYRUN` is an `ACL LOG` entry), then the others concurrently.
        let mut replies = Vec::with_capacity(needs.len());
        if let Some(first) = needs.first() {
            replies.push(dry_run(first).await);
        }
        if let Some(Reply::NoDryRun(reason)) = replies.first() {
            return Ok(AclCheck::Skipped(reason.clone()));
        }
        replies.extend(futures::future::join_all(needs.iter().skip(1).map(dry_run)).await);
        for ((need, reply), unchecked) in needs.iter().zip(replies).zip(&mut unchecked) {
            match reply {
                Reply::Allowed => {}
                Reply::NoDryRun(reason) => return Ok(AclCheck::Skipped(reason)),
                Reply::Denied(said) => record(&mut denied, need, said),
                Reply::Unchecked(said) => {
                    unchecked.get_or_insert_with(|| format!("{}: {said}", need.name()));
                }
            }
        }
    }
    if !denied.is_empty() {
        return Err(AclDenied {
            user: handle.user().to_owned(),
            denied,
        });
    }
    let unchecked: Vec<String> = unchecked.into_iter().flatten().collect();
    Ok(AclCheck::Done {
        allowed: needs.len() - unchecked.len(),
        unchecked,
    })
}

/// Adds `need`'s denial: one entry per command, with every feature that needs it.
fn record(denied: &mut Vec<Denied>, need: &Need, said: String) {
    let command = need.name();
    match denied.iter_mut().find(|d| d.command == command) {
        Some(entry) if entry.features.contains(&need.feature()) => {}
        Some(entry) => entry.features.push(need.feature()),
        None => denied.push(Denied {
            command,
            features: vec![need.feature()],
            said,
        }),
    }
}

/// Reads `ACL DRYRUN`'s answer: `OK`, or the reason as a bulk string when the user may not.
fn reply_of(answer: Result<Value, RedisError>) -> Reply {
    let err = match answer {
        Ok(Value::Okay) => return Reply::Allowed,
        Ok(Value::SimpleString(s)) if s == "OK" => return Reply::Allowed,
        Ok(Value::BulkString(said)) => {
            return Reply::Denied(String::from_utf8_lossy(&said).into_owned());
        }
        Ok(other) => return Reply::Unchecked(format!("answered {other:?}")),
        Err(err) => err,
    };
    let said = err.to_string();
    let lower = said.to_ascii_lowercase();
    if err.code() == Some("NOPERM") || lower.contains("noperm") {
        Reply::NoDryRun(format!(
            "the user may not run ACL DRYRUN; allow +{DRYRUN_RULE} to have its permissions \
             checked at start-up (Redis said: {said})"
        ))
    } else if lower.contains("unknown subcommand") || lower.contains("unknown command") {
        Reply::NoDryRun(format!(
            "this Redis has no ACL DRYRUN, which Redis 7.0 and later have (Redis said: {said})"
        ))
    } else if lower.contains("not found") && lower.contains("command") {
        // "Command 'x' not found": renamed or disabled here; sending it would fail too.
        Reply::Denied(said)
    } else if matches!(classify(err), CallError::Unavailable(_)) {
        Reply::NoDryRun(format!("Redis stopped answering during the check ({said})"))
    } else {
        Reply::Unchecked(said)
    }
}

/// Why the check could not find the nodes to ask (a Cluster's masters, from `CLUSTER SLOTS`).
fn no_nodes(err: CallError) -> String {
    let what = match err {
        CallError::Unavailable(_) => "Redis stopped answering during the check",
        CallError::Internal(_) => "the Cluster's masters could not be listed",
    };
    format!("{what} ({:#})", anyhow::Error::from(err))
}

#[cfg(test)]
mod tests {
    use redis::{ErrorKind, ServerErrorKind};

    use super::*;

    fn server_error(code: &str, detail: &str) -> Result<Value, RedisError> {
        let kind = if code == "NOPERM" {
            ErrorKind::Server(ServerErrorKind::NoPerm)
        } else {
            ErrorKind::Server(ServerErrorKind::ResponseError)
        };
        Err(RedisError::from((
            kind,
            "server error",
            format!("{code} {detail}"),
        )))
    }

    #[test]
    fn a_dry_run_answers_ok_a_denial_or_why_it_cannot_run() {
        assert!(matches!(reply_of(Ok(Value::Okay)), Reply::Allowed));
        let denial =
            Value::BulkString(b"This user has no permissions to run the 'xadd' command".to_vec());
        assert!(matches!(reply_of(Ok(denial)), Reply::Denied(said) if said.contains("'xadd'")));
        let no_permission =
            server_error("NOPERM", "no permissions to run the 'acl|dryrun' command");
        assert!(
            matches!(reply_of(no_permission), Reply::NoDryRun(why) if why.contains("+acl|dryrun"))
        );
        let redis_6 = server_error(
            "ERR",
            "Unknown subcommand or wrong number of arguments for 'DRYRUN'",
        );
        assert!(matches!(reply_of(redis_6), Reply::NoDryRun(why) if why.contains("7.0")));
        let renamed = server_error("ERR", "Command 'XADD' not found");
        assert!(matches!(reply_of(renamed), Reply::Denied(_)));
        let arity = server_error("ERR", "wrong number of arguments for 'get' command");
        assert!(matches!(reply_of(arity), Reply::Unchecked(_)));
        let gone = Err(RedisError::from(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(
            matches!(reply_of(gone), Reply::NoDryRun(why) if why.contains("stopped answering"))
        );
    }

    #[test]
    fn a_refusal_names_each_command_once_with_every_feature_that_needs_it() {
        let mut denied = Vec::new();
        let said = || "no permissions".to_owned();
        record(
            &mut denied,
            &Need::new("the checkpoints", ["SET", "p:sync:t:s", "1"]),
            said(),
        );
        record(
            &mut denied,
            &Need::new("the rate limits", ["SET", "p:rl:{c}:c", "1"]),
            said(),
        );
        record(
            &mut denied,
            &Need::new("the rate limits", ["SET", "p:rl:{c}:w", "1"]),
            said(),
        );
        record(
            &mut denied,
            &Need::new("the change log", ["XADD", "p:{changes}", "*", "t", "u"]),
            said(),
        );
        let message = AclDenied {
            user: "dp".into(),
            denied,
        }
        .to_string();
        assert_eq!(
            message,
            "the Redis user `dp` may not run: SET, needed by the checkpoints and the rate limits \
             (Redis said: no permissions); XADD, needed by the change log (Redis said: no \
             permissions). Allow these commands in the user's ACL \
             (docs/operations/redis-tls-acl.md)"
        );
    }
}
