//! `page-cost`: what a page costs to serve (issue 23, BENCHMARKS.md "Cost per million pages"):
//! DynamoDB read capacity and Redis CPU per page for a first page, a deep jump, a numbered page
//! with its pager, pages of a rating filter and a backward page, on DynamoDB Local and a
//! redis-server of its own. Read units are what DynamoDB Local reports in each query's
//! `ConsumedCapacity` (the server logs it, per query, at debug level, as JSON), plus the units
//! the server's metrics count for its `BatchGetItem` and `GetItem` calls; Redis CPU is `INFO
//! cpu` around the requests (nothing else uses that Redis). Neither depends on the server's
//! build, so `--build debug` will do. With `--wrk-seconds S` (and a release build), each case
//! is also run for S seconds by wrk at 16 connections for its pages per second, on the same
//! server and data (which logs every query at debug level for the read units).

use std::time::Duration;

use anyhow::{Context as _, ensure};
use redis::aio::MultiplexedConnection;
use serde_json::Value;

use super::{SKU, parse_seconds};
use crate::backends;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info::cpu_seconds;
use crate::report::{Summary, log};
use crate::server::{Launch, Server, dynapage, strings};
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments of the product (5 ratings), seeded with `dynapage seed` and reindexed
    #[arg(long, default_value_t = 100_000)]
    comments: u64,
    /// Sequential requests per case
    #[arg(long, default_value_t = 300)]
    requests: u64,
    /// Each case's pages per second under wrk for this long (0: not measured; needs wrk)
    #[arg(long, default_value = "0", value_parser = parse_seconds)]
    wrk_seconds: u64,
    /// Every comment's body this many bytes long (`seed --body-bytes`; 0: 20 to 60 bytes)
    #[arg(long, default_value_t = 0)]
    body_bytes: u64,
    /// Also seed hidden comments, this percentage of the product's (`seed --hidden-percent`):
    /// `--comments` stays the number of published ones, so the pages are the same size and
    /// the cases the same, and any difference is what the unpublished comments cost
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=90))]
    hidden_percent: u8,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "page-cost")]
    result_name: String,
}

impl Args {
    /// How many comments to seed so that exactly `comments` of them are published: the first
    /// `hidden_percent` of every hundred are hidden (`seed --hidden-percent`).
    fn seeded(&self) -> u64 {
        let hidden = u64::from(self.hidden_percent);
        let per_hundred = 100 - hidden;
        let (hundreds, rest) = (self.comments / per_hundred, self.comments % per_hundred);
        hundreds * 100 + if rest > 0 { hidden + rest } else { 0 }
    }
}

const PAGE: &str = "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage }";
const PAGER: &str = "totalCount startOffset pageCursors(size: 20, around: 5) { around { page cursor } first { page cursor } last { page cursor } }";

