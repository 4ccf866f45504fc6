//! The real DynamoDB Local and Redis behind a server, as most tests over both use them: a fresh
//! table and Redis key prefix, the flags that name them, and handles on both, to write behind
//! the server's back and to check what it indexed.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use dynapage::index::redis::RedisIndex;
use dynapage::redis::{RedisConfig, TrustedCa};
use dynapage::store::dynamo::DynamoStore;
use serde_json::json;

use crate::helpers::TestApp;
use crate::helpers::process::{exit_code, stdout};
use crate::support::dynamodb_local::{dynamo_store, endpoint};
use crate::support::redis_server::{connect, shared_url, unique_prefix};

/// A fresh table and Redis prefix, with the flags that name them.
pub struct Backends {
    pub store: DynamoStore,
    pub index: RedisIndex,
    pub prefix: String,
    pub args: Vec<String>,
}

impl Backends {
    /// A fresh table and prefix on the shared single Redis.
    pub async fn new() -> Self {
        Self::on(&shared_url()).await
    }

    /// A fresh table seeded with `comments` demo comments, reindexed into a fresh prefix of
    /// the shared Redis, and a server on both.
    pub async fn serving_demo(comments: u64) -> (Self, TestApp) {
        Self::serving_demo_with(comments, &[]).await
    }

    /// [`Self::serving_demo`], the server started with `extra` flags too.
    pub async fn serving_demo_with(comments: u64, extra: &[&str]) -> (Self, TestApp) {
        let backends = Self::new().await;
        crate::helpers::seed_demo(&backends.store, comments).await;
        let reindexed = backends.run("reindex", &[]).await;
        assert_eq!(exit_code(&reindexed), Some(0), "{}", stdout(&reindexed));
        let app = backends.serve(extra).await;
        (backends, app)
    }

    /// A server on these backends, with `extra` flags.
    pub async fn serve(&self, extra: &[&str]) -> TestApp {
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(extra);
        TestApp::spawn(&args).await
    }

    /// [`serve`](Self::serve) following the table's stream itself (`serve --sync`, polled
    /// every 50 ms), as a server with no `sync` process beside it does.
    pub async fn serve_syncing(&self, extra: &[&str]) -> TestApp {
        self.serve(&[&["--sync", "--sync-poll-ms", "50"][..], extra].concat())
            .await
    }

    /// A fresh table and a fresh prefix in the Redis at `redis_url` (several comma-separated
    /// URLs: a Redis Cluster, passed without `--redis-cluster`).
    pub async fn on(redis_url: &str) -> Self {
        Self::trusting(redis_url, None).await
    }

    /// [`Self::on`] for a `rediss://` Redis whose certificate `ca_file` signs: the flags carry
    /// `--redis-ca-file`, and the test's own index handle trusts it too.
    pub async fn on_tls(redis_url: &str, ca_file: &Path) -> Self {
        Self::trusting(redis_url, Some(ca_file)).await
    }

    async fn trusting(redis_url: &str, ca_file: Option<&Path>) -> Self {
        let store = dynamo_store().await;
        let prefix = unique_prefix();
        let mut config = RedisConfig::new(redis_url, &prefix);
        if let Some(file) = ca_file {
            config = config.with_ca(TrustedCa::from_file(file).expect("the test's CA file"));
        }
        let index = RedisIndex::connect(config)
            .await
            .expect("the Redis index builds");
        let mut args = [
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &endpoint().await,
            "--dynamodb-table",
            store.table(),
            "--index",
            "redis",
            "--redis-url",
            redis_url,
            "--redis-prefix",
            &prefix,
        ]
        .map(str::to_owned)
        .to_vec();
        if let Some(file) = ca_file {
            args.extend(["--redis-ca-file".to_owned(), file.display().to_string()]);
        }
        Self {
            store,
            index,
            prefix,
            args,
        }
    }

    /// Runs `dynapage <command> <backend flags> <extra>` to completion.
    pub async fn run(&self, command: &str, extra: &[&str]) -> Output {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
            .arg(command)
            .args(&self.args)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("the dynapage binary runs")
    }

    /// These backends' flags with `--redis-url` set to `url` (through a proxy, as a user).
    pub fn args_with_redis_url(&self, url: &str) -> Vec<String> {
        self.args_with("--redis-url", url)
    }

