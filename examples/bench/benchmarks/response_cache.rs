//! `response-cache`: the response cache (BENCHMARKS.md, "Response cache"): the first page of a
//! popular product repeated over GET by 16 connections, against a server without the response
//! cache and one with it, then `If-None-Match` 304s, then hits through Varnish with the
//! repository's VCL (`deploy/varnish/default.vcl`). Prints requests per second, p50 and p99,
//! and the server's CPU per request (user + system from `/proc/PID/stat` around each run).
//!
//! `--backend embedded` (the default): the in-process store and index, the demo product with
//! `--comments` comments. `--backend dynamodb`: DynamoDB Local and a redis-server of its own,
//! the comments seeded with `dynapage seed` and indexed through the stream by the server without
//! the cache (`--sync`, which also purges Varnish); then `write-to-fresh` measures the time from
//! a write to the first fresh page through Varnish at 10 writes a second.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::{SKU, parse_seconds};
use crate::backends;
use crate::context::Context;
use crate::generators::write_to_fresh;
use crate::machine::Machine;
use crate::proc_stat::{loadavg, process_ticks, ticks_per_s};
use crate::processes::{Process, free_port, require, spawn, wait_until};
use crate::report::{Summary, log};
use crate::server::{BENCH_CURSOR_SECRET, Server, dynapage, strings};
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the pages come from
    #[arg(long, value_enum, default_value_t = Backend::Embedded)]
    backend: Backend,
    /// Comments of the product
    #[arg(long, default_value_t = 250_000)]
    comments: u64,
    /// Each wrk run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Writes of the write-to-fresh measurement (`--backend dynamodb`)
    #[arg(long, default_value_t = 200)]
    writes: u64,
    /// Their rate per second
    #[arg(long, default_value_t = 10.0)]
    rate: f64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "response-cache")]
    result_name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    /// `serve --demo-comments`: the in-process store and index
    Embedded,
    /// DynamoDB Local + redis-server, indexed through the stream
    Dynamodb,
}

const QUERY: &str = "query($sku: String!) { comments(sku: $sku, first: 20) { totalCount edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage endCursor } } }";

/// The page's GET path: the query and its variables in the URL.
pub fn page_path(query: &str) -> String {
    // As Python's json.dumps wrote them (the scripts' URLs), a space after the colon.
    let variables = format!("{{\"sku\": \"{SKU}\"}}");
    let encoded = serde_urlencoded::to_string([("query", query), ("variables", &variables)])
        .unwrap_or_default();
    format!("/graphql?{encoded}")
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    require("varnishd", "apt-get install varnish varnish-modules")?;
    ctx.build_dynapage()?;
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!("load: {}", loadavg()))?;
    let bench = Bench {
        ctx,
        path: page_path(QUERY),
        seconds: args.duration,
        varnish_port: free_port()?,
    };
    let servers = match args.backend {
        Backend::Dynamodb => bench.dynamodb(&args, &mut out).await?,
        Backend::Embedded => bench.embedded(&args, &mut out).await?,
    };
    let warm = &servers.warm;
    out.line(&bench.measure(warm, "with the response cache", &[]).await?)?;
    let etag = etag(&format!("{}{}", warm.api.url, bench.path)).await?;
    let if_none_match = [format!("If-None-Match: {etag}")];
    out.line(
        &bench
            .measure(warm, "If-None-Match (304)", &if_none_match)
            .await?,
    )?;

    let warm_port = warm.api.url.rsplit(':').next().unwrap_or_default();
    let varnish = start_varnish(ctx, bench.varnish_port, warm_port, &bench.path).await?;
    let through = format!("http://127.0.0.1:{}{}", bench.varnish_port, bench.path);
    let label = "through Varnish (server CPU: what reached it)";
    out.line(&run_wrk(ctx, warm, label, &through, &[], args.duration).await?)?;
    if let Some(cold) = &servers.cold {
        let (lines, missing) =
            write_to_fresh::measure(&cold.api.url, &through, SKU, args.writes, args.rate).await?;
        for line in lines {
            out.line(&line)?;
        }
        if missing > 0 {
            bail!("{missing} writes never showed through Varnish");
        }
    }
    drop(varnish);
    drop(servers);
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// What every run of this benchmark shares.
struct Bench<'a> {
    ctx: &'a Context,
    /// The page's GET path.
    path: String,
    /// Each wrk run.
    seconds: u64,
    /// Where Varnish will listen (the server without the cache purges it on DynamoDB).
    varnish_port: u16,
}

