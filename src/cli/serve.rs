//! `dynapage serve`: the GraphQL server, with demo data when it runs on the embedded store
//! (`demo_data`).

mod demo_data;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser};
use indicatif::ProgressBar;
use tokio::net::TcpListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::Auth;
use crate::config::{
    AuthArgs, BackendArgs, CacheArgs, CursorArgs, IndexKind, ModerationArgs, PagingArgs,
    PersistedArgs, PurchaseArgs, PurgeArgs, RateLimitArgs, ServerArgs, StoreKind, WebSocketArgs,
};
use crate::domain::ChangeEvent;
use crate::graphql::{ApiState, build_surface};
use crate::index::AnyIndex;
use crate::live::redis_log::RedisLog;
use crate::pagination::Engine;
use crate::purge::Purger;
use crate::redis::RedisHandle;
use crate::startup::{Backends, Process, open_backends_live, rate_limiter, stream_consumer};
use crate::store::AnyStore;

/// The arguments of `dynapage serve` (and of `dynapage` without a subcommand).
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// How the server listens and what it accepts.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Which store and index to use and how to reach them.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Page sizes and the offset threshold.
    #[command(flatten)]
    pub paging: PagingArgs,
    /// The keys that seal cursors.
    #[command(flatten)]
    pub cursor: CursorArgs,
    /// Who may write, and how their tokens are checked.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// When new comments become public.
    #[command(flatten)]
    pub moderation: ModerationArgs,
    /// How purchase proofs are verified.
    #[command(flatten)]
    pub purchase: PurchaseArgs,
    /// Rate limits per client, and which proxies may name the client.
    #[command(flatten)]
    pub rate_limit: RateLimitArgs,
    /// Per-client caps on WebSockets and subscriptions, and the send deadline.
    #[command(flatten)]
    pub websocket: WebSocketArgs,
    /// The response cache and the headers that let a CDN keep responses.
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Where the tags of changed products are purged.
    #[command(flatten)]
    pub purge: PurgeArgs,
    /// Automatic persisted queries and trusted documents.
    #[command(flatten)]
    pub persisted: PersistedArgs,
    /// Also consume the table's DynamoDB stream into the index, in this process (development;
    /// production runs `dynapage sync` once beside any number of servers). Implied by
    /// `--store dynamodb --index memory`, whose index is filled from a full scan at start-up
    /// and then only this process can keep it current. No effect with the embedded store,
    /// whose changes reach its index directly.
    #[arg(long, env = "DYNAPAGE_SYNC")]
    pub sync: bool,
    /// Pause between polls of a caught-up stream with --sync, in milliseconds.
    #[arg(long, env = "DYNAPAGE_SYNC_POLL_MS", default_value_t = 250)]
    pub sync_poll_ms: u64,
    /// Comments of DAFT_PUNK_TSHIRT in the embedded store's demo data; 0 for no demo data.
    /// No demo data is written into a --data-dir store.
    #[arg(long, env = "DYNAPAGE_DEMO_COMMENTS", default_value_t = 250_000)]
    pub demo_comments: u64,
}

impl ServeArgs {
    /// `serve` with its defaults and environment, for `dynapage` without a subcommand.
    pub fn default_from_env() -> anyhow::Result<Self> {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ServeArgs,
        }
        Ok(Wrapper::try_parse_from(["dynapage"])?.args)
    }
}

