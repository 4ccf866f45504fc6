//! `index-lua-callgrind`: the Redis index's read script, counted in instructions (BENCHMARKS.md,
//! "Redis index: cheaper union ranks"): a deterministic A/B of
//! `src/index/redis/{select,pick,read}.lua` between git revisions, for a machine too loaded for
//! CPU times to compare. 200,000 members are seeded like `--demo-comments 200000` (ratings
//! 8/7/15/30/40 %, one in four on the millisecond of the one before, 11-byte members) into five
//! rating sets of a plain redis-server and saved; a redis-server under valgrind's callgrind
//! loads them (`--hz 1`, so that its timers add little); and for each revision and case, N
//! calls of the script are sent as the server would send them (one `redis-cli` each), and the
//! instructions per call are reported (Redis's whole process: the script, its commands, and
//! the client's connection, ~40 k) with the Redis commands per call. The last four rows are N
//! bare jumps and N pager pages to offsets spread at random, the same for every revision (and
//! the same as the script before it, `bench/index-lua-callgrind.sh`, drew: bash's `RANDOM`
//! seeded with 7). `worktree` names the files as they are on disk.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, bail};
use redis::aio::MultiplexedConnection;

use super::ab::callgrind::instructions;
use super::index_script::{describe_revision, index_script, long_connection, truncated_tenths};
use crate::backends::{self, RedisOptions};
use crate::context::Context;
use crate::machine::Machine;
use crate::processes::require;
use crate::redis_info::{command_stats, reset_stats, script_load};
use crate::report::{Summary, log};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Git revisions, or `worktree` for the files on disk
    #[arg(default_values_t = ["main".to_owned(), "worktree".to_owned()])]
    revisions: Vec<String>,
    /// Script calls per case
    #[arg(long, default_value_t = 20)]
    calls: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "index-lua-callgrind")]
    result_name: String,
}

/// The seeding script: `ARGV[1]` members from the time `ARGV[2]` back, random seed `ARGV[3]`.
const SEED: &str = r"math.randomseed(tonumber(ARGV[3]))
local ms = tonumber(ARGV[2])
local w = {8, 7, 15, 30, 40}
for i = 1, tonumber(ARGV[1]) do
  if math.random(4) ~= 1 then ms = ms - math.random(90000) end
  local roll, r, acc = math.random(100), 5, 0
  for k = 1, 5 do acc = acc + w[k]; if roll <= acc then r = k; break end end
  local m = string.char(1)
  for _ = 1, 10 do m = m .. string.char(math.random(0, 255)) end
  redis.call('ZADD', KEYS[r], ms, m)
end
return ms
";

const K: &str = "idx:{P}:r";

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    require("valgrind", "apt-get install valgrind")?;
    require("callgrind_control", "apt-get install valgrind")?;
    require(
        "redis-cli",
        "apt-get install redis-tools (it comes with redis-server)",
    )?;
    let dir = ctx.raw("index-lua-callgrind");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let dir = std::fs::canonicalize(&dir)?;
    let rdb = ["--dir".to_owned(), dir.display().to_string()]
        .into_iter()
        .chain(["--dbfilename".to_owned(), "seed.rdb".to_owned()])
        .collect::<Vec<_>>();
    seed(ctx, &rdb).await?;

    let mut options = RedisOptions::with_args(&rdb);
    options.args.extend(["--hz".to_owned(), "1".to_owned()]);
    options.under = vec![
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", dir.join("cg.out").display()),
    ];
    log("starting redis-server under callgrind");
    let redis = backends::redis_with(ctx, options).await?;
    let mut conn = long_connection(&redis.url()).await?;
    let bench = Bench {
        dir: &dir,
        port: redis.port,
        pid: redis.process.pid(),
        calls: args.calls,
    };

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    let mut header = Machine::describe(ctx).header();
    header.truncate(2); // Redis's work, whatever the server's build
    for line in header {
        out.line(&line)?;
    }
    let all = total(&mut conn, &keys(&[1, 2, 3, 4, 5])).await?;
    let both = total(&mut conn, &keys(&[3, 5])).await?;
    for revision in &args.revisions {
        let sha = script_load(&mut conn, &index_script(ctx, revision)?).await?;
        out.line(&format!(
            "## {}; {} calls per case",
            describe_revision(ctx, revision)?,
            args.calls
        ))?;
        out.line(
            "| case (200,000 comments) | k instructions per call | Redis commands per call |",
        )?;
        out.line("|---|---|---|")?;
        for (name, calls) in calls_of_each_row(&sha, args.calls, [all, both]) {
            let line = bench.row(&mut conn, &name, &calls).await?;
            out.line(&line)?;
        }
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Every row's name and calls (each a `redis-cli` run's arguments): the fixed cases, then the
/// random offsets over all five sets (`totals[0]` members) and over ratings 3 and 5
/// (`totals[1]`).
fn calls_of_each_row(sha: &str, n: u64, totals: [u64; 2]) -> Vec<(String, Vec<Vec<String>>)> {
    let mut rows: Vec<(String, Vec<Vec<String>>)> = fixed_cases()
        .into_iter()
        .map(|(name, keys, args)| (name, vec![script_call(sha, &keys, &args); n as usize]))
        .collect();
    let (five, two) = (keys(&[1, 2, 3, 4, 5]), keys(&[3, 5]));
    for (kind, pager) in [("bare jumps", false), ("pager pages", true)] {
        rows.push((
            format!("{kind}, {n} random offsets"),
            random_jumps(sha, &five, pager, totals[0], n),
        ));
        rows.push((
            format!("{kind}, ratings [3, 5], {n} random offsets"),
            random_jumps(sha, &two, pager, totals[1], n),
        ));
    }
    rows
}

