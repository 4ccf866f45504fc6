//! The Redis page index on a private `redis-server`: what a page jump costs in Redis (the one
//! `key_at` script call an offset page makes, filtered and unfiltered, with and without a
//! cursor), what `totalCount` costs, and how many bytes of Redis memory each comment takes.
//! See BENCHMARKS.md ("Redis index") for the results and the method.
//!
//! The product is the demo product (the generator and seed of `dynapage serve`'s
//! `DAFT_PUNK_TSHIRT`, 250,000 comments), written through `PageIndex::apply` as the sync
//! worker writes it. Memory is read from Redis itself before and after: `INFO memory`'s
//! `used_memory` (what the allocator holds for data and overhead) and the sum of
//! `MEMORY USAGE <key> SAMPLES 0` (exact, per key) over the keys the product created.
//!
//! Then what versions cost (`crate::index`, "Versions"): every tenth comment gets an edit that
//! keeps its rating (so only its version record is added), and as many deletions of comments
//! the index never had are applied (so only their tombstones are added); each is measured as
//! the growth of `used_memory` divided by the count.
//!
//! `cargo test --all-targets` runs each case once as a smoke test, on a small product.
//! Needs `redis-server` on the PATH; nothing else (`DYNAPAGE_BENCH_REDIS_URL` uses a running
//! Redis instead, which must be empty: the memory figures count everything in it).

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::{Server, start_redis};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dynapage::domain::{
    ChangeEvent, IndexEntry, Listing, Order, Position, RatingSet, Sku, SortKey,
};
use dynapage::generate::CommentGenerator;
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;
use tokio::runtime::Runtime;

const SKU: &str = "DAFT_PUNK_TSHIRT";
/// The demo product's size.
const COMMENTS: usize = 250_000;
/// The product's size when the cases only run once as a test (no `--bench` argument).
const TEST_COMMENTS: usize = 5_000;
/// Same seed and newest timestamp as the demo product and `dynapage seed`.
const SEED: u64 = 1;
const NEWEST_MS: u64 = 1_767_225_600_000;
const PREFIX: &str = "bench:";

struct Fixture {
    runtime: Runtime,
    _server: Server,
    index: RedisIndex,
    sku: Sku,
    comments: usize,
    /// The sort key of the comment in the middle of the product (a cursor).
    middle: SortKey,
}

async fn redis_info(client: &redis::Client, field: &str) -> u64 {
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("a Redis connection");
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .expect("INFO memory");
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .expect("the field is in INFO memory")
}

/// `(key, MEMORY USAGE)` of every key under the bench prefix.
async fn key_usage(client: &redis::Client) -> Vec<(String, u64)> {
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("a Redis connection");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{PREFIX}*"))
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    let mut usage = Vec::new();
    for key in keys {
        let bytes: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut conn)
            .await
            .expect("MEMORY USAGE");
        usage.push((key, bytes));
    }
    usage.sort();
    usage
}

