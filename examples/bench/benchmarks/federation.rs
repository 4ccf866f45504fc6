//! `federation`: what a gateway costs and what dynapage adds (BENCHMARKS.md, "Federation").
//! dynapage with `--federation` (release build, the embedded backends, the response cache and
//! rate limits off), the supergraph of `tests/clients/federation/stack.mjs` (a products
//! subgraph and Hive Gateway in one Node process), and wrk against three targets for two pages:
//! the page through Hive Gateway, the fetch the gateway makes of dynapage sent to dynapage
//! directly, and the fetch it makes of the products subgraph sent to that subgraph alone. The
//! targets are run in turn, `rounds` times; each row is the median round.

use std::process::Stdio;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::SKU;
use crate::context::Context;
use crate::graphql::{Api, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::report::{Summary, log};
use crate::server::Server;
use crate::stats::median;
use crate::wrk::{Load, Outcome};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Demo comments of the product page's product
    #[arg(long, default_value_t = 100_000)]
    demo_comments: u64,
    /// wrk connections
    #[arg(long, default_value_t = 16)]
    connections: u32,
    /// Seconds per run
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Runs of each target, in turn
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "federation")]
    result_name: String,
}

/// The catalogue's SKUs, as `stack.mjs` names them.
fn catalogue() -> Vec<String> {
    (1..=48).map(|i| format!("SKU-{i:02}")).collect()
}

/// The request body of `query` with `variables`.
fn body(query: &str, variables: Value) -> String {
    json!({ "query": query, "variables": variables }).to_string()
}

/// The pages: a name and, per target (`gateway`, `dynapage`, `products`), the request body.
fn pages() -> Vec<(&'static str, [String; 3])> {
    let products = |skus: &[String]| -> Value {
        skus.iter()
            .map(|sku| json!({ "__typename": "Product", "sku": sku }))
            .collect()
    };
    let entities = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { ";
    let connection = "comments(first: 20, offset: 100) { totalCount edges { node { id body rating createdAt } } pageCursors { around { page cursor } } }";
    let category = [
        body(
            "{ products(first: 48) { sku name price ratingSummary { average total } } }",
            json!({}),
        ),
        body(
            &format!("{entities}ratingSummary {{ average total }} }} }} }}"),
            json!({ "r": products(&catalogue()) }),
        ),
        body("{ products(first: 48) { sku name price } }", json!({})),
    ];
    let product = [
        body(
            &format!("{{ product(sku: \"{SKU}\") {{ name price {connection} }} }}"),
            json!({}),
        ),
        body(
            &format!("{{ product(sku: \"{SKU}\") {{ {connection} }} }}"),
            json!({}),
        ),
        body(
            &format!("{entities}name price }} }} }}"),
            json!({ "r": products(&[SKU.to_owned()]) }),
        ),
    ];
    vec![
        ("category page (48 products, stars)", category),
        (
            "product page (20 comments at offset 100, page links)",
            product,
        ),
    ]
}

const TARGETS: [&str; 3] = [
    "through Hive Gateway",
    "dynapage alone (the gateway's fetch)",
    "products subgraph alone (the gateway's fetch)",
];

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    crate::wrk::require()?;
    ctx.build_dynapage()?;
    let n = args.demo_comments.to_string();
    let server_args: Vec<String> = [
        "--federation",
        "--demo-comments",
        &n,
        "--response-cache-bytes",
        "0",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
    ]
    .map(str::to_owned)
    .to_vec();
    let server = Server::start(ctx, "federation", &server_args).await?;
    let (_stack, report) = stack(ctx, &server.api.url).await?;
    let url = |name: &str| -> anyhow::Result<String> {
        let url = report[name]
            .as_str()
            .with_context(|| format!("no {name}: {report}"))?;
        Ok(url.trim_end_matches('/').to_owned())
    };
    let apis = [
        Api::new(&url("hive")?),
        server.api.clone(),
        Api::new(&url("products")?),
    ];
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# serve --federation --demo-comments {n} --response-cache-bytes 0, rate limits off; Hive Gateway 2.15.1 and the products subgraph (@apollo/server 5.5.1) in one Node process (tests/clients/federation/stack.mjs); wrk {} connections, {} s a run, targets in turn, {} rounds, median round; load before: {}",
        args.connections,
        args.seconds,
        args.rounds,
        loadavg()
    ))?;
    out.line("| page | target | requests/s | p50 (ms) | p99 (ms) | errors |")?;
    out.line("|---|---|---|---|---|---|")?;
    for (page, bodies) in pages() {
        let mut runs: Vec<Vec<Outcome>> = vec![Vec::new(); 3];
        for _ in 0..args.rounds {
            for (target, (api, body)) in apis.iter().zip(&bodies).enumerate() {
                let path = ctx.raw(&format!("federation-{target}.jsonl"));
                write_bodies(&path, std::slice::from_ref(body))?;
                let load = Load {
                    api,
                    bodies: &path,
                    connections: args.connections,
                    seconds: args.seconds,
                    header: None,
                    lean: false,
                    cpus: None,
                    threads: None,
                };
                runs[target].push(crate::wrk::run_alone(ctx, &load).await?);
            }
        }
        for (target, outcomes) in TARGETS.iter().zip(&runs) {
            let rates: Vec<f64> = outcomes.iter().map(|o| o.requests_per_s).collect();
            let p50: Vec<f64> = outcomes.iter().map(|o| o.p50_ms).collect();
            let p99: Vec<f64> = outcomes.iter().map(|o| o.p99_ms).collect();
            let errors: u64 = outcomes
                .iter()
                .map(|o| o.errors + o.graphql_errors.max(0) as u64)
                .sum();
            let line = format!(
                "| {page} | {target} | {:.0} | {:.2} | {:.2} | {errors} |",
                median(&rates),
                median(&p50),
                median(&p99)
            );
            log(&line);
            out.line(&line)?;
        }
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    Ok(())
}

/// Starts `stack.mjs` around the dynapage at `reviews` (its origin): the process, which stops
/// when dropped, and its report.
async fn stack(ctx: &Context, reviews: &str) -> anyhow::Result<(tokio::process::Child, Value)> {
    let clients = ctx.repo.join("tests/clients");
    if !clients.join("node_modules/@graphql-hive/gateway").is_dir() {
        bail!("the gateways are not installed: run `npm ci` in tests/clients");
    }
    let config = json!({ "reviews": format!("{reviews}/graphql"), "products": 48 });
    let mut child = tokio::process::Command::new("node")
        .arg("federation/stack.mjs")
        .arg(config.to_string())
        .current_dir(&clients)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting node federation/stack.mjs")?;
    let stdout = child.stdout.take().context("its output")?;
    let mut lines = BufReader::new(stdout).lines();
    while let Some(line) = lines.next_line().await? {
        if let Ok(report) = serde_json::from_str::<Value>(&line) {
            return Ok((child, report));
        }
    }
    bail!("federation/stack.mjs ended without its report")
}
