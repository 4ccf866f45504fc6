//! `live`: live comments under load (BENCHMARKS.md, "Live comments"). `subscribers` WebSocket
//! clients on one product (or spread over `products`) while comments are added through the API
//! at `rate` a second, on DynamoDB Local + Redis with the stream applied by `serve --sync` (so
//! each change goes table -> stream -> consumer -> Redis change log -> the server's XREAD ->
//! fan-out), or with `--embedded` on the in-process store (each write fans out directly). The
//! `live-load` generator measures the delivery lag end to end; the server's CPU (also per
//! delivery) and RSS come from `/proc` around each run, its own lag histogram from `/metrics`.
//! Runs: a tenth of the rate, the rate, then the rate with `slow` clients that read nothing
//! (they must be closed, and the RSS must stay flat).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::ensure;

use super::parse_seconds;
use crate::backends;
use crate::context::Context;
use crate::generators::run_self;
use crate::machine::Machine;
use crate::proc_stat::{loadavg, open_files_limit, process_ticks, rss_kb, ticks_per_s};
use crate::report::{Summary, log};
use crate::server::{Server, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// WebSocket clients subscribed to the product
    #[arg(long, default_value_t = 1000)]
    subscribers: u64,
    /// Comments added per second
    #[arg(long, default_value_t = 100)]
    rate: u64,
    /// How long comments are added, in each run
    #[arg(long, default_value = "30s", value_parser = parse_seconds)]
    duration: u64,
    /// Clients that read nothing, in the last run
    #[arg(long, default_value_t = 50)]
    slow: u64,
    /// Products the subscribers and writes are spread over (round-robin)
    #[arg(long, default_value_t = 1)]
    products: u64,
    /// Serve from the in-process store and index instead of DynamoDB Local + Redis
    #[arg(long)]
    embedded: bool,
    /// The servers' `--websocket-coalesce-ms`, one server (and its three runs) each, in this
    /// order: `0,50` measures the window against sending each event at once in the same run
    #[arg(long, value_delimiter = ',', default_value = "0")]
    coalesce_ms: Vec<u64>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    // Every subscriber is a socket here and one in the server (which inherits this limit).
    let needed = args.subscribers + args.slow + 256;
    ensure!(
        open_files_limit().is_none_or(|limit| limit >= needed),
        "{needed} open files are needed: raise the limit first (ulimit -n 65536)"
    );
    ctx.build_dynapage()?;
    // Held for the run: the services stop when dropped.
    let mut services = None;
    let mut serve = if args.embedded {
        strings(&["--demo-comments", "0"])
    } else {
        let dynamo = backends::dynamodb_local(ctx).await?;
        let redis = backends::redis(ctx).await?;
        let mut serve = crate::server::dynamodb_redis_args(&dynamo.url(), &redis.url());
        serve.extend(strings(&["--sync", "--sync-poll-ms", "50"]));
        services = Some((dynamo, redis));
        serve
    };
    serve.extend(strings(&["--auth", "off"]));
    serve.extend(strings(&["--max-subscriptions-per-connection", "1"]));
    // Every subscriber comes from this machine's one address: one client, in the server's
    // eyes, which its per-client shares and subscription rate would otherwise stop at 5, and
    // its per-address connection cap at 256.
    let every = needed.to_string();
    serve.extend(strings(&[
        "--max-connections",
        &every,
        "--max-connections-per-address",
        &every,
        "--max-sockets-per-client",
        &every,
        "--max-subscriptions-per-client",
        &every,
        "--rate-limit-subscriptions",
        "0",
        "--rate-limit-writes",
        "0",
    ]));
    let backend = if services.is_some() {
        "DynamoDB Local + Redis, serve --sync (poll 50 ms); server, DynamoDB Local, Redis"
    } else {
        "the embedded store (serve --demo-comments 0); server"
    };

    let mut out = Summary::create(&ctx.result("live.txt"))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!("# load before: {}", loadavg()))?;
    out.line(&format!(
        "# {} subscribers on {} product(s), {} comments/s for {} s through the API; {backend} and the load generator share the cores",
        args.subscribers, args.products, args.rate, args.duration
    ))?;
    for &coalesce in &args.coalesce_ms {
        let mut serve = serve.clone();
        serve.extend(strings(&["--websocket-coalesce-ms", &coalesce.to_string()]));
        out.line(&format!("## serve --websocket-coalesce-ms {coalesce}"))?;
        let server = Server::start(ctx, "live", &serve).await?;
        runs(&server, &args, &mut out, coalesce).await?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    drop(services);
    Ok(())
}

