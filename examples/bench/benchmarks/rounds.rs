//! The runner of the benchmarks that compare queries in rounds (`page-numbers`, `orders`): on
//! (a) the embedded backends and (b) DynamoDB Local + Redis, each query of a `Plan` (a case)
//! at offset 0 and at the deep offset, with one wrk connection (latency: p50, p99) and with 16
//! (throughput: req/s), `rounds` times. The cases are interleaved within a round (every case
//! back to back at the same offset and connections; their order is reversed every other
//! round), so that noise on a shared machine and drift in DynamoDB Local's JIT weigh on all
//! alike; the tables give each case's ratio to the first (the baseline) by round. Every query
//! is run once first (no errors, a page of 20, and the plan's own checks) and its
//! `extensions.cost` kept. Before each run it waits (up to `quiet-wait`, `quiet-budget` in
//! all) until processes other than ours use less than `quiet-cores` of the CPU, and it records
//! the 1-minute load and the CPU others took during every run. CPU per page: each of our
//! processes' `/proc` ticks over a 16-connection run over its requests. Redis per page:
//! `INFO commandstats` and `INFO cpu` around 3 s of one connection.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;

use super::rounds_table::{Case, CostRow, RunRow, write_tables};
use super::votes::{self, VOTER_PROXIES};
use super::{Backends, SKU, deep_offset, parse_seconds};
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::{CpuSample, children_ticks, load1, loadavg};
use crate::report::{Csv, Summary, log};
use crate::server::{Server, dynapage, seed_dynamodb, strings};
use crate::{redis_info, wrk};

/// The server's options that turn its response cache off: wrk repeats one body, which the cache
/// would answer (without reading the store or the index, and without `extensions.cost`).
const NO_RESPONSE_CACHE: [&str; 2] = ["--response-cache-bytes", "0"];

/// What a benchmark compares: its cases, the query of each, and what a right answer is.
pub trait Plan {
    /// The benchmark's name: the first word of its results and of its raw files' names.
    fn name(&self) -> &'static str;
    /// The cases of a round; the first is the baseline the others are compared with.
    fn cases(&self) -> &[Case];
    /// The measured query of a case at an offset.
    fn query(&self, case: Case, offset: u64) -> String;
    /// The query run once before the rounds to check the answer: the measured one by default.
    fn check_query(&self, case: Case, offset: u64) -> String {
        self.query(case, offset)
    }
    /// Fails where the checked answer's `comments` (a page of 20 at `offset`) does not fit a
    /// product of `total` comments.
    fn verify(&self, case: Case, offset: u64, total: u64, comments: &Value) -> anyhow::Result<()>;
    /// The results' header lines that say what the cases are.
    fn describe(&self) -> Vec<String>;
    /// The ratio to the baseline as the table's head names it, such as `pager/page`.
    fn ratio(&self) -> &'static str;
}

/// The options every round-based benchmark takes.
// Its own group id: flattened into a command whose own `Args` group has the default id, clap's
// debug assertions refuse two groups named `Args`.
#[derive(clap::Args, Debug)]
#[group(id = "round_options")]
pub struct Args {
    #[arg(value_enum, default_value_t = Backends::All)]
    pub backends: Backends,
    /// Demo comments of the embedded product (below 1,000,100 the deep offset is 90% of it)
    #[arg(long, default_value_t = 1_100_000)]
    pub embedded_comments: u64,
    /// Comments seeded into DynamoDB Local (about 7 minutes for 1.1M)
    #[arg(long, default_value_t = 1_100_000)]
    pub dynamo_comments: u64,
    /// Comments given helpful votes before the rounds (the newest, 1 to 3 votes each, through
    /// `markHelpful`; on DynamoDB the server runs `--sync` to index them): 0 for none
    #[arg(long, default_value_t = 0)]
    pub voted: u64,
    /// Rounds: each case runs once a round, at 1 and at 16 connections
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Each measured run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    pub duration: u64,
    /// Load before the rounds on DynamoDB Local, whose JIT speeds it up (embedded: 5 s)
    #[arg(long, default_value = "45s", value_parser = parse_seconds)]
    pub warm_up: u64,
    /// Before a run, wait until others use fewer cores than this
    #[arg(long, default_value_t = 0.5)]
    pub quiet_cores: f64,
    /// ... but at most this long before one run
    #[arg(long, default_value = "600s", value_parser = parse_seconds)]
    pub quiet_wait: u64,
    /// ... and this long in all
    #[arg(long, default_value = "1200s", value_parser = parse_seconds)]
    pub quiet_budget: u64,
}

