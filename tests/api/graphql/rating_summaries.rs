//! `ratingSummaries(skus:)`: a category page's stars in one index call, each equal to the
//! product's own `ratingSummary`, in the order asked; priced per SKU; bad input refused with a
//! code. On the embedded index and on Redis.

use serde_json::{Value, json};

use crate::helpers::TestApp;

const SUMMARIES: &str = "query($skus: [String!]!) { ratingSummaries(skus: $skus) { sku summary { total average counts { rating count } } } }";
const ONE: &str = "query($sku: String!) { product(sku: $sku) { ratingSummary { total average counts { rating count } } } }";

/// Adds `ratings.len()` comments to `sku`, one per rating given.
async fn rate(app: &TestApp, sku: &str, ratings: &[u8]) {
    for rating in ratings {
        app.add_comment(None, sku, "b", *rating).await;
    }
}

async fn summaries_equal_each_products_own(app: &TestApp) {
    rate(app, "SHELF_A", &[5, 5, 4, 1]).await;
    rate(app, "SHELF_B", &[3]).await;
    let asked = ["SHELF_B", "EMPTY_SHELF", "SHELF_A", "SHELF_B"];
    // Counts follow the index, which applies each write a moment after it is acknowledged.
    let response = crate::helpers::eventually("the writes reach the index", || async {
        let response = app.graphql(SUMMARIES, json!({ "skus": asked })).await;
        let total = |i: usize| response["data"]["ratingSummaries"][i]["summary"]["total"].clone();
        (total(0) == 1 && total(2) == 4).then_some(response)
    })
    .await;
    assert!(response.get("errors").is_none(), "{response:#}");
    let answered = response["data"]["ratingSummaries"]
        .as_array()
        .expect("a list");
    assert_eq!(
        answered.len(),
        asked.len(),
        "one per SKU asked, repeats too"
    );
    for (sku, entry) in asked.iter().zip(answered) {
        assert_eq!(entry["sku"], *sku, "in the order asked");
        let own = app.data(ONE, json!({ "sku": sku })).await;
        assert_eq!(entry["summary"], own["product"]["ratingSummary"], "{sku}");
    }
    assert_eq!(answered[1]["summary"]["total"], 0);
    assert_eq!(answered[1]["summary"]["average"], Value::Null);
    assert_eq!(answered[2]["summary"]["average"], 3.75);
    let cost = &response["extensions"]["cost"];
    assert_eq!(cost["indexCalls"], 1, "one index call for all: {cost}");
    assert_eq!(cost["storeQueries"], 0, "{cost}");
    assert_eq!(cost["itemsRead"], 0, "{cost}");
}

#[tokio::test]
async fn on_the_embedded_index_each_summary_is_the_products_own_in_one_index_call() {
    let app = TestApp::spawn(&["--demo-comments", "0"]).await;
    summaries_equal_each_products_own(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn on_redis_each_summary_is_the_products_own_in_one_index_call() {
    let (app, _redis) = TestApp::on_redis(0, &[]).await;
    summaries_equal_each_products_own(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn more_than_a_hundred_skus_or_a_bad_sku_are_refused_and_each_sku_is_priced() {
    let app = TestApp::spawn(&["--demo-comments", "0"]).await;
    let many: Vec<String> = (0..101).map(|i| format!("SKU_{i}")).collect();
    let refused = app.graphql(SUMMARIES, json!({ "skus": many })).await;
    assert_eq!(refused["data"], Value::Null, "{refused:#}");
    assert_eq!(refused["errors"][0]["extensions"]["code"], "BAD_USER_INPUT");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 100")),
        "{refused:#}"
    );
    let bad = app
        .graphql(SUMMARIES, json!({ "skus": ["GOOD", "not a sku!"] }))
        .await;
    assert_eq!(bad["errors"][0]["extensions"]["code"], "BAD_USER_INPUT");
    let empty = app.data(SUMMARIES, json!({ "skus": [] })).await;
    assert_eq!(empty["ratingSummaries"], json!([]));

    let cost = |skus: usize| {
        let skus: Vec<String> = (0..skus).map(|i| format!("SKU_{i}")).collect();
        let app = &app;
        async move {
            let response = app.graphql(SUMMARIES, json!({ "skus": skus })).await;
            response["extensions"]["cost"]["requestedQueryCost"]
                .as_u64()
                .expect("a cost")
        }
    };
    let (ten, hundred) = (cost(10).await, cost(100).await);
    assert!(
        hundred >= 9 * ten,
        "priced per SKU: 10 cost {ten}, 100 cost {hundred}"
    );
    app.stop().await.expect("clean stop");
}