fn fixture() -> Fixture {
    let comments = if std::env::args().any(|arg| arg == "--bench") {
        COMMENTS
    } else {
        TEST_COMMENTS
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (server, url) = start_redis();
    let sku = Sku::parse(SKU).expect("a valid sku");
    let client = redis::Client::open(url.as_str()).expect("a Redis URL");
    let (index, middle) = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while client.get_multiplexed_async_connection().await.is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let index = RedisIndex::connect(RedisConfig::new(&url, PREFIX))
            .await
            .expect("a Redis index");
        let before = redis_info(&client, "used_memory").await;
        let started = Instant::now();
        let mut generated = CommentGenerator::new(sku.clone(), SEED, NEWEST_MS).take(comments);
        let mut middle = None;
        let mut written = 0;
        loop {
            let events: Vec<ChangeEvent> = generated
                .by_ref()
                .take(5_000)
                .map(|c| ChangeEvent::Upsert {
                    old: None,
                    new: IndexEntry::from(&c),
                })
                .collect();
            if events.is_empty() {
                break;
            }
            if let ChangeEvent::Upsert { new, .. } = &events[0] {
                if written + events.len() > comments / 2 && middle.is_none() {
                    middle = Some(new.key);
                }
            }
            written += events.len();
            index.apply(&events).await.expect("apply");
        }
        let after = redis_info(&client, "used_memory").await;
        let usage = key_usage(&client).await;
        let total: u64 = usage.iter().map(|(_, bytes)| bytes).sum();
        eprintln!(
            "wrote {comments} comments in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        eprintln!(
            "used_memory: {before} before, {after} after: {} bytes, {:.1} bytes per comment",
            after - before,
            (after - before) as f64 / comments as f64
        );
        for (key, bytes) in &usage {
            eprintln!("MEMORY USAGE {key}: {bytes}");
        }
        eprintln!(
            "MEMORY USAGE of the {} keys: {total} bytes, {:.1} bytes per comment",
            usage.len(),
            total as f64 / comments as f64
        );
        let edited: Vec<ChangeEvent> = CommentGenerator::new(sku.clone(), SEED, NEWEST_MS)
            .take(comments)
            .step_by(10)
            .map(|c| ChangeEvent::Upsert {
                old: None,
                new: IndexEntry {
                    version: 2,
                    ..IndexEntry::from(&c)
                },
            })
            .collect();
        let before = redis_info(&client, "used_memory").await;
        for chunk in edited.chunks(5_000) {
            index.apply(chunk).await.expect("apply");
        }
        let after = redis_info(&client, "used_memory").await;
        eprintln!(
            "versions: {} edited comments take {} bytes more: {:.1} bytes per edited comment",
            edited.len(),
            after - before,
            (after - before) as f64 / edited.len() as f64
        );
        let deleted: Vec<ChangeEvent> = CommentGenerator::new(sku.clone(), SEED + 1, NEWEST_MS)
            .take(edited.len())
            .map(|c| ChangeEvent::removal(IndexEntry::from(&c)))
            .collect();
        let before = redis_info(&client, "used_memory").await;
        for chunk in deleted.chunks(5_000) {
            index.apply(chunk).await.expect("apply");
        }
        let after = redis_info(&client, "used_memory").await;
        eprintln!(
            "tombstones: {} deletions take {} bytes more: {:.1} bytes per tombstone (kept 25 h)",
            deleted.len(),
            after - before,
            (after - before) as f64 / deleted.len() as f64
        );
        (index, middle.expect("a non-empty product"))
    });
    let count = runtime
        .block_on(index.count(&sku, RatingSet::ALL))
        .expect("count");
    assert_eq!(count, comments as u64, "every comment is in the index");
    Fixture {
        runtime,
        _server: server,
        index,
        sku,
        comments,
        middle,
    }
}

fn ratings(list: &[i64]) -> RatingSet {
    if list.is_empty() {
        RatingSet::ALL
    } else {
        RatingSet::parse(list).expect("valid ratings")
    }
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    let filters: [(&str, &[i64]); 4] = [
        ("all", &[]),
        ("[5]", &[5]),
        ("[3, 5]", &[3, 5]),
        ("[1, 2, 3, 4]", &[1, 2, 3, 4]),
    ];

    for (name, list) in filters {
        let ratings = ratings(list);
        let size = f
            .runtime
            .block_on(f.index.count(&f.sku, ratings))
            .expect("count");
        let mut group = c.benchmark_group(format!("ratings {name}"));
        for rank in [1_000, 100_000, 240_000]
            .into_iter()
            .map(|r| r * f.comments as u64 / COMMENTS as u64)
            .filter(|r| *r < size)
        {
            group.bench_with_input(BenchmarkId::new("key_at", rank), &rank, |b, &rank| {
                b.iter(|| {
                    let found = f
                        .runtime
                        .block_on(f.index.key_at(
                            &f.sku,
                            Listing::flat(ratings),
                            Order::NewestFirst,
                            None,
                            black_box(rank),
                        ))
                        .expect("key_at");
                    assert!(found.is_some());
                });
            });
        }
        // A jump from a cursor in the middle: `first: 20, after: cursor, offset: 1000`.
        group.bench_function("key_at after cursor/1000", |b| {
            b.iter(|| {
                f.runtime
                    .block_on(f.index.key_at(
                        &f.sku,
                        Listing::flat(ratings),
                        Order::NewestFirst,
                        Some(black_box(Position::flat(f.middle))),
                        1_000,
                    ))
                    .expect("key_at")
            });
        });
        group.bench_function("count", |b| {
            b.iter(|| {
                f.runtime
                    .block_on(f.index.count(&f.sku, black_box(ratings)))
                    .expect("count")
            });
        });
        group.finish();
    }
}

criterion_group!(redis_index, benches);
criterion_main!(redis_index);
