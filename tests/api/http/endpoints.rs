//! HTTP behaviour around GraphQL: GET, health, readiness, request ids, GraphiQL, shutdown, and
//! the committed schema.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::process::free_port;

#[tokio::test]
async fn queries_work_over_get_but_mutations_do_not() {
    let app = TestApp::embedded(5).await;
    let url = format!("{}/graphql", app.address);
    let response = app
        .client
        .get(&url)
        .query(&[(
            "query",
            "{ product(sku: \"VINYL_RAM\") { comments { totalCount } } }",
        )])
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["data"]["product"]["comments"]["totalCount"], 12);

    let mutation = "mutation { addComment(input: { sku: \"X\", author: \"a\", body: \"b\", rating: 1 }) { comment { id } } }";
    let response = app
        .client
        .get(&url)
        .query(&[("query", mutation)])
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    let count = app
        .data(
            "{ product(sku: \"X\") { comments { edges { cursor } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        count["product"]["comments"]["edges"],
        json!([]),
        "the GET wrote nothing"
    );
}

/// The server keeps parsed documents by their text; the operation a request selects must still
/// decide what runs and whether GET may run it.
#[tokio::test]
async fn one_document_text_serves_each_operation_it_names() {
    let app = TestApp::embedded(5).await;
    let url = format!("{}/graphql", app.address);
    let document = "query Ratings { product(sku: \"CACHE_SKU\") { comments(first: 5) { edges { node { rating } } } } } \
        mutation Add { addComment(input: { sku: \"CACHE_SKU\", author: \"a\", body: \"b\", rating: 2 }) { comment { rating } } }";
    let post = |operation: &'static str| {
        app.client
            .post(&url)
            .json(&json!({ "query": document, "operationName": operation }))
            .send()
    };
    let ratings = || async {
        let body: Value = post("Ratings")
            .await
            .expect("sent")
            .json()
            .await
            .expect("json");
        body["data"]["product"]["comments"]["edges"].clone()
    };
    assert_eq!(ratings().await, json!([]));
    assert_eq!(
        ratings().await,
        json!([]),
        "the same text again (now cached)"
    );
    let get_mutation = app
        .client
        .get(&url)
        .query(&[("query", document), ("operationName", "Add")])
        .send()
        .await
        .expect("sent");
    assert_eq!(
        get_mutation.status(),
        405,
        "the cached text still selects the mutation"
    );
    let added: Value = post("Add").await.expect("sent").json().await.expect("json");
    assert_eq!(added["data"]["addComment"]["comment"]["rating"], 2);
    assert_eq!(ratings().await, json!([{ "node": { "rating": 2 } }]));
}

#[tokio::test]
async fn responses_carry_a_request_id_and_are_never_cached() {
    let app = TestApp::embedded(5).await;
    let response = app
        .graphql_reply(None, "{ product(sku: \"A\") { sku } }", json!({}))
        .await;
    let id = response.header("x-request-id").unwrap_or_default();
    assert_eq!(id.len(), 26, "a ULID request id, got {id:?}");
    assert_eq!(response.header("cache-control"), Some("no-store"));
    let bad = app
        .graphql(
            "{ comments(sku: \"A\", first: -1) { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(
        bad["errors"][0]["extensions"]["requestId"]
            .as_str()
            .map(str::len),
        Some(26)
    );
}

/// `/readyz` is public and each check asks the backends, so probes share checks: fifty at
/// once make one Redis `PING` (two if they straddle the end of a check's second), and a probe a
/// second later makes another.
#[tokio::test]
async fn readiness_probes_share_one_check_a_second() {
    let (app, redis) = TestApp::on_redis(5, &[]).await;
    let mut conn = crate::support::redis_server::connect(&redis.url()).await;
    let mut pings = async || -> u64 {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .expect("INFO");
        stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_ping:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse().expect("a count"))
    };
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let before = pings().await;
    let probes = (0..50).map(|_| app.client.get(format!("{}/readyz", app.address)).send());
    for answer in futures::future::join_all(probes).await {
        assert_eq!(answer.expect("sent").status(), 200);
    }
    let during = pings().await - before;
    assert!((1..=2).contains(&during), "50 probes made {during} PINGs");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    crate::helpers::until_readyz(&app, 200).await;
    assert!(
        pings().await - before > during,
        "a later probe checks again"
    );
}

#[tokio::test]
async fn health_readiness_and_graphiql_answer() {
    let app = TestApp::embedded(5).await;
    let get = |path: &str| app.client.get(format!("{}{path}", app.address)).send();
    assert_eq!(
        get("/healthz")
            .await
            .expect("sent")
            .text()
            .await
            .expect("text"),
        "ok"
    );
    let ready = get("/readyz").await.expect("sent");
    assert_eq!(ready.status(), 200);
    assert_eq!(
        ready.json::<Value>().await.expect("json"),
        json!({ "store": "ok", "index": "ok" })
    );
    let page = get("/").await.expect("sent").text().await.expect("text");
    assert!(
        page.contains("GraphiQL") && page.contains("/playground/graphiql.min.js"),
        "the embedded GraphiQL page"
    );
}

#[tokio::test]
async fn the_server_stops_gracefully_when_asked() {
    let app = TestApp::embedded(5).await;
    let address = app.address.clone();
    app.stop().await.expect("a clean stop");
    assert!(
        reqwest::get(format!("{address}/healthz")).await.is_err(),
        "nothing listens any more"
    );
}

#[test]
fn the_committed_schema_matches_the_code() {
    let committed = include_str!("../../../schema.graphql");
    let generated = dynapage::graphql::sdl();
    assert!(
        committed == generated,
        "schema.graphql is stale: run `cargo run -- export-schema --output schema.graphql --force` and review the diff"
    );
}

/// `cargo run` with no command: the binary serves the embedded demo from settings in the
/// environment alone, and SIGTERM stops it cleanly (exit 0).
#[tokio::test]
async fn the_binary_without_a_command_serves_and_stops_on_sigterm() {
    let port = free_port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
        .env("DYNAPAGE_LISTEN", format!("127.0.0.1:{port}"))
        .env("DYNAPAGE_DEMO_COMMENTS", "100")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("dynapage starts");
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut answered = None;
    for _ in 0..200 {
        let query = json!({ "query": "{ comments(sku: \"DAFT_PUNK_TSHIRT\") { totalCount } }" });
        if let Ok(response) = client
            .post(format!("{url}/graphql"))
            .json(&query)
            .send()
            .await
        {
            answered = Some(response.json::<Value>().await.expect("json"));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        answered.expect("the server answered")["data"]["comments"]["totalCount"],
        100
    );
    let status =
        crate::helpers::process::terminate(&mut child, std::time::Duration::from_secs(15)).await;
    assert!(status.success(), "a clean exit on SIGTERM: {status:?}");
}