/// The keys of the sets of `ratings`.
fn keys(ratings: &[u8]) -> Vec<String> {
    ratings.iter().map(|r| format!("{K}{r}")).collect()
}

/// Seeds the 200,000 members into a plain redis-server and saves them in `<dir>/seed.rdb`.
async fn seed(ctx: &Context, rdb: &[String]) -> anyhow::Result<()> {
    log("seeding 200,000 members");
    let redis = backends::redis_with(ctx, RedisOptions::with_args(rdb)).await?;
    let mut conn = long_connection(&redis.url()).await?;
    let keys = keys(&[1, 2, 3, 4, 5]);
    let mut start: i64 = 1_767_225_600_000;
    for chunk in 1..=10 {
        start = redis::cmd("EVAL")
            .arg(SEED)
            .arg(5)
            .arg(&keys)
            .arg(20_000)
            .arg(start)
            .arg(chunk)
            .query_async(&mut conn)
            .await?;
    }
    redis::cmd("SAVE").query_async::<()>(&mut conn).await?;
    // The server exits on SHUTDOWN, before it can answer.
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query_async::<()>(&mut conn)
        .await;
    Ok(())
}

/// What one case measures with.
struct Bench<'a> {
    dir: &'a Path,
    port: u16,
    pid: u32,
    calls: u64,
}

impl Bench<'_> {
    /// One row: the calls (each a `redis-cli` run's arguments) between zeroed counters,
    /// reported per call.
    async fn row(
        &self,
        conn: &mut MultiplexedConnection,
        name: &str,
        calls: &[Vec<String>],
    ) -> anyhow::Result<String> {
        reset_stats(conn).await?;
        let pid = self.pid.to_string();
        callgrind_control(&["-z", &pid]).await?;
        for call in calls {
            redis_cli(self.port, call).await?;
        }
        callgrind_control(&["-d", &pid]).await?;
        let dump = newest_dump(self.dir)?;
        let ir = instructions(&std::fs::read_to_string(&dump)?)
            .with_context(|| format!("no totals in {}", dump.display()))?;
        let commands: u64 = command_stats(conn).await?.iter().map(|s| s.calls).sum();
        let line = format!(
            "| {name} | {} | {:.1} |",
            ir / self.calls / 1000,
            truncated_tenths(commands as f64 / self.calls as f64)
        );
        log(&line);
        Ok(line)
    }
}

/// The cases sent with the same arguments every call: name, keys, the script's arguments.
fn fixed_cases() -> Vec<(String, Vec<String>, Vec<&'static str>)> {
    let keys =
        |ratings: &[u8]| -> Vec<String> { ratings.iter().map(|r| format!("{K}{r}")).collect() };
    let five = keys(&[1, 2, 3, 4, 5]);
    // A pager page's view, as the server asks it since a pager's links are page cursors: the
    // total and the first edge's rank, no page bounds.
    let pager = |bound: &'static str, rank: &'static str| {
        vec![
            "desc", "", "", bound, "rank", rank, "", "1", "newest", "none",
        ]
    };
    let jump = |bound: &'static str| {
        vec![
            "desc", "", "", bound, "none", "", "", "20", "newest", "none",
        ]
    };
    vec![
        ("pager, offset 0".into(), five.clone(), pager("", "0")),
        (
            "pager, offset 150000".into(),
            five.clone(),
            pager("149999", "150000"),
        ),
        (
            "pager, ratings [3, 5], offset 50000".into(),
            keys(&[3, 5]),
            pager("49999", "50000"),
        ),
        (
            "pager, ratings [1, 4, 5], offset 50000".into(),
            keys(&[1, 4, 5]),
            pager("49999", "50000"),
        ),
        (
            "pager, ratings [4], offset 50000".into(),
            keys(&[4]),
            pager("49999", "50000"),
        ),
        (
            "bare jump, offset 150000".into(),
            five.clone(),
            jump("149999"),
        ),
        (
            "bare jump, ratings [3, 5], offset 50000".into(),
            keys(&[3, 5]),
            jump("49999"),
        ),
        (
            "totalCount".into(),
            five,
            vec!["desc", "", "", "", "none", "", "", "1", "newest", "none"],
        ),
    ]
}