    /// These backends' flags with `flag` (one they have) set to `value`.
    pub fn args_with(&self, flag: &str, value: &str) -> Vec<String> {
        let mut args = self.args.clone();
        let position = args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("a {flag} flag"));
        args[position + 1] = value.to_owned();
        args
    }

    /// Serves these backends and checks one index-backed page of `sku`: `total` comments, and a
    /// full page of 20 at `offset`. The rate limits are on, so the page also takes its cost
    /// from a budget in the same Redis, as the same user. The budget refills at 1 point a
    /// second, so its key (which expires when the bucket is full again) outlives the check by
    /// minutes however slow the machine: at the default 1,000 a second it would be gone in a
    /// fraction of a second.
    pub async fn assert_serves_a_deep_page(&self, sku: &str, offset: u64, total: u64) {
        let mut argv: Vec<&str> = self.args.iter().map(String::as_str).collect();
        argv.extend(["--rate-limit-cost", "1"]);
        let app = crate::helpers::TestApp::spawn(&argv).await;
        let response = app
            .graphql(
                "query($sku: String!, $offset: Int) { comments(sku: $sku, first: 20, offset: $offset) { totalCount edges { cursor } } }",
                serde_json::json!({ "sku": sku, "offset": offset }),
            )
            .await;
        let throttle = &response["extensions"]["cost"]["throttleStatus"];
        let (left, maximum) = (
            throttle["currentlyAvailable"].as_u64().expect("a budget"),
            throttle["maximumAvailable"].as_u64().expect("a budget"),
        );
        assert!(left < maximum, "the page was charged: {response:#}");
        let page = &response["data"];
        assert_eq!(page["comments"]["totalCount"], total);
        assert_eq!(page["comments"]["edges"].as_array().map(Vec::len), Some(20));
        // Charged in Redis, not by the in-process fallback. (On a loaded machine one check may
        // take longer than the limiter waits, and it limits in-process for a second: ask
        // again then. A script Redis refuses, or keys in two slots, would never get there.)
        let bucket = format!("{}rl:{{ip:127.0.0.1}}:c", self.prefix);
        let mut kept = false;
        for _ in 0..5 {
            kept = self.redis_get(&bucket).await.is_some();
            if kept {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1100)).await;
            app.graphql("{ product(sku: \"A\") { sku } }", json!({}))
                .await;
        }
        assert!(kept, "the cost budget is kept in Redis at {bucket}");
        app.stop().await.expect("the server stops");
    }

    /// `GET key` through this test's `--redis-url` (a Cluster when it names several nodes),
    /// trusting its `--redis-ca-file` if it has one.
    pub async fn redis_get(&self, key: &str) -> Option<String> {
        let flag = |name: &str| {
            let position = self.args.iter().position(|a| a == name)?;
            self.args.get(position + 1).map(String::as_str)
        };
        let url = flag("--redis-url").expect("a --redis-url flag");
        let certs = flag("--redis-ca-file").map(|file| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(std::fs::read(file).expect("the CA file")),
        });
        let mut get = redis::cmd("GET");
        get.arg(key);
        if url.contains(',') {
            let mut builder = redis::cluster::ClusterClientBuilder::new(url.split(','));
            if let Some(certs) = certs {
                builder = builder.certs(certs);
            }
            let client = builder.build().expect("cluster urls");
            let mut conn = client
                .get_async_connection()
                .await
                .expect("cluster connection");
            get.query_async(&mut conn).await.expect("GET")
        } else {
            let client = match certs {
                Some(certs) => redis::Client::build_with_tls(url, certs).expect("redis url"),
                None => redis::Client::open(url).expect("redis url"),
            };
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("redis connection");
            get.query_async(&mut conn).await.expect("GET")
        }
    }

    /// `dynapage sync` as a child process.
    pub fn spawn_sync(&self) -> tokio::process::Child {
        crate::helpers::process::dynapage_command("sync")
            .args(&self.args)
            .args(["--poll-ms", "50"])
            .spawn()
            .expect("dynapage sync starts")
    }

    /// The Redis keys holding this table's stream checkpoints (`<prefix>sync:<table>:<shard>`).
    pub async fn checkpoint_keys(&self) -> Vec<String> {
        self.keys(&format!("sync:{}:*", self.store.table())).await
    }

    /// The keys under this test's prefix that match `pattern` (`KEYS <prefix><pattern>`), on
    /// the shared Redis.
    pub async fn keys(&self, pattern: &str) -> Vec<String> {
        let mut conn = connect(&shared_url()).await;
        redis::cmd("KEYS")
            .arg(format!("{}{pattern}", self.prefix))
            .query_async(&mut conn)
            .await
            .expect("KEYS")
    }

    /// Polls the library's verification until the index matches the table.
    pub async fn until_no_drift(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let report = dynapage::sync::verify(&self.store, &self.index, None, 2)
                .await
                .expect("verify runs");
            if report.is_clean() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: still drifting after 20 s: {report:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
