//! dynapage behind real gateways: the supergraph both composers make from its subgraph and a
//! products subgraph, queried through `@apollo/gateway` and Hive Gateway, answers what dynapage
//! answers alone.

use serde_json::{Value, json};

use super::stack::Stack;
use crate::helpers::{Api, DEMO_SKU, TestApp, error_codes};

/// A product page's connection, as a storefront asks it: a numbered page with its page links.
const PRODUCT_PAGE: &str = "query($sku: String!, $offset: Int, $order: CommentOrder, $ratings: [Int!]) { product(sku: $sku) { sku comments(first: 20, offset: $offset, orderBy: $order, ratings: $ratings) { totalCount startOffset pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id body rating createdAt } } pageCursors { first { page cursor } around { page cursor isCurrent } last { page cursor } } } } }";

/// The page before a cursor.
const BACKWARD_PAGE: &str = "query($sku: String!, $before: String!) { product(sku: $sku) { comments(last: 5, before: $before) { pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { node { id } } } } }";

/// `query`'s `data` from `api`, failing on any error, with every number as a float: a
/// gateway in JavaScript writes the `Float` 4.0 as `4`.
async fn data(api: &Api, name: &str, query: &str, variables: Value) -> Value {
    let response = api.graphql(query, variables).await;
    assert_eq!(response.get("errors"), None, "{name}: {response:#}");
    floats(response["data"].clone())
}

fn floats(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.into_iter().map(floats).collect()),
        Value::Object(fields) => fields.into_iter().map(|(k, v)| (k, floats(v))).collect(),
        other => other,
    }
}

