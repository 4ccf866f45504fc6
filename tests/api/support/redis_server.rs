//! Real `redis-server` processes for the tests (DESIGN §8: no mocks).
//!
//! Two flavours (a six-node Redis Cluster is in `redis_cluster`):
//! - [`shared_url`]: one server per test binary, started on first use. Only its URL is kept
//!   (every `#[tokio::test]` has its own runtime, so connections must not outlive a test);
//!   tests keep apart by giving each its own key prefix ([`unique_prefix`]). A static is never
//!   dropped, so a watchdog shell kills the server once the test process is gone. Setting
//!   `DYNAPAGE_TEST_REDIS_URL` uses that Redis instead.
//! - [`RedisServer`]: a server owned by one test, which it can stop and restart on the same
//!   port (to watch the application degrade and recover); killed on drop.
//!
//! Both listen on 127.0.0.1 on a free port, persist nothing, and are ready (answer `PING`)
//! when returned.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that points the shared flavour at an existing Redis.
pub const URL_VAR: &str = "DYNAPAGE_TEST_REDIS_URL";

/// The URL of the Redis shared by all tests of this binary.
pub fn shared_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var(URL_VAR) {
            return url;
        }
        // The child handle is dropped on purpose: the watchdog ends the server.
        let (port, _child) = start_on_free_port();
        url_for(port)
    })
    .clone()
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

/// A `redis-server` owned by one test: stop it, restart it on the same port, dropped = killed.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a dedicated server on a free port.
    pub fn start() -> Self {
        let (port, child) = start_on_free_port();
        Self {
            port,
            child: Some(child),
        }
    }

    pub fn url(&self) -> String {
        url_for(self.port)
    }

    /// Kills the server (as a crash would) and waits until it is gone. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: it persists nothing).
    pub fn restart(&mut self) {
        self.stop();
        let child = spawn(self.port, &[], None);
        if !wait_until_ready(self.port) {
            panic!("redis-server did not come back on port {}", self.port);
        }
        self.child = Some(child);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(super) fn url_for(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// Starts a server on a port the OS just said was free; tries again if another process took
/// the port in between.
fn start_on_free_port() -> (u16, Child) {
    for _ in 0..5 {
        let port = free_port();
        let mut child = spawn(port, &[], None);
        if wait_until_ready(port) {
            return (port, child);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("could not start redis-server on a free port (five attempts)");
}

pub(super) fn free_port() -> u16 {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// Spawns `redis-server` on `port` (0: no plaintext port, for a server that `extra` makes
/// listen only with TLS) with `extra` arguments, and a watchdog that kills it when this test
/// process has exited (and then removes `cleanup`, a directory, if given).
pub(super) fn spawn(port: u16, extra: &[&str], cleanup: Option<&Path>) -> Child {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--loglevel", "warning"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "could not run `redis-server` ({e}). Install it (`apt-get install redis-server`) \
                 or set {URL_VAR} to a Redis the tests may use"
            )
        });
    let cleanup = cleanup
        .map(|dir| format!("; rm -rf '{}'", dir.display()))
        .unwrap_or_default();
    let watchdog = format!(
        "while kill -0 {parent} 2>/dev/null && kill -0 {server} 2>/dev/null; do sleep 0.5; done; \
         kill -9 {server} 2>/dev/null{cleanup}",
        parent = std::process::id(),
        server = child.id(),
    );
    let mut watchdog = Command::new("sh")
        .args(["-c", &watchdog])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start the redis-server watchdog: {e}"));
    // Reaped by a thread, so a watchdog that ends early (its server stopped) leaves no zombie.
    std::thread::spawn(move || watchdog.wait());
    child
}

/// Polls `PING` until the server answers `+PONG` (ready) or 10 seconds pass.
pub(super) fn wait_until_ready(port: u16) -> bool {
    wait_for(|| ping(port))
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

fn ping(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
