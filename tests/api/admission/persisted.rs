//! Persisted documents (`src/persisted`), on the bytes a client receives: automatic persisted
//! queries over GET and POST (an unknown hash answers `PersistedQueryNotFound`, 200,
//! `no-store`, the error Apollo Client and urql retry on; a wrong hash is `BAD_REQUEST`),
//! shared through Redis by two servers; trusted documents from a manifest of each format, run
//! by `documentId`; and `--require-trusted-documents` refusing every other document. The
//! client libraries themselves run in `clients::tools` (`persisted.mjs`).

use serde_json::{Value, json};

use crate::helpers::raw_http::Reply;
use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::redis_server::{self, connect};
use dynapage::persisted::sha256_hex;

const PAGE: &str = "query Page($first: Int) { product(sku: \"DAFT_PUNK_TSHIRT\") { comments(first: $first) { edges { node { id } } } } }";
const OTHER: &str = "query Other { product(sku: \"DAFT_PUNK_TSHIRT\") { sku } }";

struct Answer {
    status: u16,
    cache_control: String,
    request_id: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// The exact bytes of a one-error refusal.
    fn refusal(&self, message: &str, code: &str) -> String {
        format!(
            r#"{{"errors":[{{"message":{},"extensions":{{"code":"{code}","requestId":"{}"}}}}]}}"#,
            Value::from(message),
            self.request_id
        )
    }

    fn code(&self) -> String {
        self.json()["errors"][0]["extensions"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no code: {}", self.text))
            .to_owned()
    }
}

impl From<Reply> for Answer {
    fn from(reply: Reply) -> Self {
        let header = |name| reply.header(name).unwrap_or_default().to_owned();
        Self {
            status: reply.status,
            cache_control: header("cache-control"),
            request_id: header("x-request-id"),
            text: reply.text.clone(),
        }
    }
}

async fn post(app: &TestApp, body: Value) -> Answer {
    let json = [("content-type", "application/json")];
    app.post_graphql(body.to_string(), &json).await.into()
}

async fn get(app: &TestApp, params: &[(&str, String)]) -> Answer {
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    app.get_graphql(&params, &[]).await.into()
}

fn persisted(hash: &str) -> Value {
    json!({"persistedQuery": {"version": 1, "sha256Hash": hash}})
}

fn variables() -> String {
    json!({"first": 3}).to_string()
}

fn get_by_hash(hash: &str) -> Vec<(&'static str, String)> {
    vec![
        ("extensions", persisted(hash).to_string()),
        ("variables", variables()),
    ]
}

fn ids(answer: &Answer) -> Vec<String> {
    let edges = &answer.json()["data"]["product"]["comments"]["edges"];
    let ids: Vec<String> = edges
        .as_array()
        .unwrap_or_else(|| panic!("no page: {}", answer.text))
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "{}", answer.text);
    ids
}

