//! `page-numbers`: what page numbers cost beside a page (BENCHMARKS.md, "Page numbers"): a page
//! of 20 alone, and the same page with `totalCount`, `startOffset` and `pageCursors(around: 5)`,
//! at offset 0 and at the deep offset (10^6), (a) on the embedded backends and (b) on DynamoDB
//! Local + Redis. Every response's `extensions.cost` says what it read.
//!
//! Each case runs with one wrk connection (latency: p50, p99) and with 16 (throughput: req/s),
//! `rounds` times. The cases are interleaved within a round (page, then page + pager, at the
//! same offset and connections; the order is reversed every other round), so that noise on a
//! shared machine and drift in DynamoDB Local's JIT weigh on both alike. Before each run it
//! waits (up to `quiet-wait`, `quiet-budget` in all) until processes other than ours use less
//! than `quiet-cores` of the CPU, and it records the 1-minute load and the CPU others took
//! during every run. CPU per page: each of our processes' `/proc` ticks over a 16-connection
//! run over its requests. Redis per page: `INFO commandstats` and `INFO cpu` around 3 s of one
//! connection.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;

use super::page_numbers_table::{Case, CostRow, RunRow, write_tables};
use super::{Backends, PAGE_SELECTION, SKU, deep_offset, parse_seconds};
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::{CpuSample, children_ticks, load1, loadavg};
use crate::report::{Csv, Summary, log};
use crate::server::{Server, dynapage, seed_dynamodb, strings};
use crate::services::{DynamoLocal, Redis};
use crate::{redis_info, wrk};

/// The pager's selection: the count, the page's offset, and the links of a numbered pager.
const PAGER: &str = "totalCount startOffset pageCursors(around: 5) { pageCount first { page cursor offset } last { page cursor offset } previous { page cursor offset } next { page cursor offset } around { page cursor offset isCurrent } }";

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(value_enum, default_value_t = Backends::All)]
    backends: Backends,
    /// Demo comments of the embedded product (below 1,000,100 the deep offset is 90% of it)
    #[arg(long, default_value_t = 1_100_000)]
    embedded_comments: u64,
    /// Comments seeded into DynamoDB Local (about 7 minutes for 1.1M)
    #[arg(long, default_value_t = 1_100_000)]
    dynamo_comments: u64,
    /// Rounds: each case runs once a round, at 1 and at 16 connections
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Each measured run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Load before the rounds on DynamoDB Local, whose JIT speeds it up (embedded: 5 s)
    #[arg(long, default_value = "45s", value_parser = parse_seconds)]
    warm_up: u64,
    /// Before a run, wait until others use fewer cores than this
    #[arg(long, default_value_t = 0.5)]
    quiet_cores: f64,
    /// ... but at most this long before one run
    #[arg(long, default_value = "600s", value_parser = parse_seconds)]
    quiet_wait: u64,
    /// ... and this long in all
    #[arg(long, default_value = "1200s", value_parser = parse_seconds)]
    quiet_budget: u64,
    /// The results' file name (another keeps an earlier run's): <name>.txt and <name>.csv
    #[arg(long, default_value = "page-numbers")]
    result_name: String,
}

/// Everything one run of the benchmark gathers.
#[derive(Debug)]
struct Bench<'a> {
    ctx: &'a Context,
    args: &'a Args,
    runs: Vec<RunRow>,
    runs_csv: Csv,
    costs: Vec<CostRow>,
    notes: Vec<String>,
    quiet_spent: u64,
}

