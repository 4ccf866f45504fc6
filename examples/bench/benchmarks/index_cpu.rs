//! `index-cpu`: what the Redis page index costs Redis per page (BENCHMARKS.md, "Redis index:
//! CPU per page"): the cases of issue #23's table, each as `requests` sequential requests to
//! `serve --index redis --demo-comments N`, with Redis's own CPU (`INFO cpu`: user + system)
//! and its commands (`INFO commandstats`, a script's inner commands included) read around
//! them, so the load of other processes on the machine does not enter the figure (much: on a
//! loaded machine every figure grows), and the time Redis's clock gives the scripts. Then raw
//! `ZRANK` and `ZRANGE` on one sorted set of the same size, sent the same way (one at a time
//! from one connection), for the physical limit; and the index's memory per comment
//! (`MEMORY USAGE` of the product's sets). With `--voted`, the newest comments get helpful
//! votes first, and the `MOST_HELPFUL` cases run too (the script alone, back to back, still
//! reads the five sets without votes).

use anyhow::Context as _;
use redis::aio::MultiplexedConnection;

use super::{SKU, votes};
use crate::backends;
use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info;
use crate::report::{Summary, log};
use crate::server::{Server, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Demo comments of the product (issue #23's table: 200,000)
    #[arg(long, default_value_t = 200_000)]
    demo_comments: u64,
    /// Requests per case, after 20 to warm up
    #[arg(long, default_value_t = 400)]
    requests: u64,
    /// Comments given helpful votes before the cases (the newest ones, 1 to 3 votes each, from
    /// three client addresses): adds the `MOST_HELPFUL` cases, inside the voted comments and
    /// beyond them
    #[arg(long, default_value_t = 0)]
    voted: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "index-cpu")]
    result_name: String,
}

const PAGER: &str = "totalCount startOffset pageCursors(size: 20, around: 5) { pageCount first { cursor } last { cursor } previous { cursor } next { cursor } around { page cursor offset isCurrent } }";
const EDGES: &str = "edges { cursor node { id } }";

/// The cases: a name, the connection's arguments, and whether the pager is selected; with
/// `voted` comments voted for, the `MOST_HELPFUL` ones too.
fn cases(n: u64, voted: u64) -> Vec<(String, String, bool)> {
    let deep = n * 3 / 4;
    let filtered = n / 4;
    let mut cases = vec![
        ("pager, offset 0".into(), "first: 20".into(), true),
        (
            format!("pager, offset {deep}"),
            format!("first: 20, offset: {deep}"),
            true,
        ),
        (
            format!("pager, ratings [3, 5], offset {filtered}"),
            format!("first: 20, offset: {filtered}, ratings: [3, 5]"),
            true,
        ),
        (
            format!("pager, ratings [1, 4, 5], offset {filtered}"),
            format!("first: 20, offset: {filtered}, ratings: [1, 4, 5]"),
            true,
        ),
        (
            format!("pager, ratings [4], offset {filtered}"),
            format!("first: 20, offset: {filtered}, ratings: [4]"),
            true,
        ),
        (
            format!("bare jump, offset {deep}"),
            format!("first: 20, offset: {deep}"),
            false,
        ),
        (
            format!("bare jump, ratings [3, 5], offset {filtered}"),
            format!("first: 20, offset: {filtered}, ratings: [3, 5]"),
            false,
        ),
        ("totalCount alone".into(), "first: 0".into(), false),
    ];
    if voted > 0 {
        let inside = voted / 2;
        for (pager, kind) in [(true, "pager"), (false, "bare jump")] {
            for offset in [inside, deep] {
                cases.push((
                    format!("{kind}, MOST_HELPFUL, offset {offset}"),
                    format!("first: 20, offset: {offset}, orderBy: MOST_HELPFUL"),
                    pager,
                ));
            }
        }
        cases.push((
            "pager, MOST_HELPFUL, offset 0".into(),
            "first: 20, orderBy: MOST_HELPFUL".into(),
            true,
        ));
    }
    cases
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let n = args.demo_comments.to_string();
    let mut server_args = redis_index_args(&redis.url(), args.demo_comments);
    server_args.extend(votes::VOTER_PROXIES.map(str::to_owned));
    let server = Server::start(ctx, "index-cpu", &server_args).await?;
    // A connection of its own with a long response timeout: a pipeline of pager scripts on a
    // loaded machine outlasts the default.
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    let mut conn = redis::Client::open(redis.url().as_str())?
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let keys: Vec<String> = (1..=5).map(|r| format!("idx:idx:{{{SKU}}}:r{r}")).collect();
    votes::await_indexed(&mut conn, &keys, args.demo_comments).await?;
    if args.voted > 0 {
        votes::cast_and_await_indexed(&server.api, &mut conn, "idx:", args.voted).await?;
    }

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# serve --index redis --demo-comments {n}; {} voted for (1 to 3 votes each); {} sequential requests per case; load before: {}",
        args.voted,
        args.requests,
        loadavg()
    ))?;
    out.line("| case | Redis CPU per page (µs) | of which in scripts (µs) | Redis commands per page | indexCalls |")?;
    out.line("|---|---|---|---|---|")?;
    for (name, connection, pager) in cases(args.demo_comments, args.voted) {
        let (line, _) =
            page_cost(&server, &mut conn, &name, &connection, pager, args.requests).await?;
        log(&line);
        out.line(&line)?;
    }
    hot(ctx, &mut conn, &keys, args.demo_comments, &mut out).await?;
    raw_and_memory(
        &mut conn,
        &keys,
        args.demo_comments,
        args.requests,
        &mut out,
    )
    .await?;
    out.line(&format!("# load after: {}", loadavg()))?;
    drop(server);
    drop(redis);
    Ok(())
}

