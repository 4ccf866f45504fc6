//! `verified`: what a verified-only page costs against the same page of the whole list
//! (BENCHMARKS.md, "Verified purchases"). `serve --index redis --demo-comments N` (the demo
//! product's comments are half verified purchases), the response cache off: each case as
//! `requests` sequential requests of the unfiltered page and of its `verified: true` twin at the
//! same relative place in its list (offsets scaled to the verified list's length), with Redis's
//! CPU per page around them (`INFO cpu`, as `index-cpu` measures) and the pages per second they
//! were served at, one at a time; then the index's bytes per comment, the product's sets and its
//! verified list's (`MEMORY USAGE … SAMPLES 0`).

use super::SKU;
use super::index_cpu::{page_cost, redis_index_args};
use crate::backends;
use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info::memory_usage;
use crate::report::{Summary, log};
use crate::server::Server;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Demo comments of the product (the issue's 1.1 million; half are verified)
    #[arg(long, default_value_t = 1_100_000)]
    demo_comments: u64,
    /// Requests per case and filter, after 20 to warm up
    #[arg(long, default_value_t = 400)]
    requests: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "verified")]
    result_name: String,
}

/// The cases, for a list of `n` comments: a name, the connection's arguments, the pager.
fn cases(n: u64) -> Vec<(&'static str, String, bool)> {
    vec![
        ("pager, offset 0", "first: 20".into(), true),
        (
            "pager, offset 3/4",
            format!("first: 20, offset: {}", n * 3 / 4),
            true,
        ),
        (
            "bare jump, offset 3/4",
            format!("first: 20, offset: {}", n * 3 / 4),
            false,
        ),
        (
            "pager, ratings [3, 5], offset 1/4",
            format!("first: 20, offset: {}, ratings: [3, 5]", n / 4),
            true,
        ),
        ("totalCount alone", "first: 0".into(), false),
    ]
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let n = args.demo_comments.to_string();
    let server_args = redis_index_args(&redis.url(), args.demo_comments);
    let server = Server::start(ctx, "verified", &server_args).await?;
    let mut conn = redis::Client::open(redis.url().as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# serve --index redis --demo-comments {n} --response-cache-bytes 0 (half verified); {} sequential requests per case and list; load before: {}",
        args.requests,
        loadavg()
    ))?;
    out.line("| case | list | Redis CPU per page (µs) | of which in scripts (µs) | Redis commands per page | indexCalls | pages/s, one at a time |")?;
    out.line("|---|---|---|---|---|---|---|")?;
    let all = cases(args.demo_comments);
    let verified = cases(args.demo_comments / 2);
    for ((name, whole, pager), (_, twin, _)) in all.into_iter().zip(verified) {
        for (list, connection) in [
            ("all", whole),
            ("verified", format!("{twin}, verified: true")),
        ] {
            let (row, rate) =
                page_cost(&server, &mut conn, name, &connection, pager, args.requests).await?;
            let row = row.replacen(&format!("| {name} |"), &format!("| {name} | {list} |"), 1);
            let line = format!("{row} {rate:.0} |");
            log(&line);
            out.line(&line)?;
        }
    }
    let sets = |list: &str| -> Vec<String> {
        ["r", "w", "h"]
            .into_iter()
            .flat_map(|set| (1..=5).map(move |r| format!("idx:idx:{{{list}}}:{set}{r}")))
            .collect()
    };
    let product = memory_usage(&mut conn, sets(SKU)).await?;
    let twin = memory_usage(&mut conn, sets(&format!("!+{SKU}"))).await?;
    let per = |bytes: i64| bytes as f64 / args.demo_comments as f64;
    let line = format!(
        "# index memory per comment of the product (MEMORY USAGE … SAMPLES 0): its own sets {:.1} B, its verified list's {:.1} B, together {:.1} B",
        per(product),
        per(twin),
        per(product + twin)
    );
    log(&line);
    out.line(&line)?;
    out.line(&format!("# load after: {}", loadavg()))?;
    drop(server);
    drop(redis);
    Ok(())
}