/// The servers with the cache and (on DynamoDB, still up) without it, and the backends they
/// need, kept until the end.
struct Servers {
    cold: Option<Server>,
    warm: Server,
    _backends: Vec<Process>,
}

impl Bench<'_> {
    /// `serve`'s arguments: a response cache of `cache` bytes, no budgets, then `rest`.
    fn serve(cache: &str, rest: &[String]) -> Vec<String> {
        let mut serve = strings(&["--response-cache-bytes", cache]);
        serve.extend(strings(&[
            "--rate-limit-cost",
            "0",
            "--rate-limit-writes",
            "0",
            "--max-connections-per-address",
            "10000",
        ]));
        serve.extend(rest.iter().cloned());
        serve
    }

    /// [`run_wrk`] on the page, against `server` itself.
    async fn measure(
        &self,
        server: &Server,
        label: &str,
        headers: &[String],
    ) -> anyhow::Result<String> {
        let url = format!("{}{}", server.api.url, self.path);
        run_wrk(self.ctx, server, label, &url, headers, self.seconds).await
    }

    /// The demo product in process: the server without the cache is measured, and stopped
    /// before the one with it starts.
    async fn embedded(&self, args: &Args, out: &mut Summary) -> anyhow::Result<Servers> {
        let demo = strings(&["--demo-comments", &args.comments.to_string()]);
        let cold = Server::start(self.ctx, "cache-cold", &Self::serve("0", &demo)).await?;
        out.line(&format!("load: {}", loadavg()))?;
        out.line(
            &self
                .measure(&cold, "without the response cache", &[])
                .await?,
        )?;
        cold.service.stop();
        let warm = Server::start(self.ctx, "cache-warm", &Self::serve("67108864", &demo)).await?;
        Ok(Servers {
            cold: None,
            warm,
            _backends: Vec::new(),
        })
    }

    /// DynamoDB Local and Redis: the server without the cache follows the stream into Redis
    /// and purges Varnish; the comments are seeded, and measured once indexed.
    async fn dynamodb(&self, args: &Args, out: &mut Summary) -> anyhow::Result<Servers> {
        let dynamo = backends::dynamodb_local(self.ctx).await?;
        let redis = backends::redis(self.ctx).await?;
        let stack = strings(&[
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &dynamo.url(),
            "--index",
            "redis",
            "--redis-url",
            &redis.url(),
            "--auth",
            "off",
            "--cursor-secret",
            BENCH_CURSOR_SECRET,
        ]);
        let mut cold_args = stack.clone();
        cold_args.extend(strings(&[
            "--create-tables",
            "--sync",
            "--purge-url",
            &format!("http://127.0.0.1:{}/", self.varnish_port),
            "--purge-format",
            "varnish",
        ]));
        let cold = Server::start(self.ctx, "cache-cold", &Self::serve("0", &cold_args)).await?;
        let started = Instant::now();
        let comments = args.comments.to_string();
        let seed = strings(&[
            "seed", "--sku", SKU, "--count", &comments, "--store", "dynamodb",
        ]);
        let endpoint = strings(&["--dynamodb-endpoint", &dynamo.url()]);
        let seeded = dynapage(self.ctx, "response-cache-seed", &[seed, endpoint].concat()).await?;
        for line in tail(&seeded, 2) {
            out.line(&line)?;
        }
        while cold.api.total_count(SKU).await? < args.comments {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        out.line(&format!(
            "seeded and indexed {} comments in {} s",
            args.comments,
            started.elapsed().as_secs()
        ))?;
        let warm = Server::start(self.ctx, "cache-warm", &Self::serve("67108864", &stack)).await?;
        out.line(&format!("load: {}", loadavg()))?;
        out.line(
            &self
                .measure(&cold, "without the response cache", &[])
                .await?,
        )?;
        Ok(Servers {
            cold: Some(cold),
            warm,
            _backends: vec![dynamo.process, redis.process],
        })
    }
}

