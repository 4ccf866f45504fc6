//! `soak`: not a timed unit test but a long run (BENCHMARKS.md, "Soak"): `connections`
//! connections for `duration` of mixed queries (first pages, pages after cursors, offsets,
//! backward pages, rating filters, totalCount, addComment mutations) against the server on
//! DynamoDB Local + Redis with the stream sync on. Reports errors (non-2xx responses and
//! GraphQL responses holding "errors": wrk's Lua checks every body; must be 0), req/s, p50/p99,
//! and the server's RSS after the warm-up, every 10 s and at the end (must stay within 10%).
//! Fails when either limit is broken.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::parse_seconds;
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::{loadavg, rss_kb};
use crate::report::{Summary, log};
use crate::server::{Server, await_indexed, seed_dynamodb, strings};
use crate::wrk;

const SKU: &str = "SOAK_TEST_PRODUCT";
const SELECTION: &str = "totalCount edges { cursor node { id author rating createdAt } } pageInfo { hasNextPage hasPreviousPage endCursor }";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments seeded before the soak
    #[arg(long, default_value_t = 20_000)]
    comments: u64,
    /// wrk connections
    #[arg(long, default_value_t = 64)]
    connections: u32,
    /// The soak (RSS is sampled every 10 s)
    #[arg(long, default_value = "60s", value_parser = parse_seconds)]
    duration: u64,
    /// Load before the soak, before the first RSS sample
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    warm_up: u64,
    /// Leave out the addComment bodies (to tell reads from writes apart)
    #[arg(long)]
    no_mutations: bool,
    /// The result's file name: <name>.txt
    #[arg(long, default_value = "soak")]
    result_name: String,
}

fn comments(arguments: &str) -> String {
    format!("{{ comments(sku: \"{SKU}\", {arguments}) {{ {SELECTION} }} }}")
}

