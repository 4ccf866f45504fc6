//! `rate-limit`: what the rate-limit check adds to a request, end to end (BENCHMARKS.md,
//! "Rate-limit check"): the same first page of 20 (cost 221) from the server with the limits
//! off, kept in-process, and kept in Redis, with budgets too large ever to refuse. The page
//! needs no index call, so with `--index redis` the only Redis traffic is the check. One wrk
//! connection (latency) and 16 (throughput), each server `rounds` times in turn. The check
//! alone: `criterion rate_limit`.

use super::{SKU, parse_seconds};
use crate::backends;
use crate::context::Context;
use crate::graphql::write_bodies;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::report::{Summary, log};
use crate::server::{Server, strings};
use crate::wrk;

/// u32::MAX points a second and in the bucket: every check spends, none refuses.
const HUGE: &str = "4294967295";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Demo comments of the product
    #[arg(long, default_value_t = 20_000)]
    demo_comments: u64,
    /// Each measured run (after a 3 s warm-up)
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Rounds: the three servers in turn, each round
    #[arg(long, default_value_t = 2)]
    rounds: u32,
}

/// The server's options for each way of keeping the limits.
fn limits(mode: &str, redis_url: &str) -> Vec<String> {
    let redis = ["--index", "redis", "--redis-url", redis_url];
    match mode {
        "off" => [
            &redis[..],
            &[
                "--redis-prefix",
                "off:",
                "--rate-limit-cost",
                "0",
                "--rate-limit-writes",
                "0",
            ],
        ]
        .concat(),
        "memory" => vec![
            "--index",
            "memory",
            "--rate-limit-cost",
            HUGE,
            "--rate-limit-cost-burst",
            HUGE,
            "--rate-limit-writes",
            "0",
        ],
        _ => [
            &redis[..],
            &[
                "--redis-prefix",
                "on:",
                "--rate-limit-cost",
                HUGE,
                "--rate-limit-cost-burst",
                HUGE,
                "--rate-limit-writes",
                "0",
            ],
        ]
        .concat(),
    }
    .into_iter()
    .map(str::to_owned)
    .collect()
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let bodies = ctx.raw("rate-limit-body.json");
    let body = serde_json::json!({
        "query": "query Page($sku: String!) { comments(sku: $sku, first: 20) { edges { cursor node { id rating createdAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }",
        "variables": { "sku": SKU },
    });
    write_bodies(&bodies, &[body.to_string()])?;
    let mut out = Summary::create(&ctx.result("rate-limit.txt"))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!("# load before: {}", loadavg()))?;
    out.line(&format!(
        "# first page of 20 of {} demo comments, {}s per run, wrk with one prebuilt body",
        args.demo_comments, args.duration
    ))?;
    for round in 1..=args.rounds {
        for mode in ["off", "memory", "redis"] {
            let mut serve = strings(&["--demo-comments", &args.demo_comments.to_string()]);
            serve.extend(limits(mode, &redis.url()));
            let server = Server::start(ctx, &format!("rate-{mode}"), &serve).await?;
            let load = |connections, seconds| wrk::Load {
                api: &server.api,
                bodies: &bodies,
                connections,
                seconds,
                header: None,
                lean: true,
                cpus: None,
                threads: None,
            };
            wrk::run(ctx, &load(1, 3)).await?; // warm-up
            let one = wrk::run(ctx, &load(1, args.duration)).await?;
            let sixteen = wrk::run(ctx, &load(16, args.duration)).await?;
            out.line(&format!("round={round} limits={mode} connections=1 {one}"))?;
            out.line(&format!(
                "round={round} limits={mode} connections=16 {sixteen}"
            ))?;
            server.service.stop();
        }
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}
