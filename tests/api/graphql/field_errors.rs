//! Field errors reach clients as the GraphQL specification says, checked on the raw bytes a
//! client receives (serde_json would read a missing key as `null` and hide the difference):
//! every error's path finds a `null`, a null in a non-null position propagates to the nearest
//! nullable ancestor (or to `data`), and everything else stays. One case per error code that can
//! arise inside `data`, on `Query.comments`, `product { comments }`, `node`, `nodes` and the
//! mutations, with and without aliases and fragments.
//!
//! These cases failed on async-graphql 7.2.1 alone (`src/graphql/field_errors/mod.rs` says why);
//! when upstream completes field errors itself, they keep passing without that module.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::support::redis_server::RedisServer;

/// The body's raw text and its parsed form.
pub(crate) async fn raw(app: &TestApp, query: &str, variables: Value) -> (String, Value) {
    let answer = app.graphql_reply(None, query, variables).await;
    assert_eq!(answer.status, 200);
    let parsed = answer.json();
    (answer.text, parsed)
}

/// Asserts the body starts with exactly `{"data":<data>,"errors":` and that its errors have
/// these codes and paths.
#[track_caller]
pub(crate) fn assert_partial(body: &(String, Value), data: &str, errors: &[(&str, Value)]) {
    let (text, parsed) = body;
    let prefix = format!("{{\"data\":{data},\"errors\":");
    assert!(
        text.starts_with(&prefix),
        "expected the body to start with\n  {prefix}\nbut it is\n  {text}"
    );
    let got: Vec<(String, Value)> = parsed["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["extensions"]["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["path"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, Value)> = errors
        .iter()
        .map(|(code, path)| ((*code).to_owned(), path.clone()))
        .collect();
    assert_eq!(got, want, "{text}");
}

/// An embedded server whose Redis index has gone away after start-up, with offsets above 10
/// resolved through the index.
async fn app_without_its_index() -> (TestApp, RedisServer) {
    TestApp::without_its_index(30, &["--offset-index-threshold", "10"]).await
}

#[tokio::test]
async fn a_count_the_index_cannot_answer_is_a_null_key_beside_the_fields_that_resolved() {
    let (app, _redis) = app_without_its_index().await;
    let unavailable = |path: Value| ("INDEX_UNAVAILABLE", path);

    let body = raw(
        &app,
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 1) { __typename totalCount } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"comments":{"__typename":"CommentConnection","totalCount":null}}"#,
        &[unavailable(json!(["comments", "totalCount"]))],
    );

    // The only field selected: the connection is still an object, not null.
    let body = raw(
        &app,
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 1) { totalCount } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"comments":{"totalCount":null}}"#,
        &[unavailable(json!(["comments", "totalCount"]))],
    );

    let body = raw(
        &app,
        r#"{ c: comments(sku: "DAFT_PUNK_TSHIRT", first: 0) { n: totalCount e: edges { cursor } } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"c":{"n":null,"e":[]}}"#,
        &[unavailable(json!(["c", "n"]))],
    );

    let body = raw(
        &app,
        r#"{ product(sku: "DAFT_PUNK_TSHIRT") { sku comments(first: 0) { ...Counted } } }
           fragment Counted on CommentConnection { edges { cursor } totalCount pageInfo { hasNextPage } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"product":{"sku":"DAFT_PUNK_TSHIRT","comments":{"edges":[],"totalCount":null,"pageInfo":{"hasNextPage":true}}}}"#,
        &[unavailable(json!(["product", "comments", "totalCount"]))],
    );
}

#[tokio::test]
async fn a_deep_offset_without_the_index_nulls_data_through_the_non_null_connection() {
    let (app, _redis) = app_without_its_index().await;
    let body = raw(
        &app,
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 5, offset: 20) { edges { cursor } } }"#,
        json!({}),
    )
    .await;
    assert_partial(&body, "null", &[("INDEX_UNAVAILABLE", json!(["comments"]))]);

    let body = raw(
        &app,
        r#"{ p: product(sku: "DAFT_PUNK_TSHIRT") { sku ... on Product { comments(first: 5, offset: 20) { edges { cursor } } } } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        "null",
        &[("INDEX_UNAVAILABLE", json!(["p", "comments"]))],
    );
}

#[tokio::test]
async fn refused_connection_arguments_null_data_because_connections_are_non_null() {
    let app = TestApp::embedded(10).await;
    let cases = [
        (
            r#"{ comments(sku: "X", first: 1, after: "garbage") { totalCount } }"#,
            "BAD_CURSOR",
            json!(["comments"]),
        ),
        (
            r#"{ comments(sku: "X", first: 1000) { totalCount } }"#,
            "PAGE_SIZE_EXCEEDED",
            json!(["comments"]),
        ),
        (
            r#"{ comments(sku: "X", first: -1) { totalCount } }"#,
            "BAD_USER_INPUT",
            json!(["comments"]),
        ),
        (
            r#"{ comments(sku: "X", ratings: [9], first: 1) { totalCount } }"#,
            "BAD_USER_INPUT",
            json!(["comments"]),
        ),
        (
            r#"{ product(sku: "X") { sku comments(first: 1, after: "garbage") { totalCount } } }"#,
            "BAD_CURSOR",
            json!(["product", "comments"]),
        ),
        (
            r#"{ a: product(sku: "X") { sku c: comments(last: 1000) { totalCount } } }"#,
            "PAGE_SIZE_EXCEEDED",
            json!(["a", "c"]),
        ),
        (
            r#"{ product(sku: "X") { ...P } } fragment P on Product { comments(first: 1, offset: -2) { totalCount } }"#,
            "BAD_USER_INPUT",
            json!(["product", "comments"]),
        ),
        (
            r#"{ product(sku: "not a sku!") { sku } }"#,
            "BAD_USER_INPUT",
            json!(["product"]),
        ),
    ];
    for (query, code, path) in cases {
        let body = raw(&app, query, json!({})).await;
        assert_partial(&body, "null", &[(code, path)]);
    }
}