/// The mixed bodies; cursors are deterministic, so a few are read first (new comments do not
/// move old ones).
async fn bodies(api: &Api, args: &Args) -> anyhow::Result<Vec<String>> {
    let end_cursor = |arguments: String| async move {
        let (response, _) = api.query(&comments(&arguments)).await?;
        response["data"]["comments"]["pageInfo"]["endCursor"]
            .as_str()
            .map(str::to_owned)
            .context("no endCursor")
    };
    let n = args.comments;
    let page2 = end_cursor("first: 20".into()).await?;
    let deep = end_cursor(format!("first: 20, offset: {}", n / 2)).await?;
    let rated = end_cursor("first: 20, ratings: [3, 5]".into()).await?;
    let mut queries: Vec<String> = [
        "first: 20".to_owned(),
        format!("first: 20, after: \"{page2}\""),
        format!("first: 20, after: \"{deep}\""),
        "first: 20, offset: 50".to_owned(),
        "first: 20, offset: 1000".to_owned(),
        format!("first: 20, offset: {}", n.saturating_sub(100)),
        "last: 20".to_owned(),
        format!("last: 20, before: \"{deep}\""),
        "last: 10, offset: 500".to_owned(),
        "first: 20, ratings: [3, 5]".to_owned(),
        format!("first: 20, ratings: [3, 5], after: \"{rated}\""),
        "first: 50, ratings: [1], offset: 200".to_owned(),
    ]
    .iter()
    .map(|a| comments(a))
    .collect();
    queries.push(format!("{{ product(sku: \"{SKU}\") {{ comments(first: 5) {{ totalCount edges {{ node {{ id body }} }} }} }} }}"));
    if !args.no_mutations {
        // About one request in five writes.
        for rating in [1, 3, 5] {
            queries.push(format!("mutation {{ addComment(input: {{ sku: \"{SKU}\", author: \"soak\", body: \"Written under load, one more time.\", rating: {rating} }}) {{ comment {{ id rating }} }} }}"));
        }
    }
    Ok(queries.iter().map(|q| body(q)).collect())
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let redis = backends::redis(ctx).await?;
    let mut serve = crate::server::dynamodb_redis_args(&dynamo.url(), &redis.url());
    serve.extend(strings(&["--sync", "--auth", "off"]));
    let server = Server::start(ctx, "soak", &serve).await?;
    seed_dynamodb(ctx, &dynamo.url(), SKU, args.comments, false, "soak-seed").await?;
    let (poll, timeout) = (Duration::from_secs(1), Duration::from_secs(300));
    await_indexed(&server.api, SKU, args.comments, poll, timeout).await?;

    let bodies = bodies(&server.api, &args).await?;
    // Every body must succeed once before the load starts.
    for body in &bodies {
        let response = server.api.post(body, None).await?;
        if response.contains("\"errors\"") {
            bail!("a soak query fails: {response}");
        }
    }
    let bodies_path = ctx.raw("soak-bodies.jsonl");
    write_bodies(&bodies_path, &bodies)?;
    let load = |seconds| wrk::Load {
        api: &server.api,
        bodies: &bodies_path,
        connections: args.connections,
        seconds,
        header: None,
        lean: false,
        cpus: None,
        threads: None,
    };
    log(&format!("warm-up {}s", args.warm_up));
    wrk::run(ctx, &load(args.warm_up)).await?;
    let pid = server.pid();
    let rss_start = rss_kb(pid).unwrap_or(0);
    let load_start = loadavg();
    log(&format!(
        "soak: {} connections for {}s (RSS {rss_start} kB)",
        args.connections, args.duration
    ));
    // RSS every 10 s during the soak, to tell a plateau from steady growth.
    let samples: Arc<Mutex<Vec<(f64, u64)>>> = Arc::default();
    let sampler = {
        let samples = samples.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let Some(rss) = rss_kb(pid) else { break };
                if let Ok(mut s) = samples.lock() {
                    s.push((started.elapsed().as_secs_f64(), rss));
                }
            }
        })
    };
    let result = wrk::run(ctx, &load(args.duration)).await;
    sampler.abort();
    let result = result?;
    let rss_end = rss_kb(pid).unwrap_or(0);
    let count_end = server.api.total_count(SKU).await?;
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    let growth = 100.0 * (rss_end as f64 - rss_start as f64) / rss_start.max(1) as f64;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "product: {} seeded comments, {count_end} after the soak (addComment)",
        args.comments
    ))?;
    out.line(&format!(
        "connections: {}  duration: {}s  bodies: {} (addComment: {})",
        args.connections,
        args.duration,
        bodies.len(),
        if args.no_mutations { "no" } else { "yes" }
    ))?;
    out.line(&result.to_string())?;
    out.line(&format!(
        "rss_start_kb={rss_start} rss_end_kb={rss_end} growth_pct={growth:.1}"
    ))?;
    let every: Vec<String> = samples.iter().map(|(_, rss)| rss.to_string()).collect();
    out.line(&format!("rss_every_10s_kb: {}", every.join(" ")))?;
    // Least-squares slope of the samples: growth shows as a steady positive trend, allocator
    // fluctuation as a band around zero (reported, not checked).
    out.line(&format!(
        "rss_trend_kb_per_min: {:.0}",
        trend_per_min(&samples)
    ))?;
    out.line(&format!(
        "load average: start {load_start}, end {}",
        loadavg()
    ))?;
    let mut failures = Vec::new();
    if result.errors != 0 {
        failures.push(format!("{} errors", result.errors));
    }
    if growth.abs() > 10.0 {
        failures.push(format!("RSS moved by {growth:.1}%"));
    }
    if !failures.is_empty() {
        bail!("FAIL: {}", failures.join("; "));
    }
    log("PASS: 0 errors, RSS within 10%");
    Ok(())
}

/// The least-squares slope of (seconds, kB) samples, in kB per minute.
fn trend_per_min(samples: &[(f64, u64)]) -> f64 {
    let n = samples.len() as f64;
    let (x, y) = samples
        .iter()
        .fold((0.0, 0.0), |(x, y), (t, v)| (x + t, y + *v as f64));
    let xx: f64 = samples.iter().map(|(t, _)| t * t).sum();
    let xy: f64 = samples.iter().map(|(t, v)| t * *v as f64).sum();
    let d = n * xx - x * x;
    if samples.len() > 1 && d != 0.0 {
        60.0 * (n * xy - x * y) / d
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_trend_of_steady_growth_is_its_slope() {
        let samples: Vec<(f64, u64)> = (0..6)
            .map(|i| (10.0 * i as f64, 50_000 + 100 * i))
            .collect();
        assert!((super::trend_per_min(&samples) - 600.0).abs() < 1e-6);
        assert_eq!(super::trend_per_min(&[(0.0, 1)]), 0.0);
    }
}
