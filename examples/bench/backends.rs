//! The backing services as the tool starts them: DynamoDB Local and a private redis-server,
//! each by the launcher the tests and benches share (`tests/api/support/services.rs`), on a
//! free loopback port, its log in the raw directory, awaited on a blocking thread, stopped when
//! its handle is dropped; and the clients a benchmark talks to them with. Neither is ever
//! installed here: a missing one fails with the command that installs it.

use anyhow::Context as _;
use redis::aio::MultiplexedConnection;

use crate::context::Context;
use crate::report::log;
pub use crate::services::{DynamoDbLocal, Redis, RedisOptions};

/// Starts DynamoDB Local (its pid is the JVM's: CPU read from /proc is DynamoDB Local's).
pub async fn dynamodb_local(ctx: &Context) -> anyhow::Result<DynamoDbLocal> {
    let dir = ctx.raw("");
    let local = tokio::task::spawn_blocking(move || DynamoDbLocal::start(Some(&dir)))
        .await
        .context("the thread starting DynamoDB Local")??;
    log(&format!("DynamoDB Local on {}", local.url()));
    Ok(local)
}

/// Starts a redis-server of our own, without persistence.
pub async fn redis(ctx: &Context) -> anyhow::Result<Redis> {
    redis_with(ctx, RedisOptions::default()).await
}

/// [`redis`] with more arguments, or under another program (valgrind).
pub async fn redis_with(ctx: &Context, mut options: RedisOptions) -> anyhow::Result<Redis> {
    options.log_dir.get_or_insert_with(|| ctx.raw(""));
    let redis = tokio::task::spawn_blocking(move || Redis::start(&options))
        .await
        .context("the thread starting redis-server")??;
    log(&format!("redis-server on {}", redis.url()));
    Ok(redis)
}

/// A bare SDK client for an endpoint (DynamoDB Local takes any credentials).
pub fn dynamodb_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A connection for `INFO`, `CONFIG RESETSTAT` and scripts.
pub async fn connect(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    client
        .get_multiplexed_async_connection()
        .await
        .with_context(|| format!("connecting to {url}"))
}
