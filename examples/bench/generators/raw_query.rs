//! `raw-query`: the raw rate of the DynamoDB `Query` a page costs, without dynapage:
//! `concurrency` workers send the same `Query` (GSI `byProduct`, newest first, `Limit n + 1`,
//! optionally below a sort key, as a page after a cursor or after an index jump) for `seconds`,
//! and one line reports requests per second, p50 and p99 and the consumed capacity. `load`
//! runs it beside the server so the API's overhead shows as a ratio (BENCHMARKS.md).
//!
//! With `--redis-url` and `--rank N`, each request is the raw work of a page at offset N: first
//! the index's rank lookup (`RedisIndex::key_at`: one script call on the product's five rating
//! sets, finding the comment just above the page), then the `Query` below that comment's sort
//! key, one after the other as the server does. Redis has no single command for a rank in a
//! union of sets, so that lookup goes through dynapage's own index adapter: the same script
//! call the server makes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use dynapage::domain::{Listing, Order, RatingSet, Sku};
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// DynamoDB endpoint, e.g. DynamoDB Local.
    #[arg(long)]
    endpoint: String,
    /// The table
    #[arg(long, default_value = "comments")]
    table: String,
    /// The GSI and its partition attribute: `byProduct` + `sku` or `byProductRating` + `skuRating`.
    #[arg(long, default_value = "byProduct")]
    index: String,
    #[arg(long, default_value = "sku")]
    partition_attribute: String,
    /// The partition key value (a SKU, or `SKU#rating` for `byProductRating`).
    #[arg(long)]
    sku: String,
    /// Items per query: a page of n reads n + 1.
    #[arg(long, default_value_t = 21)]
    limit: i32,
    /// Read below this sort key (`sortKey < :sk`), as a page after a cursor does.
    #[arg(long)]
    below: Option<String>,
    /// Find the bound in Redis first (the index's `key_at` at `rank - 1`, newest first).
    #[arg(long, requires = "rank", conflicts_with = "below")]
    redis_url: Option<String>,
    /// The index's key prefix in that Redis.
    #[arg(long, default_value = "dynapage:")]
    redis_prefix: String,
    /// The page's offset in the product's list, newest first (with `--redis-url`).
    #[arg(long, requires = "redis_url", value_parser = clap::value_parser!(u64).range(1..))]
    rank: Option<u64>,
    /// Workers, each sending one request at a time
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// How long to send
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let args = Arc::new(args);
    let client = crate::backends::dynamodb_client(&args.endpoint);
    let redis = match &args.redis_url {
        Some(url) => Some(
            RedisIndex::connect(RedisConfig::new(url, &args.redis_prefix))
                .await
                .context("connecting to Redis")?,
        ),
        None => None,
    };
    let (items, rcu) = page(&client, redis.clone(), &args)
        .await
        .context("a first query")?;
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (client, redis, args) = (client.clone(), redis.clone(), args.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0u64;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    match page(&client, redis.clone(), &args).await {
                        Ok(_) => latencies.push(sent.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    for worker in workers {
        let (l, e) = worker.await?;
        latencies.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "requests_per_s={:.1} p50_ms={:.2} p99_ms={:.2} requests={} errors={} items_per_query={} consumed_rcu={}",
        latencies.len() as f64 / elapsed,
        at(0.50),
        at(0.99),
        latencies.len(),
        errors,
        items,
        rcu
    );
    Ok(())
}

/// One request: with Redis, the rank lookup and then the query below the key it found.
async fn page(
    client: &aws_sdk_dynamodb::Client,
    redis: Option<RedisIndex>,
    args: &Args,
) -> anyhow::Result<(usize, f64)> {
    let (Some(redis), Some(rank)) = (redis, args.rank) else {
        return query(client, args, args.below.as_deref()).await;
    };
    let sku = Sku::parse(&args.sku)?;
    let found = redis
        .key_at(
            &sku,
            Listing::flat(RatingSet::ALL),
            Order::NewestFirst,
            None,
            rank - 1,
        )
        .await?
        .with_context(|| format!("{sku} has no comment at rank {}", rank - 1))?;
    // The sort key as the table stores it (`SortKey`'s Display): 13-digit milliseconds, '#', id.
    query(client, args, Some(&found.key.to_string())).await
}

/// One query; returns the items it read and the capacity DynamoDB says it consumed.
async fn query(
    client: &aws_sdk_dynamodb::Client,
    args: &Args,
    below: Option<&str>,
) -> anyhow::Result<(usize, f64)> {
    let mut condition = "#pk = :pk".to_owned();
    let mut request = client
        .query()
        .table_name(&args.table)
        .index_name(&args.index)
        .expression_attribute_names("#pk", &args.partition_attribute)
        .expression_attribute_values(":pk", AttributeValue::S(args.sku.clone()))
        .scan_index_forward(false)
        .limit(args.limit)
        .return_consumed_capacity(ReturnConsumedCapacity::Total);
    if let Some(below) = below {
        condition.push_str(" AND #sk < :sk");
        request = request
            .expression_attribute_names("#sk", "sortKey")
            .expression_attribute_values(":sk", AttributeValue::S(below.to_owned()));
    }
    let output = request.key_condition_expression(condition).send().await?;
    let rcu = output
        .consumed_capacity()
        .and_then(|c| c.capacity_units())
        .unwrap_or_default();
    Ok((output.items().len(), rcu))
}
