//! `erase-person`: erasing one person's data under load (issue 45). `--products` products of
//! `--per-product` comments each are seeded into DynamoDB Local with two signed-in authors
//! (`seed --authors 2`: comment `i` by `seed-author-<i mod 2>`), so `seed-author-0` wrote half
//! of every product; a server (`serve --sync`, Redis index) serves them. While `--readers`
//! clients page those products' first pages in a loop, `dynapage erase-person --sub
//! seed-author-0` runs; measured: its time and receipt, the readers' pages and errors, and a
//! checksum of every other comment (an `export` before and after, the erased author's lines
//! left out), which must be equal. The erasure's steps are store round trips, so `--build
//! debug` measures the store more than the build; the header says which was used.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::backends;
use crate::context::Context;
use crate::graphql::Api;
use crate::machine::Machine;
use crate::report::{Summary, log};
use crate::server::{Server, await_indexed, dynamodb_redis_args, dynapage, strings};

/// The person erased: the seed's first author.
const PERSON: &str = "seed-author-0";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Products seeded
    #[arg(long, default_value_t = 100)]
    products: u64,
    /// Comments of each product (half of them the erased person's)
    #[arg(long, default_value_t = 200)]
    per_product: u64,
    /// Clients paging the products while the erasure runs
    #[arg(long, default_value_t = 16)]
    readers: usize,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "erase-person")]
    result_name: String,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let dynamo = backends::dynamodb_local(ctx).await?;
    let store = strings(&["--store", "dynamodb", "--dynamodb-endpoint", &dynamo.url()]);
    let skus: Vec<String> = (0..args.products)
        .map(|p| format!("ERASE_{p:03}"))
        .collect();
    log(&format!(
        "seeding {} products of {} comments by two authors",
        args.products, args.per_product
    ));
    for (i, sku) in skus.iter().enumerate() {
        let mut seed = strings(&[
            "seed",
            "--sku",
            sku,
            "--count",
            &args.per_product.to_string(),
        ]);
        // A seed of its own per product: the same `--seed` writes the same comment ids.
        seed.extend(strings(&["--authors", "2", "--seed", &(i + 1).to_string()]));
        seed.extend(store.clone());
        if i == 0 {
            seed.push("--create-tables".into());
        }
        dynapage(ctx, "erase-person-seed", &seed).await?;
    }
    let mut serve = dynamodb_redis_args(&dynamo.url(), &redis.url());
    serve.push("--sync".into());
    serve.extend(strings(&[
        "--response-cache-bytes",
        "0",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
        "--auth",
        "off",
    ]));
    let server = Server::start(ctx, "erase-person", &serve).await?;
    for sku in &skus {
        await_indexed(
            &server.api,
            sku,
            args.per_product,
            Duration::from_millis(200),
            Duration::from_secs(300),
        )
        .await?;
    }
    let before = others_checksum(ctx, &store, "before").await?;

    let stop = Arc::new(AtomicBool::new(false));
    let (pages, errors) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let readers: Vec<_> = (0..args.readers)
        .map(|r| {
            let (api, skus, stop) = (server.api.clone(), skus.clone(), stop.clone());
            let (pages, errors) = (pages.clone(), errors.clone());
            tokio::spawn(async move { read(api, skus, r, stop, pages, errors).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pages_before = pages.load(Ordering::Relaxed);
    log(&format!(
        "erasing {PERSON} while {} readers page",
        args.readers
    ));
    let started = Instant::now();
    let mut erase = strings(&["erase-person", "--sub", PERSON]);
    erase.extend(store.clone());
    let receipt = dynapage(ctx, "erase-person-run", &erase).await?;
    let seconds = started.elapsed().as_secs_f64();
    let pages_during = pages.load(Ordering::Relaxed) - pages_before;
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.await?;
    }
    let mut left = Vec::new();
    for sku in &skus {
        left.push(server.api.total_count(sku).await?);
    }
    let after = others_checksum(ctx, &store, "after").await?;

    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {} products x {} comments on DynamoDB Local + Redis (serve --sync, --response-cache-bytes 0); {PERSON} wrote {} of them; {} readers paging first pages throughout",
        args.products,
        args.per_product,
        args.products * (args.per_product / 2),
        args.readers
    ))?;
    out.line(&format!("erase-person seconds\t{seconds:.1}"))?;
    // The receipt is the JSON object the command prints first (its log lines follow).
    let receipt: String = receipt
        .lines()
        .take_while(|line| !line.starts_with('\u{1b}'))
        .map(str::trim)
        .collect();
    out.line(&format!("receipt\t{receipt}"))?;
    out.line(&format!(
        "reader pages during the erasure\t{pages_during} ({:.0}/s)",
        pages_during as f64 / seconds
    ))?;
    out.line(&format!(
        "reader errors\t{}",
        errors.load(Ordering::Relaxed)
    ))?;
    out.line(&format!("others' checksum before\t{before}"))?;
    out.line(&format!("others' checksum after\t{after}"))?;
    out.line(&format!("others unchanged\t{}", before == after))?;
    out.line(&format!(
        "products at {} comments after (the index, through the stream)\t{} of {}",
        args.per_product / 2,
        left.iter().filter(|n| **n == args.per_product / 2).count(),
        left.len()
    ))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// Pages the products' first pages one after another until `stop`, counting pages and errors.
async fn read(
    api: Api,
    skus: Vec<String>,
    reader: usize,
    stop: Arc<AtomicBool>,
    pages: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
) {
    let mut i = reader;
    while !stop.load(Ordering::Relaxed) {
        let sku = &skus[i % skus.len()];
        let query = format!(
            "{{ comments(sku: \"{sku}\", first: 20) {{ totalCount edges {{ node {{ id author body }} }} }} }}"
        );
        match api.query(&query).await {
            Ok(_) => pages.fetch_add(1, Ordering::Relaxed),
            Err(_) => errors.fetch_add(1, Ordering::Relaxed),
        };
        i += 1;
    }
}

/// SHA-256 of the export's lines of every comment not written by [`PERSON`], in order.
async fn others_checksum(ctx: &Context, store: &[String], name: &str) -> anyhow::Result<String> {
    let file = ctx.raw(&format!("erase-person-{name}.jsonl"));
    let mut export = strings(&["export", "--out", &file.display().to_string(), "--force"]);
    export.extend(store.iter().cloned());
    dynapage(ctx, &format!("erase-person-export-{name}"), &export).await?;
    let text = std::fs::read_to_string(&file)?;
    let mut digest = Sha256::new();
    let mut lines = 0;
    for line in text
        .lines()
        .filter(|l| !l.contains(&format!("\"{PERSON}\"")))
    {
        digest.update(line.as_bytes());
        digest.update(b"\n");
        lines += 1;
    }
    Ok(format!("{lines} lines, sha256 {:x}", digest.finalize()))
}
