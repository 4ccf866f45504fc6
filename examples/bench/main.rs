//! `bench`: every load benchmark of BENCHMARKS.md, one subcommand each, and the load generators
//! they drive. Run it as `cargo bench-tool <benchmark> [options]` (an alias in
//! `.cargo/config.toml` for `cargo run --release --example bench --`); `bench/README.md` lists
//! the benchmarks, what each measures, how long it takes and which table it makes.
//!
//! The tool owns the orchestration: it builds the dynapage binary, starts DynamoDB Local,
//! redis-server and the server on free loopback ports, runs the external load generator (wrk)
//! or its own (`raw-query`, `live-load`, the writers of `sync-lag` and `lambda-sync`), reads
//! `/proc` and Redis's `INFO`, and writes CSV and a text summary (machine, commit, build) under
//! `bench/results/`. It stops every process it started when it ends, fails or is interrupted.
//! It knows dynapage only through its command line, its HTTP API and the library's public
//! types; the criterion benches in `benches/` stay where they are (`criterion` runs them).
//!
//! Shared pieces live in one module each (`processes`, `backends`, `server`, `wrk`, `graphql`,
//! `proc_stat`, `redis_info`, `machine`, `report`, `stats`), so a new benchmark is a module in
//! `benchmarks/` that composes them. redis-server and DynamoDB Local are started by `services`,
//! the one launcher the integration tests and the criterion benches include too.

mod backends;
mod benchmarks;
mod context;
mod generators;
mod graphql;
mod machine;
mod proc_stat;
mod processes;
mod redis_info;
mod report;
mod server;
#[allow(
    dead_code,
    reason = "shared with the tests, which use what the tool does not (servers kept until exit)"
)]
#[path = "../../tests/api/support/services.rs"]
mod services;
mod stats;
mod wrk;

use clap::{Parser, Subcommand};

use crate::context::{Context, GlobalArgs};

