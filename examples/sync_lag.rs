//! How far the index trails the table while `dynapage sync` follows the stream: writes new
//! comments to one product at a steady `rate` per second for `seconds` (batches every 50 ms,
//! each comment's write time kept), while polling the product's count in the index every 5 ms.
//! The k-th comment is indexed when the count first reaches k (the consumer applies a shard in
//! order), so its lag is that moment minus its write time. One line reports the rate reached,
//! the lag's p50, p99 and maximum, and how long the index took to catch up after the last write.
//! Run it beside `dynapage sync` on the same table and Redis prefix (BENCHMARKS.md).
//!
//! ```sh
//! cargo run --release --example sync_lag -- --endpoint http://127.0.0.1:8000 --table comments \
//!     --redis-url redis://127.0.0.1:6379 --redis-prefix dynapage: --rate 1000 --seconds 30
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use dynapage::domain::{CommentDraft, RatingSet, Sku};
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;
use dynapage::store::CommentStore;
use dynapage::store::dynamo::{DynamoConfig, DynamoStore};

#[derive(Parser, Debug)]
struct Args {
    #[arg(long)]
    endpoint: String,
    #[arg(long, default_value = "comments")]
    table: String,
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    #[arg(long, default_value = "dynapage:")]
    redis_prefix: String,
    /// A product with no comments yet (its count starts at 0).
    #[arg(long, default_value = "SYNC_LAG")]
    sku: String,
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    #[arg(long, default_value_t = 30)]
    seconds: u64,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(rank).copied().unwrap_or_default()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let store = DynamoStore::connect(DynamoConfig {
        endpoint: Some(args.endpoint.clone()),
        table: args.table.clone(),
        region: None,
    })
    .await
    .context("DynamoDB")?;
    let index = RedisIndex::connect(RedisConfig::new(&args.redis_url, &args.redis_prefix))
        .await
        .context("Redis")?;
    let sku = Sku::parse(&args.sku).map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(
        index.count(&sku, RatingSet::ALL).await? == 0,
        "{} already has comments in the index: pick a new --sku",
        args.sku
    );

    let total = args.rate * args.seconds;
    let written: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let writer = {
        let (store, written, sku) = (store.clone(), written.clone(), args.sku.clone());
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
                store.put_batch(&batch).await.expect("the write");
                let now = Instant::now();
                written
                    .lock()
                    .expect("lock")
                    .extend(std::iter::repeat_n(now, batch.len()));
                n += batch.len() as u64;
            }
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
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(args.seconds * 4 + 60),
            "the index did not catch up: {count} of {total}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    writer.await?;
    let written = written.lock().expect("lock").clone();
    let last_write = written.last().copied().unwrap_or(started);
    let writing = last_write - started;
    let mut lags: Vec<Duration> = written
        .iter()
        .zip(&indexed_at)
        .map(|(w, i)| i.saturating_duration_since(*w))
        .collect();
    lags.sort();
    println!(
        "wrote {total} comments in {:.1} s ({:.0}/s); lag p50 {} ms, p99 {} ms, max {} ms; caught up {} ms after the last write",
        writing.as_secs_f64(),
        total as f64 / writing.as_secs_f64(),
        percentile(&lags, 0.5).as_millis(),
        percentile(&lags, 0.99).as_millis(),
        lags.last().copied().unwrap_or_default().as_millis(),
        indexed_at
            .last()
            .map_or(0, |i| i.saturating_duration_since(last_write).as_millis()),
    );
    Ok(())
}
