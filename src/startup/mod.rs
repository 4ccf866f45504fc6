//! Turning settings into running backends: the one place that knows which implementation
//! `--store` and `--index` select, and how the index is fed for each combination. With the
//! Redis index, the process opens one connection ([`RedisHandle`]), shared by the index, the
//! change log, the checkpoints and the rate limiter, and checks it at start-up against what the
//! process will send ([`Process`]).

mod process;

pub use self::process::Process;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use indicatif::ProgressBar;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::{BackendArgs, IndexKind, RateLimitArgs, StoreKind};
use crate::domain::ChangeEvent;
use crate::index::AnyIndex;
use crate::index::memory::MemoryIndex;
use crate::index::redis::RedisIndex;
use crate::live::redis_log::RedisLog;
use crate::live::{Publishing, Sink};
use crate::purge::Purger;
use crate::ratelimit::{MemoryLimiter, RateLimiter, RedisLimiter};
use crate::redis::{AclCheck, FirstContact, RedisHandle, Refused};
use crate::store::dynamo::{DynamoConfig, DynamoStore};
use crate::store::memory::MemoryStore;
use crate::store::sqlite::SqliteStore;
use crate::store::{AnyStore, ChangeSink};
use crate::sync::{Checkpoints, StreamConsumer, StreamOptions};

