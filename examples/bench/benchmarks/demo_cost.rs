//! `demo-cost`: what a storefront page (`/demo`) costs the server against the same page asked of
//! the API alone (issue 47, item 6; BENCHMARKS.md "The storefront page"). `/demo` runs one query,
//! `playground/demo/storefront.graphql`, in-process for its URL and draws the answer as HTML; the
//! API page is a `GET /graphql` of that query with the variables the URL stands for. Two
//! servers on the embedded backends (budgets off): one with the response cache off (every page
//! computed) and one with it on (repeats from the cache). Per case (the first page, a deep page,
//! a filtered page), `requests` sequential keep-alive GETs each of `/demo` and of the API page on
//! each server, the server's CPU read around them (`/proc/PID/stat`, as `hit-cost`); the cases
//! alternate in rounds and the medians are reported, with the ratio of an uncached `/demo` to
//! its uncached API page (the issue asks for at most 1.5).

use anyhow::Context as _;
use serde_json::{Value, json};

use super::SKU;
use super::hit_cost::{cpu_per_get, unbudgeted};
use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::report::{Summary, log};
use crate::server::Server;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Requests per case, page kind and server in each round (after 20 to warm up)
    #[arg(long, default_value_t = 1000)]
    requests: u64,
    /// Demo comments of the product
    #[arg(long, default_value_t = 20_000)]
    demo_comments: u64,
    /// Rounds of every case
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "demo-cost")]
    result_name: String,
}

/// The storefront's page size (`/demo` without `size=`).
const SIZE: u64 = 10;

/// The cases: a name, the `/demo` query string, and the variables `storefront.graphql` runs
/// with for it (what `View::variables` makes of that URL).
fn cases(comments: u64) -> Vec<(&'static str, String, Value)> {
    let deep = comments * 3 / 4 / SIZE;
    let variables = |page: u64, ratings: Value| {
        json!({ "sku": SKU, "orderBy": "NEWEST", "ratings": ratings, "numbering": "FROM_START",
                "first": SIZE, "offset": (page - 1) * SIZE })
    };
    vec![
        (
            "first page",
            format!("sku={SKU}"),
            variables(1, Value::Null),
        ),
        (
            "deep page",
            format!("sku={SKU}&page={deep}"),
            variables(deep, Value::Null),
        ),
        (
            "ratings 4,5, page 10",
            format!("sku={SKU}&page=10&ratings=4,5"),
            variables(10, json!([4, 5])),
        ),
    ]
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let query = std::fs::read_to_string(ctx.repo.join("playground/demo/storefront.graphql"))
        .context("reading playground/demo/storefront.graphql")?;
    let serve = |cache| unbudgeted(args.demo_comments, cache);
    let cold = Server::start(ctx, "demo-cost-off", &serve(false)).await?;
    let warm = Server::start(ctx, "demo-cost-on", &serve(true)).await?;
    let cases = cases(args.demo_comments);
    // [case][demo uncached, api uncached, demo cached, api cached] per round.
    let mut runs: Vec<Vec<[f64; 4]>> = vec![Vec::new(); cases.len()];
    for round in 1..=args.rounds {
        for (i, (name, demo, variables)) in cases.iter().enumerate() {
            let encoded = serde_urlencoded::to_string([
                ("query", query.as_str()),
                ("variables", &variables.to_string()),
            ])?;
            let mut cpu = [0.0; 4];
            for (slot, server) in [(0, &cold), (2, &warm)] {
                let page = format!("{}/demo?{demo}", server.api.url);
                let api = format!("{}/graphql?{encoded}", server.api.url);
                let (demo_us, html) = cpu_per_get(server, &page, args.requests).await?;
                let (api_us, answer) = cpu_per_get(server, &api, args.requests).await?;
                anyhow::ensure!(
                    html.len() > 1_000 && !answer.is_empty(),
                    "{name}: a page or an answer came back empty"
                );
                (cpu[slot], cpu[slot + 1]) = (demo_us, api_us);
            }
            log(&format!(
                "round {round}, {name}: /demo {:.0} µs, API {:.0} µs; cached {:.0} µs, {:.0} µs",
                cpu[0], cpu[1], cpu[2], cpu[3]
            ));
            runs[i].push(cpu);
        }
    }
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# --demo-comments {}; {} rounds of {} sequential GETs per case, page kind and server; medians; load after: {}",
        args.demo_comments,
        args.rounds,
        args.requests,
        loadavg()
    ))?;
    out.line("| case | /demo, computed (µs) | API page, computed (µs) | ratio | /demo, from the cache (µs) | API page, from the cache (µs) |")?;
    out.line("|---|--:|--:|--:|--:|--:|")?;
    for ((name, ..), rounds) in cases.iter().zip(&runs) {
        let median = |k: usize| {
            let mut xs: Vec<f64> = rounds.iter().map(|r| r[k]).collect();
            xs.sort_by(f64::total_cmp);
            xs.get(xs.len() / 2).copied().unwrap_or(0.0)
        };
        let line = format!(
            "| {name} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} |",
            median(0),
            median(1),
            median(0) / median(1),
            median(2),
            median(3)
        );
        log(&line);
        out.line(&line)?;
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}