/// `EVALSHA sha numkeys keys… args…` as `redis-cli` arguments.
fn script_call(sha: &str, keys: &[String], args: &[&str]) -> Vec<String> {
    let mut call = vec!["evalsha".to_owned(), sha.to_owned(), keys.len().to_string()];
    call.extend(keys.iter().cloned());
    call.extend(args.iter().map(|a| (*a).to_owned()));
    call
}

/// `calls` bare jumps (or pager pages) to offsets spread at random over the list's `total`
/// members, the same offsets for every revision: what a jump costs on average, not at one
/// offset.
fn random_jumps(
    sha: &str,
    keys: &[String],
    pager: bool,
    total: u64,
    calls: u64,
) -> Vec<Vec<String>> {
    let mut random = BashRandom::new(7);
    (0..calls)
        .map(|_| {
            let high = u64::from(random.next());
            let offset = (high * 32768 + u64::from(random.next())) % (total - 128) + 64;
            let (bound, at) = ((offset - 1).to_string(), offset.to_string());
            let args: Vec<&str> = if pager {
                vec![
                    "desc", "", "", &bound, "rank", &at, "", "1", "newest", "none",
                ]
            } else {
                vec!["desc", "", "", &at, "none", "", "", "20", "newest", "none"]
            };
            script_call(sha, keys, &args)
        })
        .collect()
}

/// bash 5's `$RANDOM` after `RANDOM=seed`: Park and Miller's minimal standard generator, its
/// two halves folded together, 15 bits, never the same value twice in a row.
struct BashRandom {
    state: u32,
    last: u32,
}

impl BashRandom {
    fn new(seed: u32) -> Self {
        Self {
            state: seed,
            last: 0,
        }
    }

    fn next(&mut self) -> u32 {
        loop {
            let state = if self.state == 0 {
                123_459_876
            } else {
                self.state
            };
            let (h, l) = (i64::from(state / 127_773), i64::from(state % 127_773));
            let t = 16_807 * l - 2_836 * h;
            self.state = u32::try_from(if t < 0 { t + 0x7fff_ffff } else { t }).unwrap_or(1);
            let value = ((self.state >> 16) ^ (self.state & 0xffff)) & 0x7fff;
            if value != self.last {
                self.last = value;
                return value;
            }
        }
    }
}

/// The sum of the sets' sizes.
async fn total(conn: &mut MultiplexedConnection, keys: &[String]) -> anyhow::Result<u64> {
    let mut sum = 0;
    for key in keys {
        let n: u64 = redis::cmd("ZCARD").arg(key).query_async(conn).await?;
        sum += n;
    }
    Ok(sum)
}

/// `callgrind_control ARGS`, which must succeed.
async fn callgrind_control(args: &[&str]) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("callgrind_control")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await?;
    if !status.success() {
        bail!("callgrind_control {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// `redis-cli -p PORT ARGS`: one call on a connection of its own, as the script sent it.
async fn redis_cli(port: u16, args: &[String]) -> anyhow::Result<()> {
    let output = tokio::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .await?;
    let reply = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || reply.starts_with("(error)") || reply.starts_with("ERR") {
        bail!("redis-cli {} failed: {reply}", args.join(" "));
    }
    Ok(())
}

/// The newest profile callgrind dumped in `dir` (`cg.out.<n>`, the highest n).
fn newest_dump(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let n: u64 = name
                .strip_prefix("cg.out.")?
                .rsplit('.')
                .next()?
                .parse()
                .ok()?;
            Some((n, entry.path()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, path)| path)
        .context("callgrind dumped no profile")
}

#[cfg(test)]
mod tests {
    use super::BashRandom;

    #[test]
    fn the_random_offsets_are_those_bash_drew_after_random_7() {
        // bash -c 'RANDOM=7; echo $RANDOM $RANDOM $RANDOM $RANDOM $RANDOM' (bash 5.2)
        let mut random = BashRandom::new(7);
        let drawn: Vec<u32> = (0..5).map(|_| random.next()).collect();
        assert_eq!(drawn, [19344, 26956, 7409, 20442, 22989]);
    }
}