/// Serves until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let listener = TcpListener::bind(args.server.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (--listen / DYNAPAGE_LISTEN)",
                args.server.listen
            )
        })?;
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    run_with(args, listener, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// Serves on `listener` until `shutdown` fires; in-flight requests finish, background tasks
/// stop, and a `--data-dir` store is closed (its directory free for another server) before
/// this returns.
pub async fn run_with(
    args: ServeArgs,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut closed = None;
    let served = serve_on(args, listener, shutdown, &mut closed).await;
    // Every handle of the store went with `serve_on`'s state; its writer thread ends a moment
    // later. Why wait: a server stopped in-process and started again on the same directory
    // (tests, an embedding program) was refused the lock the old thread still held (a
    // fresh-clone CI run).
    if let Some(closed) = closed {
        if tokio::time::timeout(Duration::from_secs(5), closed.wait())
            .await
            .is_err()
        {
            tracing::warn!("the embedded store did not close within 5 s: a task still holds it");
        }
    }
    served
}

/// [`run_with`]'s work; sets `closed` once a durable store is open.
async fn serve_on(
    args: ServeArgs,
    listener: TcpListener,
    shutdown: CancellationToken,
    closed: &mut Option<crate::store::sqlite::Closed>,
) -> anyhow::Result<()> {
    let settings = args.paging.settings()?;
    // Flags that contradict each other are named before what a store would require.
    args.backend.data_dir()?;
    let auth = args.auth.auth(args.backend.store)?;
    let pre_moderation = args.moderation.pre(&auth)?;
    let shop_name = args.moderation.shop_name()?;
    let purchases = args.purchase.verifier(args.backend.store, &auth).await?;
    let codec = args.cursor.codec(args.backend.store)?;
    fetch_signing_keys(&auth).await;
    let trusted_proxies = args.rate_limit.trusted_proxies()?;
    // Subscriptions are fed from the Redis change log with the Redis index (whoever applies
    // the stream publishes there), else from what this process applies: the embedded store's
    // feed, or the table's stream (`--sync`, implied by a memory index over DynamoDB).
    let hub = crate::live::Hub::new(args.server.subscription_buffer as usize);
    let (local, mut local_feed) = crate::live::Hub::local_channel();
    let process = process(&args);
    let purger = args.purge.purger(&shutdown)?;
    let Backends {
        store,
        index,
        redis,
        mut tasks,
    } = open_backends_live(
        &args.backend,
        process,
        &shutdown,
        Some(&local),
        purger.as_ref(),
    )
    .await?;
    *closed = store.closed();
    let durable = args.backend.data_dir()?.is_some();
    if args.backend.store == StoreKind::Memory && !durable && args.demo_comments > 0 {
        demo_data::seed(&store, &index, args.demo_comments).await?;
    }
    // The demo data is not news: nobody can have subscribed yet.
    while local_feed.try_recv().is_ok() {}
    tasks.push(tokio::spawn(crate::live::run_feed(
        live_source(redis.as_ref(), local_feed)?,
        store.clone(),
        index.clone(),
        hub.clone(),
        shutdown.clone(),
    )));
    let sync = (&local, purger.as_ref());
    let log_len = crate::startup::log_len(args.backend.change_log_max_len);
    tasks.extend(start_sync(&args, &store, &index, redis.as_ref(), &shutdown, sync).await?);
    let api = Arc::new(ApiState {
        engine: Engine::new(store, index, settings),
        codec,
        auth,
        max_node_ids: args.server.max_node_ids,
        hub,
        change_log: redis.as_ref().map(|redis| RedisLog::new(redis, log_len)),
        open_subscriptions: crate::graphql::OpenSubscriptions::default(),
        max_subscriptions: args.server.max_subscriptions,
        max_items_per_request: args.server.max_items_per_request,
        max_complexity: args.server.max_query_complexity,
        pre_moderation,
        shop_name,
        purchases,
        verification_statement: args.purchase.statement()?,
        report_hide_threshold: args.moderation.hide_threshold(),
    });
    let schema = build_surface(args.server.surface(), Some(api.clone()));
    let connections = args.server.connection_options(trusted_proxies.clone());
    let mut options = http_options(&args, redis.as_ref(), trusted_proxies, &shutdown)?;
    tasks.extend(serve_metrics_apart(&args, &mut options, &shutdown).await?);
    tasks.push(wait_for_cohorts(&options, &shutdown));
    let router = crate::http::router(schema, api, options, crate::storefront::routes);
    let grace = Duration::from_millis(args.server.shutdown_grace_ms);
    serve_until_stopped(listener, router, connections, &shutdown, grace, tasks).await
}

/// What this process asks of the backends it opens: the stream's sync, and Redis for the rate
/// limits. Budgets, the subscription rate and the registrations of persisted queries are each
/// kept in Redis (`take.lua`) when the index is there.
fn process(args: &ServeArgs) -> Process {
    let persisted = &args.persisted;
    let rate_limits = args.rate_limit.limits().any()
        || args.websocket.rate_limit_subscriptions > 0
        || (persisted.rate_limit_registrations > 0 && persisted.persisted_queries_bytes > 0);
    Process::Serve {
        sync: args.sync,
        rate_limits,
    }
}

/// The HTTP side's options: the rate limiter, persisted documents (shared through Redis when
/// the index is there), the WebSocket limits and the caching flags.
fn http_options(
    args: &ServeArgs,
    redis: Option<&RedisHandle>,
    trusted_proxies: crate::http::TrustedProxies,
    shutdown: &CancellationToken,
) -> anyhow::Result<crate::http::HttpOptions> {
    let limiter = rate_limiter(&args.rate_limit, redis, args.server.max_query_complexity);
    let shared = redis.filter(|_| args.backend.index == IndexKind::Redis);
    let persisted = args
        .persisted
        .documents(shared, args.server.max_body_bytes)?;
    let mut options = crate::http::HttpOptions {
        persisted: Arc::new(persisted),
        rate_limiter: limiter,
        trusted_proxies,
        // The subscription rate is shared through Redis when the other budgets are.
        websocket: args
            .websocket
            .limits(redis.filter(|_| args.rate_limit.limits().any())),
        shutdown: shutdown.clone(),
        ..args.server.http_options()?
    };
    args.cache.apply(&mut options);
    Ok(options)
}

/// A task that ends once every cohort and WebSocket has: they hold the schema (and the store
/// with it, the embedded store's directory lock too), so the server has stopped when they
/// have.
fn wait_for_cohorts(
    options: &crate::http::HttpOptions,
    shutdown: &CancellationToken,
) -> JoinHandle<()> {
    let cohorts = options.websocket.cohorts.clone();
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        stopping.cancelled().await;
        cohorts.stopped().await;
    })
}

