//! `TestApp`: the real server on a random port, started through the real command line; and
//! `Api`: any running server as a client reaches it (a `TestApp` through `Deref`, or a
//! `dynapage serve` child process, `process::ServerProcess`), with the calls the tests make again
//! and again: GraphQL anonymous or signed (`graphql`, `graphql_as`), `add_comment`, `metrics`.
//! The modules below hold the other ways in and what the tests compare: raw HTTP bytes,
//! WebSockets, child processes, the Node tools, a browser, the repository's files, pages.

pub mod browser;
pub mod metrics;
pub mod node;
pub mod pages;
pub mod process;
pub mod raw_http;
pub mod repo;
pub mod websocket;

pub use pages::{PAGE_QUERY, Page, edge_ids, merge, newest_ids, walk_nodes};

use std::future::Future;
use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Duration;

use clap::Parser;
use dynapage::cli::{Cli, Command};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::helpers::metrics::Metrics;
use crate::helpers::raw_http::{Raw, Reply};
use crate::support::fault_proxy::FaultProxy;
use crate::support::jwks::JwksServer;
use crate::support::redis_server::RedisServer;

/// The flags that turn every rate limit off.
pub const RATE_LIMITS_OFF: [&str; 4] = ["--rate-limit-writes", "0", "--rate-limit-cost", "0"];

/// The cursor secret of every `TestApp` on DynamoDB that names none.
pub const TEST_CURSOR_SECRET: &str = "test-cursor-secret-0123456789";

/// The product every embedded `TestApp` has, with `--demo-comments` comments (ties included).
pub const DEMO_SKU: &str = "DAFT_PUNK_TSHIRT";

/// `addComment` on `$sku` with `$body` and `$rating`: the author is `$author` where the server
/// takes it from the input (`--auth off`), and the token's name under `--auth jwt` (where
/// `$author` is left out). Its answer is the new comment's id.
pub const ADD_COMMENT: &str = "mutation($sku: String!, $author: String, $body: String!, $rating: Int!) { addComment(input: { sku: $sku, author: $author, body: $body, rating: $rating }) { comment { id } } }";

/// `updateComment` of `$id`: a new `$body`, a new `$rating`, or both (a variable left out
/// changes nothing).
pub const EDIT_COMMENT: &str = "mutation($id: ID!, $body: String, $rating: Int) { updateComment(input: { id: $id, body: $body, rating: $rating }) { comment { id } } }";

/// `deleteComment` of `$id`.
pub const DELETE_COMMENT: &str =
    "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }";

/// The author of an anonymous [`Api::add_comment`].
pub const AUTHOR: &str = "tester";

/// A running server as a client reaches it: its address (`http://127.0.0.1:<port>`) and an
/// HTTP client. A [`TestApp`] is one (through `Deref`), and so is a `dynapage serve` child
/// process ([`ServerProcess`](process::ServerProcess)).
#[derive(Clone, Debug)]
pub struct Api {
    pub address: String,
    pub client: reqwest::Client,
}

