//! Turning settings into running backends: the one place that knows which implementation
//! `--store` and `--index` select, and how the index is fed for each combination.

use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::{BackendArgs, IndexKind, RateLimitArgs, StoreKind};
use crate::domain::ChangeEvent;
use crate::index::AnyIndex;
use crate::index::memory::MemoryIndex;
use crate::index::redis::{FirstContact, RedisIndex};
use crate::live::{Publishing, Sink};
use crate::ratelimit::{MemoryLimiter, RateLimiter, RedisLimiter};
use crate::store::AnyStore;
use crate::store::dynamo::{DynamoConfig, DynamoStore};
use crate::store::memory::MemoryStore;
use crate::sync::{Checkpoints, StreamConsumer, StreamOptions};

/// The backends a command works with, and the tasks that keep the index fed.
#[derive(Debug)]
pub struct Backends {
    pub store: AnyStore,
    pub index: AnyIndex,
    /// Background tasks (the embedded change feed); they stop when the shutdown token fires.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Opens the configured backends. With the embedded store, its change feed is followed into
/// the index in the background until `shutdown` fires.
pub async fn open_backends(
    args: &BackendArgs,
    shutdown: &CancellationToken,
) -> anyhow::Result<Backends> {
    open_backends_live(args, shutdown, None).await
}

/// Where the changes applied to `index` are published for subscriptions (`crate::live`): to
/// the Redis change log with the Redis index (every server reads it), else to this process's
/// hub through `local`, if it has one.
pub fn live_sink(index: &AnyIndex, local: Option<&UnboundedSender<Vec<ChangeEvent>>>) -> Sink {
    match index {
        AnyIndex::Redis(redis) => Sink::Redis(redis.clone()),
        AnyIndex::Memory(_) => local.map_or(Sink::None, |sender| Sink::Local(sender.clone())),
    }
}

/// [`open_backends`] for `serve`: the embedded store's feed publishes what it applies
/// ([`live_sink`]), with `local` as this process's hub.
pub async fn open_backends_live(
    args: &BackendArgs,
    shutdown: &CancellationToken,
    local: Option<&UnboundedSender<Vec<ChangeEvent>>>,
) -> anyhow::Result<Backends> {
    let index = match args.index {
        IndexKind::Memory => AnyIndex::Memory(MemoryIndex::new()),
        IndexKind::Redis => AnyIndex::Redis(open_redis(args).await?),
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
                        live_sink(&index, local)
                    } else {
                        Sink::None
                    },
                ),
                shutdown.clone(),
            )));
            AnyStore::Memory(MemoryStore::new().with_change_sink(sink))
        }
        StoreKind::Dynamodb => AnyStore::Dynamo(open_dynamo(args).await?),
    };
    Ok(Backends {
        store,
        index,
        tasks,
    })
}

/// Builds the Redis index and checks its settings with one request: settings Redis refuses
/// (TLS, certificate, credentials, ACL) stop the command here; a Redis that is merely down does
/// not, since the connection recovers by itself.
pub async fn open_redis(args: &BackendArgs) -> anyhow::Result<RedisIndex> {
    const FLAGS: &str =
        "--redis-url / DYNAPAGE_REDIS_URL, --redis-ca-file / DYNAPAGE_REDIS_CA_FILE";
    let index = RedisIndex::connect(args.redis_config()?)
        .await
        .with_context(|| format!("the Redis settings ({FLAGS})"))?;
    match index
        .first_contact()
        .await
        .with_context(|| format!("Redis refused these settings ({FLAGS})"))?
    {
        FirstContact::Answered => {}
        FirstContact::Unreachable(err) => tracing::warn!(
            error = format!("{:#}", anyhow::Error::from(err)),
            "Redis does not answer yet; starting anyway, the index is used once it does"
        ),
    }
    Ok(index)
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
/// belong to that index (Redis keys, or this process's memory for the embedded index).
pub fn stream_consumer(
    store: &AnyStore,
    index: &AnyIndex,
    poll_interval: std::time::Duration,
    local: Option<&UnboundedSender<Vec<ChangeEvent>>>,
) -> anyhow::Result<StreamConsumer<Publishing<AnyIndex>>> {
    let AnyStore::Dynamo(store) = store else {
        anyhow::bail!("the stream consumer needs --store dynamodb (DYNAPAGE_STORE)");
    };
    let options = StreamOptions {
        poll_interval,
        ..StreamOptions::default()
    };
    let checkpoints = Checkpoints::for_index(index, store.table());
    StreamConsumer::new(
        store,
        Publishing::new(index.clone(), live_sink(index, local)),
        checkpoints,
        options,
    )
    .context("building the stream consumer")
}

/// The rate limiter `args` ask for: shared through the index's Redis (same connection, keys
/// under `prefix`) when the index is Redis, in this process otherwise; `None` when every limit
/// is off. `max_complexity` is the largest cost a query may have: a burst below it is allowed,
/// with a warning, since such queries can then never pass.
pub fn rate_limiter(
    args: &RateLimitArgs,
    index: &AnyIndex,
    prefix: &str,
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
    let limiter = match index {
        AnyIndex::Redis(index) => {
            RateLimiter::Redis(Arc::new(RedisLimiter::new(index, prefix, limits)))
        }
        AnyIndex::Memory(_) => RateLimiter::Memory(Arc::new(MemoryLimiter::new(limits))),
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
