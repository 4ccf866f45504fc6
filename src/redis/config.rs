//! Where Redis is and how long to wait for it: the settings every Redis user shares, built from
//! `--redis-url`, `--redis-prefix`, `--redis-cluster` and `--redis-ca-file` (`crate::config`).
//! Nothing here belongs to one user: the page index's tombstone lifetime, say, is the index's
//! (`RedisIndex::with_tombstone_ttl`).

use std::time::Duration;

use super::tls::TrustedCa;

/// Where Redis lives and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis[s]://[user:password@]host:port[/db]` URLs: one for a single node, the seed nodes
    /// for a Cluster. `rediss://` is TLS, checked against the system roots or [`Self::ca`].
    pub urls: Vec<String>,
    /// The CA a `rediss://` server's certificate must chain to, instead of the system roots
    /// (a private CA, or a self-signed one in tests).
    pub ca: Option<TrustedCa>,
    /// Prepended to every key, so several deployments or test runs can share one Redis.
    pub prefix: String,
    /// Talk to a Redis Cluster (through any of `urls`) rather than a single node.
    pub cluster: bool,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// How long one request (command, pipeline or script) may wait for its reply.
    pub response_timeout: Duration,
}

impl RedisConfig {
    /// A configuration from the `--redis-url` value: one URL for a single node, or several
    /// comma-separated URLs, which name the seed nodes of a Redis Cluster.
    pub fn new(urls: &str, prefix: &str) -> Self {
        let urls: Vec<String> = urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        Self {
            cluster: urls.len() > 1,
            urls,
            ca: None,
            prefix: prefix.to_owned(),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(2),
        }
    }

    /// The same, trusting `ca` (instead of the system roots) for `rediss://` URLs.
    pub fn with_ca(mut self, ca: TrustedCa) -> Self {
        self.ca = Some(ca);
        self
    }

    /// The same, forcing Cluster mode (a cluster reached through a single seed URL).
    pub fn with_cluster(mut self, cluster: bool) -> Self {
        self.cluster = cluster;
        self
    }
}
