//! `load`: the server under wrk (BENCHMARKS.md, "Throughput", "Raw backends", "Latency against
//! offset"): req/s, p50 and p99 of typical pages (a) on the embedded backends and (b) on
//! DynamoDB Local + Redis, beside the raw backends' own rates for the same reads (`raw-query`,
//! run before each server run so drift in DynamoDB Local weighs on both), and page latency
//! against offset with the index and with the naive walk (a server with
//! `--offset-index-threshold` u64::MAX reads and discards every skipped item). On DynamoDB the
//! one-query pages run a second time with DynamoDB Local and Redis on core 0 and the server and
//! the load generators on core 1 (`taskset`), as when the database is another machine.

mod raw;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::{Backends, PAGE_SELECTION, SKU, parse_seconds};
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::report::{Csv, Summary, field, log};
use crate::server::{Server, await_indexed, seed_dynamodb, strings};
use crate::stats::{median, round, spread_pct};
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(value_enum, default_value_t = Backends::All)]
    backends: Backends,
    /// Comments of the embedded demo product
    #[arg(long, default_value_t = 2_300_000)]
    embedded_comments: u64,
    /// Comments seeded into DynamoDB Local (the deep offset is 1,000,000 if the product is
    /// large enough, else 90% of its size)
    #[arg(long, default_value_t = 1_100_000)]
    dynamo_comments: u64,
    /// wrk connections (and raw-query workers) of the throughput cases
    #[arg(long, default_value_t = 16)]
    connections: u32,
    /// Each throughput run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Runs of each case (the tables give the median and the spread)
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Each point of the offset sweep (one connection: latency alone)
    #[arg(long, default_value = "5s", value_parser = parse_seconds)]
    sweep_duration: u64,
    /// Each of the three DynamoDB Local warm-up loads (before measuring)
    #[arg(long, default_value = "30s", value_parser = parse_seconds)]
    warm_up: u64,
}

/// The sweep's offsets (those up to the deep offset, and the deep offset).
const OFFSETS: [u64; 5] = [0, 1_000, 10_000, 100_000, 1_000_000];

/// `--offset-index-threshold` of the naive walk: never use the index.
const NAIVE_THRESHOLD: &str = "18446744073709551615";

const LOAD_HEADER: [&str; 14] = [
    "backend",
    "case",
    "offset",
    "connections",
    "req_s",
    "req_s_spread_pct",
    "p50_ms",
    "p50_spread_pct",
    "p99_ms",
    "p99_spread_pct",
    "items_read",
    "store_queries",
    "index_calls",
    "errors",
];
const OFFSETS_HEADER: [&str; 8] = [
    "backend",
    "mode",
    "offset",
    "p50_ms",
    "p50_spread_pct",
    "p99_ms",
    "req_s",
    "items_read",
];
const RAW_HEADER: [&str; 8] = [
    "backend",
    "operation",
    "concurrency",
    "req_s",
    "req_s_spread_pct",
    "p50_ms",
    "p99_ms",
    "items",
];

/// The deep offset: 1,000,000, or 90% of a product too small for it.
fn deep_offset(comments: u64) -> u64 {
    if comments >= 1_000_100 {
        1_000_000
    } else {
        comments * 9 / 10
    }
}

/// The sweep's points for a deep offset.
fn sweep_points(deep: u64) -> Vec<u64> {
    let mut points: Vec<u64> = OFFSETS.into_iter().filter(|o| *o <= deep).collect();
    if points.last() != Some(&deep) {
        points.push(deep);
    }
    points
}

/// The connection query with the benchmarked selection.
fn comments(arguments: &str) -> String {
    format!("{{ comments(sku: \"{SKU}\", {arguments}) {{ {PAGE_SELECTION} }} }}")
}

/// The raw work a server run alternates with: its name in raw.csv and `raw-query`'s options.
#[derive(Debug)]
struct Raw {
    name: &'static str,
    args: Vec<String>,
}