impl Api {
    /// The server at `address` (`http://host:port`), through a client of its own.
    pub fn at(address: &str) -> Self {
        Self {
            address: address.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    /// `host:port`, as a raw HTTP request names it.
    pub fn authority(&self) -> &str {
        self.address.trim_start_matches("http://")
    }

    /// `http://host:port<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// A POST of `query` and `variables` to `/graphql`, signed with `token` (a bearer token) when
    /// there is one: to send as it is, or with headers added first.
    pub fn graphql_request(
        &self,
        token: Option<&str>,
        query: &str,
        variables: Value,
    ) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(self.url("/graphql"))
            .json(&json!({ "query": query, "variables": variables }));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// POSTs a GraphQL request and returns the whole JSON response.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        Self::json_of(self.graphql_request(None, query, variables)).await
    }

    /// [`graphql`](Self::graphql) as the holder of `token`: the request carries it as a bearer
    /// token.
    pub async fn graphql_as(&self, token: &str, query: &str, variables: Value) -> Value {
        Self::json_of(self.graphql_request(Some(token), query, variables)).await
    }

    async fn json_of(request: reqwest::RequestBuilder) -> Value {
        let response = request.send().await.expect("request sent");
        response.json().await.expect("JSON response")
    }

    /// A GraphQL POST's whole answer: status, headers and the body's bytes as sent, for the tests
    /// that look past the JSON (signed with `token` when there is one).
    pub async fn graphql_reply(&self, token: Option<&str>, query: &str, variables: Value) -> Reply {
        Reply::of(self.graphql_request(token, query, variables)).await
    }

    /// POSTs `body` to `/graphql` as it is, with `headers` (and no `Content-Type` but theirs):
    /// the whole answer, for the tests of what the transport accepts and answers.
    pub async fn post_graphql(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut request = self.client.post(self.url("/graphql")).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Reply::of(request).await
    }

    /// GETs `/graphql` with the URL parameters `params` and `headers`: the whole answer.
    pub async fn get_graphql(&self, params: &[(&str, &str)], headers: &[(&str, &str)]) -> Reply {
        let mut request = self.client.get(self.url("/graphql")).query(params);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Reply::of(request).await
    }

    /// A GraphQL GET of `query` and `variables` written by hand, with `headers`: the response as
    /// its bytes came ([`raw_http::get_graphql`]).
    pub async fn raw_get(&self, query: &str, variables: &Value, headers: &[(&str, &str)]) -> Raw {
        raw_http::get_graphql(self.authority(), query, variables, headers).await
    }

    /// `method path` written by hand with `headers` and `body`: the response as its bytes came
    /// ([`raw_http::request`]).
    pub async fn raw_request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Raw {
        raw_http::request(self.authority(), method, path, headers, body).await
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

    /// Adds a comment to `sku` and returns its global id, failing the test if it is not
    /// written: signed with `token` when there is one (the token names the author), else
    /// anonymously as [`AUTHOR`] (`--auth off`).
    pub async fn add_comment(
        &self,
        token: Option<&str>,
        sku: &str,
        body: &str,
        rating: u8,
    ) -> String {
        let mut variables = json!({ "sku": sku, "body": body, "rating": rating });
        if token.is_none() {
            variables["author"] = json!(AUTHOR);
        }
        let response = Self::json_of(self.graphql_request(token, ADD_COMMENT, variables)).await;
        response["data"]["addComment"]["comment"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("the comment is added: {response:#}"))
            .to_owned()
    }

    /// `/metrics` now, every series by its name and labels.
    pub async fn metrics(&self) -> Metrics {
        let response = self
            .client
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("/metrics answers");
        assert_eq!(response.status(), 200, "/metrics answers 200");
        Metrics::parse(&response.text().await.expect("its text"))
    }

    /// The global id of a comment that existed and was deleted: well formed, names nothing.
    pub async fn deleted_comment_id(&self) -> String {
        let id = self.add_comment(None, "GONE", "b", 3).await;
        self.data(DELETE_COMMENT, json!({ "id": id })).await;
        id
    }

    /// One page of `comments(sku:)` with the given arguments: ids, cursors and page info.
    pub async fn page(&self, sku: &str, args: Value) -> Page {
        let data = self
            .data(PAGE_QUERY, merge(json!({ "sku": sku }), args))
            .await;
        Page::from_connection(&data["comments"])
    }

    /// `totalCount` of `sku`'s comments with a rating in `ratings` (all when `null`).
    pub async fn total(&self, sku: &str, ratings: Value) -> i64 {
        let data = self
            .data(
                "query($sku: String!, $r: [Int!]) { comments(sku: $sku, ratings: $r) { totalCount } }",
                json!({ "sku": sku, "r": ratings }),
            )
            .await;
        data["comments"]["totalCount"].as_i64().expect("a count")
    }

    /// Polls [`total`](Self::total) until it equals `expected` (a write through the stream takes
    /// ~0.1 s plus a poll), for at most 10 s.
    pub async fn until_total(&self, sku: &str, ratings: Value, expected: i64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let seen = self.total(sku, ratings.clone()).await;
            if seen == expected {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "totalCount of {sku} {ratings} stayed {seen}, expected {expected}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (up to 30 s) until `/healthz` answers 200, failing the test if it never does.
    pub async fn until_healthy(&self) {
        assert!(
            self.becomes_healthy().await,
            "the server at {} did not become healthy in 30 s",
            self.address
        );
    }

    /// Whether `/healthz` answers 200 within 30 s.
    pub async fn becomes_healthy(&self) -> bool {
        for _ in 0..600 {
            if let Ok(response) = self.client.get(self.url("/healthz")).send().await
                && response.status().is_success()
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

/// The in-process server: `dynapage serve` on port 0 through the real command line, with its
/// own shutdown; stopped when dropped. Every client call is its [`Api`]'s.
pub struct TestApp {
    api: Api,
    shutdown: CancellationToken,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Deref for TestApp {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
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

    /// The embedded server with `demo_comments` comments under `--auth jwt`, trusting the keys
    /// `jwks` publishes, plus `extra` flags: writes need a token it signed.
    pub async fn under_jwt(jwks: &JwksServer, demo_comments: u64, extra: &[&str]) -> Self {
        let demo_comments = demo_comments.to_string();
        let mut args = jwks.serve_args();
        args.extend(["--demo-comments", &demo_comments].map(str::to_owned));
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::spawn(&args).await
    }

    /// The embedded server with `demo_comments` comments whose one budget is a cost budget of
    /// `burst` points refilled at 1 a second (writes unlimited), plus `extra` flags: every
    /// request here comes from 127.0.0.1, one client, so what the budget loses is what this
    /// test's requests took.
    pub async fn cost_budgeted(demo_comments: u64, burst: u32, extra: &[&str]) -> Self {
        let (demo_comments, burst) = (demo_comments.to_string(), burst.to_string());
        let mut args = vec![
            "--demo-comments",
            &demo_comments,
            "--rate-limit-cost",
            "1",
            "--rate-limit-cost-burst",
            &burst,
            "--rate-limit-writes",
            "0",
        ];
        args.extend_from_slice(extra);
        Self::spawn(&args).await
    }

    /// The embedded server with `demo_comments` comments whose one budget is `writes` writes a
    /// minute (no cost budget), for 127.0.0.1.
    pub async fn writes_budgeted(demo_comments: u64, writes: u32) -> Self {
        let (demo_comments, writes) = (demo_comments.to_string(), writes.to_string());
        Self::spawn(&[
            "--demo-comments",
            &demo_comments,
            "--rate-limit-writes",
            &writes,
            "--rate-limit-cost",
            "0",
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

    /// The server on DynamoDB Local behind a fault proxy (100 demo comments in a table of its
    /// own, plus `extra` flags): the proxy makes the store slow or unreachable at will.
    pub async fn on_proxied_dynamodb(extra: &[&str]) -> (Self, FaultProxy) {
        let store = crate::support::dynamodb_local::dynamo_store().await;
        seed_demo(&store, 100).await;
        let upstream = crate::support::dynamodb_local::endpoint().await;
        let proxy = FaultProxy::start(socket_address(&upstream)).await;
        let endpoint = format!("http://{}", proxy.address);
        let mut args = vec![
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &endpoint,
            "--dynamodb-table",
            store.table(),
        ];
        args.extend_from_slice(extra);
        (Self::spawn(&args).await, proxy)
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
            api: Api::at(&address),
            shutdown,
            server: Some(server),
        };
        app.until_healthy().await;
        app
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
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
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
pub async fn until_readyz(app: &Api, status: u16) {
    eventually(&format!("/readyz answering {status}"), || async {
        let ready = app
            .client
            .get(app.url("/readyz"))
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

/// The socket address of a URL's `host:port` (`redis://127.0.0.1:6379` → `127.0.0.1:6379`).
pub fn socket_address(url: &str) -> SocketAddr {
    let host_port = url
        .split("://")
        .nth(1)
        .expect("scheme")
        .trim_end_matches('/');
    host_port.parse().expect("host:port")
}
