//! A real six-node Redis Cluster for the tests (`docs/contributing.md`: no mocks): three masters
//! and three replicas, each a `redis-server --cluster-enabled yes` on a free loopback port below
//! 55535 (its cluster bus listens on the port + 10000), joined by `redis-cli --cluster create
//! --cluster-replicas 1`. A short `cluster-node-timeout` (1 s) makes a failover take about two
//! seconds.
//!
//! Two flavours, like `redis_server`:
//! - [`shared_cluster_urls`]: one cluster per test binary, started on first use and never
//!   disturbed; tests keep apart by their own key prefixes. A watchdog per node ends it once the
//!   test process is gone.
//! - [`RedisCluster::start`]: a cluster owned by one test, which may kill its nodes; killed on
//!   drop. [`RedisCluster::start_tls`] makes one whose nodes speak only TLS, to clients, to
//!   each other on the cluster bus and to their replicas, with a CA made for it.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use super::redis_server::{spawn, wait_for, wait_until_ready};
use super::redis_tls::TlsFiles;
use super::services::{Process, RedisOptions, redis_url};

/// The `--redis-url` value (six comma-separated URLs) of the cluster shared by all tests of
/// this binary.
pub fn shared_cluster_urls() -> String {
    static URLS: OnceLock<String> = OnceLock::new();
    URLS.get_or_init(|| {
        let cluster = RedisCluster::start();
        let urls = cluster.urls();
        // A static is never dropped: the nodes' watchdogs end them when the test process
        // exits, and one more removes their directory then.
        let cleanup = format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; rm -rf '{}'",
            std::process::id(),
            cluster.dir.display()
        );
        let mut watchdog = Command::new("sh")
            .args(["-c", &cleanup])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh runs");
        std::thread::spawn(move || watchdog.wait());
        std::mem::forget(cluster);
        urls
    })
    .clone()
}

/// A six-node Redis Cluster owned by one test.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<(u16, Option<Process>)>,
    dir: PathBuf,
    /// The CA and certificate of a cluster that speaks only TLS.
    tls: Option<TlsFiles>,
}

impl RedisCluster {
    /// Starts six nodes and creates the cluster; every slot is served and every node reports
    /// `cluster_state:ok` when this returns.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// [`Self::start`] with nodes that listen only with TLS (`--port 0`), on the cluster bus
    /// (`--tls-cluster`) and to their replicas (`--tls-replication`) too, presenting a
    /// certificate for 127.0.0.1 from a CA made for this cluster ([`Self::ca_file`]). Their
    /// URLs are `rediss://`.
    pub fn start_tls() -> Self {
        Self::start_with(Some(TlsFiles::new()))
    }

