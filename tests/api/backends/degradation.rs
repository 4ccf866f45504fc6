//! With the index (Redis) down, pages that need no index keep working; `totalCount` and
//! index-backed offsets answer `INDEX_UNAVAILABLE` for their field only; when Redis is back,
//! the server recovers by itself (`docs/api/errors.md`).

use serde_json::json;

use crate::helpers::{DEMO_SKU, TestApp, error_codes, eventually};
use crate::support::redis_server::RedisServer;

const WALK: &str =
    "query($after: String) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 50, after: $after) {
  totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }";

#[tokio::test]
async fn a_walk_survives_redis_going_away_and_counts_come_back_with_it() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let app = TestApp::spawn(&[
        "--demo-comments",
        "300",
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        "degrade:",
    ])
    .await;

    let first = app.graphql(WALK, json!({ "after": null })).await;
    assert_eq!(first["data"]["comments"]["totalCount"], 300, "{first:#}");
    let mut after = first["data"]["comments"]["pageInfo"]["endCursor"].clone();
    let mut seen = 50;

    redis.stop();
    while after.is_string() {
        let page = app.graphql(WALK, json!({ "after": after })).await;
        let connection = &page["data"]["comments"];
        assert!(
            connection["edges"].is_array(),
            "edges are still served: {page:#}"
        );
        assert_eq!(connection["totalCount"], serde_json::Value::Null);
        assert_eq!(
            error_codes(&page),
            ["INDEX_UNAVAILABLE"],
            "only totalCount fails"
        );
        assert_eq!(page["errors"][0]["path"], json!(["comments", "totalCount"]));
        seen += connection["edges"].as_array().map_or(0, Vec::len);
        after = if connection["pageInfo"]["hasNextPage"] == true {
            connection["pageInfo"]["endCursor"].clone()
        } else {
            json!(null)
        };
    }
    assert_eq!(seen, 300, "the walk finished without the index");

    let small = app
        .page(DEMO_SKU, json!({ "first": 5, "offset": 40 }))
        .await;
    assert_eq!(
        small.ids.len(),
        5,
        "offsets under the threshold are read from the store"
    );
    let deep = app
        .graphql(
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 5, offset: 250) { edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_codes(&deep), ["INDEX_UNAVAILABLE"], "{deep:#}");
    // Not ready without the index.
    crate::helpers::until_readyz(&app, 503).await;

    // Writes while Redis is down are kept by the feed and applied once it is back.
    app.add_comment(None, DEMO_SKU, "while redis slept", 5)
        .await;

    redis.restart();
    eventually("counts come back by themselves", || async {
        let page = app.graphql(WALK, json!({ "after": null })).await;
        page["data"]["comments"]["totalCount"].as_i64()
    })
    .await;
    // The restarted Redis kept nothing (--save ""): it holds what the feed applied since; a
    // reindex (see the sync tests) restores the rest.
    let count = app
        .data(
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\") { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(
        count["comments"]["totalCount"], 1,
        "the write made while Redis was down was not lost"
    );
    crate::helpers::until_readyz(&app, 200).await;
}

#[tokio::test]
async fn without_the_index_page_cursors_and_start_offset_are_null_and_the_page_is_served() {
    let (app, _redis) = TestApp::without_its_index(120, &[]).await;
    let response = app
        .graphql(
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 10) { edges { node { id } } startOffset pageCursors { pageCount } } }",
            json!({}),
        )
        .await;
    let connection = &response["data"]["comments"];
    assert_eq!(
        connection["edges"].as_array().map(Vec::len),
        Some(10),
        "{response:#}"
    );
    assert_eq!(connection["startOffset"], serde_json::Value::Null);
    assert_eq!(connection["pageCursors"], serde_json::Value::Null);
    assert_eq!(
        error_codes(&response),
        ["INDEX_UNAVAILABLE", "INDEX_UNAVAILABLE"],
        "{response:#}"
    );
    let mut paths: Vec<String> = response["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["path"].to_string())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            r#"["comments","pageCursors"]"#,
            r#"["comments","startOffset"]"#
        ]
    );

    // `containing` needs the index for its page: the connection is null, with the code.
    let id = connection["edges"][3]["node"]["id"].clone();
    let response = app
        .graphql(
            "query($id: ID) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 10, containing: $id) { edges { node { id } } } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        error_codes(&response),
        ["INDEX_UNAVAILABLE"],
        "{response:#}"
    );
    assert_eq!(response["data"]["comments"], serde_json::Value::Null);
}
