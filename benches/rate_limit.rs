//! What the rate-limit check adds to a request (`dynapage::ratelimit`): the client key, then
//! one check, in this process and through Redis (`take.lua`, one `EVALSHA` on a private
//! `redis-server`, as the server runs it with `--index redis`).
//!
//! * `memory/one client`: the same client every time (its buckets are never full, so every
//!   check writes state).
//! * `memory/10000 clients`: round-robin over 10,000 clients (a map of that size).
//! * `redis/one at a time`: one check awaited after the other: the latency a request waits.
//! * `redis/64 in flight`: 64 checks at once on the one multiplexed connection, as concurrent
//!   requests share it: the time per check when Redis is kept busy.
//!
//! The budgets are large enough never to refuse, so every check spends (the common case). The
//! Redis cases include a `block_on` of a current-thread runtime per iteration.
//! `cargo test --all-targets` runs each case once as a smoke test. Needs `redis-server` on the
//! PATH (`DYNAPAGE_BENCH_REDIS_URL` uses a running Redis instead). See BENCHMARKS.md.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::start_redis;

use criterion::{Criterion, criterion_group, criterion_main};
use dynapage::index::PageIndex as _;
use dynapage::index::redis::RedisIndex;
use dynapage::ratelimit::{Charge, ClientKey, MemoryLimiter, RateLimits, RedisLimiter};
use dynapage::redis::RedisConfig;

/// Never refuses: 4 billion points a second, 30 billion writes an hour.
fn limits() -> RateLimits {
    RateLimits::new(u32::MAX, u32::MAX, u32::MAX)
}

/// A page of 20 with a few fields, and no writes.
const CHARGE: Charge = Charge {
    cost: 221,
    writes: 0,
};

fn client(i: u32) -> ClientKey {
    ClientKey::new(None, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)))
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate limit check");

    let memory = MemoryLimiter::new(limits());
    group.bench_function("memory/one client", |b| {
        b.iter(|| black_box(memory.check(&client(1), CHARGE)))
    });
    let mut next = 0;
    group.bench_function("memory/10000 clients", |b| {
        b.iter(|| {
            next = (next + 1) % 10_000;
            black_box(memory.check(&client(next), CHARGE))
        })
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (_server, url) = start_redis();
    let limiter = runtime.block_on(async {
        let index = RedisIndex::connect(RedisConfig::new(&url, "bench:"))
            .await
            .expect("the Redis index builds");
        let deadline = Instant::now() + Duration::from_secs(10);
        while index.ping().await.is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        RedisLimiter::new(index.redis(), limits())
    });
    group.bench_function("redis/one at a time", |b| {
        b.iter(|| black_box(runtime.block_on(limiter.check(&client(1), CHARGE))))
    });
    group.throughput(criterion::Throughput::Elements(64));
    let clients: Vec<ClientKey> = (0..64).map(client).collect();
    group.bench_function("redis/64 in flight", |b| {
        b.iter(|| {
            let checks = clients.iter().map(|c| limiter.check(c, CHARGE));
            black_box(runtime.block_on(futures::future::join_all(checks)))
        })
    });
    group.finish();
}

criterion_group!(rate_limit, benches);
criterion_main!(rate_limit);
