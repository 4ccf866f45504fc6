//! `index-big-product`: one product of 10 million comments in the Redis index (BENCHMARKS.md,
//! "Redis index: a 10-million-comment product"): its memory, and what a page jump and a pager
//! page cost at offsets 0, 10⁶ and the far end. The comments are seeded like
//! `--demo-comments` (ratings 8/7/15/30/40 %, one in four on the millisecond of the one before,
//! gaps up to 90 s, 11-byte members) straight into the five rating sets of a redis-server of
//! its own (chunks of 100,000 per script call); then `MEMORY USAGE … SAMPLES 0` of the sets and
//! `INFO memory`; then the index's read script (`src/index/redis/{select,pick,read}.lua` of the
//! work tree) is sent `calls` times per case, one at a time (redis-benchmark, one connection),
//! with Redis's CPU per call (`INFO cpu`, user + system, around the calls), its own time per call
//! (`INFO commandstats`) and its commands per call. Needs ~1.5 GB of memory at the default size.

use std::process::Stdio;

use anyhow::{Context as _, bail};

use super::index_script::{index_script, long_connection, truncated_tenths};
use crate::backends;
use crate::context::Context;
use crate::machine::{Machine, redis_version};
use crate::proc_stat::loadavg;
use crate::processes::require;
use crate::redis_info::{command_stats, cpu_seconds, info_number, reset_stats, script_load};
use crate::report::{Summary, log};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments of the product
    #[arg(long, default_value_t = 10_000_000)]
    comments: u64,
    /// Script calls per case, one at a time
    #[arg(long, default_value_t = 200)]
    calls: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "index-big-product")]
    result_name: String,
}

/// The seeding script: `ARGV[1]` comments from the time `ARGV[2]` back, random seed `ARGV[3]`;
/// returns the last time, where the next chunk starts.
const SEED: &str = r"math.randomseed(tonumber(ARGV[3]))
local ms = tonumber(ARGV[2])
local w = {8, 7, 15, 30, 40}
for i = 1, tonumber(ARGV[1]) do
  if math.random(4) ~= 1 then ms = ms - math.random(90000) end
  local roll, r, acc = math.random(100), 5, 0
  for k = 1, 5 do acc = acc + w[k]; if roll <= acc then r = k; break end end
  local b = {1}
  for j = 2, 11 do b[j] = math.random(0, 255) end
  redis.call('ZADD', KEYS[r], ms, string.char(unpack(b)))
end
return ms
";

const CHUNK: u64 = 100_000;

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    require(
        "redis-benchmark",
        "apt-get install redis-tools (it comes with redis-server)",
    )?;
    let redis = backends::redis(ctx).await?;
    let mut conn = long_connection(&redis.url()).await?;
    let keys: Vec<String> = (1..=5).map(|r| format!("idx:{{BIG}}:r{r}")).collect();
    seed(&mut conn, &keys, args.comments).await?;
    let (mut sizes, mut bytes) = (Vec::new(), 0u64);
    for key in &keys {
        let size: u64 = redis::cmd("ZCARD").arg(key).query_async(&mut conn).await?;
        sizes.push(size.to_string());
        let usage: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut conn)
            .await?;
        bytes += usage.unwrap_or(0);
    }
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    let mut header = Machine::describe(ctx).header();
    header.truncate(2); // Redis's work, whatever the server's build
    for line in header {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {} comments, ratings 1..5: {}; redis {}; load before: {}",
        args.comments,
        sizes.join(" "),
        redis_version(),
        loadavg()
    ))?;
    out.line(&format!(
        "# MEMORY USAGE of the five sets (SAMPLES 0): {bytes} B = {:.1} B per comment; INFO used_memory: {} B",
        truncated_tenths(bytes as f64 / args.comments as f64),
        info_number(&mut conn, "memory", "used_memory").await?
    ))?;

    let sha = script_load(&mut conn, &index_script(ctx, "worktree")?).await?;
    out.line(&format!(
        "| call ({}, one at a time) | Redis CPU per call (µs) | script time by Redis's clock (µs) | Redis commands per call |",
        args.calls
    ))?;
    out.line("|---|---|---|---|")?;
    let rows = rows(args.comments);
    for (name, script_args) in rows {
        reset_stats(&mut conn).await?;
        let before = cpu_seconds(&mut conn).await?;
        benchmark(redis.port, args.calls, &sha, &keys, &script_args).await?;
        let cpu = cpu_seconds(&mut conn).await? - before;
        let stats = command_stats(&mut conn).await?;
        let usec = stats
            .iter()
            .find(|s| s.name == "evalsha")
            .map_or(0.0, |s| s.usec_per_call);
        let calls: u64 = stats.iter().map(|s| s.calls).sum();
        let line = format!(
            "| {name} | {:.0} | {usec:.2} | {:.1} |",
            cpu * 1e6 / args.calls as f64,
            truncated_tenths(calls as f64 / args.calls as f64)
        );
        log(&line);
        out.line(&line)?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Seeds `comments` comments into the rating sets `keys`, a chunk per script call.
async fn seed(
    conn: &mut redis::aio::MultiplexedConnection,
    keys: &[String],
    comments: u64,
) -> anyhow::Result<()> {
    log(&format!("seeding {comments} comments"));
    let mut start: i64 = 1_767_225_600_000;
    let (mut done, mut chunk_seed) = (0, 1);
    while done < comments {
        let n = CHUNK.min(comments - done);
        start = redis::cmd("EVAL")
            .arg(SEED)
            .arg(keys.len())
            .arg(keys)
            .arg(n)
            .arg(start)
            .arg(chunk_seed)
            .query_async(conn)
            .await?;
        done += n;
        chunk_seed += 1;
    }
    Ok(())
}

/// The rows: `totalCount`, then a bare jump and a pager page at offsets 0, 10⁶ and the far
/// end, each with the script's arguments after its keys.
fn rows(comments: u64) -> Vec<(String, Vec<String>)> {
    let mut rows = vec![(
        "totalCount".to_owned(),
        strings(&["desc", "", "", "", "none", "", "", "1", "newest", "none"]),
    )];
    for offset in [0, 1_000_000, comments.saturating_sub(20)] {
        let bound = offset.saturating_sub(1).to_string();
        let (bound, at) = (bound.as_str(), offset.to_string());
        rows.push((
            format!("bare jump, offset {offset}"),
            strings(&[
                "desc", "", "", bound, "none", "", "", "20", "newest", "none",
            ]),
        ));
        rows.push((
            format!("pager page, offset {offset}"),
            strings(&[
                "desc", "", "", bound, "rank", &at, "", "1", "newest", "none",
            ]),
        ));
    }
    rows
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// `redis-benchmark -c 1 -n CALLS EVALSHA sha 5 KEYS ARGS`: the calls one at a time on one
/// connection.
async fn benchmark(
    port: u16,
    calls: u64,
    sha: &str,
    keys: &[String],
    args: &[String],
) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("redis-benchmark")
        .args([
            "-p",
            &port.to_string(),
            "-c",
            "1",
            "-n",
            &calls.to_string(),
            "-q",
        ])
        .args(["EVALSHA", sha, &keys.len().to_string()])
        .args(keys)
        .args(args)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .context("running redis-benchmark")?;
    if !status.success() {
        bail!("redis-benchmark failed ({status})");
    }
    Ok(())
}