    fn start_with(tls: Option<TlsFiles>) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "dynapage-redis-cluster-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
        let ports = free_cluster_ports(6);
        let nodes: Vec<(u16, Option<Process>)> = ports
            .iter()
            .map(|&port| {
                let mut args: Vec<String> = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &format!("nodes-{port}.conf"),
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-replica-validity-factor",
                    "0",
                    "--dir",
                    &dir.display().to_string(),
                ]
                .map(str::to_owned)
                .to_vec();
                // A TLS node has no plaintext port; its cluster bus is its TLS port + 10000.
                let plain_port = match &tls {
                    None => port,
                    Some(files) => {
                        args.extend(["--tls-port", &port.to_string()].map(str::to_owned));
                        args.extend(
                            ["--tls-cluster", "yes", "--tls-replication", "yes"].map(str::to_owned),
                        );
                        args.extend(files.server_args());
                        0
                    }
                };
                (
                    port,
                    Some(spawn(plain_port, &RedisOptions::with_args(&args))),
                )
            })
            .collect();
        let cluster = Self { nodes, dir, tls };
        for &(port, _) in &cluster.nodes {
            let ready = match cluster.tls {
                None => wait_until_ready(port),
                Some(_) => wait_for(|| cluster.cli(port, &["PING"]).trim() == "PONG"),
            };
            assert!(ready, "cluster node {port} did not start");
        }
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .args(cluster.tls_cli_args())
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs (it comes with redis-server)");
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        cluster.wait_until_healthy(Duration::from_secs(30));
        // All slots are served before every node has learnt, by gossip, which nodes replicate
        // which master; tests that pick a replica (or kill a master) need that view complete.
        let deadline = Instant::now() + Duration::from_secs(30);
        while cluster.replicas().len() < ports.len() / 2 {
            assert!(
                Instant::now() < deadline,
                "the replicas did not attach within 30 s: {:?}",
                cluster.replicas()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    /// The six URLs, comma-separated: the `--redis-url` of a Cluster (`rediss://` for a TLS
    /// one).
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(|(port, _)| match self.tls {
                None => redis_url(*port),
                Some(_) => format!("rediss://127.0.0.1:{port}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The PEM file of the CA that signed a TLS cluster's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.tls
            .as_ref()
            .map(TlsFiles::ca_file)
            .expect("a cluster started with start_tls")
    }

    /// `redis-cli -p PORT ARGS...`'s output, over TLS to a TLS cluster.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let mut all: Vec<String> = self.tls_cli_args();
        all.extend(args.iter().map(|a| (*a).to_owned()));
        cli(port, &all.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn tls_cli_args(&self) -> Vec<String> {
        self.tls
            .as_ref()
            .map(TlsFiles::cli_args)
            .unwrap_or_default()
    }

    /// The port of the master that serves `key`'s slot, from `CLUSTER NODES` of a live node
    /// (a master that node already considers failed does not count).
    pub fn master_of(&self, key: &str) -> u16 {
        self.serving_master(key)
            .unwrap_or_else(|| panic!("no live master serves the slot of {key}"))
    }

    /// [`Self::master_of`], or `None` while no master serves the slot (between a master's
    /// failure and its replica's promotion).
    pub fn serving_master(&self, key: &str) -> Option<u16> {
        let port = self.live_port();
        let slot: u16 = self
            .cli(port, &["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .expect("CLUSTER KEYSLOT answers a number");
        for line in self.cli(port, &["CLUSTER", "NODES"]).lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let serves = fields[8..].iter().any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if lo <= slot && slot <= hi)
            });
            if serves {
                let address = fields[1].split('@').next().unwrap_or_default();
                return Some(
                    address
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .expect("a node address with a port"),
                );
            }
        }
        None
    }

    /// Kills the node on `port` (SIGKILL, as a crash) and waits until it is gone; then holds
    /// the port for the rest of the test process, closing every connection made to it, as a
    /// dead host's refusals would. Why: a freed port can be taken by another test's
    /// `redis-server` beside the parallel suite (ephemeral ports share the cluster's range), and
    /// the cluster client, still knowing the dead node there, would read that empty server's
    /// zeros as this index's counts: the likely cause of a silent `totalCount` of 0 in the
    /// failover test in two full runs, which passes alone.
    pub fn kill(&mut self, port: u16) {
        for (p, node) in &mut self.nodes {
            if *p == port {
                if let Some(mut process) = node.take() {
                    process.kill();
                    // Its cluster bus port too (port + 10000), which the others keep calling.
                    hold_port(port);
                    hold_port(port + 10_000);
                }
            }
        }
    }

    /// Whether every live node reports `cluster_state:ok` with all 16384 slots served (after a
    /// kill: a replica has been promoted and the others agree).
    pub fn is_healthy(&self) -> bool {
        self.live_ports().all(|port| {
            let info = self.cli(port, &["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
        })
    }

    /// Waits until [`Self::is_healthy`].
    pub fn wait_until_healthy(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if self.is_healthy() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster was not healthy within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The ports of the nodes this test has not killed.
    pub fn live(&self) -> Vec<u16> {
        self.live_ports().collect()
    }

    /// `(replica port, port of its master)` of every live replica, from `CLUSTER NODES`.
    pub fn replicas(&self) -> Vec<(u16, u16)> {
        let nodes = self.cli(self.live_port(), &["CLUSTER", "NODES"]);
        let port_of = |address: &str| -> u16 {
            address
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .expect("a node address with a port")
        };
        let id_port: Vec<(String, u16)> = nodes
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields.len() > 2).then(|| (fields[0].to_owned(), port_of(fields[1])))
            })
            .collect();
        nodes
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                if fields.len() < 4 || !fields[2].contains("slave") || fields[2].contains("fail") {
                    return None;
                }
                let master = id_port.iter().find(|(id, _)| id == fields[3])?.1;
                Some((port_of(fields[1]), master))
            })
            .collect()
    }

    fn live_ports(&self) -> impl Iterator<Item = u16> + '_ {
        self.nodes
            .iter()
            .filter(|(_, node)| node.is_some())
            .map(|(port, _)| *port)
    }

    fn live_port(&self) -> u16 {
        self.live_ports().next().expect("a live cluster node")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for (_, node) in &mut self.nodes {
            if let Some(mut process) = node.take() {
                process.kill();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT_DIR: AtomicU16 = AtomicU16::new(0);

/// `redis-cli -p PORT ARGS...`'s output (plaintext; [`RedisCluster::cli`] speaks TLS to a TLS
/// cluster).
pub fn cli(port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `count` ports below 55535 whose port + 10000 (the cluster bus) is free too. The OS picks
/// ephemeral ports from a range that reaches past 55535, so candidates are drawn from
/// 20000..45000 instead, starting at a place that depends on this process.
fn free_cluster_ports(count: usize) -> Vec<u16> {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let start = 20_000 + (std::process::id() % 2_500) as u16 * 10;
    let mut ports = Vec::new();
    for _ in 0..25_000 {
        let port = 20_000 + (start - 20_000 + NEXT.fetch_add(1, Ordering::Relaxed)) % 25_000;
        let free = |p: u16| TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, p))).is_ok();
        if free(port) && free(port + 10_000) {
            ports.push(port);
            if ports.len() == count {
                return ports;
            }
        }
    }
    panic!("no {count} free port pairs (port and port + 10000) below 55535");
}

/// Binds `port` and closes every connection made to it, on a thread that lasts as long as the
/// test process (see [`RedisCluster::kill`]). A port taken meanwhile is left to its taker.
fn hold_port(port: u16) {
    let Ok(listener) = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) else {
        return;
    };
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            drop(connection);
        }
    });
}
