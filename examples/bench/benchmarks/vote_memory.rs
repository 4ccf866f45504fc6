//! `vote-memory`: what helpful votes cost in Redis (issue 26, BENCHMARKS.md "Helpful votes"):
//! the Redis index of a product of N comments before any vote, after one vote on each of
//! `voted` of them, and after a second voter's vote on the same ones. Voters are client
//! addresses (`--auth off`, sent as `X-Forwarded-For` through `--trusted-proxies 127.0.0.1`).
//! The server runs the embedded store and the Redis index (a redis-server of its own); votes go
//! through the API (`markHelpful`), and the index applies each vote's change (the comment's
//! next version) from the store's feed. Redis memory does not depend on the server's build, so
//! `--build debug` will do.

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use redis::aio::MultiplexedConnection;

use super::SKU;
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body};
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info::{info_number, list_key_suffixes, memory_usage};
use crate::report::{Summary, log};
use crate::server::{Server, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Demo comments of the product
    #[arg(long, default_value_t = 100_000)]
    comments: u64,
    /// Comments that get a vote (the newest), then a second voter's
    #[arg(long, default_value_t = 20_000)]
    voted: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "vote-memory")]
    result_name: String,
}

/// The comments of the demo's two small products, which are in `used_memory` too.
const OTHER_DEMO_COMMENTS: u64 = 1_246;

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let mut conn = backends::connect(&redis.url()).await?;
    let empty = used(&mut conn).await?;
    let mut serve = strings(&["--demo-comments", &args.comments.to_string()]);
    serve.extend(strings(&["--index", "redis", "--redis-url", &redis.url()]));
    serve.extend(strings(&[
        "--response-cache-bytes",
        "0",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
        "--max-connections-per-address",
        "10000",
        "--trusted-proxies",
        "127.0.0.1",
    ]));
    let server = Server::start(ctx, "vote-memory", &serve).await?;
    log("waiting until the index holds the product");
    loop {
        let card: u64 = redis::cmd("ZCARD")
            .arg(key("r5"))
            .query_async(&mut conn)
            .await?;
        if card > 0 && server.api.total_count(SKU).await.ok() == Some(args.comments) {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let seeded = used(&mut conn).await?;
    let seeded_keys = keys_bytes(&mut conn).await?;

    vote(&server.api, args.voted, "192.0.2.1").await?;
    settle(&mut conn, 2, args.voted).await?;
    let voted = used(&mut conn).await?;
    let voted_keys = keys_bytes(&mut conn).await?;
    // A second voter on the same comments: each gets one more version, nothing more to keep.
    vote(&server.api, args.voted, "192.0.2.2").await?;
    settle(&mut conn, 3, args.voted).await?;
    let again = used(&mut conn).await?;
    let again_keys = keys_bytes(&mut conn).await?;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    let (n, v) = (args.comments as i64, args.voted as i64);
    out.line(&format!("load: {}", loadavg()))?;
    out.line(&format!("comments: {n}; voted: {v}"))?;
    out.line(&format!(
        "used_memory: empty {empty}, seeded {seeded}, voted once {voted}, voted by a second voter {again}"
    ))?;
    out.line(&format!(
        "per comment, no votes: {} B used_memory, {} B MEMORY USAGE of the product's keys",
        (seeded - empty) / (n + OTHER_DEMO_COMMENTS as i64),
        seeded_keys / n
    ))?;
    out.line(&format!(
        "per voted comment: {} B used_memory, {} B MEMORY USAGE",
        (voted - seeded) / v,
        (voted_keys - seeded_keys) / v
    ))?;
    out.line(&format!(
        "a second vote on a voted comment: {} B used_memory, {} B MEMORY USAGE",
        (again - voted) / v,
        (again_keys - voted_keys) / v
    ))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// The product's index key `name` under the server's default prefix.
fn key(name: &str) -> String {
    format!("dynapage:idx:{{{SKU}}}:{name}")
}

/// `used_memory` of `INFO memory`.
async fn used(conn: &mut MultiplexedConnection) -> anyhow::Result<i64> {
    Ok(info_number(conn, "memory", "used_memory").await? as i64)
}

/// `MEMORY USAGE … SAMPLES 0` of the product's keys: its sets by rating, by time and by count,
/// its versions and its version.
async fn keys_bytes(conn: &mut MultiplexedConnection) -> anyhow::Result<i64> {
    memory_usage(conn, list_key_suffixes().iter().map(|suffix| key(suffix))).await
}

/// One vote from `voter` on each of the `voted` newest comments, 16 in flight.
async fn vote(api: &Api, voted: u64, voter: &str) -> anyhow::Result<()> {
    log(&format!("{voted} votes from {voter}"));
    let header = format!("X-Forwarded-For: {voter}");
    let mut ids: Vec<String> = Vec::new();
    let mut after = String::new();
    while (ids.len() as u64) < voted {
        let query = format!(
            "{{ comments(sku: \"{SKU}\", first: 100{after}) {{ edges {{ cursor node {{ id }} }} }} }}"
        );
        let text = api.post(&body(&query), Some(&header)).await?;
        let page: serde_json::Value = serde_json::from_str(&text)?;
        let edges = page["data"]["comments"]["edges"]
            .as_array()
            .with_context(|| format!("no edges: {text}"))?;
        ids.extend(
            edges
                .iter()
                .filter_map(|e| e["node"]["id"].as_str().map(str::to_owned)),
        );
        let last = edges.last().context("a comment")?["cursor"]
            .as_str()
            .context("a cursor")?;
        after = format!(", after: \"{last}\"");
    }
    ids.truncate(voted as usize);
    let header = header.as_str();
    futures::stream::iter(ids)
        .map(|id| async move {
            let query = format!(
                "mutation {{ markHelpful(input: {{ commentId: \"{id}\" }}) {{ comment {{ helpfulCount }} }} }}"
            );
            let text = api.post(&body(&query), Some(header)).await?;
            anyhow::ensure!(!text.contains("\"errors\""), "the vote failed: {text}");
            Ok(())
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Waits until the index holds version `version` for `voted` comments, then a moment more.
async fn settle(conn: &mut MultiplexedConnection, version: u64, voted: u64) -> anyhow::Result<()> {
    let version = version.to_string();
    loop {
        let values: Vec<Vec<u8>> = redis::cmd("HVALS").arg(key("v")).query_async(conn).await?;
        let at_version = values.iter().filter(|v| v.as_slice() == version.as_bytes());
        if at_version.count() as u64 >= voted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}
