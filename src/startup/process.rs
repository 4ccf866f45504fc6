//! What each kind of process sends to Redis, assembled from what each Redis user declares
//! (`crate::redis::Need`): the start-up check dry-runs all of it as the configured ACL user, so
//! a permission the process lacks stops it at start-up, naming the command and the feature.
//!
//! A process's features follow from its command and settings, as `startup` wires them: who
//! applies changes to the index (and so publishes them to the change log), who keeps stream
//! checkpoints in Redis, who serves pages and live comments, who checks rate limits in Redis.

use crate::config::StoreKind;
use crate::index::redis::{needs_to_read, needs_to_scan, needs_to_write};
use crate::live::redis_log;
use crate::ratelimit::RedisLimiter;
use crate::redis::{KeyPrefix, Need};
use crate::sync::Checkpoints;

/// A kind of process, as far as Redis is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Process {
    /// `serve`: pages and live comments; with `sync`, also the table's stream (checkpoints in
    /// Redis); with `rate_limits`, budgets in Redis. With the embedded store, `serve` applies
    /// the store's changes to the index itself.
    /// `rate_limits`: some budget is kept (a client's cost or writes, its rate of opening
    /// subscriptions or of registering persisted queries).
    Serve {
        /// Whether it also consumes the table's stream, checkpointed in Redis.
        sync: bool,
        /// Whether it keeps some budget in Redis.
        rate_limits: bool,
    },
    /// `seed`: writes the table only (it needs `--store dynamodb`).
    Seed,
    /// `sync`: the table's stream into the index, checkpointed, published to the change log.
    Sync,
    /// `lambda-sync`: like `sync`, with Lambda keeping the checkpoints.
    LambdaSync,
    /// `reindex`: reads the whole index and writes it.
    Reindex,
    /// `verify`: reads the whole index.
    Verify,
}

/// What a process does with Redis.
#[derive(Debug, Default)]
struct Features {
    serves_pages: bool,
    applies: bool,
    publishes: bool,
    checkpoints: bool,
    scans: bool,
    rate_limits: bool,
}

impl Process {
    fn features(self, store: StoreKind) -> Features {
        match self {
            Process::Serve { sync, rate_limits } => {
                // The embedded store's feed, or the stream with --sync, applies and publishes.
                let applies = store == StoreKind::Memory || sync;
                Features {
                    serves_pages: true,
                    applies,
                    publishes: applies,
                    checkpoints: store == StoreKind::Dynamodb && sync,
                    scans: false,
                    rate_limits,
                }
            }
            Process::Seed => Features::default(),
            Process::Sync => Features {
                applies: true,
                publishes: true,
                checkpoints: true,
                ..Features::default()
            },
            Process::LambdaSync => Features {
                applies: true,
                publishes: true,
                ..Features::default()
            },
            Process::Reindex => Features {
                applies: true,
                scans: true,
                ..Features::default()
            },
            Process::Verify => Features {
                scans: true,
                ..Features::default()
            },
        }
    }

    /// Every command this process sends to Redis beyond the connection layer's own (which the
    /// start-up check adds: `crate::redis::own_needs`), with keys under `prefix`; `table` names
    /// the stream whose checkpoints it keeps.
    pub fn redis_needs(self, store: StoreKind, prefix: &KeyPrefix, table: &str) -> Vec<Need> {
        let features = self.features(store);
        let mut needs = Vec::new();
        if features.serves_pages {
            needs.extend(needs_to_read(prefix));
            needs.extend(redis_log::needs_to_read(prefix));
            needs.extend(crate::persisted::RedisStore::needs(prefix));
        }
        if features.applies {
            needs.extend(needs_to_write(prefix));
        }
        if features.publishes {
            needs.extend(redis_log::needs_to_append(prefix));
        }
        if features.checkpoints {
            needs.extend(Checkpoints::needs(prefix, table));
        }
        if features.scans {
            needs.extend(needs_to_scan(prefix));
        }
        if features.rate_limits {
            needs.extend(RedisLimiter::needs(prefix));
        }
        needs
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn needs(process: Process, store: StoreKind) -> Vec<Need> {
        process.redis_needs(store, &KeyPrefix::new("p:"), "comments")
    }

    /// The features of `process` that send `command`.
    fn senders(process: Process, store: StoreKind, command: &str) -> BTreeSet<&'static str> {
        needs(process, store)
            .iter()
            .filter(|need| need.name() == command)
            .map(Need::feature)
            .collect()
    }

    fn serve(sync: bool, rate_limits: bool) -> Process {
        Process::Serve { sync, rate_limits }
    }

    #[test]
    fn only_the_processes_that_apply_changes_append_them_to_the_change_log() {
        let dynamodb = StoreKind::Dynamodb;
        for process in [Process::Sync, Process::LambdaSync, serve(true, false)] {
            assert!(
                !senders(process, dynamodb, "XADD").is_empty(),
                "{process:?}"
            );
        }
        // The embedded store's feed applies and publishes in `serve`.
        assert!(!senders(serve(false, false), StoreKind::Memory, "XADD").is_empty());
        for process in [serve(false, true), Process::Reindex, Process::Verify] {
            assert!(senders(process, dynamodb, "XADD").is_empty(), "{process:?}");
        }
        assert!(senders(Process::Verify, dynamodb, "ZADD").is_empty());
        assert!(needs(Process::Seed, dynamodb).is_empty());
    }

    #[test]
    fn checkpoints_and_rate_limits_are_declared_only_by_the_processes_that_keep_them() {
        let checkpoints = |process| {
            senders(process, StoreKind::Dynamodb, "GET")
                .contains("the stream consumer's checkpoints")
        };
        assert!(checkpoints(Process::Sync));
        assert!(checkpoints(serve(true, false)));
        assert!(!checkpoints(Process::LambdaSync), "Lambda keeps them");
        assert!(!checkpoints(serve(false, false)));
        let budgets = |process| {
            senders(process, StoreKind::Dynamodb, "TIME")
                .contains("the rate limits, inside take.lua")
        };
        assert!(budgets(serve(false, true)));
        assert!(!budgets(serve(false, false)));
        assert!(!budgets(Process::Sync));
    }
}