/// The benchmarked query: the page, or the page with the pager.
fn query(case: Case, offset: u64) -> String {
    let selection = match case {
        Case::Page => PAGE_SELECTION.to_owned(),
        Case::Pager => format!("{PAGE_SELECTION} {PAGER}"),
    };
    format!("{{ comments(sku: \"{SKU}\", first: 20, offset: {offset}) {{ {selection} }} }}")
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let machine = Machine::describe(ctx);
    let load_before = loadavg();
    let mut bench = Bench {
        ctx,
        args: &args,
        runs: Vec::new(),
        runs_csv: Csv::create(&ctx.raw("page-numbers-runs.csv"), &RunRow::HEADER)?,
        costs: Vec::new(),
        notes: Vec::new(),
        quiet_spent: 0,
    };
    if args.backends.embedded() {
        bench.embedded().await?;
    }
    if args.backends.dynamodb() {
        bench.dynamodb().await?;
    }
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in machine.header(&format!("page-numbers {}", args.backends.name())) {
        out.line(&line)?;
    }
    out.line(&format!("# page of 20 alone, and with {PAGER}"))?;
    if args.backends.embedded() {
        let n = args.embedded_comments;
        out.line(&format!(
            "# embedded: --demo-comments {n}, deep offset {}",
            deep_offset(n)
        ))?;
    }
    if args.backends.dynamodb() {
        let n = args.dynamo_comments;
        out.line(&format!(
            "# dynamodb: {n} seeded comments, deep offset {}",
            deep_offset(n)
        ))?;
    }
    out.line(&format!("# rounds: {}, {}s per run, wrk with one prebuilt body, cases interleaved (order reversed every other round)", args.rounds, args.duration))?;
    out.line(&format!("# quiet: waited before a run until others used < {} cores (at most {}s a run, {}s in all; waited {}s in all)", args.quiet_cores, args.quiet_wait, args.quiet_budget, bench.quiet_spent))?;
    out.line(&format!(
        "# load before: {load_before}, after: {}",
        loadavg()
    ))?;
    for note in &bench.notes {
        out.line(note)?;
    }
    out.line("# cost of each query (extensions.cost) and response size:")?;
    out.line(&format!("#   {}", CostRow::HEADER.join(",")))?;
    for cost in &bench.costs {
        out.line(&format!("#   {}", cost.csv_line()))?;
    }
    out.line("# runs:")?;
    out.line(&RunRow::HEADER.join(","))?;
    for row in &bench.runs {
        out.line(&row.csv_line())?;
    }
    out.line("")?;
    let csv = ctx.result(&format!("{}.csv", args.result_name));
    write_tables(&bench.runs, &bench.costs, &csv, &mut out)?;
    log(&format!(
        "wrote {} and {}",
        out.path().display(),
        csv.display()
    ));
    Ok(())
}