#[derive(Debug)]
struct Load<'a> {
    ctx: &'a Context,
    args: &'a Args,
    load_csv: Csv,
    offsets_csv: Csv,
    raw_csv: Csv,
    /// machine.txt: the machine, then the load average around each part and the seeding.
    notes: Summary,
    /// `taskset -c` cores of the load generators, in the pinned pass.
    cpus: Option<&'static str>,
    dynamodb_url: String,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let (load_path, offsets_path, raw_path) = (
        ctx.result("load.csv"),
        ctx.result("offsets.csv"),
        ctx.result("raw.csv"),
    );
    // A run of one backend adds to the other's rows of an earlier run.
    let fresh = args.backends == Backends::All || !load_path.exists();
    let open = |path: &PathBuf, header: &[&str]| {
        if fresh {
            Csv::create(path, header)
        } else {
            Csv::append(path, header)
        }
    };
    let machine_path = ctx.result("machine.txt");
    let notes = if args.backends == Backends::Dynamodb {
        Summary::append(&machine_path)?
    } else {
        let mut notes = Summary::create(&machine_path)?;
        for line in Machine::describe(ctx).header() {
            notes.line(&line)?;
        }
        notes
    };
    let mut load = Load {
        ctx,
        args: &args,
        load_csv: open(&load_path, &LOAD_HEADER)?,
        offsets_csv: open(&offsets_path, &OFFSETS_HEADER)?,
        raw_csv: open(&raw_path, &RAW_HEADER)?,
        notes,
        cpus: None,
        dynamodb_url: String::new(),
    };
    if args.backends.embedded() {
        load.embedded().await?;
    }
    if args.backends.dynamodb() {
        load.dynamodb().await?;
    }
    drop(load);
    if let Err(err) = super::plot::draw(&offsets_path, &ctx.result("latency-vs-offset.png")) {
        log(&format!("no plot: {err:#}"));
    }
    super::load_tables::print(ctx.results_dir())
}

