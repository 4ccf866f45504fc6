//! `ab cpu`: one build's CPU per request on one page shape, alone: the median of three wrk runs
//! (1 thread, 4 connections) after a warm-up, as user + system time from `/proc/PID/stat`
//! over the requests completed. For `git bisect run` over a range of commits (BENCHMARKS.md,
//! "Cost of the abuse checks": a step script builds each commit, runs this and compares the
//! last line it prints with a threshold); on a quiet machine two runs of one binary agree
//! within about 2 %, and `ab run`'s alternating rounds are the measurement to report.

use std::path::PathBuf;

use super::{Case, cpu_us_per_request, header, start_server, write_case_bodies, wrk_cpu};
use crate::benchmarks::parse_seconds;
use crate::context::Context;
use crate::stats::median;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The build's dynapage binary
    binary: PathBuf,
    /// The page shape
    #[arg(long, value_enum, default_value_t = Case::Page0)]
    case: Case,
    /// Measured wrk runs (the median is printed)
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Each measured run
    #[arg(long, default_value = "5s", value_parser = parse_seconds)]
    duration: u64,
    /// The run before them, not counted
    #[arg(long, default_value = "2s", value_parser = parse_seconds)]
    warm_up: u64,
    /// The result file's name in bench/results/ab, without `.txt`
    #[arg(long, default_value = "cpu")]
    result_name: String,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    crate::wrk::require()?;
    let bodies = write_case_bodies(&ctx.raw("ab-bodies"))?;
    let server = start_server(ctx, "ab-cpu", &args.binary, &[]).await?;
    let path = ctx.result(&format!("ab/{}.txt", args.result_name));
    let mut out = header(ctx, &path, &[("binary", &args.binary)], None)?;
    let (api, pid) = (&server.api, server.pid());
    wrk_cpu(ctx, api, pid, &bodies, args.case, args.warm_up).await?;
    let mut runs = Vec::new();
    for _ in 0..args.runs {
        let (requests, ticks) = wrk_cpu(ctx, api, pid, &bodies, args.case, args.duration).await?;
        runs.push(cpu_us_per_request(ticks, requests));
    }
    let shown: Vec<String> = runs.iter().map(|us| format!("{us:.2}")).collect();
    out.line(&format!(
        "# {}: µs of server CPU per request in {} runs of {} s: {}; the median:",
        args.case.name(),
        args.runs,
        args.duration,
        shown.join(" ")
    ))?;
    out.line(&format!("{:.2}", median(&runs)))
}
