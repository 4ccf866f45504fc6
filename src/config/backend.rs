//! Which backends a command works with and how to reach them: `--store`, `--index`, DynamoDB's
//! table and endpoint, and Redis's URLs, prefix, Cluster mode and CA (turned into
//! `crate::redis::RedisConfig`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::redis::{RedisConfig, TrustedCa};

/// Where comments live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// In-process, seeded with demo data by `serve`; gone when the process ends.
    Memory,
    /// Amazon DynamoDB (or DynamoDB Local with `--dynamodb-endpoint`).
    Dynamodb,
}

/// Where the page index lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexKind {
    /// In-process, fed by the store's changes.
    Memory,
    /// Redis sorted sets.
    Redis,
}

/// Which backends to use and how to reach them.
#[derive(Args, Clone, Debug)]
pub struct BackendArgs {
    /// Where comments live.
    #[arg(long, env = "DYNAPAGE_STORE", value_enum, default_value_t = StoreKind::Memory)]
    pub store: StoreKind,
    /// Keeps the embedded store on disk in this directory (an SQLite database, locked for one
    /// process): durable, crash-safe, no demo data. Absent: the in-memory demo. Not with
    /// --store dynamodb.
    #[arg(long, env = "DYNAPAGE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where the page index lives.
    #[arg(long, env = "DYNAPAGE_INDEX", value_enum, default_value_t = IndexKind::Memory)]
    pub index: IndexKind,
    /// DynamoDB endpoint URL, e.g. http://127.0.0.1:8000 for DynamoDB Local. Absent: the
    /// standard AWS endpoint, region and credential chain.
    #[arg(long, env = "DYNAPAGE_DYNAMODB_ENDPOINT")]
    pub dynamodb_endpoint: Option<String>,
    /// DynamoDB table name.
    #[arg(long, env = "DYNAPAGE_DYNAMODB_TABLE", default_value = "comments")]
    pub dynamodb_table: String,
    /// AWS region (default: from the AWS environment; us-east-1 with an endpoint).
    #[arg(long, env = "DYNAPAGE_DYNAMODB_REGION")]
    pub dynamodb_region: Option<String>,
    /// Create the table, its two GSIs and its stream if missing, and wait until they are active.
    #[arg(long, env = "DYNAPAGE_CREATE_TABLES")]
    pub create_tables: bool,
    /// Redis URL; several comma-separated URLs mean Redis Cluster. `rediss://` is TLS;
    /// `redis://user:password@host:port` logs in as an ACL user.
    #[arg(
        long,
        env = "DYNAPAGE_REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        value_delimiter = ','
    )]
    pub redis_url: Vec<String>,
    /// Prefix of every Redis key, so deployments can share one Redis.
    #[arg(long, env = "DYNAPAGE_REDIS_PREFIX", default_value = "dynapage:")]
    pub redis_prefix: String,
    /// Treat a single `--redis-url` as a Redis Cluster node.
    #[arg(long, env = "DYNAPAGE_REDIS_CLUSTER")]
    pub redis_cluster: bool,
    /// PEM file of the CA that signs a `rediss://` Redis's certificate, trusted instead of the
    /// system roots (a private CA). Unset: the system roots.
    #[arg(long, env = "DYNAPAGE_REDIS_CA_FILE")]
    pub redis_ca_file: Option<PathBuf>,
    /// About how many changes the Redis change log keeps (`XADD MAXLEN ~`), set where changes
    /// are applied (`sync`, `serve --sync`, `lambda-sync`): how far back a subscription can
    /// resume on any server without `EVENTS_MISSED`. About 62 bytes of Redis memory per change
    /// (100,000: about 6 MB).
    #[arg(
        long,
        env = "DYNAPAGE_CHANGE_LOG_MAX_LEN",
        default_value_t = crate::live::redis_log::DEFAULT_MAX_LEN as u64,
        value_parser = clap::value_parser!(u64).range(1..=100_000_000)
    )]
    pub change_log_max_len: u64,
}

impl BackendArgs {
    /// The Redis index's settings: several URLs are the seed nodes of a Redis Cluster, and
    /// `--redis-cluster` makes a single URL one too (the flag can only add Cluster mode, never
    /// take it from several URLs). Fails on a CA file that cannot be read or holds no
    /// certificate.
    pub fn redis_config(&self) -> anyhow::Result<RedisConfig> {
        let mut config = RedisConfig::new(&self.redis_url.join(","), &self.redis_prefix);
        if self.redis_cluster {
            config = config.with_cluster(true);
        }
        if let Some(path) = &self.redis_ca_file {
            let ca = TrustedCa::from_file(path)
                .map_err(|e| anyhow::anyhow!("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE: {e}"))?;
            config = config.with_ca(ca);
        }
        Ok(config)
    }

    /// The durable embedded store's directory, if `--data-dir` is set; refuses it beside
    /// `--store dynamodb` (clap's conflict does not see `DYNAPAGE_STORE` set beside
    /// `DYNAPAGE_DATA_DIR`).
    pub fn data_dir(&self) -> anyhow::Result<Option<&std::path::Path>> {
        match (&self.data_dir, self.store) {
            (Some(_), StoreKind::Dynamodb) => anyhow::bail!(
                "--data-dir / DYNAPAGE_DATA_DIR is the embedded store's directory: it cannot be used with --store dynamodb"
            ),
            (dir, _) => Ok(dir.as_deref()),
        }
    }

    /// Refuses to run `command` unless it reads a DynamoDB table and writes a Redis index
    /// (`sync`, `reindex`, `verify`: an embedded store or index lives only inside `serve`).
    pub fn require_dynamodb_and_redis(&self, command: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.store == StoreKind::Dynamodb && self.index == IndexKind::Redis,
            "`{command}` works on a DynamoDB table and a Redis index: pass --store dynamodb --index redis \
             (DYNAPAGE_STORE, DYNAPAGE_INDEX); an embedded store or index lives only inside `serve`"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Backend {
        #[command(flatten)]
        backend: BackendArgs,
    }

    fn redis(args: &[&str]) -> RedisConfig {
        let argv = std::iter::once("test").chain(args.iter().copied());
        Backend::try_parse_from(argv)
            .expect("valid flags")
            .backend
            .redis_config()
            .expect("a valid Redis configuration")
    }

    #[test]
    fn several_redis_urls_mean_a_cluster_with_or_without_the_flag() {
        let two = "redis://127.0.0.1:7000,redis://127.0.0.1:7001";
        for args in [
            vec!["--redis-url", two],
            vec!["--redis-url", two, "--redis-cluster"],
        ] {
            let config = redis(&args);
            assert!(config.cluster, "{args:?}");
            assert_eq!(config.urls.len(), 2);
        }
        assert!(!redis(&["--redis-url", "redis://127.0.0.1:7000"]).cluster);
        assert!(redis(&["--redis-url", "redis://127.0.0.1:7000", "--redis-cluster"]).cluster);
    }

    #[test]
    fn an_unreadable_ca_file_is_an_error_naming_the_flag_and_its_variable() {
        let argv = [
            "test",
            "--redis-url",
            "rediss://127.0.0.1:6380",
            "--redis-ca-file",
            "/nonexistent/ca.pem",
        ];
        let err = Backend::try_parse_from(argv)
            .expect("valid flags")
            .backend
            .redis_config()
            .expect_err("the file does not exist");
        let message = err.to_string();
        assert!(
            message.contains("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE"),
            "{message}"
        );
        assert!(message.contains("/nonexistent/ca.pem"), "{message}");
    }
}