/// The server's allocator, so the load generators run with what the server runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// dynapage's benchmarks: each starts what it needs on 127.0.0.1, measures, writes
/// bench/results/ and stops everything it started (bench/README.md).
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Pages under wrk on the embedded backends and on DynamoDB Local + Redis, beside the raw
    /// backends' rates; page latency against offset with the index and the naive walk (~26 min)
    Load(benchmarks::load::Args),
    /// A page of 20 alone and with totalCount, startOffset and pageCursors, at offset 0 and
    /// 10^6: latency, pages/s, CPU per page of each process, Redis commands per page (~30 min)
    PageNumbers(benchmarks::page_numbers::Args),
    /// A page of 20 in each orderBy against NEWEST, at offset 0 and 10^6: latency, pages/s,
    /// CPU per page of each process, Redis commands per page (~40 min)
    Orders(benchmarks::orders::Args),
    /// 1,000 WebSocket subscribers on one product while comments are added: delivery lag, server
    /// CPU and RSS, slow clients (~4 min)
    Live(benchmarks::live::Args),
    /// 64 connections of mixed queries and writes on DynamoDB Local + Redis: errors (must be 0)
    /// and the server's RSS (must stay within 10%) (~2 min)
    Soak(benchmarks::soak::Args),
    /// Redis CPU and commands per page of the Redis index (issue #23's cases: pager pages, bare
    /// jumps, filters), raw ZRANK/ZRANGE on a set of the same size, memory per comment (~3 min)
    IndexCpu(benchmarks::index_cpu::Args),
    /// Verified-only pages against the same pages of the whole list (half the comments
    /// verified): Redis CPU per page, pages/s one at a time, the index's bytes per comment
    /// (~10 min at 1.1 million comments)
    Verified(benchmarks::verified::Args),
    /// A 48-product category page and a product page through Hive Gateway, against the
    /// gateway's fetches sent to dynapage and to the products subgraph alone: requests/s, p50,
    /// p99 (~4 min)
    Federation(benchmarks::federation::Args),
    /// dynapage beside PostGraphile 5 on PostgreSQL, both uncached, on the same comments of one
    /// product: a page of 20 at offsets 0, 10^5 and 10^6 and with totalCount: requests/s, p50,
    /// p99, server CPU per request (~6 min, and loading PostgreSQL the first time)
    Postgraphile(benchmarks::postgraphile::Args),
    /// The storefront page (`/demo`) against the same page asked of the API: server CPU per
    /// request, computed and from the response cache (~3 min)
    DemoCost(benchmarks::demo_cost::Args),
    /// One product of 10 million comments in the Redis index: its memory, and the read script's
    /// Redis CPU, time and commands per call at offsets 0, 10^6 and the far end (~7 min)
    IndexBigProduct(benchmarks::index_big_product::Args),
    /// The Redis index's read script in instructions per call under callgrind, between git
    /// revisions (deterministic on a loaded machine; ~1 min per revision)
    IndexLuaCallgrind(benchmarks::index_lua_callgrind::Args),
    /// DynamoDB read units, store queries, items and Redis CPU per page of each kind, on
    /// DynamoDB Local + Redis (~2 min)
    PageCost(benchmarks::page_cost::Args),
    /// A moderation queue of 100,000 hidden comments: Redis memory per queued comment, and
    /// read units, store queries, items, index calls and Redis CPU per queue page at offsets 0,
    /// 10,000 and 90,000 and the last page, on DynamoDB Local + Redis (~4 min)
    QueueCost(benchmarks::queue_cost::Args),
    /// Redis memory of the authors' lists (viewer.comments) per comment, by how many comments
    /// each author wrote (~6 min)
    AuthorMemory(benchmarks::author_memory::Args),
    /// Erasing a person with 10,000 comments across 100 products while 16 readers page them:
    /// time, receipt, readers' errors, and that every other comment is unchanged (~5 min)
    ErasePerson(benchmarks::erase_person::Args),
    /// Redis memory of comments before helpful votes, with one, and with a second voter's
    /// (~3 min)
    VoteMemory(benchmarks::vote_memory::Args),
    /// A category page's stars three ways (ratingSummaries, aliased lookups, aliased
    /// totalCounts): cost, Redis commands and read events per request, wrk (~5 min)
    RatingSummaries(benchmarks::rating_summaries::Args),
    /// The response cache: a popular page without it, with it, as 304s and through Varnish;
    /// on DynamoDB Local + Redis also the time from a write to a fresh page (~1 min embedded,
    /// ~7 min on DynamoDB)
    ResponseCache(benchmarks::response_cache::Args),
    /// Server CPU of a response-cache hit against computing the page, and per KiB sent
    /// (~2 min)
    HitCost(benchmarks::hit_cost::Args),
    /// The server's memory per idle WebSocket, after connection_init and with one
    /// subscription (~1 min)
    IdleSockets(benchmarks::idle_sockets::Args),
    /// A page with the rate limits off, kept in-process and kept in Redis (~3 min)
    RateLimit(benchmarks::rate_limit::Args),
    /// A read with --auth off against --auth jwt with a token on every request (~3 min)
    Auth(benchmarks::auth::Args),
    /// How far the Redis index trails the table while `dynapage sync` follows the stream, and
    /// how fast a fresh `sync` catches up (~3 min)
    SyncLag(benchmarks::sync_lag::Args),
    /// Records per second `dynapage lambda-sync` applies, fed by a Lambda Runtime API on
    /// loopback (~1 min)
    LambdaSync(benchmarks::lambda_sync::Args),
    /// Two builds of the server compared (CPU per request in alternating rounds, instructions
    /// under callgrind, one build's CPU for git bisect), two values of a setting in the
    /// WebSocket soak, and the paired statistics of the rounds
    Ab(benchmarks::ab::Args),
    /// A criterion bench of benches/ (engine, redis_index, auth, rate_limit, field_errors), its
    /// output saved with the machine and commit
    Criterion(benchmarks::criterion::Args),
    /// Redraws bench/results/latency-vs-offset.png from offsets.csv (gnuplot)
    Plot(benchmarks::plot::Args),
    /// Prints the Markdown tables of `load` from its CSV files
    Summarize(benchmarks::load_tables::Args),
    /// Load generator (used by `load`): the raw DynamoDB Query a page costs, without dynapage
    RawQuery(generators::raw_query::Args),
    /// Load generator (used by `live`): WebSocket subscribers and writes through the API
    LiveLoad(generators::live_load::Args),
    /// Load generator (used by `response-cache`): timed writes, and when each shows through a
    /// CDN and in the index
    WriteToFresh(generators::write_to_fresh::Args),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = tokio::select! {
        outcome = run(cli) => outcome,
        signal = processes::interrupted() => Err(anyhow::anyhow!("interrupted by {signal}")),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let ctx = Context::new(&cli.global)?;
    match cli.command {
        Command::Load(args) => benchmarks::load::run(&ctx, args).await,
        Command::PageNumbers(args) => benchmarks::page_numbers::run(&ctx, args).await,
        Command::Orders(args) => benchmarks::orders::run(&ctx, args).await,
        Command::Live(args) => benchmarks::live::run(&ctx, args).await,
        Command::Soak(args) => benchmarks::soak::run(&ctx, args).await,
        Command::IndexCpu(args) => benchmarks::index_cpu::run(&ctx, args).await,
        Command::Verified(args) => benchmarks::verified::run(&ctx, args).await,
        Command::Federation(args) => benchmarks::federation::run(&ctx, args).await,
        Command::Postgraphile(args) => benchmarks::postgraphile::run(&ctx, args).await,
        Command::DemoCost(args) => benchmarks::demo_cost::run(&ctx, args).await,
        Command::IndexBigProduct(args) => benchmarks::index_big_product::run(&ctx, args).await,
        Command::IndexLuaCallgrind(args) => benchmarks::index_lua_callgrind::run(&ctx, args).await,
        Command::PageCost(args) => benchmarks::page_cost::run(&ctx, args).await,
        Command::QueueCost(args) => benchmarks::queue_cost::run(&ctx, args).await,
        Command::AuthorMemory(args) => benchmarks::author_memory::run(&ctx, args).await,
        Command::ErasePerson(args) => benchmarks::erase_person::run(&ctx, args).await,
        Command::VoteMemory(args) => benchmarks::vote_memory::run(&ctx, args).await,
        Command::RatingSummaries(args) => benchmarks::rating_summaries::run(&ctx, args).await,
        Command::ResponseCache(args) => benchmarks::response_cache::run(&ctx, args).await,
        Command::HitCost(args) => benchmarks::hit_cost::run(&ctx, args).await,
        Command::IdleSockets(args) => benchmarks::idle_sockets::run(&ctx, args).await,
        Command::RateLimit(args) => benchmarks::rate_limit::run(&ctx, args).await,
        Command::Auth(args) => benchmarks::auth::run(&ctx, args).await,
        Command::SyncLag(args) => benchmarks::sync_lag::run(&ctx, args).await,
        Command::LambdaSync(args) => benchmarks::lambda_sync::run(&ctx, args).await,
        Command::Ab(args) => benchmarks::ab::run(&ctx, args).await,
        Command::Criterion(args) => benchmarks::criterion::run(&ctx, args).await,
        Command::Plot(args) => benchmarks::plot::run(&ctx, args),
        Command::Summarize(args) => benchmarks::load_tables::run(&ctx, args),
        Command::RawQuery(args) => generators::raw_query::run(args).await,
        Command::LiveLoad(args) => generators::live_load::run(args).await,
        Command::WriteToFresh(args) => generators::write_to_fresh::run(args).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