/// `serve` flags of a server of `demo_comments` on the Redis index at `url` (prefix `idx:`),
/// with the response cache off: it would answer the repeated pages without the index.
pub(super) fn redis_index_args(url: &str, demo_comments: u64) -> Vec<String> {
    strings(&[
        "--index",
        "redis",
        "--redis-url",
        url,
        "--redis-prefix",
        "idx:",
        "--demo-comments",
        &demo_comments.to_string(),
        "--response-cache-bytes",
        "0",
    ])
}

/// One case's table row: `requests` sequential requests of the page, Redis's CPU, the scripts'
/// time and the commands around them, and the page's `indexCalls`; and the pages per second
/// those requests were served at, one at a time.
pub(super) async fn page_cost(
    server: &Server,
    conn: &mut MultiplexedConnection,
    name: &str,
    connection: &str,
    pager: bool,
    requests: u64,
) -> anyhow::Result<(String, f64)> {
    let selection = match (pager, connection) {
        (true, _) => format!("{EDGES} {PAGER}"),
        (false, c) if c.starts_with("first: 0") => "totalCount".to_owned(),
        (false, _) => EDGES.to_owned(),
    };
    let query = format!("{{ comments(sku: \"{SKU}\", {connection}) {{ {selection} }} }}");
    let (response, _) = server.api.query(&query).await?;
    let index_calls = response["extensions"]["cost"]["indexCalls"].clone();
    for _ in 0..20 {
        server.api.query(&query).await?;
    }
    redis_info::reset_stats(conn).await?;
    let before = redis_info::cpu_seconds(conn).await?;
    let started = std::time::Instant::now();
    for _ in 0..requests {
        server.api.query(&query).await?;
    }
    let pages_per_second = requests as f64 / started.elapsed().as_secs_f64();
    let cpu = redis_info::cpu_seconds(conn).await? - before;
    let stats = redis_info::command_stats(conn).await?;
    let calls: u64 = stats
        .iter()
        .filter(|s| s.name != "xread")
        .map(|s| s.calls)
        .sum();
    // The scripts' own time (their inner commands included), by Redis's clock.
    let script_us: f64 = stats
        .iter()
        .filter(|s| s.name == "evalsha")
        .map(|s| s.calls as f64 * s.usec_per_call)
        .sum();
    let per = requests as f64;
    let row = format!(
        "| {name} | {:.0} | {:.0} | {:.1} | {index_calls} |",
        cpu * 1e6 / per,
        script_us / per,
        calls as f64 / per
    );
    Ok((row, pages_per_second))
}

/// Calls sent back to back in pipelines of 20, so that Redis stays busy (its caches warm, as
/// under load): Redis CPU per call from `INFO cpu`.
async fn hot_cpu(conn: &mut MultiplexedConnection, cmd: &redis::Cmd) -> anyhow::Result<f64> {
    const CALLS: usize = 2_000;
    let mut pipe = redis::pipe();
    for _ in 0..20 {
        pipe.add_command(cmd.clone());
    }
    let before = redis_info::cpu_seconds(conn).await?;
    for _ in 0..CALLS / 20 {
        let _: Vec<redis::Value> = pipe.query_async(conn).await?;
    }
    Ok((redis_info::cpu_seconds(conn).await? - before) * 1e6 / CALLS as f64)
}

