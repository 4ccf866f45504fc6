//! A private `redis-server` for the benches that talk to Redis, started by the launcher the
//! tests and the bench tool share (`tests/api/support/services.rs`), stopped when dropped;
//! `DYNAPAGE_BENCH_REDIS_URL` uses a running Redis instead.

#[allow(
    dead_code,
    reason = "one file with the tests and the bench tool; the benches start only Redis"
)]
#[path = "../../tests/api/support/services.rs"]
mod services;

/// The bench's `redis-server` (none with `DYNAPAGE_BENCH_REDIS_URL`), kept until dropped.
pub struct Server(
    #[allow(dead_code, reason = "held to keep the server running")] Option<services::Redis>,
);

/// The server and its URL.
pub fn start_redis() -> (Server, String) {
    if let Ok(url) = std::env::var("DYNAPAGE_BENCH_REDIS_URL") {
        return (Server(None), url);
    }
    let redis = services::Redis::start(&services::RedisOptions::default())
        .unwrap_or_else(|e| panic!("could not start redis-server: {e}"));
    let url = redis.url();
    (Server(Some(redis)), url)
}
