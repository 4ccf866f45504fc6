//! `TestApp`: the real server on a random port, started through the real command line, and
//! helpers to talk GraphQL to it over HTTP.

use std::future::Future;
use std::time::Duration;

use clap::Parser;
use dynapage::cli::{Cli, Command};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::redis_server::RedisServer;

/// The flags that turn every rate limit off.
pub const RATE_LIMITS_OFF: [&str; 4] = ["--rate-limit-writes", "0", "--rate-limit-cost", "0"];

/// The cursor secret of every `TestApp` on DynamoDB that names none.
pub const TEST_CURSOR_SECRET: &str = "test-cursor-secret-0123456789";

/// The product every embedded `TestApp` has, with `--demo-comments` comments (ties included).
pub const DEMO_SKU: &str = "DAFT_PUNK_TSHIRT";

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    shutdown: CancellationToken,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestApp {
    /// The embedded server with `demo_comments` comments on [`DEMO_SKU`].
    pub async fn embedded(demo_comments: u64) -> Self {
        Self::spawn(&["--demo-comments", &demo_comments.to_string()]).await
    }

    /// The embedded server sealing cursors with [`TEST_CURSOR_SECRET`], as servers on DynamoDB
    /// do here, so that their pages compare cursor for cursor.
    pub async fn embedded_like_dynamodb(demo_comments: u64) -> Self {
        let demo_comments = demo_comments.to_string();
        Self::spawn(&[
            "--demo-comments",
            &demo_comments,
            "--cursor-secret",
            TEST_CURSOR_SECRET,
        ])
        .await
    }

    /// The embedded store with `demo_comments` comments on [`DEMO_SKU`], indexed in a Redis of
    /// its own (`--index redis`, plus `extra`). The Redis is returned, to be dropped after the
    /// server.
    pub async fn on_redis(demo_comments: u64, extra: &[&str]) -> (Self, RedisServer) {
        let redis = RedisServer::start();
        let (url, demo_comments) = (redis.url(), demo_comments.to_string());
        let mut args = vec![
            "--demo-comments",
            &demo_comments,
            "--index",
            "redis",
            "--redis-url",
            &url,
        ];
        args.extend_from_slice(extra);
        (Self::spawn(&args).await, redis)
    }

    /// [`TestApp::on_redis`] with the Redis stopped once the server is up: pages are served,
    /// the index answers `INDEX_UNAVAILABLE`.
    pub async fn without_its_index(demo_comments: u64, extra: &[&str]) -> (Self, RedisServer) {
        let (app, mut redis) = Self::on_redis(demo_comments, extra).await;
        redis.stop();
        (app, redis)
    }

    /// The server on the DynamoDB Local table `table` (`--store dynamodb`, plus `extra`).
    pub async fn on_dynamodb(table: &str, extra: &[&str]) -> Self {
        let endpoint = crate::support::dynamodb_local::endpoint().await;
        let mut args = vec![
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &endpoint,
            "--dynamodb-table",
            table,
        ];
        args.extend_from_slice(extra);
        Self::spawn(&args).await
    }

    /// `dynapage serve --listen 127.0.0.1:0 <args>`, with rate limits off unless `args` set
    /// one: every test's requests come from 127.0.0.1, and most send far more than one
    /// client's budget (`admission::ratelimit` tests the limits).
    pub async fn spawn(args: &[&str]) -> Self {
        let mut argv = vec!["dynapage", "serve"];
        if !args.iter().any(|a| a.starts_with("--rate-limit")) {
            argv.extend(RATE_LIMITS_OFF);
        }
        argv.extend_from_slice(args);
        // The response cache answers repeats with what was read before, and these tests count
        // what each request reads; `caching::response_cache` tests it.
        if !args.iter().any(|a| a.starts_with("--response-cache")) {
            argv.extend_from_slice(&["--response-cache-bytes", "0"]);
        }
        // A DynamoDB server must be told how writes are authorised; these tests are about
        // other things and write openly (`auth::writes` is about that).
        if args.contains(&"dynamodb") && !args.iter().any(|a| a.starts_with("--auth")) {
            argv.extend_from_slice(&["--auth", "off"]);
        }
        // Likewise it must be given a cursor secret (the development key is refused there).
        if args.contains(&"dynamodb") && !args.contains(&"--cursor-secret") {
            argv.extend_from_slice(&["--cursor-secret", TEST_CURSOR_SECRET]);
        }
        let cli = Cli::try_parse_from(&argv).expect("valid serve arguments");
        let Some(Command::Serve(serve_args)) = cli.command else {
            panic!("not a serve command")
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free port");
        let address = format!("http://{}", listener.local_addr().expect("local address"));
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(dynapage::cli::serve::run_with(
            *serve_args,
            listener,
            shutdown.clone(),
        ));
        let app = Self {
            address,
            client: reqwest::Client::new(),
            shutdown,
            server: Some(server),
        };
        app.wait_until_healthy().await;
        app
    }

    async fn wait_until_healthy(&self) {
        for _ in 0..600 {
            if let Ok(response) = self
                .client
                .get(format!("{}/healthz", self.address))
                .send()
                .await
            {
                if response.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server did not become healthy in 30 s");
    }

    /// Stops the server gracefully and returns how `run_with` ended.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let server = self.server.take().expect("running");
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("stops within 10 s")
            .expect("no panic")
    }

    /// POSTs a GraphQL request and returns the whole JSON response.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        let response = self
            .client
            .post(format!("{}/graphql", self.address))
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .expect("request sent");
        response.json().await.expect("JSON response")
    }

    /// Like [`graphql`](Self::graphql) but fails the test on any error; returns `data`.
    pub async fn data(&self, query: &str, variables: Value) -> Value {
        let response = self.graphql(query, variables).await;
        assert!(
            response.get("errors").is_none(),
            "unexpected errors: {response:#}"
        );
        response["data"].clone()
    }

    /// The global id of a comment that existed and was deleted: well formed, names nothing.
    pub async fn deleted_comment_id(&self) -> String {
        let added = self.data(
            r#"mutation { addComment(input: { sku: "GONE", author: "a", body: "b", rating: 3 }) { comment { id } } }"#,
            json!({}),
        ).await;
        let id = added["addComment"]["comment"]["id"]
            .as_str()
            .expect("an id");
        self.data(
            "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }",
            json!({ "id": id }),
        )
        .await;
        id.to_owned()
    }

    /// One page of `comments(sku:)` with the given arguments: ids, cursors and page info.
    pub async fn page(&self, sku: &str, args: Value) -> Page {
        let data = self
            .data(PAGE_QUERY, merge(json!({ "sku": sku }), args))
            .await;
        Page::from_connection(&data["comments"])
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub const PAGE_QUERY: &str = r#"
query Page($sku: String!, $ratings: [Int!], $first: Int, $after: String, $last: Int, $before: String, $offset: Int) {
  comments(sku: $sku, ratings: $ratings, first: $first, after: $after, last: $last, before: $before, offset: $offset) {
    edges { cursor node { id rating createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// The parts of a connection the tests compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub ids: Vec<String>,
    pub cursors: Vec<String>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
    pub start_cursor: Option<String>,
    pub end_cursor: Option<String>,
}

impl Page {
    pub fn from_connection(connection: &Value) -> Self {
        let edges = connection["edges"].as_array().expect("edges");
        let info = &connection["pageInfo"];
        Self {
            ids: edge_ids(connection),
            cursors: edges
                .iter()
                .map(|e| e["cursor"].as_str().expect("cursor").to_owned())
                .collect(),
            has_next_page: info["hasNextPage"].as_bool().expect("hasNextPage"),
            has_previous_page: info["hasPreviousPage"].as_bool().expect("hasPreviousPage"),
            start_cursor: info["startCursor"].as_str().map(str::to_owned),
            end_cursor: info["endCursor"].as_str().map(str::to_owned),
        }
    }
}

/// The global ids of the newest `count` comments of [`DEMO_SKU`].
pub async fn newest_ids(app: &TestApp, count: usize) -> Vec<String> {
    let query =
        format!(r#"{{ comments(sku: "{DEMO_SKU}", first: {count}) {{ nodes {{ id }} }} }}"#);
    let page = app.data(&query, json!({})).await;
    page["comments"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Every comment of `sku` with a rating in `ratings` (all when `null`), newest first, as
/// `{ id rating }` nodes, by walking with cursors in pages of 100.
pub async fn walk_nodes(app: &TestApp, sku: &str, ratings: &Value) -> Vec<Value> {
    let mut nodes = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = app
            .data(
                "query($sku: String!, $ratings: [Int!], $after: String) { comments(sku: $sku, ratings: $ratings, first: 100, after: $after) { edges { node { id rating helpfulCount } } pageInfo { hasNextPage endCursor } } }",
                json!({ "sku": sku, "ratings": ratings, "after": after }),
            )
            .await;
        let connection = &page["comments"];
        let edges = connection["edges"].as_array().expect("edges");
        nodes.extend(edges.iter().map(|edge| edge["node"].clone()));
        if connection["pageInfo"]["hasNextPage"] != true {
            return nodes;
        }
        after = connection["pageInfo"]["endCursor"].clone();
    }
}

/// The ids of a connection's edges (`edges { node { id } }`), in order.
pub fn edge_ids(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("id").to_owned())
        .collect()
}

/// Shallow merge of two JSON objects.
pub fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// The `extensions.code` of each error of a response.
pub fn error_codes(response: &Value) -> Vec<String> {
    response["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    e["extensions"]["code"]
                        .as_str()
                        .unwrap_or("<none>")
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Sends SIGTERM to `child` and waits at most `within` for it to exit; its exit status.
pub async fn terminate(
    child: &mut tokio::process::Child,
    within: Duration,
) -> std::process::ExitStatus {
    let pid = child.id().expect("the process runs").to_string();
    let signalled = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(signalled.success());
    tokio::time::timeout(within, child.wait())
        .await
        .expect("the process stops in time")
        .expect("exit status")
}

/// Polls `check` until it returns `Some`, for effects that arrive through the index's feed.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..200 {
        if let Some(value) = check().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} did not happen within 5 s");
}

/// Waits (up to 5 s) until `/readyz` answers `status`: a check's answer serves probes for a
/// second after it, so a probe right after an outage began or ended may still tell the last.
pub async fn until_readyz(app: &TestApp, status: u16) {
    eventually(&format!("/readyz answering {status}"), || async {
        let ready = app
            .client
            .get(format!("{}/readyz", app.address))
            .send()
            .await
            .expect("sent");
        (ready.status() == status).then_some(())
    })
    .await;
}

/// Writes the first `count` comments of [`DEMO_SKU`] into `store`: the same comments the
/// embedded server seeds with `--demo-comments count`, so pages can be compared across backends.
pub async fn seed_demo<S: dynapage::store::CommentStore>(store: &S, count: u64) {
    let sku = dynapage::domain::Sku::parse(DEMO_SKU).expect("the demo SKU is valid");
    let generated = dynapage::cli::seed::Generated::new(count, 1);
    dynapage::cli::seed::write_comments(store, &sku, generated, &indicatif::ProgressBar::hidden())
        .await
        .expect("the demo comments are written");
}

/// `dynapage <command>` as a quiet child process (warnings only, no output kept), killed when
/// its handle is dropped; add arguments and environment, then spawn.
pub fn dynapage_command(command: &str) -> tokio::process::Command {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"));
    child
        .arg(command)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    child
}

/// What `dynapage serve --listen 127.0.0.1:0 --demo-comments 0 <args>` writes on standard error
/// when it refuses to start: it must end by itself, unsuccessfully, within 30 seconds.
pub async fn serve_fails_to_start(args: &[&str]) -> String {
    let child = dynapage_command("serve")
        .args(["--listen", "127.0.0.1:0", "--demo-comments", "0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the dynapage binary runs");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("serve stops at start-up instead of serving")
        .expect("its output");
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}