impl Bench<'_> {
    async fn embedded(&mut self) -> anyhow::Result<()> {
        let n = self.args.embedded_comments;
        log(&format!("embedded: {n} demo comments"));
        let args = strings(&["--demo-comments", &n.to_string()]);
        let server = Server::start(self.ctx, "pages-embedded", &args).await?;
        let pids = [server.pid()];
        self.bench("embedded", &server.api, n, &pids, 5).await?;
        server.service.stop();
        Ok(())
    }

    async fn dynamodb(&mut self) -> anyhow::Result<()> {
        let n = self.args.dynamo_comments;
        let dynamo = DynamoLocal::start(self.ctx).await?;
        let redis = Redis::start(self.ctx).await?;
        let seeded =
            seed_dynamodb(self.ctx, &dynamo.url, SKU, n, true, "page-numbers-seed").await?;
        let started = Instant::now();
        let mut args = strings(&["reindex", "--sku", SKU, "--store", "dynamodb"]);
        args.extend(strings(&["--dynamodb-endpoint", &dynamo.url]));
        args.extend(strings(&["--index", "redis", "--redis-url", &redis.url]));
        let output = dynapage(self.ctx, "page-numbers-reindex", &args).await?;
        let indexed = started.elapsed().as_secs();
        let report = output
            .lines()
            .find(|l| l.starts_with("reindexed"))
            .unwrap_or("");
        self.notes.push(format!(
            "# dynamodb: {n} comments seeded in {seeded} s, reindexed in {indexed} s ({report})"
        ));
        log(&format!("seeded in {seeded} s, reindexed in {indexed} s"));
        let mut args = strings(&[
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &dynamo.url,
            "--cursor-secret",
            crate::server::BENCH_CURSOR_SECRET,
        ]);
        args.extend(strings(&[
            "--index",
            "redis",
            "--redis-url",
            &redis.url,
            "--auth",
            "off",
        ]));
        let server = Server::start(self.ctx, "pages-dynamodb", &args).await?;
        let pids = [server.pid(), dynamo.service.pid(), redis.service.pid()];
        self.bench("dynamodb", &server.api, n, &pids, self.args.warm_up)
            .await?;
        self.redis_profile(&server.api, &redis, deep_offset(n))
            .await?;
        server.service.stop();
        redis.service.stop();
        dynamo.service.stop();
        Ok(())
    }

    /// Checks the four queries, warms up, then the rounds.
    async fn bench(
        &mut self,
        backend: &str,
        api: &Api,
        comments: u64,
        pids: &[u32],
        warm_up: u64,
    ) -> anyhow::Result<()> {
        let deep = deep_offset(comments);
        let mut every = Vec::new();
        for offset in [0, deep] {
            for case in [Case::Page, Case::Pager] {
                let text = body(&query(case, offset));
                write_bodies(
                    &self.bodies(backend, case, offset),
                    std::slice::from_ref(&text),
                )?;
                every.push(text);
                let cost = check(api, case, offset, comments).await?;
                self.costs.push(CostRow::new(backend, case, offset, cost));
            }
        }
        let warm = self.ctx.raw("page-numbers-warm-up.json");
        write_bodies(&warm, &every)?;
        log(&format!("{backend}: warming up for {warm_up}s"));
        self.wrk(api, &warm, 16, warm_up).await?;
        self.notes.push(format!(
            "# {backend}: load before the rounds: {}",
            loadavg()
        ));
        for round in 1..=self.args.rounds {
            let order = if round % 2 == 0 {
                [Case::Pager, Case::Page]
            } else {
                [Case::Page, Case::Pager]
            };
            for connections in [1, 16] {
                for offset in [0, deep] {
                    for case in order {
                        let run = (backend, round, case, offset, connections);
                        self.measure(api, pids, run).await?;
                    }
                }
            }
        }
        self.notes
            .push(format!("# {backend}: load after the rounds: {}", loadavg()));
        Ok(())
    }

    fn bodies(&self, backend: &str, case: Case, offset: u64) -> std::path::PathBuf {
        self.ctx.raw(&format!(
            "page-numbers-{backend}-{}-{offset}.json",
            case.name()
        ))
    }

    async fn wrk(
        &self,
        api: &Api,
        bodies: &std::path::Path,
        connections: u32,
        seconds: u64,
    ) -> anyhow::Result<wrk::Outcome> {
        let load = wrk::Load {
            api,
            bodies,
            connections,
            seconds,
            header: None,
            lean: true,
            cpus: None,
        };
        wrk::run(self.ctx, &load).await
    }

    /// One measured run: waits for a quiet machine, then wrk, with every process's CPU around.
    async fn measure(
        &mut self,
        api: &Api,
        pids: &[u32],
        (backend, round, case, offset, connections): (&str, u32, Case, u64, u32),
    ) -> anyhow::Result<()> {
        let waited = self.await_quiet(pids).await;
        let load = load1();
        let before = CpuSample::take(pids);
        let wrk_before = children_ticks();
        let bodies = self.bodies(backend, case, offset);
        let outcome = self
            .wrk(api, &bodies, connections, self.args.duration)
            .await?;
        let after = CpuSample::take(pids);
        let others = before.others_cores(&after, children_ticks().saturating_sub(wrk_before));
        if outcome.errors != 0 {
            bail!(
                "errors in {backend} {} offset {offset}: {outcome}",
                case.name()
            );
        }
        log(&format!(
            "{backend} round {round} {} offset {offset} c{connections}: {:.1} req/s p50 {:.2} p99 {:.2} (load {load}, others {others:.2} cores, waited {waited}s)",
            case.name(),
            outcome.requests_per_s,
            outcome.p50_ms,
            outcome.p99_ms
        ));
        let row = RunRow {
            backend: backend.to_owned(),
            round,
            case,
            offset,
            connections,
            req_s: outcome.requests_per_s,
            p50_ms: outcome.p50_ms,
            p99_ms: outcome.p99_ms,
            load1: load,
            // As the table reads them back: cores to two decimals, CPU in whole µs.
            others_cores: (others * 100.0).round() / 100.0,
            waited_s: waited,
            cpu_us: before
                .per_request_us(&after, outcome.requests)
                .into_iter()
                .map(f64::round)
                .collect(),
        };
        self.runs_csv.write_line(&row.csv_line())?;
        self.runs.push(row);
        Ok(())
    }

    /// Waits until others use fewer than `quiet-cores` cores (3 s samples taken while ours
    /// idle); returns the seconds waited.
    async fn await_quiet(&mut self, pids: &[u32]) -> u64 {
        let started = Instant::now();
        loop {
            let before = CpuSample::take(pids);
            tokio::time::sleep(Duration::from_secs(3)).await;
            let others = before.others_cores(&CpuSample::take(pids), 0);
            if others < self.args.quiet_cores {
                break;
            }
            let waited = started.elapsed().as_secs();
            if waited >= self.args.quiet_wait || self.quiet_spent + waited >= self.args.quiet_budget
            {
                log(&format!(
                    "not quiet (others use {others:.2} cores, load {}): running anyway",
                    load1()
                ));
                break;
            }
            if waited % 30 < 4 {
                log(&format!(
                    "waiting for a quieter machine: others use {others:.2} cores, load {}",
                    load1()
                ));
            }
        }
        let waited = started.elapsed().as_secs();
        self.quiet_spent += waited;
        waited
    }

    /// What each query asks of Redis: calls per page of each command (those a script makes
    /// are counted too), the time of one EVALSHA (the commands it makes included), and Redis's
    /// CPU per page by its own `INFO cpu`. (Summing every command's time would count a script's
    /// commands twice.)
    async fn redis_profile(&mut self, api: &Api, redis: &Redis, deep: u64) -> anyhow::Result<()> {
        let mut conn = redis.connect().await?;
        for offset in [0, deep] {
            for case in [Case::Page, Case::Pager] {
                redis_info::reset_stats(&mut conn).await?;
                let cpu_before = redis_info::cpu_seconds(&mut conn).await?;
                let bodies = self.bodies("dynamodb", case, offset);
                let outcome = self.wrk(api, &bodies, 1, 3).await?;
                let cpu = redis_info::cpu_seconds(&mut conn).await? - cpu_before;
                let stats = redis_info::command_stats(&mut conn).await?;
                let pages = outcome.requests.max(1) as f64;
                let script = stats.iter().find(|s| s.name == "evalsha").map_or_else(
                    || "no script".to_owned(),
                    |s| format!("EVALSHA {:.0} us each", s.usec_per_call),
                );
                let calls: Vec<String> = stats
                    .iter()
                    .map(|s| format!("{} {:.2}", s.name, s.calls as f64 / pages))
                    .collect();
                let calls = if calls.is_empty() {
                    "none".to_owned()
                } else {
                    calls.join(", ")
                };
                self.notes.push(format!(
                    "# redis per page, {} at offset {offset}: {script}; calls per page: {calls}; CPU (INFO cpu) {:.0} us per page",
                    case.name(),
                    cpu / pages * 1e6
                ));
            }
        }
        Ok(())
    }
}

