//! Every refusal of `docs/api/errors.md` that applies to the embedded backends answers its
//! `extensions.code`, with a message that says what to fix, and nothing panics.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, PAGE_QUERY, TestApp, error_codes, merge};

async fn codes_for(app: &TestApp, args: Value) -> (Vec<String>, Value) {
    let response = app
        .graphql(PAGE_QUERY, merge(json!({ "sku": DEMO_SKU }), args))
        .await;
    (error_codes(&response), response)
}

#[tokio::test]
async fn bad_connection_arguments_are_refused_with_their_codes() {
    let app = TestApp::embedded(50).await;
    let other = app
        .page("HELMET_REPLICA", json!({ "first": 1 }))
        .await
        .end_cursor;
    let filtered = app
        .page(DEMO_SKU, json!({ "first": 1, "ratings": [5] }))
        .await
        .end_cursor;
    let good = app
        .page(DEMO_SKU, json!({ "first": 1 }))
        .await
        .end_cursor
        .expect("a cursor");
    let mut tampered = good.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");

    let cases = [
        (
            json!({ "first": -1 }),
            "BAD_USER_INPUT",
            "`first` must not be negative",
        ),
        (
            json!({ "last": -5 }),
            "BAD_USER_INPUT",
            "`last` must not be negative",
        ),
        (
            json!({ "first": 5, "offset": -1 }),
            "BAD_USER_INPUT",
            "`offset` must not be negative",
        ),
        (
            json!({ "first": 101 }),
            "PAGE_SIZE_EXCEEDED",
            "`first` may be at most 100",
        ),
        (
            json!({ "last": 1000 }),
            "PAGE_SIZE_EXCEEDED",
            "`last` may be at most 100",
        ),
        (
            json!({ "first": 5, "last": 5, "offset": 5 }),
            "BAD_USER_INPUT",
            "needs exactly one of `first` and `last`",
        ),
        (
            json!({ "offset": 5 }),
            "BAD_USER_INPUT",
            "needs exactly one of `first` and `last`",
        ),
        (
            json!({ "first": 5, "after": "not-a-cursor" }),
            "BAD_CURSOR",
            "`after` is not a valid cursor",
        ),
        (
            json!({ "last": 5, "before": "" }),
            "BAD_CURSOR",
            "`before` is not a valid cursor",
        ),
        (
            json!({ "first": 5, "after": other }),
            "BAD_CURSOR",
            "`after` is not a valid cursor",
        ),
        (
            json!({ "first": 5, "after": filtered }),
            "BAD_CURSOR",
            "`after` is not a valid cursor",
        ),
        (
            json!({ "first": 5, "after": tampered }),
            "BAD_CURSOR",
            "`after` is not a valid cursor",
        ),
        (
            json!({ "first": 5, "after": &good[..good.len() - 2] }),
            "BAD_CURSOR",
            "`after` is not a valid cursor",
        ),
        (
            json!({ "first": 5, "ratings": [0] }),
            "BAD_USER_INPUT",
            "between 1 and 5",
        ),
        (
            json!({ "first": 5, "ratings": [6] }),
            "BAD_USER_INPUT",
            "between 1 and 5",
        ),
        (
            json!({ "first": 5, "ratings": [] }),
            "BAD_USER_INPUT",
            "at least one rating",
        ),
        (
            json!({ "first": 5, "ratings": [4, 4] }),
            "BAD_USER_INPUT",
            "must not repeat",
        ),
        (
            json!({ "sku": "no spaces please", "first": 1 }),
            "BAD_USER_INPUT",
            "`sku` must be 1 to 64 characters",
        ),
    ];
    for (args, code, hint) in cases {
        let (codes, response) = codes_for(&app, args.clone()).await;
        assert_eq!(
            codes,
            vec![code.to_owned()],
            "{args} should be refused with {code}: {response:#}"
        );
        let message = response["errors"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains(hint),
            "message {message:?} should mention {hint:?}"
        );
        assert_eq!(
            response["data"],
            Value::Null,
            "no partial page for a refused argument"
        );
    }
}

#[tokio::test]
async fn unknown_and_malformed_global_ids_are_told_apart() {
    let app = TestApp::embedded(5).await;
    let missing = app.deleted_comment_id().await;

    let node = "query($id: ID!) { node(id: $id) { id } }";
    let response = app.graphql(node, json!({ "id": missing })).await;
    assert_eq!(error_codes(&response), ["NOT_FOUND"], "{response:#}");
    assert_eq!(response["data"]["node"], Value::Null);
    let response = app
        .graphql(node, json!({ "id": "definitely not an id" }))
        .await;
    assert_eq!(error_codes(&response), ["BAD_USER_INPUT"], "{response:#}");

    let update =
        "mutation($id: ID!) { updateComment(input: { id: $id, body: \"x\" }) { comment { id } } }";
    assert_eq!(
        error_codes(&app.graphql(update, json!({ "id": missing })).await),
        ["NOT_FOUND"]
    );
    assert_eq!(
        error_codes(&app.graphql(update, json!({ "id": "garbage" })).await),
        ["BAD_USER_INPUT"]
    );
    let delete = "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }";
    assert_eq!(
        error_codes(&app.graphql(delete, json!({ "id": missing })).await),
        ["NOT_FOUND"]
    );
    let product_id = app
        .data("{ product(sku: \"GONE\") { id } }", json!({}))
        .await["product"]["id"]
        .clone();
    assert_eq!(
        error_codes(&app.graphql(delete, json!({ "id": product_id })).await),
        ["BAD_USER_INPUT"]
    );
}