/// The cases: a name, the connection's arguments, the selection.
fn cases(deep: u64) -> Vec<(String, String, String)> {
    vec![
        ("first page".into(), "first: 20".into(), PAGE.into()),
        (
            format!("deep jump, offset {deep}"),
            format!("first: 20, offset: {deep}"),
            PAGE.into(),
        ),
        (
            format!("numbered page with pager, offset {deep}"),
            format!("first: 20, offset: {deep}"),
            format!("{PAGE} {PAGER}"),
        ),
        (
            "ratings [3, 5]".into(),
            "first: 20, ratings: [3, 5]".into(),
            PAGE.into(),
        ),
        (
            "ratings [1, 4, 5]".into(),
            "first: 20, ratings: [1, 4, 5]".into(),
            PAGE.into(),
        ),
        ("backward, last 20".into(), "last: 20".into(), PAGE.into()),
    ]
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if args.wrk_seconds > 0 {
        wrk::require()?;
    }
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let server = seed_and_serve(ctx, &args, &dynamo.url(), &redis.url()).await?;
    let mut conn = backends::connect(&redis.url()).await?;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {} comments of {SKU} published, {} seeded ({}% hidden) (bodies: {} bytes, 0: 20 to 60), {} sequential requests per case; load before: {}",
        args.comments,
        args.seeded(),
        args.hidden_percent,
        args.body_bytes,
        args.requests,
        loadavg()
    ))?;
    let used = crate::redis_info::info_number(&mut conn, "memory", "used_memory").await?;
    out.line(&format!(
        "# Redis used_memory after reindex: {used:.0} bytes, {:.1} per published comment (with the server's own keys)",
        used / args.comments as f64
    ))?;
    if args.wrk_seconds > 0 {
        // DynamoDB Local's JVM compiles its hot code in the first seconds under load: without
        // a warm-up, the first case measured is the slowest whatever it is.
        let first = format!("{{ comments(sku: \"{SKU}\", first: 20) {{ {PAGE} }} }}");
        pages_per_second(ctx, &server.api, &first, args.wrk_seconds).await?;
    }
    out.line("case\tread units per page\tstore queries per page\titems per page\tRedis CPU us per page\tpages/s at 16 connections")?;
    for (name, connection, selection) in cases(args.comments * 9 / 10) {
        let query = format!("{{ comments(sku: \"{SKU}\", {connection}) {{ {selection} }} }}");
        let line = case_line(
            ctx,
            &server.api,
            &mut conn,
            &Case::of(&args, "page-cost", &name),
            &query,
        )
        .await?;
        out.line(&line)?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Seeds the product into DynamoDB Local (the tables first), indexes it in Redis with
/// `reindex`, and starts the server that logs every query's read units.
async fn seed_and_serve(
    ctx: &Context,
    args: &Args,
    dynamo_url: &str,
    redis_url: &str,
) -> anyhow::Result<Server> {
    let store = strings(&["--store", "dynamodb", "--dynamodb-endpoint", dynamo_url]);
    let index = strings(&["--index", "redis", "--redis-url", redis_url]);
    let seed = |sku: &str, count: u64| {
        let mut seed = strings(&["seed", "--sku", sku, "--count", &count.to_string()]);
        seed.extend(store.clone());
        seed
    };
    let tables = [seed("WARMUP", 1), strings(&["--create-tables"])];
    dynapage(ctx, "page-cost-tables", &tables.concat()).await?;
    log(&format!(
        "seeding {} comments ({}% hidden; bodies: {} bytes, 0: short) into DynamoDB Local, then reindexing",
        args.seeded(),
        args.hidden_percent,
        args.body_bytes
    ));
    let body_bytes = args.body_bytes.to_string();
    let hidden_percent = args.hidden_percent.to_string();
    let seeding = [
        seed(SKU, args.seeded()),
        strings(&[
            "--body-bytes",
            &body_bytes,
            "--hidden-percent",
            &hidden_percent,
        ]),
    ];
    dynapage(ctx, "page-cost-seed", &seeding.concat()).await?;
    let reindex = [
        strings(&["reindex", "--sku", SKU]),
        store.clone(),
        index.clone(),
    ];
    dynapage(ctx, "page-cost-reindex", &reindex.concat()).await?;
    let mut serve = [store, index].concat();
    serve.extend(strings(&[
        "--auth",
        "off",
        "--cursor-secret",
        "bench-cost-per-page-secret-0123456789",
        "--response-cache-bytes",
        "0",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
        "--log-format",
        "json",
    ]));
    let launch = Launch {
        env: &[("RUST_LOG", "warn,dynapage::store::dynamo::reads=debug")],
        ..Launch::default()
    };
    Server::start_with(ctx, "page-cost", &serve, &launch).await
}

/// How one case is run: its name, the server's name (its log is `server-<name>.log`), the
/// sequential requests, and wrk's seconds (0: not run).
pub(super) struct Case<'a> {
    pub name: &'a str,
    pub server: &'a str,
    pub requests: u64,
    pub wrk_seconds: u64,
}

impl<'a> Case<'a> {
    fn of(args: &Args, server: &'a str, name: &'a str) -> Self {
        Self {
            name,
            server,
            requests: args.requests,
            wrk_seconds: args.wrk_seconds,
        }
    }
}

