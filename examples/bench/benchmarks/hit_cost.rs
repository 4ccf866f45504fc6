//! `hit-cost`: what a response-cache hit costs the server against computing a page (the price
//! per KiB of a hit: `graphql::CACHED_POINTS_PER_KIB`). Two servers on the embedded backends
//! (budgets off), one with the response cache off and one with it on; N sequential keep-alive
//! GETs per case, the server's CPU (user + system from `/proc/PID/stat`) read around each case:
//!
//! - page: the first page of 20 with bodies, computed (cache off): its price is its complexity;
//! - hit, small: the same page answered from the cache, as identity;
//! - hit, large: a page of 100 with bodies, three times over (aliases), from the cache.
//!
//! The marginal CPU of a KiB sent is (large - small) / (their KiB apart); in points, at the
//! page's price for the page's CPU. A kept answer is sent as the bytes kept (encoded once per
//! coding), so an identity hit measures what any hit costs per byte. The cases alternate in
//! rounds, so the machine's load drifts alike over each; the medians are reported.

use anyhow::Context as _;

use super::SKU;
use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::{loadavg, process_ticks, ticks_per_s};
use crate::report::{Summary, log};
use crate::server::{Server, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Requests per case and round (after 20 to warm up)
    #[arg(long, default_value_t = 3000)]
    requests: u64,
    /// Demo comments of the product
    #[arg(long, default_value_t = 2000)]
    demo_comments: u64,
    /// Rounds of the three cases
    #[arg(long, default_value_t = 7)]
    rounds: u32,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "hit-cost")]
    result_name: String,
}

const FIELDS: &str =
    "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage endCursor }";

fn small() -> String {
    format!("query($sku: String!) {{ comments(sku: $sku, first: 20) {{ {FIELDS} }} }}")
}

fn large() -> String {
    format!(
        "query($sku: String!) {{ a: comments(sku: $sku, first: 100) {{ {FIELDS} }} b: comments(sku: $sku, first: 100, offset: 100) {{ {FIELDS} }} c: comments(sku: $sku, first: 100, offset: 200) {{ {FIELDS} }} }}"
    )
}

/// One case's figures: server CPU per request (µs), the answer's bytes, its price if the
/// answer carried one (a computed page does, a hit does not).
struct Case {
    cpu_us: f64,
    bytes: usize,
    price: Option<u64>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let serve = |cache| unbudgeted(args.demo_comments, cache);
    let cold = Server::start(ctx, "hit-cost-off", &serve(false)).await?;
    let warm = Server::start(ctx, "hit-cost-on", &serve(true)).await?;
    let (small, large) = (small(), large());
    let mut runs = Vec::new();
    for round in 1..=args.rounds {
        let computed = case(&cold, &small, args.requests).await?;
        let kept = case(&warm, &small, args.requests).await?;
        let kept_large = case(&warm, &large, args.requests).await?;
        log(&format!(
            "round {round}: page {:.0} µs, hit {:.0} µs, large hit {:.0} µs",
            computed.cpu_us, kept.cpu_us, kept_large.cpu_us
        ));
        runs.push([computed, kept, kept_large]);
    }
    let large_price = case(&cold, &large, args.requests).await?.price;
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    for line in report(&args, &runs, large_price)? {
        out.line(&line)?;
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// `serve` flags of an embedded server of `demo_comments` with no budgets, its response cache
/// on (64 MiB) or off.
pub(super) fn unbudgeted(demo_comments: u64, cache: bool) -> Vec<String> {
    let cache = if cache { "67108864" } else { "0" };
    strings(&[
        "--demo-comments",
        &demo_comments.to_string(),
        "--response-cache-bytes",
        cache,
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
    ])
}

/// The report of the rounds (each: the page computed, its hit, the large hit): medians, and
/// the sizes and prices of the last round.
fn report(
    args: &Args,
    runs: &[[Case; 3]],
    large_price: Option<u64>,
) -> anyhow::Result<Vec<String>> {
    let [page, hit_small, hit_large] = runs.last().context("no round ran (--rounds 0)")?;
    let price = page.price.context("the computed page carried no cost")? as f64;
    let column = |i: usize| runs.iter().map(|r| r[i].cpu_us).collect::<Vec<_>>();
    let (pages, smalls, larges) = (column(0), column(1), column(2));
    let (page_cpu, small_cpu, large_cpu) = (
        upper_median(&pages),
        upper_median(&smalls),
        upper_median(&larges),
    );
    let kib_apart = (hit_large.bytes as f64 - hit_small.bytes as f64) / 1024.0;
    let per_kib = (large_cpu - small_cpu) / kib_apart;
    let each = |xs: &[f64]| {
        xs.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Ok(vec![
        format!(
            "load: {}; {} rounds of {} requests a case, medians",
            loadavg(),
            args.rounds,
            args.requests
        ),
        format!(
            "page of 20 computed: {page_cpu:.1} us server CPU ({}), {} B, price {price}",
            each(&pages),
            page.bytes
        ),
        format!(
            "hit, {} B: {small_cpu:.1} us ({})",
            hit_small.bytes,
            each(&smalls)
        ),
        format!(
            "hit, {} B: {large_cpu:.1} us ({}); computing it: price {}",
            hit_large.bytes,
            each(&larges),
            large_price.map_or_else(|| "none".to_owned(), |p| p.to_string())
        ),
        format!(
            "a KiB sent: {per_kib:.2} us = {:.3} points at the page's rate",
            price * per_kib / page_cpu
        ),
        format!(
            "a hit's fixed part: {small_cpu:.1} us = {:.1} points",
            price * small_cpu / page_cpu
        ),
    ])
}

/// The middle value, or the upper of the two middle ones, as the script took it.
fn upper_median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// 20 GETs of `query` to warm up (the cache keeps the third answer on), then `requests` more
/// one after another on one keep-alive connection, the server's CPU read around them.
async fn case(server: &Server, query: &str, requests: u64) -> anyhow::Result<Case> {
    // As Python's json.dumps wrote them (the scripts' URLs), a space after the colon.
    let variables = format!("{{\"sku\": \"{SKU}\"}}");
    let encoded = serde_urlencoded::to_string([("query", query), ("variables", &variables)])?;
    let url = format!("{}/graphql?{encoded}", server.api.url);
    let (cpu_us, body) = cpu_per_get(server, &url, requests).await?;
    let answer: serde_json::Value = serde_json::from_slice(&body)?;
    Ok(Case {
        cpu_us,
        bytes: body.len(),
        price: answer["extensions"]["cost"]["requestedQueryCost"].as_u64(),
    })
}

/// The server's CPU per GET of `url` (user + system, from `/proc`), in µs: 20 GETs to warm up
/// (a response cache keeps the third answer), then `requests` one after another on one
/// keep-alive connection, the CPU read around them; and the last warm-up's body.
pub(super) async fn cpu_per_get(
    server: &Server,
    url: &str,
    requests: u64,
) -> anyhow::Result<(f64, axum::body::Bytes)> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()?;
    let get = || client.get(url).header("Accept", "application/json");
    let mut body = axum::body::Bytes::new();
    for _ in 0..20 {
        body = get().send().await?.error_for_status()?.bytes().await?;
    }
    let before = process_ticks(server.pid());
    for _ in 0..requests {
        get().send().await?.bytes().await?;
    }
    let ticks = process_ticks(server.pid()).saturating_sub(before);
    Ok((
        ticks as f64 / ticks_per_s() / requests.max(1) as f64 * 1e6,
        body,
    ))
}
