//! `_entities` as a gateway calls it: each representation resolves on its own (one bad one is a
//! null and an error at its index, as the Federation specification has it, where
//! async-graphql's own `_entities` failed them all), a category page is one index call, and
//! every representation is priced and held to the server's limits.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp, error_codes};

const ENTITIES: &str = "query($representations: [_Any!]!) { _entities(representations: $representations) { __typename ... on Product { sku } ... on Comment { rating } } }";

fn product(sku: &str) -> Value {
    json!({ "__typename": "Product", "sku": sku })
}

#[tokio::test]
async fn a_bad_representation_is_a_null_and_an_error_at_its_index_and_the_others_resolve() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "3"]).await;
    let first = app
        .data("{ product(sku: \"DAFT_PUNK_TSHIRT\") { comments(first: 1) { edges { node { id rating } } } } }", json!({}))
        .await;
    let node = &first["product"]["comments"]["edges"][0]["node"];
    let (id, rating) = (node["id"].as_str().expect("an id"), &node["rating"]);
    let missing =
        dynapage::graphql::GlobalId::Comment(dynapage::domain::CommentId::new(1)).encode();
    let representations = json!([
        product(DEMO_SKU),
        { "__typename": "Shoe", "sku": "a" },
        { "__typename": "Product", "sku": "not a sku" },
        { "__typename": "Comment", "id": id },
        { "__typename": "Comment", "id": missing },
        { "__typename": "Product" },
    ]);
    let body = json!({ "query": ENTITIES, "variables": { "representations": representations } });
    let raw = app
        .raw_request(
            "POST",
            "/graphql",
            &[("content-type", "application/json")],
            &body.to_string(),
        )
        .await;
    assert_eq!(raw.status, 200);
    let text = String::from_utf8(raw.body.clone()).expect("UTF-8");
    // The bytes a gateway receives: the list in order, a null where each bad one stood.
    let data = format!(
        "{{\"data\":{{\"_entities\":[{{\"__typename\":\"Product\",\"sku\":\"{DEMO_SKU}\"}},null,null,{{\"__typename\":\"Comment\",\"rating\":{rating}}},null,null]}},\"errors\":["
    );
    assert!(text.starts_with(&data), "{text}");
    let response: Value = serde_json::from_str(&text).expect("JSON");
    let errors = response["errors"].as_array().expect("errors");
    let at: Vec<(Value, &str)> = errors
        .iter()
        .map(|e| {
            (
                e["path"].clone(),
                e["extensions"]["code"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        at,
        [
            (json!(["_entities", 1]), "BAD_USER_INPUT"),
            (json!(["_entities", 2]), "BAD_USER_INPUT"),
            (json!(["_entities", 4]), "NOT_FOUND"),
            (json!(["_entities", 5]), "BAD_USER_INPUT"),
        ],
        "{response:#}"
    );
    let messages: Vec<&str> = errors
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(messages[0].contains("not `Shoe`"), "{messages:?}");
    assert!(messages[3].contains("`sku`"), "{messages:?}");
}

#[tokio::test]
async fn more_than_100_representations_are_refused_and_nothing_is_read() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "0"]).await;
    let many: Vec<Value> = (0..101).map(|i| product(&format!("SKU-{i}"))).collect();
    let response = app
        .graphql(ENTITIES, json!({ "representations": many }))
        .await;
    assert_eq!(error_codes(&response), ["BAD_USER_INPUT"], "{response:#}");
    assert!(
        response["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 100")),
        "{response:#}"
    );
    assert_eq!(response["data"], Value::Null, "`_entities` is non-null");
    assert_eq!(
        response["extensions"]["cost"]["indexCalls"], 0,
        "{response:#}"
    );
}