/// The three runs on one server: a tenth of the rate, the rate, and the rate beside clients
/// that read nothing.
async fn runs(
    server: &Server,
    args: &Args,
    out: &mut Summary,
    coalesce: u64,
) -> anyhow::Result<()> {
    // The lighter load first, on a quiet server: a run leaves a backlog for a while after it.
    out.line(&format!(
        "# a tenth of the writes ({}/s), the same subscribers",
        args.rate / 10
    ))?;
    let label = |run: &str| format!("{run}_c{coalesce}");
    run_load(server, args, out, &label("tenth"), 0, args.rate / 10).await?;
    out.line(&format!("# {} writes/s", args.rate))?;
    run_load(server, args, out, &label("steady"), 0, args.rate).await?;
    let lag = [
        "dynapage_subscription_delivery_lag_seconds_sum",
        "dynapage_subscription_delivery_lag_seconds_count",
    ];
    for line in server.api.metric_lines(&lag).await? {
        out.line(&line)?;
    }
    out.line(&format!(
        "# the same, plus {} clients that read nothing (tiny receive window)",
        args.slow
    ))?;
    run_load(server, args, out, &label("slow"), args.slow, args.rate).await?;
    let ends = [
        "dynapage_subscriptions_dropped_slow_total",
        "dynapage_subscriptions_open",
    ];
    for line in server.api.metric_lines(&ends).await? {
        out.line(&line)?;
    }
    Ok(())
}

/// One run of the generator; the server's CPU over it and its RSS before, after and at most
/// (sampled every 0.5 s).
async fn run_load(
    server: &Server,
    args: &Args,
    out: &mut Summary,
    label: &str,
    slow: u64,
    rate: u64,
) -> anyhow::Result<()> {
    let pid = server.pid();
    let cpu_before = process_ticks(pid);
    let rss_before = rss_kb(pid).unwrap_or(0);
    let started = Instant::now();
    let peak = Arc::new(AtomicU64::new(rss_before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            while let Some(rss) = rss_kb(pid) {
                peak.fetch_max(rss, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    let sku = format!("LIVE_{}", label.to_uppercase());
    let mut generator = strings(&["live-load", "--url", &server.api.url, "--sku", &sku]);
    for (flag, value) in [
        ("--subscribers", args.subscribers),
        ("--slow", slow),
        ("--rate", rate),
        ("--seconds", args.duration),
        ("--products", args.products),
    ] {
        generator.extend([flag.to_owned(), value.to_string()]);
    }
    let report = run_self(&generator, None).await;
    sampler.abort();
    let report = report?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = process_ticks(pid).saturating_sub(cpu_before) as f64 / ticks_per_s();
    let rss_after = rss_kb(pid).unwrap_or(0);
    let peak = peak.load(Ordering::Relaxed).max(rss_after);
    out.line(&format!("{label}: {}", report.trim()))?;
    let deliveries = serde_json::from_str::<serde_json::Value>(report.trim())
        .ok()
        .and_then(|report| report["deliveries"].as_f64())
        .unwrap_or(0.0);
    out.line(&format!(
        "  server CPU: {cpu:.2} s over {wall:.1} s wall ({:.0}% of one core), {:.2} µs per delivery; RSS {} MB before, {} MB after, {} MB peak",
        100.0 * cpu / wall,
        1e6 * cpu / deliveries.max(1.0),
        rss_before / 1024,
        rss_after / 1024,
        peak / 1024
    ))
}
