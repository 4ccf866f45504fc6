//! Keeping the index true over real backends: DynamoDB Local's stream feeds a real Redis
//! through the sync worker (in `serve --sync` and as the `dynapage sync` process, killed and
//! restarted), and `reindex` and `verify` repair and detect drift. Each test has its own table
//! and Redis key prefix.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use dynapage::domain::{Access, ChangeEvent, Comment, IndexEntry, Rating, RatingSet, Sku};
use dynapage::generate::CommentGenerator;
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::{RedisConfig, TrustedCa};
use dynapage::store::CommentStore;
use dynapage::store::dynamo::DynamoStore;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::support::dynamodb_local::{dynamo_store, endpoint};
use crate::support::redis_server::{shared_url, unique_prefix};

pub const ADD: &str =
    "mutation($input: AddCommentInput!) { addComment(input: $input) { comment { id } } }";
pub const UPDATE: &str = "mutation($input: UpdateCommentInput!) { updateComment(input: $input) { comment { id rating } } }";
pub const DELETE: &str =
    "mutation($input: DeleteCommentInput!) { deleteComment(input: $input) { deletedCommentId } }";

/// A fresh table and Redis prefix, with the flags that name them.
pub struct Backends {
    pub store: DynamoStore,
    pub index: RedisIndex,
    pub prefix: String,
    pub args: Vec<String>,
}

impl Backends {
    /// A fresh table and prefix on the shared single Redis.
    async fn new() -> Self {
        Self::on(&shared_url()).await
    }

    /// A fresh table seeded with `comments` demo comments, reindexed into a fresh prefix of
    /// the shared Redis, and a server on both.
    pub async fn serving_demo(comments: u64) -> (Self, crate::helpers::TestApp) {
        Self::serving_demo_with(comments, &[]).await
    }

    /// [`Self::serving_demo`], the server started with `extra` flags too.
    pub async fn serving_demo_with(
        comments: u64,
        extra: &[&str],
    ) -> (Self, crate::helpers::TestApp) {
        let backends = Self::new().await;
        crate::helpers::seed_demo(&backends.store, comments).await;
        let reindexed = backends.run("reindex", &[]).await;
        assert_eq!(exit_code(&reindexed), Some(0), "{}", stdout(&reindexed));
        let mut args: Vec<&str> = backends.args.iter().map(String::as_str).collect();
        args.extend(extra);
        let app = crate::helpers::TestApp::spawn(&args).await;
        (backends, app)
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
        crate::helpers::dynapage_command("sync")
            .args(&self.args)
            .args(["--poll-ms", "50"])
            .spawn()
            .expect("dynapage sync starts")
    }