#[tokio::test]
async fn an_unknown_hash_is_not_found_until_its_text_is_sent_then_get_and_post_run_it() {
    let app = TestApp::embedded(20).await;
    let hash = sha256_hex(PAGE);
    for miss in [
        get(&app, &get_by_hash(&hash)).await,
        post(
            &app,
            json!({"extensions": persisted(&hash), "variables": {"first": 3}}),
        )
        .await,
    ] {
        assert_eq!(miss.status, 200, "{}", miss.text);
        assert_eq!(miss.cache_control, "no-store");
        assert_eq!(
            miss.text,
            miss.refusal("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
        );
    }
    // The text with its hash runs, and registers the text.
    let sent = post(
        &app,
        json!({"query": PAGE, "extensions": persisted(&hash), "variables": {"first": 3}}),
    )
    .await;
    let expected = ids(&sent);
    let by_get = get(&app, &get_by_hash(&hash)).await;
    assert_eq!(ids(&by_get), expected);
    assert!(
        by_get.cache_control.contains("public"),
        "{}",
        by_get.cache_control
    );
    let by_post = post(
        &app,
        json!({"extensions": persisted(&hash), "variables": {"first": 3}}),
    )
    .await;
    assert_eq!(ids(&by_post), expected);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_hash_that_is_not_its_texts_and_malformed_extensions_are_bad_requests() {
    let app = TestApp::embedded(5).await;
    let wrong = post(
        &app,
        json!({"query": OTHER, "extensions": persisted(&sha256_hex(PAGE))}),
    )
    .await;
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.cache_control, "no-store");
    let message = "`extensions.persistedQuery.sha256Hash` is not the SHA-256 of the query";
    assert_eq!(wrong.text, wrong.refusal(message, "BAD_REQUEST"));
    let version = json!({"persistedQuery": {"version": 2, "sha256Hash": sha256_hex(PAGE)}});
    let short = json!({"persistedQuery": {"version": 1, "sha256Hash": "abc"}});
    for extensions in [version, short, json!({"persistedQuery": "x"})] {
        let bad = post(&app, json!({"extensions": extensions})).await;
        assert_eq!(
            (bad.status, bad.code()),
            (400, "BAD_REQUEST".into()),
            "{}",
            bad.text
        );
    }
    // A wrong hash never registered anything.
    let miss = get(&app, &get_by_hash(&sha256_hex(PAGE))).await;
    assert_eq!(miss.code(), "PERSISTED_QUERY_NOT_FOUND");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn documents_too_large_to_register_and_a_disabled_store_are_refused() {
    let app = TestApp::spawn(&["--demo-comments", "5", "--persisted-queries-bytes", "0"]).await;
    let hash = sha256_hex(PAGE);
    let off = get(&app, &get_by_hash(&hash)).await;
    assert_eq!((off.status, off.cache_control.as_str()), (200, "no-store"));
    assert_eq!(
        off.text,
        off.refusal(
            "PersistedQueryNotSupported",
            "PERSISTED_QUERY_NOT_SUPPORTED"
        )
    );
    app.stop().await.expect("clean stop");
    // A 2 KiB body limit: a longer text sent over GET with its hash is not registered.
    let app = TestApp::spawn(&["--demo-comments", "5", "--max-body-bytes", "2048"]).await;
    let long = format!("{PAGE}\n# {}", "x".repeat(3000));
    let params = [
        ("query", long.clone()),
        ("extensions", persisted(&sha256_hex(&long)).to_string()),
    ];
    let refused = get(&app, &params).await;
    assert_eq!(
        (refused.status, refused.code()),
        (400, "BAD_REQUEST".into())
    );
    assert!(refused.text.contains("2048 bytes"), "{}", refused.text);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn servers_on_one_redis_share_what_either_registered() {
    let (url, prefix) = (redis_server::shared_url(), redis_server::unique_prefix());
    let args = [
        "--demo-comments",
        "5",
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        &prefix,
    ];
    let (one, two) = (TestApp::spawn(&args).await, TestApp::spawn(&args).await);
    let hash = sha256_hex(PAGE);
    assert_eq!(
        get(&two, &get_by_hash(&hash)).await.code(),
        "PERSISTED_QUERY_NOT_FOUND"
    );
    let sent = post(
        &one,
        json!({"query": PAGE, "extensions": persisted(&hash), "variables": {"first": 3}}),
    )
    .await;
    let expected = ids(&sent);
    assert_eq!(ids(&get(&two, &get_by_hash(&hash)).await), expected);
    // Kept under the deployment's prefix, in the one bounded store: the text, when it was
    // registered, and the bytes the store counts for it.
    let mut conn = connect(&url).await;
    let texts = format!("{prefix}pq:{{apq}}");
    let text: Option<String> = redis::cmd("HGET")
        .arg(&texts)
        .arg(&hash)
        .query_async(&mut conn)
        .await
        .expect("HGET");
    assert_eq!(text.as_deref(), Some(PAGE));
    let registered: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{texts}:at"))
        .arg(&hash)
        .query_async(&mut conn)
        .await
        .expect("ZSCORE");
    assert!(registered.is_some_and(|ms| ms > 1.7e12), "{registered:?}");
    let held: u64 = redis::cmd("GET")
        .arg(format!("{texts}:bytes"))
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(
        held as usize,
        PAGE.len() + hash.len() + dynapage::persisted::redis::ENTRY_OVERHEAD
    );
    one.stop().await.expect("clean stop");
    two.stop().await.expect("clean stop");
}

/// A manifest of `format` holding [`PAGE`], written to a file; the file and the id it gives.
fn manifest(format: &str) -> (tempfile::NamedTempFile, String) {
    let hash = sha256_hex(PAGE);
    let (json, id) = match format {
        "apollo" => (
            json!({"format": "apollo-persisted-query-manifest", "version": 1,
                   "operations": [{"id": hash, "name": "Page", "type": "query", "body": PAGE}]}),
            hash,
        ),
        "relay" => (json!({"a1b2c3d4e5f6": PAGE}), "a1b2c3d4e5f6".to_owned()),
        _ => (
            json!({ format!("sha256:{hash}"): PAGE }),
            format!("sha256:{hash}"),
        ),
    };
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), json.to_string()).expect("written");
    (file, id)
}

#[tokio::test]
async fn a_manifest_of_each_format_loads_and_its_documents_run_by_document_id() {
    for format in ["apollo", "relay", "codegen"] {
        let (file, id) = manifest(format);
        let path = file.path().to_str().expect("a UTF-8 path");
        let app = TestApp::spawn(&["--demo-comments", "20", "--trusted-documents", path]).await;
        let by_get = get(
            &app,
            &[("documentId", id.clone()), ("variables", variables())],
        )
        .await;
        let expected = ids(&by_get);
        let sha = format!("sha256:{}", sha256_hex(PAGE));
        let by_post = post(&app, json!({"documentId": sha, "variables": {"first": 3}})).await;
        assert_eq!(ids(&by_post), expected, "{format}");
        // Its hash as an automatic persisted query finds it too, with nothing registered.
        assert_eq!(
            ids(&get(&app, &get_by_hash(&sha256_hex(PAGE))).await),
            expected
        );
        let unknown = get(&app, &[("documentId", "sha256:00".to_owned())]).await;
        assert_eq!(
            (unknown.status, unknown.cache_control.as_str()),
            (400, "no-store")
        );
        let message = "no trusted document has the id `sha256:00`";
        assert_eq!(
            unknown.text,
            unknown.refusal(message, "PERSISTED_QUERY_NOT_IN_LIST")
        );
        // Without the requirement, other documents still run.
        let other = post(&app, json!({"query": OTHER})).await;
        assert_eq!(other.json()["data"]["product"]["sku"], DEMO_SKU, "{format}");
        app.stop().await.expect("clean stop");
    }
}

#[tokio::test]
async fn requiring_trusted_documents_refuses_every_other_document() {
    let (file, id) = manifest("relay");
    let path = file.path().to_str().expect("a UTF-8 path");
    let app = TestApp::spawn(&[
        "--demo-comments",
        "20",
        "--trusted-documents",
        path,
        "--require-trusted-documents",
    ])
    .await;
    let message = "this server runs only trusted documents: send the `documentId` of a document in its manifest";
    let other = sha256_hex(OTHER);
    for refused in [
        post(&app, json!({"query": OTHER})).await,
        get(&app, &[("query", OTHER.to_owned())]).await,
        post(
            &app,
            json!({"query": OTHER, "extensions": persisted(&other)}),
        )
        .await,
    ] {
        assert_eq!(
            (refused.status, refused.cache_control.as_str()),
            (400, "no-store")
        );
        assert_eq!(
            refused.text,
            refused.refusal(message, "QUERY_NOT_IN_SAFELIST")
        );
    }
    let unlisted = get(&app, &get_by_hash(&other)).await;
    assert_eq!(unlisted.code(), "PERSISTED_QUERY_NOT_IN_LIST");
    // The trusted document runs by id, by hash, and as its own text.
    let expected = ids(&get(&app, &[("documentId", id), ("variables", variables())]).await);
    assert_eq!(
        ids(&get(&app, &get_by_hash(&sha256_hex(PAGE))).await),
        expected
    );
    let as_text = post(&app, json!({"query": PAGE, "variables": {"first": 3}})).await;
    assert_eq!(ids(&as_text), expected);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_bad_manifest_stops_the_server_at_start_up_naming_the_flag() {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), r#"{"x": "query {"}"#).expect("written");
    let path = file.path().to_str().expect("a UTF-8 path");
    let message =
        crate::helpers::process::serve_fails_to_start(&["--trusted-documents", path]).await;
    assert!(message.contains("--trusted-documents"), "{message}");
    assert!(message.contains("document `x` does not parse"), "{message}");
}

/// `tests/clients/persisted.mjs`: Apollo Client's `createPersistedQueryLink` (GET for hashed
/// queries) and urql's `persistedExchange` page through a product, each document's text sent
/// once after one `PersistedQueryNotFound`, every later page a GET with the hash only; neither
/// library logs anything.
#[tokio::test]
async fn apollo_client_and_urql_page_through_a_product_with_automatic_persisted_queries() {
    let app = TestApp::embedded(45).await;
    let endpoint = format!("{}/graphql", app.address);
    let (success, output) = crate::helpers::node::node("persisted.mjs", &[&endpoint]).await;
    assert!(success, "{output}");
    assert!(
        output.contains("persisted: 3 checks passed, 0 failed, 0 warnings"),
        "{output}"
    );
    app.stop().await.expect("clean stop");
}

/// Registering is paid for like any request: a client whose cost budget is spent is refused
/// (429) and its text is not registered.
#[tokio::test]
async fn a_client_whose_budget_is_spent_registers_nothing() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "2",
        "--rate-limit-writes",
        "0",
    ])
    .await;
    let spend = post(&app, json!({"query": OTHER})).await;
    assert_eq!(spend.status, 200, "{}", spend.text);
    let hash = sha256_hex(OTHER);
    let refused = post(
        &app,
        json!({"query": OTHER, "extensions": persisted(&hash)}),
    )
    .await;
    assert_eq!(
        (refused.status, refused.code()),
        (429, "RATE_LIMITED".into())
    );
    let miss = get(&app, &[("extensions", persisted(&hash).to_string())]).await;
    assert_eq!(miss.code(), "PERSISTED_QUERY_NOT_FOUND", "{}", miss.text);
    app.stop().await.expect("clean stop");
}

