//! `queue-cost`: what a moderation queue costs (issue 44): a product with `--hidden` hidden
//! comments (100,000 by default) and a tenth as many published, on DynamoDB Local and a
//! redis-server of its own. Measured: the Redis memory of the hidden queue's keys (the shop's
//! and the product's, `MEMORY USAGE`) per queued comment, beside the product's own keys per
//! published comment; then the queue's pages as a moderator asks them (first page, offset
//! 10,000, offset 90 % in, the last page) with their read units, store queries, items, index
//! calls and Redis CPU per page, and the product's own pages for comparison. Neither memory nor
//! the counts depend on the server's build, so `--build debug` will do.

use redis::aio::MultiplexedConnection;

use super::SKU;
use super::page_cost::{Case, case_line};
use crate::backends;
use crate::context::Context;
use crate::graphql::cost;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::redis_info::{list_key_suffixes, memory_usage};
use crate::report::{Summary, log};
use crate::server::{Launch, Server, dynapage, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hidden comments of the product: the queue's length
    #[arg(long, default_value_t = 100_000)]
    hidden: u64,
    /// Sequential requests per case
    #[arg(long, default_value_t = 300)]
    requests: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "queue-cost")]
    result_name: String,
}

impl Args {
    /// How many comments to seed so that exactly `hidden` are hidden: `seed --hidden-percent
    /// 90` hides the first 90 of every hundred.
    fn seeded(&self) -> u64 {
        let (hundreds, rest) = (self.hidden / 90, self.hidden % 90);
        hundreds * 100 + rest
    }
}

const PAGE: &str = "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage }";

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let (server, token) = seed_and_serve(ctx, &args, &dynamo.url(), &redis.url()).await?;
    let mut conn = backends::connect(&redis.url()).await?;
    let published = args.seeded() - args.hidden;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {SKU}: {} comments seeded, {} hidden (in the queues !HIDDEN and !HIDDEN!{SKU}), {published} published; {} sequential requests per case; load before: {}",
        args.seeded(),
        args.hidden,
        args.requests,
        loadavg()
    ))?;
    let queue = lists_bytes(&mut conn, &["!HIDDEN".to_owned(), format!("!HIDDEN!{SKU}")]).await?;
    let product = lists_bytes(&mut conn, &[SKU.to_owned()]).await?;
    out.line(&format!(
        "# MEMORY USAGE (SAMPLES 0) of the two hidden queues' keys: {queue} B, {:.1} B per queued comment (in both queues); of the product's own keys: {product} B, {:.1} B per published comment",
        queue as f64 / args.hidden as f64,
        product as f64 / published as f64,
    ))?;
    let moderator = server.api.with_bearer(&token);
    let deep = args.hidden * 9 / 10;
    let cases = [
        ("first page", "first: 20".to_owned()),
        ("offset 10,000", "first: 20, offset: 10000".to_owned()),
        ("offset 90 %", format!("first: 20, offset: {deep}")),
        ("last page", "last: 20".to_owned()),
    ];
    out.line("case\tread units per page\tstore queries per page\titems per page\tRedis CPU us per page\tpages/s (not run)\tindex calls per page (cost extension)")?;
    let mut queries = Vec::new();
    for (name, connection) in &cases {
        let product = format!("moderationQueue(queue: HIDDEN, sku: \"{SKU}\", {connection})");
        queries.push((format!("queue, {name}"), product));
        let shop = format!("moderationQueue(queue: HIDDEN, {connection})");
        queries.push((format!("shop's queue, {name}"), shop));
    }
    // The product's own list at the same depths, where it has them (its published comments).
    for (name, connection) in &cases[..2] {
        let list = format!("comments(sku: \"{SKU}\", orderBy: OLDEST, {connection})");
        queries.push((format!("product, {name}"), list));
    }
    for (label, field) in &queries {
        let query = format!("{{ {field} {{ {PAGE} }} }}");
        let case = Case {
            name: label,
            server: "queue-cost",
            requests: args.requests,
            wrk_seconds: 0,
        };
        let line = case_line(ctx, &moderator, &mut conn, &case, &query).await?;
        let (answer, _) = moderator.query(&query).await?;
        let [_, _, index_calls] = cost(&answer)?;
        out.line(&format!("{line}\t{index_calls}"))?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Seeds the product into DynamoDB Local (the tables first), indexes it with `reindex`, makes a
/// moderator's token with `dynapage token`, and starts the server that accepts it and logs
/// every query's read units. Returns the server and the token.
async fn seed_and_serve(
    ctx: &Context,
    args: &Args,
    dynamo_url: &str,
    redis_url: &str,
) -> anyhow::Result<(Server, String)> {
    let store = strings(&["--store", "dynamodb", "--dynamodb-endpoint", dynamo_url]);
    let index = strings(&["--index", "redis", "--redis-url", redis_url]);
    let seed = |count: u64| {
        let mut seed = strings(&["seed", "--sku", SKU, "--count", &count.to_string()]);
        seed.extend(store.clone());
        seed
    };
    let tables = [seed(1), strings(&["--create-tables"])];
    dynapage(ctx, "queue-cost-tables", &tables.concat()).await?;
    log(&format!(
        "seeding {} comments (90 % hidden) into DynamoDB Local, then reindexing",
        args.seeded()
    ));
    let seeding = [seed(args.seeded()), strings(&["--hidden-percent", "90"])];
    dynapage(ctx, "queue-cost-seed", &seeding.concat()).await?;
    let reindex = [strings(&["reindex"]), store.clone(), index.clone()];
    dynapage(ctx, "queue-cost-reindex", &reindex.concat()).await?;
    let key_dir = ctx.raw("queue-cost-keys");
    let key_dir = key_dir.to_string_lossy().into_owned();
    let token = dynapage(
        ctx,
        "queue-cost-token",
        &strings(&[
            "token",
            "--sub",
            "bench-moderator",
            "--role",
            "moderator",
            "--key-dir",
            &key_dir,
        ]),
    )
    .await?;
    let token = token
        .lines()
        .find(|line| line.starts_with("ey"))
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("`dynapage token` printed no token"))?;
    let jwks = format!("file:{key_dir}/jwks.json");
    let mut serve = [store, index].concat();
    serve.extend(strings(&[
        "--auth",
        "jwt",
        "--auth-jwks-url",
        &jwks,
        "--auth-issuer",
        "dynapage-local",
        "--auth-audience",
        "dynapage",
        "--cursor-secret",
        "bench-queue-cost-secret-0123456789abcdef",
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
    let server = Server::start_with(ctx, "queue-cost", &serve, &launch).await?;
    Ok((server, token))
}

/// `MEMORY USAGE … SAMPLES 0` of every key of the lists the index keeps under `names`: their
/// sets by rating (by time, voted, by count), versions and version.
async fn lists_bytes(conn: &mut MultiplexedConnection, names: &[String]) -> anyhow::Result<i64> {
    let keys = names.iter().flat_map(|list| {
        list_key_suffixes()
            .into_iter()
            .map(move |suffix| format!("dynapage:idx:{{{list}}}:{suffix}"))
    });
    memory_usage(conn, keys.collect::<Vec<_>>()).await
}
