//! `author-memory`: what the authors' lists (`Viewer.comments`) cost in Redis (issue 44). A
//! product of `--comments` comments is seeded into DynamoDB Local for each number of signed-in
//! authors asked (`seed --authors N`: comment `i` by author `i mod N`; 0: none, as under
//! `--auth off`), indexed alone into an emptied redis-server with `reindex --sku`, and measured:
//! `used_memory` per comment, and `MEMORY USAGE` of the product's own keys and of the authors'
//! lists' keys (`!@ALL!<sub>` and `!@PUBLISHED!<sub>`) per comment. An author's list is a small
//! sorted set while it holds few comments (Redis keeps one of up to 128 members as a listpack),
//! so its cost depends on how many comments each author wrote. Memory does not depend on the
//! server's build, so `--build debug` will do.

use redis::aio::MultiplexedConnection;

use crate::backends;
use crate::context::Context;
use crate::machine::Machine;
use crate::redis_info::{info_number, memory_usage};
use crate::report::{Summary, log};
use crate::server::{dynapage, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Comments of the product, seeded and indexed once per number of authors
    #[arg(long, default_value_t = 100_000)]
    comments: u64,
    /// The numbers of signed-in authors to measure, comma-separated (0: comments without one)
    #[arg(long, value_delimiter = ',', default_value = "0,20000,1000,100")]
    authors: Vec<u64>,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "author-memory")]
    result_name: String,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let mut conn = backends::connect(&redis.url()).await?;
    let store = strings(&["--store", "dynamodb", "--dynamodb-endpoint", &dynamo.url()]);
    let index = strings(&["--index", "redis", "--redis-url", &redis.url()]);
    let tables = [
        strings(&["seed", "--sku", "WARMUP", "--count", "1"]),
        store.clone(),
        strings(&["--create-tables"]),
    ];
    dynapage(ctx, "author-memory-tables", &tables.concat()).await?;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {} comments, all published, seeded into DynamoDB Local and indexed alone (reindex --sku) into an emptied Redis for each number of authors",
        args.comments
    ))?;
    out.line("authors\tcomments per author\tused_memory B per comment\tproduct's keys B per comment\tauthors' lists' keys B per comment")?;
    for (run, authors) in args.authors.iter().copied().enumerate() {
        let sku = format!("AUTHORS_{run}");
        log(&format!(
            "seeding {} comments of {sku} by {authors} authors, then reindexing",
            args.comments
        ));
        let seed = [
            strings(&["seed", "--sku", &sku, "--count", &args.comments.to_string()]),
            strings(&["--authors", &authors.to_string()]),
            store.clone(),
        ];
        dynapage(ctx, "author-memory-seed", &seed.concat()).await?;
        let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
        let empty = info_number(&mut conn, "memory", "used_memory").await?;
        let reindex = [
            strings(&["reindex", "--sku", &sku]),
            store.clone(),
            index.clone(),
        ];
        dynapage(ctx, "author-memory-reindex", &reindex.concat()).await?;
        let used = info_number(&mut conn, "memory", "used_memory").await? - empty;
        let product = keys_bytes(&mut conn, &format!("dynapage:idx:{{{sku}}}:*")).await?;
        let lists = keys_bytes(&mut conn, "dynapage:idx:{!@*").await?;
        let n = args.comments as f64;
        let per_author = if authors == 0 {
            "-".to_owned()
        } else {
            format!("{:.1}", n / authors as f64)
        };
        out.line(&format!(
            "{authors}\t{per_author}\t{:.1}\t{:.1}\t{:.1}",
            used / n,
            product as f64 / n,
            lists as f64 / n
        ))?;
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// `MEMORY USAGE … SAMPLES 0` summed over the keys `SCAN MATCH pattern` finds.
async fn keys_bytes(conn: &mut MultiplexedConnection, pattern: &str) -> anyhow::Result<i64> {
    let mut cursor: u64 = 0;
    let mut total = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await?;
        total += memory_usage(conn, keys).await?;
        if next == 0 {
            return Ok(total);
        }
        cursor = next;
    }
}