#[tokio::test]
async fn refused_mutations_write_nothing() {
    let app = TestApp::embedded(0).await;
    let add = "mutation($input: AddCommentInput!) { addComment(input: $input) { comment { id } } }";
    let long_body = "x".repeat(4_001);
    let bad_inputs = [
        json!({ "sku": "QUIET", "author": "ann", "body": "", "rating": 3 }),
        json!({ "sku": "QUIET", "author": "ann", "body": "   ", "rating": 3 }),
        json!({ "sku": "QUIET", "author": "ann", "body": long_body, "rating": 3 }),
        json!({ "sku": "QUIET", "author": "ann", "body": "fine", "rating": 0 }),
        json!({ "sku": "QUIET", "author": "ann", "body": "fine", "rating": 6 }),
        json!({ "sku": "QUIET", "author": "", "body": "fine", "rating": 3 }),
        json!({ "sku": "QUI ET", "author": "ann", "body": "fine", "rating": 3 }),
    ];
    for input in bad_inputs {
        let response = app.graphql(add, json!({ "input": input })).await;
        assert_eq!(
            error_codes(&response),
            ["BAD_USER_INPUT"],
            "{input}: {response:#}"
        );
    }
    let written = app
        .data(
            "{ product(sku: \"QUIET\") { comments { totalCount edges { cursor } } } }",
            json!({}),
        )
        .await;
    // Give the feed a moment: if anything had been written, it would show by now.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(written["product"]["comments"]["edges"], json!([]));
    let count = app
        .data(
            "{ product(sku: \"QUIET\") { comments { totalCount } } }",
            json!({}),
        )
        .await;
    assert_eq!(count["product"]["comments"]["totalCount"], 0);

    let id = app.add_comment(None, "QUIET", "keep me", 2).await;
    let update = "mutation($id: ID!, $rating: Int, $body: String) { updateComment(input: { id: $id, rating: $rating, body: $body }) { comment { id } } }";
    for (rating, body) in [
        (json!(9), json!(null)),
        (json!(null), json!("")),
        (json!(null), json!(null)),
    ] {
        let response = app
            .graphql(update, json!({ "id": id, "rating": rating, "body": body }))
            .await;
        assert_eq!(error_codes(&response), ["BAD_USER_INPUT"], "{response:#}");
    }
    let node = app
        .data(
            "query($id: ID!) { node(id: $id) { ... on Comment { body rating updatedAt } } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        node["node"],
        json!({ "body": "keep me", "rating": 2, "updatedAt": null })
    );
}

#[tokio::test]
async fn queries_too_deep_or_too_complex_are_refused_before_running() {
    let app = TestApp::embedded(5).await;
    let broken = app.graphql("{ product(sku: ", json!({})).await;
    assert_eq!(
        error_codes(&broken),
        ["GRAPHQL_VALIDATION_FAILED"],
        "a syntax error: {broken:#}"
    );
    let deep = "{ product(sku: \"A\") { comments(first: 1) { nodes { product { comments(first: 1) { nodes { product { comments(first: 1) { nodes { product { comments(first: 1) { nodes { id } } } } } } } } } } } } }";
    let response = app.graphql(deep, json!({})).await;
    assert_eq!(error_codes(&response), ["GRAPHQL_VALIDATION_FAILED"]);
    assert_eq!(
        response["errors"][0]["message"],
        "the query nests fields 13 deep; at most 12 are allowed"
    );
    // Inside introspection only `ofType` is free: a fan-out through `fields` and `type` counts.
    let deep_introspection = "{ __schema { types { fields { type { fields { type { fields { type { fields { type { fields { type { name } } } } } } } } } } } } }";
    let response = app.graphql(deep_introspection, json!({})).await;
    assert_eq!(
        response["errors"][0]["message"], "the query nests fields 13 deep; at most 12 are allowed",
        "{response:#}"
    );
    let wide = "{ product(sku: \"A\") { comments(first: 100) { nodes { product { comments(first: 100) { nodes { id body author } } } } } } }";
    let response = app.graphql(wide, json!({})).await;
    assert_eq!(
        error_codes(&response),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{response:#}"
    );
    let too_many_ids: Vec<String> = (0..101).map(|_| "x".to_owned()).collect();
    let response = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": too_many_ids }),
        )
        .await;
    assert_eq!(error_codes(&response), ["BAD_USER_INPUT"], "{response:#}");
}