/// With `--metrics-addr`, serves `/metrics` there (until `shutdown`) and takes it off the
/// main listener.
async fn serve_metrics_apart(
    args: &ServeArgs,
    options: &mut crate::http::HttpOptions,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<JoinHandle<()>>> {
    let Some(address) = args.server.metrics_addr else {
        return Ok(None);
    };
    let listener = TcpListener::bind(address).await.with_context(|| {
        format!("cannot listen on {address} (--metrics-addr / DYNAPAGE_METRICS_ADDR)")
    })?;
    tracing::info!(%address, "serving /metrics");
    let router = crate::http::metrics_router(options.metrics.take());
    let stopped = shutdown.clone().cancelled_owned();
    let connections = crate::http::ConnectionOptions::default();
    Ok(Some(tokio::spawn(async move {
        if let Err(error) = crate::http::serve(listener, router, connections, stopped).await {
            tracing::error!(%error, "the metrics listener failed");
        }
    })))
}

/// Fetches the JWKS once at start-up. Reads need no keys; writes fail closed until a fetch
/// succeeds (each unknown key retries it, at most once per few seconds), so a failure is
/// logged, not fatal.
async fn fetch_signing_keys(auth: &Auth) {
    let Auth::Jwt(verifier) = auth else {
        return;
    };
    match verifier.keys().refresh().await {
        Ok(0) => {
            tracing::error!("the JWKS holds no usable signing key: every write will be refused")
        }
        Ok(_) => {}
        Err(error) => {
            tracing::error!(error = %error, "cannot fetch the JWKS (--auth-jwks-url): writes are refused until it can be fetched")
        }
    }
}

/// Where the hub takes applied changes from: the change log in `redis`, the Redis index's
/// (whoever applies the stream publishes there), else what this process applies to its memory
/// index (the embedded store's feed, or the stream, which a memory index over DynamoDB
/// implies), sent to `local_feed`.
fn live_source(
    redis: Option<&RedisHandle>,
    local_feed: UnboundedReceiver<Vec<ChangeEvent>>,
) -> anyhow::Result<crate::live::Source> {
    Ok(match redis {
        // Reading never trims: the length matters only to appenders.
        Some(redis) => crate::live::Source::Redis(
            RedisLog::new(redis, crate::live::redis_log::DEFAULT_MAX_LEN).reader()?,
        ),
        None => crate::live::Source::Local(local_feed),
    })
}

/// Serves `router` on `listener` until `shutdown` fires, then stops `tasks`. Draining is
/// bounded: in-flight requests get `grace`, then the process stops.
async fn serve_until_stopped(
    listener: TcpListener,
    router: axum::Router,
    connections: crate::http::ConnectionOptions,
    shutdown: &CancellationToken,
    grace: Duration,
    tasks: Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    let address = listener.local_addr()?;
    tracing::info!(%address, graphiql = %format!("http://{address}/"), "listening");
    let drain_deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        served = crate::http::serve(listener, router, connections, shutdown.clone().cancelled_owned()) => served?,
        () = drain_deadline => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "in-flight requests outlived the shutdown grace period; stopping anyway");
        }
    }
    shutdown.cancel();
    for task in tasks {
        if tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .is_err()
        {
            tracing::warn!("a background task did not stop within 5 s");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

pub(crate) async fn stop_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down");
    shutdown.cancel();
}

/// Starts the in-process stream consumer when `--sync` asks for it or a memory index over
/// DynamoDB needs it. A memory index over DynamoDB starts empty, so it is first filled by a
/// full reindex; the consumer then replays the stream from its oldest record (its checkpoints
/// are in memory too), which re-applies every change made during or since the scan.
async fn start_sync(
    args: &ServeArgs,
    store: &AnyStore,
    index: &AnyIndex,
    redis: Option<&RedisHandle>,
    shutdown: &CancellationToken,
    (local, purger): (&UnboundedSender<Vec<ChangeEvent>>, Option<&Purger>),
) -> anyhow::Result<Option<JoinHandle<()>>> {
    if args.backend.store == StoreKind::Memory {
        if args.sync {
            tracing::info!(
                "--sync has no effect with the embedded store: its changes feed the index directly"
            );
        }
        return Ok(None);
    }
    let memory_index = args.backend.index == IndexKind::Memory;
    if memory_index {
        if !args.sync {
            tracing::info!(
                "--store dynamodb --index memory: following the stream in-process (--sync implied)"
            );
        }
        crate::sync::reindex(store, index, None, 4, &ProgressBar::hidden())
            .await
            .context("filling the memory index from the table")?;
    } else if !args.sync {
        return Ok(None);
    }
    let consumer = stream_consumer(
        store,
        index,
        redis,
        Duration::from_millis(args.sync_poll_ms),
        Some(local),
        args.backend.change_log_max_len,
        purger,
    )?;
    let shutdown = shutdown.clone();
    Ok(Some(tokio::spawn(async move {
        if let Err(error) = consumer.run(shutdown).await {
            tracing::error!(
                error = format!("{error:#}"),
                "stream sync failed; the index no longer follows writes"
            );
        }
    })))
}