#[tokio::test]
async fn a_category_page_of_48_products_is_one_index_call_priced_per_product() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "30"]).await;
    let mut skus: Vec<String> = (1..48).map(|i| format!("SKU-{i:02}")).collect();
    skus.push(DEMO_SKU.to_owned());
    let representations: Vec<Value> = skus.iter().map(|s| product(s)).collect();
    let summaries = "query($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { ratingSummary { average total } } } }";
    let response = app
        .graphql(summaries, json!({ "representations": representations }))
        .await;
    assert_eq!(response.get("errors"), None, "{response:#}");
    let cost = &response["extensions"]["cost"];
    assert_eq!(cost["indexCalls"], 1, "{cost:#}");
    assert_eq!(cost["storeQueries"], 0, "{cost:#}");
    // Like a `product(sku:)` field each: 1 for the product, 3 for its summary; 1 for the field.
    let one = app
        .graphql(
            "{ product(sku: \"SKU-01\") { ratingSummary { average total } } }",
            json!({}),
        )
        .await;
    let per_product = one["extensions"]["cost"]["requestedQueryCost"]
        .as_u64()
        .expect("a price");
    assert_eq!(cost["requestedQueryCost"], 48 * per_product + 1, "{cost:#}");
    let entities = response["data"]["_entities"].as_array().expect("a list");
    assert_eq!(entities[47]["ratingSummary"]["total"], 30);
    assert_eq!(
        entities[0]["ratingSummary"],
        json!({ "average": null, "total": 0 })
    );

    // Their first pages: one store call per product at most.
    let pages = "query($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { comments(first: 3) { totalCount edges { node { rating } } } } } }";
    let response = app
        .graphql(pages, json!({ "representations": representations }))
        .await;
    assert_eq!(response.get("errors"), None, "{response:#}");
    let cost = &response["extensions"]["cost"];
    assert!(
        cost["storeQueries"].as_u64().is_some_and(|q| q <= 48),
        "{cost:#}"
    );
    let last = &response["data"]["_entities"][47]["comments"];
    assert_eq!(last["totalCount"], 30);
    assert_eq!(last["edges"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn the_item_cap_holds_every_representation() {
    let app = TestApp::spawn(&[
        "--federation",
        "--demo-comments",
        "0",
        "--max-items-per-request",
        "10",
    ])
    .await;
    let comment =
        dynapage::graphql::GlobalId::Comment(dynapage::domain::CommentId::new(1)).encode();
    let comments: Vec<Value> = (0..20)
        .map(|_| json!({ "__typename": "Comment", "id": comment }))
        .collect();
    let response = app
        .graphql(ENTITIES, json!({ "representations": comments }))
        .await;
    assert_eq!(error_codes(&response), ["TOO_MANY_ITEMS"], "{response:#}");
    assert_eq!(
        response["data"],
        Value::Null,
        "refused before it ran: {response:#}"
    );
}

#[tokio::test]
async fn a_costly_fan_out_and_malformed_representations_are_refused_before_any_read() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "0"]).await;
    // 100 products × a page of 100 each: priced per representation, far above the limit.
    let many: Vec<Value> = (0..100).map(|i| product(&format!("SKU-{i}"))).collect();
    let fan_out = "query($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { comments(first: 100) { edges { node { body } } } } } }";
    let response = app
        .graphql(fan_out, json!({ "representations": many }))
        .await;
    assert_eq!(response["data"], Value::Null, "{response:#}");
    let message = response["errors"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("more than the 5000"), "{response:#}");
    // Not a list, or not objects: each refused with a code, nothing read.
    for representations in [
        json!("Product"),
        json!([1, [2], null]),
        json!({ "sku": "a" }),
    ] {
        let response = app
            .graphql(ENTITIES, json!({ "representations": representations }))
            .await;
        let codes = error_codes(&response);
        assert!(!codes.is_empty(), "{representations}: {response:#}");
        let cost = &response["extensions"]["cost"];
        assert!(
            cost.is_null() || (cost["storeQueries"] == 0 && cost["indexCalls"] == 0),
            "{representations}: {response:#}"
        );
    }
}