#[tokio::test]
async fn a_failed_node_is_null_and_its_siblings_stay() {
    let app = TestApp::embedded(5).await;
    let missing = app.deleted_comment_id().await;

    let body = raw(&app, r#"{ node(id: "garbage") { id } }"#, json!({})).await;
    assert_partial(
        &body,
        r#"{"node":null}"#,
        &[("BAD_USER_INPUT", json!(["node"]))],
    );

    let body = raw(
        &app,
        "query($id: ID!) { node(id: $id) { id } }",
        json!({ "id": missing }),
    )
    .await;
    assert_partial(&body, r#"{"node":null}"#, &[("NOT_FOUND", json!(["node"]))]);

    let body = raw(
        &app,
        r#"{ product(sku: "X") { sku } gone: node(id: "garbage") { ... on Comment { body } } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"product":{"sku":"X"},"gone":null}"#,
        &[("BAD_USER_INPUT", json!(["gone"]))],
    );

    let body = raw(
        &app,
        r#"query($id: ID!) { first: node(id: $id) { ...C } second: product(sku: "Y") { sku } }
           fragment C on Comment { body }"#,
        json!({ "id": missing }),
    )
    .await;
    assert_partial(
        &body,
        r#"{"first":null,"second":{"sku":"Y"}}"#,
        &[("NOT_FOUND", json!(["first"]))],
    );
}

#[tokio::test]
async fn a_refused_nodes_list_nulls_data_because_the_list_is_non_null() {
    let app = TestApp::embedded(5).await;
    let body = raw(
        &app,
        r#"{ ok: product(sku: "X") { sku } nodes(ids: ["garbage"]) { id } }"#,
        json!({}),
    )
    .await;
    assert_partial(&body, "null", &[("BAD_USER_INPUT", json!(["nodes"]))]);

    let many: Vec<String> = (0..101).map(|n| format!("P{n}")).collect();
    let body = raw(
        &app,
        "query($ids: [ID!]!) { n: nodes(ids: $ids) { id } }",
        json!({ "ids": many }),
    )
    .await;
    assert_partial(&body, "null", &[("BAD_USER_INPUT", json!(["n"]))]);
}

#[tokio::test]
async fn refused_mutations_null_data_because_their_payloads_are_non_null() {
    let app = TestApp::embedded(5).await;
    let cases = [
        (
            r#"mutation { addComment(input: { sku: "X", author: "a", body: " ", rating: 3 }) { comment { id } } }"#,
            "BAD_USER_INPUT",
            json!(["addComment"]),
        ),
        (
            r#"mutation { added: addComment(input: { sku: "X", author: "a", body: "b", rating: 6 }) { ...Added } }
               fragment Added on AddCommentPayload { comment { id } }"#,
            "BAD_USER_INPUT",
            json!(["added"]),
        ),
        (
            r#"mutation { updateComment(input: { id: "garbage", body: "x" }) { comment { id } } }"#,
            "BAD_USER_INPUT",
            json!(["updateComment"]),
        ),
        (
            r#"mutation { gone: deleteComment(input: { id: "garbage" }) { deletedCommentId } }"#,
            "BAD_USER_INPUT",
            json!(["gone"]),
        ),
    ];
    for (query, code, path) in cases {
        let body = raw(&app, query, json!({})).await;
        assert_partial(&body, "null", &[(code, path)]);
    }

    let missing = app.deleted_comment_id().await;
    let body = raw(
        &app,
        "mutation($id: ID!) { edited: updateComment(input: { id: $id, body: \"x\" }) { comment { id } } }",
        json!({ "id": missing }),
    )
    .await;
    assert_partial(&body, "null", &[("NOT_FOUND", json!(["edited"]))]);
}

#[tokio::test]
async fn a_response_without_errors_keeps_every_key_and_has_no_errors_entry() {
    let app = TestApp::embedded(5).await;
    let (text, _) = raw(
        &app,
        r#"{ product(sku: "NONE") { sku comments(first: 1) { totalCount edges { cursor } pageInfo { startCursor } } } }"#,
        json!({}),
    )
    .await;
    assert!(
        text.starts_with(
            r#"{"data":{"product":{"sku":"NONE","comments":{"totalCount":0,"edges":[],"pageInfo":{"startCursor":null}}}},"extensions":"#
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_store_outage_nulls_the_node_it_needed_and_nothing_else() {
    let (app, proxy) = TestApp::on_proxied_dynamodb(&[]).await;
    let page = app
        .data(
            r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 1) { edges { node { id } } } }"#,
            json!({}),
        )
        .await;
    let id = page["comments"]["edges"][0]["node"]["id"].clone();

    proxy.set(crate::support::fault_proxy::Fault::Refuse);
    let body = raw(
        &app,
        r#"query($id: ID!) { product(sku: "X") { sku } comment: node(id: $id) { id } }"#,
        json!({ "id": id }),
    )
    .await;
    assert_partial(
        &body,
        r#"{"product":{"sku":"X"},"comment":null}"#,
        &[("STORE_UNAVAILABLE", json!(["comment"]))],
    );

    let body = raw(
        &app,
        r#"mutation { addComment(input: { sku: "X", author: "a", body: "b", rating: 1 }) { comment { id } } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        "null",
        &[("STORE_UNAVAILABLE", json!(["addComment"]))],
    );
}
