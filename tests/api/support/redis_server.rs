//! Real `redis-server` processes for the tests (`docs/contributing.md`: no mocks).
//!
//! Two flavours (a six-node Redis Cluster is in `support::redis_cluster`):
//! - [`shared_url`]: one server per test binary, started on first use. Only its URL is kept
//!   (every `#[tokio::test]` has its own runtime, so connections must not outlive a test);
//!   tests keep apart by giving each its own key prefix ([`unique_prefix`]). A static is never
//!   dropped, so the server's watchdog stops it once the test process is gone. Setting
//!   `DYNAPAGE_TEST_REDIS_URL` uses that Redis instead.
//! - [`RedisServer`]: a server owned by one test, which it can stop and restart on the same
//!   port (to watch the application degrade and recover); stopped on drop.
//!
//! Both are started by `services` (the launcher the benches and the bench tool share): on
//! 127.0.0.1 on a free port, persisting nothing, ready (answering `PING`) when returned.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::services::{self, Process, Redis, RedisOptions};

/// The environment variable that points the shared flavour at an existing Redis.
pub const URL_VAR: &str = "DYNAPAGE_TEST_REDIS_URL";

/// The URL of the Redis shared by all tests of this binary.
pub fn shared_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var(URL_VAR) {
            return url;
        }
        let redis = start(&RedisOptions::default());
        let url = redis.url();
        // A static is never dropped: its watchdog ends the server with the test process.
        redis.process.keep_until_exit();
        url
    })
    .clone()
}

/// A connection of the test's own to the Redis at `url` (`redis://…`), to look at or change
/// what a server keeps there behind its back.
pub async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("a Redis connection")
}

/// A key prefix no other test (in this process or another run) uses.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "test:{}:{}:{}:",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A `redis-server` owned by one test: stop it, restart it on the same port, dropped = stopped.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    process: Option<Process>,
}

impl RedisServer {
    /// Starts a dedicated server on a free port.
    pub fn start() -> Self {
        let redis = start(&RedisOptions::default());
        Self {
            port: redis.port,
            process: Some(redis.process),
        }
    }

    pub fn url(&self) -> String {
        services::redis_url(self.port)
    }

    /// Kills the server (as a crash would) and waits until it is gone. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// Starts the server again on the same port (empty: it persists nothing).
    pub fn restart(&mut self) {
        self.stop();
        let process = spawn(self.port, &RedisOptions::default());
        if !wait_until_ready(self.port) {
            panic!("redis-server did not come back on port {}", self.port);
        }
        self.process = Some(process);
    }
}

/// [`Redis::start`], or a panic that says how to install it or where to point the tests.
pub(super) fn start(options: &RedisOptions) -> Redis {
    Redis::start(options).unwrap_or_else(|e| {
        panic!("could not start redis-server: {e} (or set {URL_VAR} to a Redis the tests may use)")
    })
}

/// [`services::spawn_redis`] on `port` (0: no plaintext port, for a server that `options`
/// makes listen only with TLS), or a panic that says why.
pub(super) fn spawn(port: u16, options: &RedisOptions) -> Process {
    services::spawn_redis(port, options).unwrap_or_else(|e| {
        panic!("could not run redis-server: {e} (or set {URL_VAR} to a Redis the tests may use)")
    })
}

/// A port free on 127.0.0.1 right now.
pub(super) fn free_port() -> u16 {
    services::free_port().unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// Polls `PING` until the server answers `+PONG` (ready) or 10 seconds pass.
pub(super) fn wait_until_ready(port: u16) -> bool {
    wait_for(|| services::redis_answers(port))
}

/// Polls `ready` every 25 ms until it says yes (true) or 10 seconds pass (false).
pub(super) fn wait_for(mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}