/// The index's script alone, as the server calls it for each kind of page, sent back to back:
/// calls per second per Redis core.
async fn hot(
    ctx: &Context,
    conn: &mut MultiplexedConnection,
    keys: &[String],
    n: u64,
    out: &mut Summary,
) -> anyhow::Result<()> {
    let source = ["select.lua", "pick.lua", "read.lua"]
        .map(|f| std::fs::read_to_string(ctx.repo.join("src/index/redis").join(f)))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .context("reading the index's Lua scripts")?
        .concat();
    let sha = redis_info::script_load(conn, &source).await?;
    let (deep, filtered) = ((n * 3 / 4).to_string(), (n / 4).to_string());
    let (deep_bound, filtered_bound) = ((n * 3 / 4 - 1).to_string(), (n / 4 - 1).to_string());
    let five: Vec<&str> = keys.iter().map(String::as_str).collect();
    let three_five = vec![keys[2].as_str(), keys[4].as_str()];
    // The layout the server sends for every one of these (`ANCHOR_ONLY`): no page is bounded,
    // since a pager's links are page cursors (offsets); a pager page differs from a bare jump
    // only in asking for the first edge's rank ("rank") besides the bound.
    let layout = ["1", "newest", "none"];
    let cases: [(&str, &[&str], Vec<&str>); 6] = [
        (
            "pager page, offset 0",
            &five,
            [&["desc", "", "", "", "rank", "0", ""][..], &layout].concat(),
        ),
        (
            "pager page, deep",
            &five,
            [
                &["desc", "", "", &deep_bound, "rank", &deep, ""][..],
                &layout,
            ]
            .concat(),
        ),
        (
            "pager page, ratings [3, 5]",
            &three_five,
            [
                &["desc", "", "", &filtered_bound, "rank", &filtered, ""][..],
                &layout,
            ]
            .concat(),
        ),
        (
            "bare jump, deep",
            &five,
            [&["desc", "", "", &deep_bound, "none", "", ""][..], &layout].concat(),
        ),
        (
            "bare jump, ratings [3, 5]",
            &three_five,
            [
                &["desc", "", "", &filtered_bound, "none", "", ""][..],
                &layout,
            ]
            .concat(),
        ),
        (
            "totalCount",
            &five,
            [&["desc", "", "", "", "none", "", ""][..], &layout].concat(),
        ),
    ];
    out.line("| the index's script alone, back to back (read.lua) | Redis CPU per call (µs) | calls per second per Redis core |")?;
    out.line("|---|---|---|")?;
    for (name, keys, args) in cases {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&sha).arg(keys.len()).arg(keys).arg(args);
        let us = hot_cpu(conn, &cmd).await?;
        let line = format!("| {name} | {us:.1} | {:.0} |", 1e6 / us);
        log(&line);
        out.line(&line)?;
    }
    Ok(())
}

/// Raw ZRANK and ZRANGE on one set of `n` members like the index's (11-byte members, integer
/// millisecond scores), one request at a time, and the index's memory per comment.
async fn raw_and_memory(
    conn: &mut MultiplexedConnection,
    keys: &[String],
    n: u64,
    requests: u64,
    out: &mut Summary,
) -> anyhow::Result<()> {
    for start in (0..n).step_by(1_000) {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg("raw:z");
        for j in start..(start + 1_000).min(n) {
            zadd.arg(1_600_000_000_000 + j * 37)
                .arg(format!("\u{1}{j:010}"));
        }
        let _: u64 = zadd.query_async(conn).await?;
    }
    let member = format!("\u{1}{:010}", n * 3 / 4);
    let rank = (n / 4).to_string();
    let raw: [(&str, Vec<&str>); 3] = [
        ("ZRANK of a member 3/4 in", vec!["ZRANK", "raw:z", &member]),
        (
            "ZRANGE r r (one member, no score)",
            vec!["ZRANGE", "raw:z", &rank, &rank],
        ),
        (
            "ZRANGE r r WITHSCORES",
            vec!["ZRANGE", "raw:z", &rank, &rank, "WITHSCORES"],
        ),
    ];
    out.line("| raw command on one sorted set of the same size | Redis CPU per call, one at a time (µs) | calls/s per core | back to back (µs) | calls/s per core |")?;
    out.line("|---|---|---|---|---|")?;
    for (name, command) in raw {
        let mut cmd = redis::cmd(command[0]);
        for arg in &command[1..] {
            cmd.arg(*arg);
        }
        let before = redis_info::cpu_seconds(conn).await?;
        for _ in 0..requests * 5 {
            let _: redis::Value = cmd.query_async(conn).await?;
        }
        let us = (redis_info::cpu_seconds(conn).await? - before) * 1e6 / (requests * 5) as f64;
        let hot = hot_cpu(conn, &cmd).await?;
        let line = format!(
            "| {name} | {us:.1} | {:.0} | {hot:.1} | {:.0} |",
            1e6 / us,
            1e6 / hot
        );
        log(&line);
        out.line(&line)?;
    }
    let mut bytes = 0u64;
    // The sets without votes (`keys`), and those of the comments with votes, by time and by
    // count (empty without `--voted`).
    let voted_sets = ["w", "h"]
        .into_iter()
        .flat_map(|set| (1..=5).map(move |r| format!("idx:idx:{{{SKU}}}:{set}{r}")));
    for key in keys.iter().cloned().chain(voted_sets) {
        let usage: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(conn)
            .await?;
        bytes += usage.unwrap_or(0);
    }
    let line = format!(
        "# index memory: {bytes} B in the product's sets for {n} comments = {:.1} B per comment (MEMORY USAGE … SAMPLES 0)",
        bytes as f64 / n as f64
    );
    log(&line);
    out.line(&line)
}