/// One case's line: `requests` sequential requests of `query` (each answering a page of 20 in
/// its one field) with Redis's CPU and the read units the server counted around them, the
/// queries its log shows for them, and with `wrk_seconds` the case's pages per second.
pub(super) async fn case_line(
    ctx: &Context,
    api: &Api,
    conn: &mut MultiplexedConnection,
    case: &Case<'_>,
    query: &str,
) -> anyhow::Result<String> {
    let (name, args) = (case.name, case);
    let server_log = ctx.raw(&format!("server-{}.log", case.server));
    let lines_before = line_count(&server_log);
    let cpu_before = cpu_seconds(conn).await?;
    let batch_before = batch_units(api).await?;
    for _ in 0..args.requests {
        let (answer, _) = api.query(query).await?;
        let field = answer["data"]
            .as_object()
            .and_then(|data| data.values().next());
        let edges = field
            .and_then(|f| f["edges"].as_array())
            .map_or(0, Vec::len);
        ensure!(edges == 20, "{name}: {edges} edges, not 20");
    }
    let cpu = cpu_seconds(conn).await? - cpu_before;
    let batch = batch_units(api).await? - batch_before;
    let lines_after = line_count(&server_log);
    let rate = if args.wrk_seconds > 0 {
        let rate = pages_per_second(ctx, api, query, args.wrk_seconds).await?;
        format!("{rate:.1}")
    } else {
        "-".to_owned()
    };
    let text = std::fs::read_to_string(&server_log).unwrap_or_default();
    let logged: Vec<&str> = text
        .lines()
        .skip(lines_before)
        .take(lines_after - lines_before)
        .collect();
    let (units, queries, items) = queries_logged(&logged);
    let n = args.requests as f64;
    Ok(format!(
        "{name}\t{:.2}\t{:.2}\t{:.1}\t{:.0}\t{rate}",
        (units + batch) / n,
        queries as f64 / n,
        items as f64 / n,
        cpu * 1e6 / n
    ))
}

/// Lines in a file so far (0 if it cannot be read).
fn line_count(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

/// Read units counted by the server's metrics (`BatchGetItem`, `GetItem`): queries are counted
/// from the log instead, as fractions of a unit.
async fn batch_units(api: &Api) -> anyhow::Result<f64> {
    let lines = api
        .metric_lines(&["dynapage_store_read_units_total"])
        .await?;
    Ok(lines
        .iter()
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .sum())
}

/// The read units, queries and items of the `dynamodb query` events among the server's JSON
/// log lines.
fn queries_logged(lines: &[&str]) -> (f64, u64, u64) {
    let (mut units, mut queries, mut items) = (0.0, 0, 0);
    for line in lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        // `--log-format json` nests the event's fields, or flattens them.
        let fields = event.get("fields").unwrap_or(&event);
        if fields["message"] == "dynamodb query" {
            units += fields["consumed_rcu"].as_f64().unwrap_or(0.0);
            queries += 1;
            items += fields["items"].as_u64().unwrap_or(0);
        }
    }
    (units, queries, items)
}

/// Pages per second of `query` under wrk (16 connections); then a second's pause, so that the
/// server's last log lines of the run are written before the next case counts its own.
async fn pages_per_second(
    ctx: &Context,
    api: &Api,
    query: &str,
    seconds: u64,
) -> anyhow::Result<f64> {
    let bodies = ctx.raw("page-cost-body.jsonl");
    write_bodies(&bodies, &[body(query)])?;
    let load = wrk::Load {
        lean: false,
        ..wrk::Load::lean(api, &bodies, 16, seconds, None)
    };
    let outcome = wrk::run(ctx, &load).await.context("wrk")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(outcome.requests_per_s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seeded_count_leaves_the_asked_number_published() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: super::Args,
        }
        let args = |hidden: &str| {
            Cli::parse_from([
                "page-cost",
                "--comments",
                "100000",
                "--hidden-percent",
                hidden,
            ])
            .args
        };
        assert_eq!(args("0").seeded(), 100_000);
        let ten = args("10");
        // 1,111 hundreds of 90 published, then 10 hidden and the last 10 published.
        assert_eq!(ten.seeded(), 111_120);
        let published = (0..ten.seeded()).filter(|i| i % 100 >= 10).count();
        assert_eq!(published, 100_000);
    }

    #[test]
    fn the_queries_read_units_and_items_are_summed_from_the_log() {
        let lines = [
            r#"{"timestamp":"t","level":"DEBUG","fields":{"message":"dynamodb query","items":21,"consumed_rcu":1.5},"target":"dynapage::store::dynamo::reads"}"#,
            r#"{"message":"dynamodb query","items":3,"consumed_rcu":0.5}"#,
            r#"{"fields":{"message":"request","status":200}}"#,
            "not json",
        ];
        assert_eq!(super::queries_logged(&lines), (2.0, 2, 24));
    }
}