/// `--require-trusted-documents` holds over WebSockets too: a subscription not in the manifest
/// is refused, one in it runs (and sees a comment a trusted mutation added).
#[tokio::test]
async fn requiring_trusted_documents_refuses_other_subscriptions_too() {
    use crate::helpers::ADD_COMMENT;
    use crate::helpers::websocket::{Client, EVENTS};
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    let manifest = json!({ "events": EVENTS, "add": ADD_COMMENT });
    std::fs::write(file.path(), manifest.to_string()).expect("written");
    let path = file.path().to_str().expect("a UTF-8 path");
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--trusted-documents",
        path,
        "--require-trusted-documents",
    ])
    .await;
    let mut client = Client::ready(&app).await;
    let other = "subscription { commentEvents(sku: \"OK\") { kind } }";
    client.subscribe_to("other", other, json!({})).await;
    let message = client.next().await;
    assert!(
        message.to_string().contains("QUERY_NOT_IN_SAFELIST"),
        "{message:#}"
    );
    client.subscribe("trusted", json!({ "sku": "OK" })).await;
    app.add_comment(None, "OK", "a trusted subscription sees this", 5)
        .await;
    // The refused operation then says `complete`; the trusted one's event follows.
    let mut event = client.next().await;
    while event["id"] == "other" {
        event = client.next().await;
    }
    assert_eq!(event["type"], "next", "{event:#}");
    let seen = event.to_string();
    assert!(
        seen.contains("a trusted subscription sees this"),
        "{event:#}"
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_text_answered_from_the_response_cache_registers_its_hash() {
    let app = TestApp::spawn(&["--demo-comments", "20", "--response-cache-bytes", "1048576"]).await;
    let hash = sha256_hex(PAGE);
    let text = vec![("query", PAGE.to_owned()), ("variables", variables())];
    // The first answer is kept unverified, the second verified: repeats are hits from then on.
    for _ in 0..2 {
        ids(&get(&app, &text).await);
    }
    let mut with_hash = text.clone();
    with_hash.push(("extensions", persisted(&hash).to_string()));
    let with_hash: Vec<(&str, &str)> = with_hash.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let hit = app.get_graphql(&with_hash, &[]).await;
    // Only an answer kept verified has an `ETag`, and the third request of a text is a hit.
    assert!(
        hit.header("etag").is_some(),
        "answered from the response cache"
    );
    let expected = ids(&hit.into());
    // Apollo Client and urql send the hash alone from now on: it must be known.
    assert_eq!(ids(&get(&app, &get_by_hash(&hash)).await), expected);
    app.stop().await.expect("clean stop");
}