    /// The Redis keys holding this table's stream checkpoints (`<prefix>sync:<table>:<shard>`).
    async fn checkpoint_keys(&self) -> Vec<String> {
        let client = redis::Client::open(shared_url()).expect("redis url");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("redis connection");
        redis::cmd("KEYS")
            .arg(format!("{}sync:{}:*", self.prefix, self.store.table()))
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

fn sku(s: &str) -> Sku {
    Sku::parse(s).expect("valid sku")
}

pub fn generated(sku_name: &str, seed: u64, count: usize) -> Vec<Comment> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64;
    CommentGenerator::new(sku(sku_name), seed, now_ms)
        .take(count)
        .collect()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn exit_code(output: &Output) -> Option<i32> {
    output.status.code()
}

pub async fn total(app: &TestApp, sku: &str, ratings: Value) -> i64 {
    let data = app
        .data(
            "query($sku: String!, $r: [Int!]) { comments(sku: $sku, ratings: $r) { totalCount } }",
            json!({ "sku": sku, "r": ratings }),
        )
        .await;
    data["comments"]["totalCount"].as_i64().expect("a count")
}

/// Polls `totalCount` until it equals `expected` (the stream delay is ~0.1 s plus a poll).
pub async fn until_total(app: &TestApp, sku: &str, ratings: Value, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = total(app, sku, ratings.clone()).await;
        if seen == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "totalCount of {sku} {ratings} stayed {seen}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn writes_through_the_api_reach_the_redis_index_through_the_stream() {
    let backends = Backends::new().await;
    let mut argv: Vec<&str> = backends.args.iter().map(String::as_str).collect();
    argv.extend(["--sync", "--sync-poll-ms", "50"]);
    let app = TestApp::spawn(&argv).await;

    let mut ids = Vec::new();
    for (author, rating) in [("ann", 3), ("bob", 5), ("cy", 3)] {
        let input = json!({ "sku": "STREAMED", "author": author, "body": "ok", "rating": rating });
        let added = app.data(ADD, json!({ "input": input })).await;
        ids.push(added["addComment"]["comment"]["id"].clone());
    }
    until_total(&app, "STREAMED", Value::Null, 3).await;
    until_total(&app, "STREAMED", json!([3]), 2).await;

    let input = json!({ "id": ids[0], "rating": 1 });
    app.data(UPDATE, json!({ "input": input })).await;
    until_total(&app, "STREAMED", json!([1]), 1).await;
    until_total(&app, "STREAMED", json!([3]), 1).await;

    app.data(DELETE, json!({ "input": { "id": ids[1] } })).await;
    until_total(&app, "STREAMED", Value::Null, 2).await;
    until_total(&app, "STREAMED", json!([5]), 0).await;

    let verified = backends.run("verify", &[]).await;
    assert_eq!(
        exit_code(&verified),
        Some(0),
        "verify finds no drift: {}",
        stdout(&verified)
    );
    assert!(stdout(&verified).contains("no drift: 1 products, 2 comments"));
    app.stop().await.expect("the server and its sync task stop");
}

#[tokio::test]
async fn a_sync_worker_killed_while_writes_go_on_catches_up_after_a_restart() {
    let backends = Backends::new().await;
    let first = generated("KILLED", 1, 300);
    backends.store.put_batch(&first[..100]).await.expect("seed");
    let mut worker = backends.spawn_sync();

    let killed_sku = sku("KILLED");
    let deadline = Instant::now() + Duration::from_secs(15);
    while backends
        .index
        .count(&killed_sku, RatingSet::ALL)
        .await
        .expect("count")
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the worker never applied a batch"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Writes go on while the worker dies without a chance to checkpoint (SIGKILL).
    let writer = {
        let store = backends.store.clone();
        let rest = first[100..].to_vec();
        tokio::spawn(async move {
            for chunk in rest.chunks(25) {
                store.put_batch(chunk).await.expect("write");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    worker.start_kill().expect("SIGKILL the worker");
    worker.wait().await.expect("the worker is gone");
    writer.await.expect("the writer finished");
    for comment in first.iter().step_by(7) {
        backends
            .store
            .delete(comment.id, &Access::Any)
            .await
            .expect("delete");
    }

    let checkpoints = backends.checkpoint_keys().await;
    assert!(
        !checkpoints.is_empty(),
        "the killed worker left a checkpoint to resume from"
    );

    let mut worker = backends.spawn_sync();
    backends.until_no_drift("after the restart").await;
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    // SIGTERM is a graceful stop: the batch in hand is finished and the worker exits 0.
    let status = crate::helpers::terminate(&mut worker, Duration::from_secs(10)).await;
    assert!(status.success(), "a stopped worker exits 0: {status}");
}

#[tokio::test]
async fn reindex_repairs_a_corrupted_index_that_verify_reported() {
    let backends = Backends::new().await;
    let mut comments = generated("CORRUPT_A", 1, 150);
    comments.extend(generated("CORRUPT_B", 2, 150));
    backends.store.put_batch(&comments).await.expect("seed");

    let rebuilt = backends.run("reindex", &["--segments", "3"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(stdout(&rebuilt).contains("reindexed 300 comments of 2 products"));
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    // Drop two members, add a comment the table never had, and move one to another rating.
    let removed: Vec<IndexEntry> = comments[..2].iter().map(IndexEntry::from).collect();
    let bogus = IndexEntry::from(&generated("CORRUPT_A", 99, 1)[0]);
    let mut moved = IndexEntry::from(&comments[200]);
    moved.rating = Rating::new(i64::from(moved.rating.get() % 5 + 1)).expect("valid rating");
    let mut events: Vec<ChangeEvent> = removed
        .iter()
        .map(|old| ChangeEvent::removal(old.clone()))
        .collect();
    events.push(ChangeEvent::Upsert {
        old: None,
        new: bogus.clone(),
    });
    events.push(ChangeEvent::Upsert {
        old: None,
        new: moved.clone(),
    });
    backends.index.apply(&events).await.expect("corrupt");

    let verified = backends.run("verify", &[]).await;
    let report = stdout(&verified);
    assert_eq!(exit_code(&verified), Some(1), "drift exits 1: {report}");
    assert!(
        report.contains("DRIFT CORRUPT_A: table=150 index=149 missing=2 extra=1 mismatched=0"),
        "{report}"
    );
    assert!(
        report.contains("DRIFT CORRUPT_B: table=150 index=150 missing=0 extra=0 mismatched=1"),
        "{report}"
    );
    for id in [removed[0].key.id(), removed[1].key.id(), bogus.key.id()] {
        assert!(report.contains(&id.to_string()), "{id} is named: {report}");
    }
    assert!(report.contains("drift in 2 of 2 products (300 comments in the table)"));

    // The removals left tombstones newer than the table's comments (the index is ahead of the
    // table, as after a restore from a backup): the versions refuse the scanned state, and the
    // confirm step repairs them. The bogus comment is removed; the moved one is set back.
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt)
            .contains("2 older than what the index held; read again: 1 removed, 2 repaired"),
        "{}",
        stdout(&rebuilt)
    );
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));
}

#[tokio::test]
async fn reindex_and_verify_with_a_sku_touch_only_that_product() {
    let backends = Backends::new().await;
    let mut comments = generated("ONLY_A", 1, 120);
    comments.extend(generated("ONLY_B", 2, 80));
    backends.store.put_batch(&comments).await.expect("seed");

    let rebuilt = backends.run("reindex", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(stdout(&rebuilt).contains("reindexed 120 comments of 1 products (200 scanned)"));
    let count = |name: &'static str| {
        let index = backends.index.clone();
        async move {
            index
                .count(&sku(name), RatingSet::ALL)
                .await
                .expect("count")
        }
    };
    assert_eq!(count("ONLY_A").await, 120);
    assert_eq!(count("ONLY_B").await, 0, "the other product is untouched");

    let only_a = backends.run("verify", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&only_a), Some(0), "{}", stdout(&only_a));
    assert!(stdout(&only_a).contains("no drift: 1 products, 120 comments"));
    let everything = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&everything), Some(1), "ONLY_B is missing");
    assert!(stdout(&everything).contains("DRIFT ONLY_B: table=80 index=0 missing=80"));

    let rebuilt = backends.run("reindex", &["--sku", "ONLY_B"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    // A deleted comment leaves ONLY_A's index stale, and reindexing ONLY_B leaves it so.
    backends
        .store
        .delete(comments[0].id, &Access::Any)
        .await
        .expect("delete");
    let only_b = backends.run("verify", &["--sku", "ONLY_B"]).await;
    assert_eq!(exit_code(&only_b), Some(0), "{}", stdout(&only_b));
    let only_a = backends.run("verify", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&only_a), Some(1), "{}", stdout(&only_a));
    assert!(stdout(&only_a).contains("DRIFT ONLY_A: table=119 index=120 missing=0 extra=1"));
}

#[tokio::test]
async fn a_memory_index_over_dynamodb_is_filled_at_start_up_and_follows_the_stream() {
    let store = dynamo_store().await;
    store
        .put_batch(&generated("FILLED", 3, 50))
        .await
        .expect("seed");
    let endpoint = endpoint().await;
    let app = TestApp::spawn(&[
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        store.table(),
        "--index",
        "memory",
        "--sync-poll-ms",
        "50",
    ])
    .await;
    assert_eq!(
        total(&app, "FILLED", Value::Null).await,
        50,
        "filled by a scan before serving"
    );
    let input = json!({ "sku": "FILLED", "author": "ann", "body": "late", "rating": 4 });
    app.data(ADD, json!({ "input": input })).await;
    until_total(&app, "FILLED", Value::Null, 51).await;
    app.stop().await.expect("stops");
}

/// Issue 4's promise at test scale: with DynamoDB + Redis + the stream, a deep page equals the
/// embedded backend's page and costs n + 1 items plus one index call.
#[tokio::test]
async fn a_deep_offset_over_dynamodb_and_redis_equals_the_embedded_page_at_first_page_cost() {
    const COUNT: u64 = 6_000;
    let backends = Backends::new().await;
    crate::helpers::seed_demo(&backends.store, COUNT).await;
    let mut args: Vec<&str> = backends.args.iter().map(String::as_str).collect();
    args.extend(["--sync", "--sync-poll-ms", "50"]);
    let real = TestApp::spawn(&args).await;
    until_total(&real, crate::helpers::DEMO_SKU, Value::Null, COUNT as i64).await;
    backends.until_no_drift("after the stream caught up").await;
    let embedded = TestApp::embedded_like_dynamodb(COUNT).await;

    let query =
        "query($offset: Int) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: $offset) {
      edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage } } }";
    for offset in [150, 4_500, 5_990] {
        let (a, b) = (
            real.graphql(query, json!({ "offset": offset })).await,
            embedded.graphql(query, json!({ "offset": offset })).await,
        );
        assert_eq!(a["data"], b["data"], "offset {offset}");
        let cost = &a["extensions"]["cost"];
        assert_eq!(
            [
                &cost["itemsRead"],
                &cost["storeQueries"],
                &cost["indexCalls"]
            ],
            [&json!(21.min(COUNT - offset)), &json!(1), &json!(1)],
            "offset {offset}: {cost}"
        );
    }
    let verify = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verify), Some(0), "{}", stdout(&verify));
}

