//! An `ETag` never names two bodies (issue 42, item 5): product versions start over when the
//! embedded index is rebuilt by a restart (`--data-dir`), and when a Redis index's keys are
//! flushed or restored from an older snapshot; a browser or CDN revalidating with an `ETag`
//! from before must then get the new page (`200`), never a `304` for its stale copy. The
//! server is really restarted between the requests, and the product's version is brought back
//! to the number it had when the old `ETag` was made.

use serde_json::{Value, json};

use crate::helpers::raw_http::{Raw, graphql_path};
use crate::helpers::{EDIT_COMMENT, TestApp, eventually};
use crate::support::redis_server::{RedisServer, connect};

const SKU: &str = "RESTARTED";
const PAGE: &str =
    "query($sku: String!) { comments(sku: $sku, first: 5) { edges { node { id body } } } }";
const CACHE: [&str; 2] = ["--response-cache-bytes", "1048576"];

async fn get(app: &TestApp, headers: &[(&str, &str)]) -> Raw {
    let path = graphql_path(PAGE, &json!({ "sku": SKU }));
    app.raw_request("GET", &path, headers, "").await
}

fn first_body(page: &Raw) -> Value {
    page.json()["data"]["comments"]["edges"][0]["node"]["body"].clone()
}

async fn add(app: &TestApp, body: &str) -> String {
    app.add_comment(None, SKU, body, 4).await
}

async fn edit(app: &TestApp, id: &str, body: &str) {
    app.data(EDIT_COMMENT, json!({ "id": id, "body": body }))
        .await;
}

/// Three GETs revalidating with `etag` (computed, computed and kept, then a hit): each must be
/// a `200` whose first comment says `expected`.
async fn never_not_modified(app: &TestApp, etag: &str, expected: &str) {
    for attempt in 0..3 {
        let page = get(app, &[("If-None-Match", etag)]).await;
        assert_eq!(
            page.status, 200,
            "attempt {attempt}: the old ETag named the old body"
        );
        assert_eq!(first_body(&page), expected);
        assert_ne!(page.header("etag").as_deref(), Some(etag));
    }
}

/// The `ETag` of the page once kept, and its body, once a revalidation with it is a `304`: the
/// writes just made reach the index through the change feed, each moving the product's version,
/// so an `ETag` taken before the last of them lands names a version already gone (on a loaded
/// machine the third GET below came after it, and got its `200`).
async fn kept_etag(app: &TestApp) -> (String, Value) {
    eventually("the ETag revalidates while nothing changes", || async {
        get(app, &[]).await;
        let verified = get(app, &[]).await;
        let etag = verified.header("etag")?;
        let hit = get(app, &[("If-None-Match", &etag)]).await;
        (hit.status == 304).then(|| (etag, first_body(&verified)))
    })
    .await
}

#[tokio::test]
async fn after_a_restart_on_the_same_data_dir_an_old_etag_never_revalidates_a_new_body() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let data_dir = dir.path().to_str().expect("UTF-8").to_owned();
    let args = [
        "--demo-comments",
        "0",
        "--data-dir",
        &data_dir,
        CACHE[0],
        CACHE[1],
    ];
    let app = TestApp::spawn(&args).await;
    let id = add(&app, "first run").await;
    edit(&app, &id, "first run, edited").await;
    edit(&app, &id, "first run, edited twice").await;
    let (etag, body) = kept_etag(&app).await;
    assert_eq!(body, "first run, edited twice");
    app.stop().await.expect("clean stop");

    // The restarted index counts the product's version again from 0 (loading the store is
    // one change), so a few edits bring it back to the number the old ETag was made at.
    let app = TestApp::spawn(&args).await;
    for edit_number in 1..=4 {
        let text = format!("second run, edit {edit_number}");
        edit(&app, &id, &text).await;
        never_not_modified(&app, &etag, &text).await;
    }
    app.stop().await.expect("clean stop");
}

/// The Redis key of `SKU`'s version under the default prefix.
const VERSION_KEY: &str = "dynapage:idx:{RESTARTED}:n";

#[tokio::test]
async fn after_a_flushed_redis_comes_back_at_an_old_version_an_old_etag_never_revalidates() {
    let redis = RedisServer::start();
    let url = redis.url();
    let args = [
        "--demo-comments",
        "0",
        "--index",
        "redis",
        "--redis-url",
        &url,
        CACHE[0],
        CACHE[1],
    ];
    let app = TestApp::spawn(&args).await;
    add(&app, "before the flush").await;
    let (etag, _) = kept_etag(&app).await;
    let mut conn = connect(&url).await;
    let old: u64 = redis::cmd("GET")
        .arg(VERSION_KEY)
        .query_async(&mut conn)
        .await
        .expect("the product's version");
    app.stop().await.expect("clean stop");

    // The index is lost (a flush; a failover to an empty replica) and the server restarts.
    let () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    let app = TestApp::spawn(&args).await;
    add(&app, "after the flush").await;
    // The product's version comes back to the old number: an older snapshot restored, or a
    // writer whose clock is behind the one that counted before.
    let () = redis::cmd("SET")
        .arg(VERSION_KEY)
        .arg(old)
        .query_async(&mut conn)
        .await
        .expect("SET");
    never_not_modified(&app, &etag, "after the flush").await;
    app.stop().await.expect("clean stop");
    drop(redis);
}
