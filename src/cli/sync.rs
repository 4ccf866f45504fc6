//! `dynapage sync`: consumes the table's DynamoDB stream into the Redis index until SIGINT or
//! SIGTERM, checkpointing each shard in Redis after every applied batch.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::config::{BackendArgs, PurgeArgs};
use crate::startup::{Process, open_backends, stream_consumer};

#[derive(Args, Debug)]
pub struct SyncArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Pause between polls of a caught-up stream, in milliseconds.
    #[arg(long, env = "DYNAPAGE_SYNC_POLL_MS", default_value_t = 250)]
    pub poll_ms: u64,
    #[command(flatten)]
    pub purge: PurgeArgs,
}

pub(super) async fn run(args: SyncArgs) -> anyhow::Result<()> {
    args.backend.require_dynamodb_and_redis("sync")?;
    let shutdown = CancellationToken::new();
    tokio::spawn(super::serve::stop_on_signal(shutdown.clone()));
    let backends = open_backends(&args.backend, Process::Sync, &shutdown).await?;
    let purger = args.purge.purger(&shutdown)?;
    let consumer = stream_consumer(
        &backends.store,
        &backends.index,
        backends.redis.as_ref(),
        Duration::from_millis(args.poll_ms),
        None,
        args.backend.change_log_max_len,
        purger.as_ref(),
    )?;
    consumer.run(shutdown).await.context("stream sync")
}
