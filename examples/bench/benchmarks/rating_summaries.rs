//! `rating-summaries`: a category page's stars (issue 26, BENCHMARKS.md "Rating summaries"). In
//! one request, `ratingSummaries` of 48 products ("summaries"), 48 aliased `product(sku:) {
//! ratingSummary }` lookups ("lookups"), and 48 aliased `comments(sku:) { totalCount }`
//! ("totals"), on a server with the Redis index (a redis-server of its own) and the embedded
//! store, 48 products of `per-product` comments each written through the API (`--max-aliases
//! 64`: the default 30 refuses 48 aliases). Per shape: what the server reports
//! (`extensions.cost`), what Redis counted per request over `requests` sequential requests
//! (`INFO commandstats`: commands, by name; `INFO stats`: `total_reads_processed`, the read
//! events of Redis's event loop, about one per batch of commands that arrives together), and
//! unless `--counts-only`, wrk at 1 and 16 connections (requests/s, p50, p99). The counts do not
//! depend on the build or the machine's load: `--counts-only --build debug` will do.

use std::collections::BTreeMap;

use anyhow::ensure;
use futures::{StreamExt, TryStreamExt};
use redis::aio::MultiplexedConnection;
use serde_json::json;

use super::parse_seconds;
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info::{command_calls, info_number};
use crate::report::{Summary, log};
use crate::server::{Server, strings};
use crate::stats::general;
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments of each of the 48 products
    #[arg(long, default_value_t = 1000)]
    per_product: u64,
    /// Sequential requests of each shape for Redis's counts
    #[arg(long, default_value_t = 1000)]
    requests: u64,
    /// Each wrk run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Counts only, no wrk runs (any build, any load)
    #[arg(long)]
    counts_only: bool,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "rating-summaries")]
    result_name: String,
}

const PRODUCTS: u64 = 48;
const FIELDS: &str = "total average counts { rating count }";

/// The three shapes' queries, by name.
fn shapes() -> [(&'static str, String); 3] {
    let skus: Vec<String> = (0..PRODUCTS).map(|i| format!("SHELF_{i}")).collect();
    // The list as Python's json.dumps wrote it, a space after each comma.
    let list: Vec<String> = skus.iter().map(|s| format!("\"{s}\"")).collect();
    let one = format!(
        "{{ ratingSummaries(skus: [{}]) {{ sku summary {{ {FIELDS} }} }} }}",
        list.join(", ")
    );
    let aliased = |field: &dyn Fn(usize, &str) -> String| {
        let fields: Vec<String> = skus.iter().enumerate().map(|(i, s)| field(i, s)).collect();
        format!("{{ {} }}", fields.join(" "))
    };
    let many =
        aliased(&|i, s| format!("p{i}: product(sku: \"{s}\") {{ ratingSummary {{ {FIELDS} }} }}"));
    let totals = aliased(&|i, s| format!("t{i}: comments(sku: \"{s}\") {{ totalCount }}"));
    [("summaries", one), ("lookups", many), ("totals", totals)]
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if !args.counts_only {
        wrk::require()?;
    }
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let mut serve = strings(&["--demo-comments", "0"]);
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
        "--max-aliases",
        "64",
    ]));
    let server = Server::start(ctx, "rating-summaries", &serve).await?;
    write_comments(&server.api, args.per_product).await?;
    let mut conn = backends::connect(&redis.url()).await?;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# 48 products of {} comments; {} sequential requests per shape for the counts",
        args.per_product, args.requests
    ))?;
    out.line(&format!("load: {}", loadavg()))?;
    for (shape, query) in shapes() {
        let request = body(&query);
        let before = counters(&mut conn).await?;
        for _ in 0..args.requests {
            server.api.post(&request, None).await?;
        }
        let after = counters(&mut conn).await?;
        let per_request = per_request(&before, &after, args.requests);
        let (answer, _) = server.api.query(&query).await?;
        let cost = &answer["extensions"]["cost"];
        out.line(&format!("{shape}: per request {per_request}; cost {cost}"))?;
        if args.counts_only {
            continue;
        }
        let bodies = ctx.raw(&format!("rating-summaries-{shape}.json"));
        write_bodies(&bodies, &[request])?;
        for connections in [1, 16] {
            let load = wrk::Load {
                lean: false,
                threads: Some(1),
                ..wrk::Load::lean(&server.api, &bodies, connections, args.duration, None)
            };
            let outcome = wrk::run(ctx, &load).await?;
            out.line(&format!("{shape}, {connections} connection(s): {outcome}"))?;
        }
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// The products' comments, written through the API, 16 at a time (the index follows each
/// write): comment `i` of `SHELF_<i / per_product>`, rated `1 + i % 5`.
async fn write_comments(api: &Api, per_product: u64) -> anyhow::Result<()> {
    log(&format!(
        "writing {} comments through the API",
        PRODUCTS * per_product
    ));
    const ADD: &str = "mutation($sku: String!, $rating: Int!) { addComment(input: { sku: $sku, author: \"b\", body: \"stars\", rating: $rating }) { comment { id } } }";
    futures::stream::iter(0..PRODUCTS * per_product)
        .map(|i| async move {
            let request = json!({
                "query": ADD,
                "variables": { "sku": format!("SHELF_{}", i / per_product), "rating": 1 + i % 5 },
            });
            let text = api.post(&request.to_string(), None).await?;
            ensure!(!text.contains("\"errors\""), "the write failed: {text}");
            Ok(())
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Redis's counters: every command's calls by name, and the read events (`read_events`).
async fn counters(conn: &mut MultiplexedConnection) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut counters = command_calls(conn).await?;
    let events = info_number(conn, "stats", "total_reads_processed").await?;
    counters.insert("read_events".to_owned(), events as u64);
    Ok(counters)
}

/// "N commands (name n, …); E read events" per request between two readings. The INFO calls
/// that read the counters are not the requests'.
fn per_request(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, n: u64) -> String {
    let mut delta: BTreeMap<&str, f64> = after
        .iter()
        .filter(|(name, _)| name.as_str() != "info")
        .map(|(name, v)| {
            let was = before.get(name).copied().unwrap_or(0);
            (name.as_str(), v.saturating_sub(was) as f64 / n as f64)
        })
        .collect();
    let events = delta.remove("read_events").unwrap_or(0.0);
    let commands: f64 = delta.values().sum();
    let named: Vec<String> = delta
        .iter()
        .filter(|(_, v)| **v >= 0.01)
        .map(|(name, v)| format!("{name} {}", general(*v)))
        .collect();
    format!(
        "{} commands ({}); {events:.2} read events",
        general(commands),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    #[test]
    fn per_request_counts_leave_out_the_info_calls_that_read_them() {
        let counts = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
        };
        let before = counts(&[("evalsha", 10), ("info", 4), ("read_events", 100)]);
        let after = counts(&[
            ("evalsha", 1010),
            ("info", 6),
            ("zcard", 48_000),
            ("ping", 1),
            ("read_events", 1100),
        ]);
        assert_eq!(
            super::per_request(&before, &after, 1000),
            "49.001 commands (evalsha 1, zcard 48); 1.00 read events"
        );
    }

    #[test]
    fn the_three_shapes_ask_for_48_products() {
        let shapes = super::shapes();
        assert!(shapes[0].1.contains(r#"["SHELF_0", "SHELF_1", "#));
        assert!(shapes[1].1.contains(r#"p47: product(sku: "SHELF_47")"#));
        assert_eq!(shapes[2].1.matches("totalCount").count(), 48);
    }
}