/// Runs the query once: fails on a GraphQL error, a page not of 20, or page numbers that do
/// not fit the product; returns its cost and the response's size.
async fn check(api: &Api, case: Case, offset: u64, total: u64) -> anyhow::Result<[u64; 4]> {
    let (response, bytes) = api
        .query(&query(case, offset))
        .await
        .with_context(|| format!("the {} query at offset {offset}", case.name()))?;
    let comments = &response["data"]["comments"];
    let edges = comments["edges"].as_array().map_or(0, Vec::len);
    ensure!(edges == 20, "{edges} edges, not 20 (at offset {offset})");
    if case == Case::Pager {
        check_pager(comments, offset, total)?;
    }
    let [items, queries, calls] = crate::graphql::cost(&response)?;
    Ok([items, queries, calls, bytes as u64])
}

fn check_pager(comments: &Value, offset: u64, total: u64) -> anyhow::Result<()> {
    let pager = &comments["pageCursors"];
    let page_count = total.div_ceil(20);
    let mut problems = Vec::new();
    if comments["totalCount"].as_u64() != Some(total) {
        problems.push(format!("totalCount {} != {total}", comments["totalCount"]));
    }
    if comments["startOffset"].as_u64() != Some(offset) {
        problems.push(format!(
            "startOffset {} != {offset}",
            comments["startOffset"]
        ));
    }
    if pager["pageCount"].as_u64() != Some(page_count) {
        problems.push(format!("pageCount {} != {page_count}", pager["pageCount"]));
    }
    let around = pager["around"].as_array().cloned().unwrap_or_default();
    let current: Vec<&Value> = around.iter().filter(|a| a["isCurrent"] == true).collect();
    let fits = |a: &&Value| {
        a["page"].as_u64() == Some(offset / 20 + 1) && a["offset"].as_u64() == Some(offset)
    };
    if current.len() != 1 || !current.first().is_some_and(fits) {
        problems.push(format!("current page {current:?}"));
    }
    ensure!(
        problems.is_empty(),
        "page numbers do not fit: {}",
        problems.join("; ")
    );
    let pages: Vec<String> = around.iter().map(|a| a["page"].to_string()).collect();
    log(&format!(
        "pager at offset {offset}: pageCount {page_count}, around [{}], last page {}",
        pages.join(", "),
        pager["last"]["page"]
    ));
    Ok(())
}
