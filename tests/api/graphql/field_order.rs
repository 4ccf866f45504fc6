//! Every object of a response has its keys in the order the operation selected them
//! (specification §7.2.2), whatever order its fields finished in: async-graphql 7.2.1 writes
//! them as they finish, so a field that waits for a batch (`ratingSummary`) or a read
//! (`comments`) came after its neighbours (`graphql::field_errors::order`). The bytes as a client
//! receives them.

use serde_json::json;

use crate::helpers::{DEMO_SKU, TestApp};

/// The response's bytes for `query`, over POST.
async fn bytes(app: &TestApp, query: &str) -> String {
    let body = json!({ "query": query }).to_string();
    let headers = [("content-type", "application/json")];
    let raw = app.raw_request("POST", "/graphql", &headers, &body).await;
    assert_eq!(raw.status, 200);
    String::from_utf8(raw.body).expect("UTF-8")
}

#[tokio::test]
async fn fields_that_wait_keep_their_place_in_the_selection() {
    let app = TestApp::embedded(3).await;
    let query = format!(
        "{{ product(sku: \"{DEMO_SKU}\") {{ ratingSummary {{ total }} sku comments(first: 1) {{ totalCount edges {{ node {{ rating }} }} }} id }} }}"
    );
    let text = bytes(&app, &query).await;
    let order: Vec<usize> = ["\"ratingSummary\"", "\"sku\"", "\"comments\"", "\"id\""]
        .iter()
        .map(|key| text.find(key).unwrap_or_else(|| panic!("{key} in {text}")))
        .collect();
    assert!(order.is_sorted(), "{text}");
    assert!(
        text.starts_with("{\"data\":{\"product\":{\"ratingSummary\":{\"total\":3},\"sku\":\"DAFT_PUNK_TSHIRT\",\"comments\":{\"totalCount\":3,\"edges\":[{\"node\":{\"rating\":"),
        "{text}"
    );
}

#[tokio::test]
async fn fragments_and_aliases_keep_the_order_of_their_first_selection() {
    let app = TestApp::embedded(3).await;
    let query = format!(
        "{{ b: product(sku: \"{DEMO_SKU}\") {{ ...Page stars: ratingSummary {{ average }} }} a: product(sku: \"X\") {{ sku }} }} fragment Page on Product {{ comments(first: 2) {{ edges {{ node {{ body }} }} }} ... on Product {{ ratingSummary {{ total }} }} sku }}"
    );
    let text = bytes(&app, &query).await;
    let keys = [
        "\"b\"",
        "\"comments\"",
        "\"ratingSummary\"",
        "\"sku\"",
        "\"stars\"",
        "\"a\"",
    ];
    let order: Vec<usize> = keys
        .iter()
        .map(|key| text.find(key).unwrap_or_else(|| panic!("{key} in {text}")))
        .collect();
    assert!(order.is_sorted(), "{keys:?} in {text}");
}