/// Everything one run of a benchmark gathers.
#[derive(Debug)]
struct Bench<'a, P> {
    ctx: &'a Context,
    plan: &'a P,
    args: &'a Args,
    runs: Vec<RunRow>,
    runs_csv: Csv,
    costs: Vec<CostRow>,
    notes: Vec<String>,
    quiet_spent: u64,
}

/// Runs the plan on the backends asked for; writes `<result_name>.txt` and `.csv`.
pub async fn run<P: Plan>(
    ctx: &Context,
    plan: &P,
    args: &Args,
    result_name: &str,
) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let machine = Machine::describe(ctx);
    let load_before = loadavg();
    let name = plan.name();
    let mut bench = Bench {
        ctx,
        plan,
        args,
        runs: Vec::new(),
        runs_csv: Csv::create(&ctx.raw(&format!("{name}-runs.csv")), &RunRow::HEADER)?,
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
    let mut out = Summary::create(&ctx.result(&format!("{result_name}.txt")))?;
    for line in machine.header() {
        out.line(&line)?;
    }
    for line in plan.describe() {
        out.line(&line)?;
    }
    for line in bench.header(&load_before) {
        out.line(&line)?;
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
    let csv = ctx.result(&format!("{result_name}.csv"));
    let gathered = (&bench.runs[..], &bench.costs[..], plan.cases());
    write_tables(gathered, plan.ratio(), &csv, &mut out)?;
    log(&format!(
        "wrote {} and {}",
        out.path().display(),
        csv.display()
    ));
    Ok(())
}

impl<P: Plan> Bench<'_, P> {
    /// The header lines after the plan's: products, rounds, waits, load and notes.
    fn header(&self, load_before: &str) -> Vec<String> {
        let args = self.args;
        let mut lines = Vec::new();
        if args.backends.embedded() {
            let n = args.embedded_comments;
            let deep = deep_offset(n);
            lines.push(format!(
                "# embedded: --demo-comments {n}, deep offset {deep}"
            ));
        }
        if args.backends.dynamodb() {
            let n = args.dynamo_comments;
            let deep = deep_offset(n);
            lines.push(format!(
                "# dynamodb: {n} seeded comments, deep offset {deep}"
            ));
        }
        if args.voted > 0 {
            lines.push(format!(
                "# voted: the {} newest comments have 1 to 3 helpful votes each (markHelpful)",
                args.voted
            ));
        }
        lines.push(format!("# rounds: {}, {}s per run, wrk with one prebuilt body, cases interleaved (order reversed every other round)", args.rounds, args.duration));
        lines.push(format!("# quiet: waited before a run until others used < {} cores (at most {}s a run, {}s in all; waited {}s in all)", args.quiet_cores, args.quiet_wait, args.quiet_budget, self.quiet_spent));
        lines.push(format!(
            "# load before: {load_before}, after: {}",
            loadavg()
        ));
        lines.extend(self.notes.iter().cloned());
        lines
    }

    async fn embedded(&mut self) -> anyhow::Result<()> {
        let n = self.args.embedded_comments;
        log(&format!("embedded: {n} demo comments"));
        let mut args = strings(&["--demo-comments", &n.to_string()]);
        args.extend(NO_RESPONSE_CACHE.map(str::to_owned));
        if self.args.voted > 0 {
            args.extend(VOTER_PROXIES.map(str::to_owned));
        }
        let server =
            Server::start(self.ctx, &format!("{}-embedded", self.plan.name()), &args).await?;
        self.cast_votes(&server, None).await?;
        let pids = [server.pid()];
        self.bench("embedded", &server.api, n, &pids, 5).await?;
        server.service.stop();
        Ok(())
    }

    /// Casts the `--voted` votes through `server`; with `redis` (the server's index, on its
    /// default `--redis-prefix`), waits until the stream has brought them there.
    async fn cast_votes(
        &self,
        server: &Server,
        redis: Option<&backends::Redis>,
    ) -> anyhow::Result<()> {
        let voted = self.args.voted;
        if voted == 0 {
            return Ok(());
        }
        log(&format!("casting votes for {voted} comments"));
        let Some(redis) = redis else {
            return votes::cast(&server.api, voted).await;
        };
        let mut conn = redis::Client::open(redis.url().as_str())?
            .get_multiplexed_async_connection()
            .await?;
        votes::cast_and_await_indexed(&server.api, &mut conn, "dynapage:", voted).await
    }

    async fn dynamodb(&mut self) -> anyhow::Result<()> {
        let n = self.args.dynamo_comments;
        let dynamo = backends::dynamodb_local(self.ctx).await?;
        let redis = backends::redis(self.ctx).await?;
        let seeded = seed_dynamodb(
            self.ctx,
            &dynamo.url(),
            SKU,
            n,
            true,
            &format!("{}-seed", self.plan.name()),
        )
        .await?;
        let started = Instant::now();
        let mut args = strings(&["reindex", "--sku", SKU, "--store", "dynamodb"]);
        args.extend(strings(&["--dynamodb-endpoint", &dynamo.url()]));
        args.extend(strings(&["--index", "redis", "--redis-url", &redis.url()]));
        let output = dynapage(self.ctx, &format!("{}-reindex", self.plan.name()), &args).await?;
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
            &dynamo.url(),
            "--cursor-secret",
            crate::server::BENCH_CURSOR_SECRET,
        ]);
        args.extend(strings(&[
            "--index",
            "redis",
            "--redis-url",
            &redis.url(),
            "--auth",
            "off",
        ]));
        args.extend(NO_RESPONSE_CACHE.map(str::to_owned));
        if self.args.voted > 0 {
            args.extend(VOTER_PROXIES.map(str::to_owned));
            args.push("--sync".to_owned());
        }
        let server =
            Server::start(self.ctx, &format!("{}-dynamodb", self.plan.name()), &args).await?;
        self.cast_votes(&server, Some(&redis)).await?;
        let pids = [server.pid(), dynamo.process.pid(), redis.process.pid()];
        self.bench("dynamodb", &server.api, n, &pids, self.args.warm_up)
            .await?;
        self.redis_profile(&server.api, &redis, deep_offset(n))
            .await?;
        server.service.stop();
        redis.process.stop();
        dynamo.process.stop();
        Ok(())
    }

    /// Checks each case's query at both offsets, warms up, then the rounds.
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
            for &case in self.plan.cases() {
                let text = body(&self.plan.query(case, offset));
                write_bodies(
                    &self.bodies(backend, case, offset),
                    std::slice::from_ref(&text),
                )?;
                every.push(text);
                let cost = self.check(api, case, offset, comments).await?;
                self.costs.push(CostRow::new(backend, case, offset, cost));
            }
        }
        let warm = self.ctx.raw(&format!("{}-warm-up.json", self.plan.name()));
        write_bodies(&warm, &every)?;
        log(&format!("{backend}: warming up for {warm_up}s"));
        self.wrk(api, &warm, 16, warm_up).await?;
        self.notes.push(format!(
            "# {backend}: load before the rounds: {}",
            loadavg()
        ));
        for round in 1..=self.args.rounds {
            let mut order = self.plan.cases().to_vec();
            if round % 2 == 0 {
                order.reverse();
            }
            for connections in [1, 16] {
                for offset in [0, deep] {
                    for &case in &order {
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

    fn bodies(&self, backend: &str, case: Case, offset: u64) -> PathBuf {
        let name = self.plan.name();
        let case = case.name();
        self.ctx
            .raw(&format!("{name}-{backend}-{case}-{offset}.json"))
    }

    async fn wrk(
        &self,
        api: &Api,
        bodies: &std::path::Path,
        connections: u32,
        seconds: u64,
    ) -> anyhow::Result<wrk::Outcome> {
        let load = wrk::Load::lean(api, bodies, connections, seconds, None);
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
    async fn redis_profile(
        &mut self,
        api: &Api,
        redis: &backends::Redis,
        deep: u64,
    ) -> anyhow::Result<()> {
        let mut conn = backends::connect(&redis.url()).await?;
        for offset in [0, deep] {
            for &case in self.plan.cases() {
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

    /// Runs the case's check query once (no GraphQL error, a page of 20, the plan's checks),
    /// then the measured query: returns its cost and its response's size.
    async fn check(
        &self,
        api: &Api,
        case: Case,
        offset: u64,
        total: u64,
    ) -> anyhow::Result<[u64; 4]> {
        let what = || format!("the {} query at offset {offset}", case.name());
        let (response, _) = api
            .query(&self.plan.check_query(case, offset))
            .await
            .with_context(what)?;
        let comments = &response["data"]["comments"];
        let edges = comments["edges"].as_array().map_or(0, Vec::len);
        ensure!(edges == 20, "{edges} edges, not 20 ({})", what());
        self.plan
            .verify(case, offset, total, comments)
            .with_context(what)?;
        let (response, bytes) = api
            .query(&self.plan.query(case, offset))
            .await
            .with_context(what)?;
        let [items, queries, calls] = crate::graphql::cost(&response)?;
        Ok([items, queries, calls, bytes as u64])
    }
}