/// The backends a command works with, and the tasks that keep the index fed.
#[derive(Debug)]
pub struct Backends {
    /// The comment store (`--store`).
    pub store: AnyStore,
    /// The page index: embedded, or in Redis.
    pub index: AnyIndex,
    /// The Redis the index lives in (`None` with the embedded index), for its other users.
    pub redis: Option<RedisHandle>,
    /// Background tasks (the embedded change feed); they stop when the shutdown token fires.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Opens the configured backends for `process`. With the embedded store, its change feed is
/// followed into the index in the background until `shutdown` fires.
pub async fn open_backends(
    args: &BackendArgs,
    process: Process,
    shutdown: &CancellationToken,
) -> anyhow::Result<Backends> {
    open_backends_live(args, process, shutdown, None, None).await
}

/// Where the changes applied to the index are published for subscriptions (`crate::live`): to
/// the change log in `redis`, the Redis index's (every server reads it; it keeps about
/// `change_log_max_len` changes), else to this process's hub through `local`, if it has one.
pub fn live_sink(
    redis: Option<&RedisHandle>,
    local: Option<&UnboundedSender<Vec<ChangeEvent>>>,
    change_log_max_len: u64,
) -> Sink {
    match redis {
        Some(redis) => Sink::Redis(RedisLog::new(redis, log_len(change_log_max_len))),
        None => local.map_or(Sink::None, |sender| Sink::Local(sender.clone())),
    }
}

/// [`open_backends`] for `serve`: the embedded store's feed publishes what it applies
/// ([`live_sink`]), with `local` as this process's hub, and purges the CDN with `purger`.
pub async fn open_backends_live(
    args: &BackendArgs,
    process: Process,
    shutdown: &CancellationToken,
    local: Option<&UnboundedSender<Vec<ChangeEvent>>>,
    purger: Option<&Purger>,
) -> anyhow::Result<Backends> {
    // Refuses `--data-dir` beside `--store dynamodb` before anything is contacted.
    args.data_dir()?;
    let (index, redis) = match args.index {
        IndexKind::Memory => (AnyIndex::Memory(MemoryIndex::new()), None),
        IndexKind::Redis => {
            let redis = open_redis(args, process).await?;
            (AnyIndex::Redis(RedisIndex::new(&redis)), Some(redis))
        }
    };
    let mut tasks = Vec::new();
    let store = match args.store {
        StoreKind::Memory => {
            let (sink, feed) = tokio::sync::mpsc::unbounded_channel();
            tasks.push(tokio::spawn(crate::sync::follow_feed(
                feed,
                Publishing::new(
                    index.clone(),
                    if local.is_some() {
                        live_sink(redis.as_ref(), local, args.change_log_max_len)
                    } else {
                        Sink::None
                    },
                )
                .with_purger(purger.cloned()),
                shutdown.clone(),
            )));
            match args.data_dir()? {
                None => AnyStore::Memory(MemoryStore::new().with_change_sink(sink)),
                Some(dir) => {
                    let store = AnyStore::Sqlite(open_sqlite(dir, Some(sink)).await?);
                    // `verify` compares a Redis index as it is; every other process (and the
                    // embedded index, which starts empty) builds the index from the store.
                    if process != Process::Verify || args.index == IndexKind::Memory {
                        index_loaded_store(&store, &index).await?;
                    }
                    store
                }
            }
        }
        StoreKind::Dynamodb => AnyStore::Dynamo(open_dynamo(args).await?),
    };
    Ok(Backends {
        store,
        index,
        redis,
        tasks,
    })
}

/// The store alone, for commands that only read or write comments (`export`, `import`,
/// `seed`): DynamoDB, or the durable embedded store of `--data-dir`. The in-memory demo store
/// lives only inside `serve`.
pub async fn open_store(args: &BackendArgs) -> anyhow::Result<AnyStore> {
    match (args.store, args.data_dir()?) {
        (StoreKind::Dynamodb, _) => Ok(AnyStore::Dynamo(open_dynamo(args).await?)),
        (StoreKind::Memory, Some(dir)) => Ok(AnyStore::Sqlite(open_sqlite(dir, None).await?)),
        (StoreKind::Memory, None) => anyhow::bail!(
            "this command needs a persistent store: --data-dir PATH (DYNAPAGE_DATA_DIR) for the \
             embedded store on disk, or --store dynamodb (the in-memory demo lives only inside `serve`)"
        ),
    }
}

/// Opens the durable embedded store in `dir` (lock, checks, load into memory), off the
/// runtime's threads.
async fn open_sqlite(dir: &Path, sink: Option<ChangeSink>) -> anyhow::Result<SqliteStore> {
    let path = dir.to_owned();
    let (store, _report) = tokio::task::spawn_blocking(move || SqliteStore::open(&path, sink))
        .await
        .context("the embedded store's start-up task")?
        .with_context(|| {
            format!(
                "opening the embedded store in {} (--data-dir / DYNAPAGE_DATA_DIR)",
                dir.display()
            )
        })?;
    Ok(store)
}

/// Builds `index` from the comments the durable store loaded at start-up (the embedded
/// index starts empty; a Redis index may hold changes the store never committed, or miss
/// ones it did before a crash): a reindex, which logs its progress.
async fn index_loaded_store(store: &AnyStore, index: &AnyIndex) -> anyhow::Result<()> {
    let report = crate::sync::reindex(store, index, None, 4, &ProgressBar::hidden())
        .await
        .context("building the index from the embedded store")?;
    tracing::info!(
        comments = report.indexed,
        removed = report.removed,
        elapsed_ms = report.elapsed.as_millis() as u64,
        "index built from the embedded store"
    );
    Ok(())
}

/// Opens the connection to Redis and checks it: settings Redis refuses (TLS, certificate,
/// credentials) and commands `process` will send that the user's ACL refuses stop the command
/// here; a Redis that is merely down does not, since the connection recovers by itself.
pub async fn open_redis(args: &BackendArgs, process: Process) -> anyhow::Result<RedisHandle> {
    const FLAGS: &str =
        "--redis-url / DYNAPAGE_REDIS_URL, --redis-ca-file / DYNAPAGE_REDIS_CA_FILE";
    let redis = RedisHandle::open(args.redis_config()?)
        .with_context(|| format!("the Redis settings ({FLAGS})"))?;
    let needs = process.redis_needs(args.store, redis.prefix(), &args.dynamodb_table);
    let contact = match redis.first_contact(&needs).await {
        Ok(contact) => contact,
        Err(refused @ Refused::Settings(_)) => {
            return Err(anyhow::Error::from(refused))
                .with_context(|| format!("Redis refused these settings ({FLAGS})"));
        }
        Err(refused @ Refused::Permissions(_)) => {
            return Err(anyhow::Error::from(refused)).context(
                "the Redis user's permissions (the user --redis-url / DYNAPAGE_REDIS_URL logs in as)",
            );
        }
    };
    match contact {
        FirstContact::Answered(AclCheck::Done { allowed, unchecked }) => {
            tracing::debug!(
                user = redis.user(),
                allowed,
                "the Redis user may run every command this process sends"
            );
            for command in unchecked {
                tracing::warn!(
                    command,
                    "Redis could not dry-run a command at start-up; not checked"
                );
            }
        }
        FirstContact::Answered(AclCheck::Skipped(reason)) => tracing::info!(
            user = redis.user(),
            reason,
            "the Redis user's permissions were not checked at start-up"
        ),
        FirstContact::Unreachable(err) => tracing::warn!(
            error = format!("{:#}", anyhow::Error::from(err)),
            "Redis does not answer yet; starting anyway, the index is used once it does"
        ),
    }
    Ok(redis)
}

/// Connects to DynamoDB and makes sure the table is there (creating it with `--create-tables`),
/// so a missing table fails at start-up with a message that says what to do.
async fn open_dynamo(args: &BackendArgs) -> anyhow::Result<DynamoStore> {
    let config = DynamoConfig {
        endpoint: args.dynamodb_endpoint.clone(),
        table: args.dynamodb_table.clone(),
        region: args.dynamodb_region.clone(),
    };
    let store = DynamoStore::connect(config)
        .await
        .context("connecting to DynamoDB")?;
    if args.create_tables {
        store
            .create_tables()
            .await
            .with_context(|| format!("creating table `{}`", args.dynamodb_table))?;
        tracing::info!(table = args.dynamodb_table.as_str(), "table ready");
    } else {
        store
            .check_table()
            .await
            .with_context(|| format!("checking table `{}`", args.dynamodb_table))?;
    }
    Ok(store)
}

/// The DynamoDB Streams consumer for `store`'s table feeding `index`, with the checkpoints that
/// belong to that index (keys in `redis`, the Redis index's, or this process's memory for the
/// embedded index), publishing what it applies ([`live_sink`]); what it applies is purged from
/// the CDN with `purger`.
pub fn stream_consumer(
    store: &AnyStore,
    index: &AnyIndex,
    redis: Option<&RedisHandle>,
    poll_interval: std::time::Duration,
    local: Option<&UnboundedSender<Vec<ChangeEvent>>>,
    change_log_max_len: u64,
    purger: Option<&Purger>,
) -> anyhow::Result<StreamConsumer<Publishing<AnyIndex>>> {
    let AnyStore::Dynamo(store) = store else {
        anyhow::bail!("the stream consumer needs --store dynamodb (DYNAPAGE_STORE)");
    };
    let options = StreamOptions {
        poll_interval,
        ..StreamOptions::default()
    };
    let checkpoints = Checkpoints::for_index(redis, store.table());
    StreamConsumer::new(
        store,
        Publishing::new(index.clone(), live_sink(redis, local, change_log_max_len))
            .with_purger(purger.cloned()),
        checkpoints,
        options,
    )
    .context("building the stream consumer")
}

/// `--change-log-max-len` as a length (the flag is held to at most 100 million).
pub fn log_len(change_log_max_len: u64) -> usize {
    usize::try_from(change_log_max_len).unwrap_or(usize::MAX)
}

/// The rate limiter `args` ask for: shared through `redis`, the index's (same connection, keys
/// under its prefix) with the Redis index, in this process otherwise; `None` when every limit
/// is off. `max_complexity` is the largest cost a query may have: a burst below it is allowed,
/// with a warning, since such queries can then never pass.
pub fn rate_limiter(
    args: &RateLimitArgs,
    redis: Option<&RedisHandle>,
    max_complexity: usize,
) -> Option<RateLimiter> {
    let limits = args.limits();
    if !limits.any() {
        tracing::info!("rate limits are off");
        return None;
    }
    if limits.cost.is_some() && (args.rate_limit_cost_burst as usize) < max_complexity {
        tracing::warn!(
            burst = args.rate_limit_cost_burst,
            max_complexity,
            "--rate-limit-cost-burst is below --max-query-complexity: queries costing more than the burst can never pass"
        );
    }
    let limiter = match redis {
        Some(redis) => RateLimiter::Redis(Arc::new(RedisLimiter::new(redis, limits))),
        None => RateLimiter::Memory(Arc::new(MemoryLimiter::new(limits))),
    };
    tracing::info!(
        store = match limiter {
            RateLimiter::Redis(_) => "redis",
            RateLimiter::Memory(_) => "memory",
        },
        writes_per_minute = args.rate_limit_writes,
        cost_per_second = args.rate_limit_cost,
        cost_burst = args.rate_limit_cost_burst,
        "rate limits"
    );
    Some(limiter)
}
