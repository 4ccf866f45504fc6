//! A private `redis-server` for the benches that talk to Redis, on a free port, killed when
//! dropped; `DYNAPAGE_BENCH_REDIS_URL` uses a running Redis instead.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

/// A `redis-server` of this bench, killed on drop.
pub struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The server and its URL.
pub fn start_redis() -> (Server, String) {
    if let Ok(url) = std::env::var("DYNAPAGE_BENCH_REDIS_URL") {
        return (Server(None), url);
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--loglevel", "warning"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server runs (apt-get install redis-server)");
    (Server(Some(child)), format!("redis://127.0.0.1:{port}"))
}