/// Redis restarted empty: the server recovers by itself, and `reindex` makes the counts right.
#[tokio::test]
async fn after_redis_restarts_empty_a_reindex_restores_counts_and_verify_is_clean() {
    let mut redis = crate::support::redis_server::RedisServer::start();
    let store = dynamo_store().await;
    crate::helpers::seed_demo(&store, 300).await;
    let endpoint = endpoint().await;
    let url = redis.url();
    let args = [
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        store.table(),
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        "restart:",
    ];
    // No stream consumer here: it would replay the stream into the restarted Redis by itself
    // (which is fine, but then this test could not show that `reindex` alone restores it).
    let app = TestApp::spawn(&args).await;
    let run = |command: &'static str| {
        let args = args.map(str::to_owned);
        async move {
            tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
                .arg(command)
                .args(&args)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .output()
                .await
                .expect("dynapage runs")
        }
    };
    let filled = run("reindex").await;
    assert_eq!(
        exit_code(&filled),
        Some(0),
        "{}",
        String::from_utf8_lossy(&filled.stderr)
    );
    until_total(&app, crate::helpers::DEMO_SKU, Value::Null, 300).await;

    redis.stop();
    let page = app
        .graphql(
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 100) { totalCount edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        page["data"]["comments"]["edges"].as_array().map(Vec::len),
        Some(100)
    );
    assert_eq!(crate::helpers::error_codes(&page), ["INDEX_UNAVAILABLE"]);

    redis.restart();
    let drift = run("verify").await;
    assert_eq!(
        exit_code(&drift),
        Some(1),
        "an empty index drifts: {}",
        stdout(&drift)
    );
    let reindex = run("reindex").await;
    assert_eq!(
        exit_code(&reindex),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reindex.stderr)
    );
    until_total(&app, crate::helpers::DEMO_SKU, Value::Null, 300).await;
    let clean = run("verify").await;
    assert_eq!(exit_code(&clean), Some(0), "{}", stdout(&clean));
}

#[tokio::test]
async fn sync_reindex_and_verify_refuse_the_embedded_backends_naming_the_flags() {
    for command in ["sync", "reindex", "verify"] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
            .arg(command)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("dynapage runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(exit_code(&output), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("`{command}`"))
                && stderr.contains("--store dynamodb --index redis"),
            "{command}: {stderr}"
        );
    }
}