/// Three GETs to warm up (the cache keeps the third answer on), then wrk (2 threads, 16
/// connections) with the server's CPU read around it: one line of figures.
async fn run_wrk(
    ctx: &Context,
    server: &Server,
    label: &str,
    url: &str,
    headers: &[String],
    seconds: u64,
) -> anyhow::Result<String> {
    let client = reqwest::Client::new();
    let mut first = client.get(url);
    for header in headers {
        if let Some((name, value)) = header.split_once(':') {
            first = first.header(name.trim(), value.trim());
        }
    }
    first.send().await?.bytes().await?;
    for _ in 0..2 {
        client.get(url).send().await?.bytes().await?;
    }
    let pid = server.pid();
    let before = process_ticks(pid);
    let outcome = wrk::get(ctx, url, (2, 16), seconds, headers).await?;
    let after = process_ticks(pid);
    let cpu_us =
        after.saturating_sub(before) as f64 / ticks_per_s() * 1e6 / outcome.requests.max(1) as f64;
    let line = format!(
        "{label}: {} req/s, p50 {}, p99 {}, non-2xx/3xx: {}, server CPU {cpu_us:.1} us/request",
        outcome.requests_per_s, outcome.p50, outcome.p99, outcome.non2xx_3xx
    );
    log(&line);
    Ok(line)
}

/// The page's ETag, as the server with the cache sends it.
async fn etag(url: &str) -> anyhow::Result<String> {
    let response = reqwest::get(url).await?;
    response
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .context("the page has no ETag")
}

/// The last `n` lines of `text`, without terminal colours.
fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|line| without_colours(line))
        .collect()
}

/// `line` without ANSI escape sequences (`ESC [ … m`).
fn without_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// `varnishd` in the foreground on `port`, with the repository's VCL pointed at the server on
/// `backend_port`, a working directory in the raw output; ready once the page (`path`) comes
/// through.
async fn start_varnish(
    ctx: &Context,
    port: u16,
    backend_port: &str,
    path: &str,
) -> anyhow::Result<Process> {
    let dir = ctx.raw("varnish");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let vcl = std::fs::read_to_string(ctx.repo.join("deploy/varnish/default.vcl"))?
        .replace(".port = \"8080\";", &format!(".port = \"{backend_port}\";"));
    let vcl_path = dir.join("default.vcl");
    std::fs::write(&vcl_path, vcl)?;
    let mut command = Command::new("varnishd");
    command
        .args(["-F", "-j", "none", "-n"])
        .arg(dir.join("work"))
        .args(["-a", &format!("127.0.0.1:{port}"), "-f"])
        .arg(&vcl_path)
        .args(["-s", "malloc,64m", "-T", "none"]);
    let mut varnish = spawn("varnishd", command, &ctx.raw("varnish.log"))?;
    let url = format!("http://127.0.0.1:{port}{path}");
    let client = reqwest::Client::new();
    wait_until(
        "varnishd",
        Duration::from_secs(20),
        Some(&mut varnish),
        || {
            let (client, url) = (client.clone(), url.clone());
            async move {
                client
                    .get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        },
    )
    .await?;
    log(&format!("varnishd on 127.0.0.1:{port}"));
    Ok(varnish)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seed_lines_lose_their_colours() {
        let line = "\u{1b}[2m2026-12-04T18:10:19Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m seeded \u{1b}[3mwritten\u{1b}[0m\u{1b}[2m=\u{1b}[0m3000";
        assert_eq!(
            super::without_colours(line),
            "2026-12-04T18:10:19Z  INFO seeded written=3000"
        );
    }

    #[test]
    fn the_page_is_a_get_with_the_query_and_its_variables_in_the_url() {
        let path = super::page_path("query($sku: String!) { a }");
        assert_eq!(
            path,
            "/graphql?query=query%28%24sku%3A+String%21%29+%7B+a+%7D&variables=%7B%22sku%22%3A+%22DAFT_PUNK_TSHIRT%22%7D"
        );
    }
}