#[tokio::test]
async fn both_composers_accept_the_subgraph_and_both_gateways_answer_what_dynapage_answers() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "60"]).await;
    for (sku, rating) in [("SKU-03", 5), ("SKU-03", 2), ("SKU-17", 4)] {
        app.add_comment(None, sku, "through the gateway", rating)
            .await;
    }
    // The same demo product on a stand-alone server (no `--federation`), which the product
    // pages are compared with, cursors included (both seal them with the development key).
    let standalone = TestApp::spawn(&["--demo-comments", "60"]).await;
    let stack = Stack::around(&app, 48).await;
    let composition = &stack.report["composition"];
    assert_eq!(
        composition["apollo"]["errors"],
        json!([]),
        "{composition:#}"
    );
    assert_eq!(composition["apollo"]["hints"], json!([]), "{composition:#}");
    assert_eq!(composition["guild"]["errors"], json!([]), "{composition:#}");
    let (direct, alone): (&Api, &Api) = (&app, &standalone);
    for (name, gateway) in stack.gateways() {
        // The category page: the catalogue's products with dynapage's stars.
        let category = "{ products(first: 48) { sku name price ratingSummary { average total } } }";
        let page = data(&gateway, name, category, json!({})).await;
        let products = page["products"].as_array().expect("products");
        assert_eq!(products.len(), 48, "{name}");
        for product in products {
            let sku = product["sku"].as_str().expect("a sku");
            let alone = data(
                direct,
                name,
                "query($sku: String!) { product(sku: $sku) { ratingSummary { average total } } }",
                json!({ "sku": sku }),
            )
            .await;
            assert_eq!(
                product["ratingSummary"], alone["product"]["ratingSummary"],
                "{name} {sku}"
            );
        }
        assert_eq!(
            products[2]["ratingSummary"],
            json!({ "average": 3.5, "total": 2.0 })
        );
        assert_eq!(products[2]["name"], "Product 3");

        // A product page: numbered pages, page links, orders, a filter; what a stand-alone
        // server answers.
        let pages = [
            (0, "NEWEST", json!(null)),
            (20, "NEWEST", json!(null)),
            (40, "HIGHEST_RATED", json!(null)),
            (10, "OLDEST", json!([4, 5])),
        ];
        for (offset, order, ratings) in pages {
            let variables =
                json!({ "sku": DEMO_SKU, "offset": offset, "order": order, "ratings": ratings });
            let through = data(&gateway, name, PRODUCT_PAGE, variables.clone()).await;
            let standing_alone = data(alone, name, PRODUCT_PAGE, variables).await;
            assert_eq!(
                through, standing_alone,
                "{name}: offset {offset}, {order}, {ratings}"
            );
        }
        // A backward page from the last page's start: exact `hasPreviousPage`.
        let last = json!({ "sku": DEMO_SKU, "offset": 40 });
        let last = data(alone, name, PRODUCT_PAGE, last).await;
        let before = &last["product"]["comments"]["pageInfo"]["startCursor"];
        let variables = json!({ "sku": DEMO_SKU, "before": before });
        let through = data(&gateway, name, BACKWARD_PAGE, variables.clone()).await;
        assert_eq!(
            through,
            data(alone, name, BACKWARD_PAGE, variables).await,
            "{name}"
        );
        let info = &through["product"]["comments"]["pageInfo"];
        assert_eq!(
            info["hasPreviousPage"], true,
            "{name}: 35 comments come before"
        );
        assert_eq!(info["hasNextPage"], true, "{name}: 20 come after");
        // The products subgraph's fields on dynapage's product.
        let named = "{ product(sku: \"SKU-17\") { name price comments(first: 1) { edges { node { rating product { name } } } } } }";
        let named = data(&gateway, name, named, json!({})).await;
        assert_eq!(named["product"]["name"], "Product 17", "{name}");
        let edge = &named["product"]["comments"]["edges"][0]["node"];
        assert_eq!(
            edge,
            &json!({ "rating": 4.0, "product": { "name": "Product 17" } }),
            "{name}"
        );

        // A field error stays a null in its place; the rest of the answer stands.
        let faulty = "{ products(first: 3) { sku comments(first: 2) { totalCount pageCursors(size: 1000) { around { page } } } } }";
        let response = gateway.graphql(faulty, json!({})).await;
        let products = response["data"]["products"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {response:#}"));
        assert_eq!(products.len(), 3, "{name}: {response:#}");
        assert_eq!(
            products[2]["comments"],
            json!({ "totalCount": 2, "pageCursors": null }),
            "{name}: {response:#}"
        );
        // dynapage says where (`_entities`, index, field); Apollo's gateway maps that onto the
        // client's path, Hive Gateway 2.15 leaves the list's indices out.
        let path = match name {
            "apollo" => json!(["products", 0, "comments", "pageCursors"]),
            _ => json!(["products", "comments", "pageCursors"]),
        };
        assert_eq!(response["errors"][0]["path"], path, "{name}: {response:#}");
        let codes = error_codes(&response);
        assert!(
            codes.iter().all(|c| c == "PAGE_SIZE_EXCEEDED"),
            "{name}: {codes:?}"
        );
    }
}

#[tokio::test]
async fn a_category_page_through_the_gateway_is_one_index_call_in_dynapage() {
    // With the response cache on, what a response read is in its `Dynapage-Cost` header, which
    // the test's gateway copies onto its own response (a gateway drops a fetch's extensions).
    let cache = ["--response-cache-bytes", "16777216"];
    let app =
        TestApp::spawn(&[&["--federation", "--demo-comments", "0"][..], &cache].concat()).await;
    let stack = Stack::around(&app, 48).await;
    let gateway = stack.gateway("apollo");
    let category = "{ products(first: 48) { sku name price ratingSummary { average total } } }";
    let reply = gateway.graphql_reply(None, category, json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let response: Value = serde_json::from_str(&reply.text).expect("JSON");
    assert_eq!(
        response["data"]["products"].as_array().map(Vec::len),
        Some(48)
    );
    // The gateway made one fetch to dynapage (`_entities` for the 48), which read the index once.
    let cost = reply
        .headers
        .get("dynapage-cost")
        .expect("the fetch's Dynapage-Cost");
    assert_eq!(
        cost.to_str().expect("text"),
        "items-read=0, store-queries=0, index-calls=1"
    );
}
