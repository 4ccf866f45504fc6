//! `sync-lag`: how far the Redis index trails the table while `dynapage sync` follows the
//! stream (BENCHMARKS.md, "Consumers"). For each `--poll-ms`, a `sync` runs while new comments
//! of one product are written at a steady rate with `BatchWriteItem` (a batch every 50 ms) and
//! the product's count in Redis is polled every 5 ms; the k-th comment is indexed when the count
//! first reaches k (a shard is applied in order), so its lag is that moment minus its write
//! time. Then fresh `sync`s (new key prefixes) read the whole stream from `TRIM_HORIZON`: their
//! catch-up rate is what one process applies when it is not waiting for writes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use dynapage::domain::{CommentDraft, RatingSet, Sku};
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;
use dynapage::store::CommentStore;
use dynapage::store::dynamo::{DynamoConfig, DynamoStore};

use super::parse_seconds;
use crate::backends;
use crate::context::Context;
use crate::machine::Machine;
use crate::processes::{self, Process};
use crate::report::{Summary, log};
use crate::stats::percentile;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments written per second in each lag run
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// How long each lag run writes
    #[arg(long, default_value = "20s", value_parser = parse_seconds)]
    duration: u64,
    /// `sync --poll-ms` of each lag run
    #[arg(long, value_delimiter = ',', default_value = "250,50")]
    poll_ms: Vec<u64>,
    /// Catch-up runs from TRIM_HORIZON
    #[arg(long, default_value_t = 2)]
    catch_up_runs: u32,
}

/// Starts `dynapage sync` on the table, into Redis under `prefix`.
fn start_sync(
    ctx: &Context,
    dynamo: &backends::DynamoDbLocal,
    redis: &backends::Redis,
    prefix: &str,
    poll_ms: u64,
) -> anyhow::Result<Process> {
    let mut command = std::process::Command::new(ctx.dynapage());
    command
        .args([
            "sync",
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &dynamo.url(),
        ])
        .args([
            "--index",
            "redis",
            "--redis-url",
            &redis.url(),
            "--redis-prefix",
            prefix,
        ])
        .args(["--poll-ms", &poll_ms.to_string()])
        .envs(crate::server::AWS_ENV);
    let log = ctx.raw(&format!(
        "sync-{}-{poll_ms}.log",
        prefix.trim_end_matches(':')
    ));
    processes::spawn("dynapage sync", command, &log)
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let redis = backends::redis(ctx).await?;
    let store = DynamoStore::connect(DynamoConfig {
        endpoint: Some(dynamo.url().clone()),
        table: "comments".to_owned(),
        region: None,
    })
    .await
    .context("DynamoDB")?;
    store.create_tables().await.context("creating the table")?;
    let mut out = Summary::create(&ctx.result("sync-lag.txt"))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line("# DynamoDB Local, Redis, the writer and sync share the cores")?;
    let mut skus = Vec::new();
    for &poll_ms in &args.poll_ms {
        let mut sync = start_sync(ctx, &dynamo, &redis, "dynapage:", poll_ms)?;
        // Let it find the stream's shards before the first write.
        tokio::time::sleep(Duration::from_secs(2)).await;
        sync.ensure_running()?;
        let sku = format!("SYNC_LAG_{poll_ms}");
        let index = RedisIndex::connect(RedisConfig::new(&redis.url(), "dynapage:")).await?;
        let line = measure_lag(&store, &index, &sku, &args).await?;
        out.line(&format!("sync --poll-ms {poll_ms}: {line}"))?;
        sync.stop();
        skus.push(sku);
    }
    let records = args.rate * args.duration * skus.len() as u64;
    for run in 1..=args.catch_up_runs {
        let prefix = format!("catchup{run}:");
        let index = RedisIndex::connect(RedisConfig::new(&redis.url(), &prefix)).await?;
        let started = Instant::now();
        let mut sync = start_sync(ctx, &dynamo, &redis, &prefix, 250)?;
        loop {
            let mut count = 0;
            for sku in &skus {
                count += index.count(&Sku::parse(sku)?, RatingSet::ALL).await?;
            }
            if count >= records {
                break;
            }
            sync.ensure_running()?;
            ensure!(
                started.elapsed() < Duration::from_secs(600),
                "the catch-up stopped at {count} of {records}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let seconds = started.elapsed().as_secs_f64();
        sync.stop();
        out.line(&format!(
            "catch-up from TRIM_HORIZON, run {run}: {records} records in {seconds:.2} s (process start included) = {:.0} records/s",
            records as f64 / seconds
        ))?;
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Writes `rate` comments a second for `duration` while polling the count; one line of the
/// rate reached, the lag's p50, p99 and maximum, and how long after the last write the index
/// caught up.
async fn measure_lag(
    store: &DynamoStore,
    index: &RedisIndex,
    sku_name: &str,
    args: &Args,
) -> anyhow::Result<String> {
    let sku = Sku::parse(sku_name)?;
    ensure!(
        index.count(&sku, RatingSet::ALL).await? == 0,
        "{sku_name} already has comments"
    );
    let total = args.rate * args.duration;
    let written: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let writer = {
        let (store, written, sku) = (store.clone(), written.clone(), sku_name.to_owned());
        let per_tick = (args.rate / 20).max(1);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            let mut n = 0;
            while n < total {
                tick.tick().await;
                let batch: Vec<_> = (n..(n + per_tick).min(total))
                    .map(|i| {
                        let draft = CommentDraft::new(&sku, "lag", "measured", 1 + (i % 5) as i64)
                            .expect("a valid draft");
                        draft.into_comment(1_767_225_600_000 + i)
                    })
                    .collect();
                store.put_batch(&batch).await?;
                let now = Instant::now();
                if let Ok(mut w) = written.lock() {
                    w.extend(std::iter::repeat_n(now, batch.len()));
                }
                n += batch.len() as u64;
            }
            anyhow::Ok(())
        })
    };
    let started = Instant::now();
    let mut indexed_at: Vec<Instant> = Vec::with_capacity(total as usize);
    while (indexed_at.len() as u64) < total {
        let count = index.count(&sku, RatingSet::ALL).await?;
        let now = Instant::now();
        while (indexed_at.len() as u64) < count.min(total) {
            indexed_at.push(now);
        }
        ensure!(
            started.elapsed() < Duration::from_secs(args.duration * 4 + 60),
            "the index did not catch up: {count} of {total}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    writer.await??;
    let written = written.lock().map(|w| w.clone()).unwrap_or_default();
    let last_write = written.last().copied().unwrap_or(started);
    let writing = (last_write - started).as_secs_f64();
    let mut lags: Vec<f64> = written
        .iter()
        .zip(&indexed_at)
        .map(|(w, i)| i.saturating_duration_since(*w).as_secs_f64() * 1e3)
        .collect();
    lags.sort_by(f64::total_cmp);
    let caught_up = indexed_at
        .last()
        .map_or(0, |i| i.saturating_duration_since(last_write).as_millis());
    Ok(format!(
        "wrote {total} comments in {writing:.1} s ({:.0}/s); lag p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; caught up {caught_up} ms after the last write",
        total as f64 / writing,
        percentile(&lags, 50.0),
        percentile(&lags, 99.0),
        percentile(&lags, 100.0),
    ))
}