impl Load<'_> {
    fn note(&mut self, line: &str) -> anyhow::Result<()> {
        self.notes.line(line)
    }

    async fn embedded(&mut self) -> anyhow::Result<()> {
        let n = self.args.embedded_comments;
        log(&format!(
            "embedded: two servers with {n} demo comments each (index, naive walk)"
        ));
        let started = Instant::now();
        let demo = strings(&["--demo-comments", &n.to_string()]);
        let mut indexed = Server::launch(self.ctx, "embedded", &demo)?;
        let mut naive_args = demo.clone();
        naive_args.extend(strings(&["--offset-index-threshold", NAIVE_THRESHOLD]));
        let mut naive = Server::launch(self.ctx, "embedded-naive", &naive_args)?;
        indexed.await_ready().await?;
        naive.await_ready().await?;
        log(&format!(
            "both demo products ready in {} s",
            started.elapsed().as_secs()
        ));
        self.note(&format!("load before embedded: {}", loadavg()))?;
        let deep = deep_offset(n);
        self.cases("embedded", &indexed.api, deep, None).await?;
        self.sweep("embedded", "index", &indexed.api, &sweep_points(deep))
            .await?;
        self.sweep("embedded", "naive walk", &naive.api, &sweep_points(deep))
            .await?;
        self.note(&format!("load after embedded: {}", loadavg()))?;
        indexed.service.stop();
        naive.service.stop();
        Ok(())
    }

    async fn dynamodb(&mut self) -> anyhow::Result<()> {
        let n = self.args.dynamo_comments;
        let deep = deep_offset(n);
        if deep != 1_000_000 {
            log(&format!(
                "DynamoDB product of {n} comments: the deep offset is scaled to {deep}"
            ));
        }
        let dynamo = backends::dynamodb_local(self.ctx).await?;
        let redis = backends::redis(self.ctx).await?;
        self.dynamodb_url.clone_from(&dynamo.url());
        let mut args = strings(&[
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &dynamo.url(),
            "--cursor-secret",
            crate::server::BENCH_CURSOR_SECRET,
        ]);
        args.extend(strings(&[
            "--create-tables",
            "--index",
            "redis",
            "--redis-url",
            &redis.url(),
        ]));
        args.extend(strings(&["--sync", "--auth", "off"]));
        let server = Server::start(self.ctx, "dynamodb", &args).await?;
        log(&format!(
            "seeding {n} comments into DynamoDB Local (the server follows the stream)"
        ));
        let started = Instant::now();
        let seeded = seed_dynamodb(self.ctx, &dynamo.url(), SKU, n, false, "seed").await?;
        await_indexed(
            &server.api,
            SKU,
            n,
            Duration::from_secs(2),
            Duration::from_secs(3600),
        )
        .await?;
        let indexed = started.elapsed().as_secs();
        self.note(&format!(
            "dynamodb seed: {n} comments written in {seeded} s ({} items/s), indexed through the stream after {indexed} s",
            n / seeded.max(1)
        ))?;
        let redis_url = redis.url();
        let raw = Some(redis_url.as_str());
        self.warm_up(&server.api, deep, &redis_url).await?;
        self.note(&format!("load before dynamodb: {}", loadavg()))?;
        self.cases("dynamodb", &server.api, deep, raw).await?;
        self.sweep("dynamodb", "index", &server.api, &sweep_points(deep))
            .await?;
        self.raw_redis(&redis, deep).await?;
        self.note(&format!("load after dynamodb: {}", loadavg()))?;
        self.pinned(&server, &dynamo, &redis, deep).await
    }

    /// The throughput cases. On DynamoDB (`redis_url`) the one-query pages alternate with the
    /// raw work they cost: the first page's `Query`; the offset page's rank lookup in Redis,
    /// then the `Query` below the key it found.
    async fn cases(
        &mut self,
        backend: &str,
        api: &Api,
        deep: u64,
        redis_url: Option<&str>,
    ) -> anyhow::Result<()> {
        let (response, _) = api.query(&comments("first: 20, offset: 1000")).await?;
        let cursor = response["data"]["comments"]["pageInfo"]["endCursor"]
            .as_str()
            .context("no endCursor at offset 1000")?
            .to_owned();
        let pinned = backend == "dynamodb-pinned";
        let rank = strings(&["--rank", &deep.to_string()]);
        let (first, offset) = match redis_url {
            Some(url) => {
                let mut offset_args = strings(&["--redis-url", url]);
                offset_args.extend(rank);
                let (first, offset) = if pinned {
                    ("first, pinned", "offset, pinned")
                } else {
                    ("first", "offset")
                };
                (
                    Some(Raw {
                        name: first,
                        args: Vec::new(),
                    }),
                    Some(Raw {
                        name: offset,
                        args: offset_args,
                    }),
                )
            }
            None => (None, None),
        };
        self.measure(backend, "first page", 0, api, &comments("first: 20"), first)
            .await?;
        let deep_page = comments(&format!("first: 20, offset: {deep}"));
        self.measure(backend, "offset", deep, api, &deep_page, offset)
            .await?;
        if pinned {
            return Ok(());
        }
        let backward = comments(&format!("last: 20, before: \"{cursor}\""));
        self.measure(backend, "backward page", 1000, api, &backward, None)
            .await?;
        let ratings = comments("first: 20, ratings: [3, 5]");
        self.measure(backend, "ratings [3, 5]", 0, api, &ratings, None)
            .await
    }

    async fn wrk(
        &self,
        api: &Api,
        bodies: &std::path::Path,
        connections: u32,
        seconds: u64,
    ) -> anyhow::Result<wrk::Outcome> {
        let load = wrk::Load::lean(api, bodies, connections, seconds, self.cpus);
        wrk::run(self.ctx, &load).await
    }

    /// `runs` wrk runs of one case at the throughput concurrency, each after a run of its raw
    /// work if it has one; appends to load.csv (and raw.csv).
    async fn measure(
        &mut self,
        backend: &str,
        case: &str,
        offset: u64,
        api: &Api,
        query: &str,
        raw: Option<Raw>,
    ) -> anyhow::Result<()> {
        let bodies = self.ctx.raw(&format!(
            "bodies-{backend}-{}.jsonl",
            case.replace(' ', "-")
        ));
        write_bodies(&bodies, &[body(query)])?;
        let (response, _) = api.query(query).await?;
        let [items, queries, calls] = crate::graphql::cost(&response)?;
        let connections = self.args.connections;
        self.wrk(api, &bodies, connections, 3).await?; // warm-up
        let (mut rps, mut p50, mut p99, mut errors) = (vec![], vec![], vec![], 0);
        let (mut raw_rps, mut raw_p50, mut raw_p99, mut raw_items) = (vec![], vec![], vec![], 0);
        for run in 1..=self.args.runs {
            if let Some(raw) = &raw {
                let line = self.raw_query(self.args.duration, &raw.args).await?;
                log(&format!(
                    "raw dynamodb query ({}) run {run}: {line}",
                    raw.name
                ));
                let num = |name: &str| field(&line, name).and_then(|v| v.parse::<f64>().ok());
                raw_rps.push(num("requests_per_s").context("raw-query printed no rate")?);
                raw_p50.push(num("p50_ms").unwrap_or(0.0));
                raw_p99.push(num("p99_ms").unwrap_or(0.0));
                raw_items = num("items_per_query").unwrap_or(0.0) as u64;
            }
            let outcome = self
                .wrk(api, &bodies, connections, self.args.duration)
                .await?;
            log(&format!("{backend} {case} run {run}: {outcome}"));
            rps.push(outcome.requests_per_s);
            p50.push(outcome.p50_ms);
            p99.push(outcome.p99_ms);
            errors += outcome.errors;
        }
        self.load_csv.row(&[
            &backend,
            &case,
            &offset,
            &connections,
            &round(median(&rps), 2),
            &spread_pct(&rps).round(),
            &round(median(&p50), 3),
            &spread_pct(&p50).round(),
            &round(median(&p99), 3),
            &spread_pct(&p99).round(),
            &items,
            &queries,
            &calls,
            &errors,
        ])?;
        if let Some(raw) = raw {
            let operation = if raw.args.iter().any(|a| a == "--rank") {
                format!("key_at, then Query Limit 21 ({})", raw.name)
            } else {
                format!("Query Limit 21 ({})", raw.name)
            };
            self.raw_csv.row(&[
                &"dynamodb-local",
                &operation,
                &connections,
                &round(median(&raw_rps), 2),
                &spread_pct(&raw_rps).round(),
                &round(median(&raw_p50), 3),
                &round(median(&raw_p99), 3),
                &raw_items,
            ])?;
        }
        Ok(())
    }

    /// Latency of one connection at each offset; appends to offsets.csv.
    async fn sweep(
        &mut self,
        backend: &str,
        mode: &str,
        api: &Api,
        offsets: &[u64],
    ) -> anyhow::Result<()> {
        let bodies = self.ctx.raw("bodies-sweep.jsonl");
        for &offset in offsets {
            let query = comments(&format!("first: 20, offset: {offset}"));
            write_bodies(&bodies, &[body(&query)])?;
            let (response, _) = api.query(&query).await?;
            let [items, _, _] = crate::graphql::cost(&response)?;
            let (mut p50, mut p99, mut rps) = (vec![], vec![], vec![]);
            for run in 1..=self.args.runs {
                let outcome = self.wrk(api, &bodies, 1, self.args.sweep_duration).await?;
                log(&format!(
                    "{backend} {mode} offset {offset} run {run}: {outcome}"
                ));
                p50.push(outcome.p50_ms);
                p99.push(outcome.p99_ms);
                rps.push(outcome.requests_per_s);
            }
            self.offsets_csv.row(&[
                &backend,
                &mode,
                &offset,
                &round(median(&p50), 3),
                &spread_pct(&p50).round(),
                &round(median(&p99), 3),
                &round(median(&rps), 2),
                &items,
            ])?;
        }
        Ok(())
    }
}
