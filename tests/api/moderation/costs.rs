//! A public page pays nothing for comments the public does not see: on DynamoDB, a product
//! whose every tenth comment is hidden or pending is read with exactly the store queries, items
//! and index calls of a product with the same published comments and no others, for a first
//! page, the next one, the last one, a deep offset, a rating filter and the list by helpful
//! votes (the sparse GSIs and the index's public sets never hold the others). Counts, not
//! timings: the CPU side is a benchmark's.

use dynapage::domain::{Comment, CommentId, CommentStatus, Sku};
use dynapage::store::CommentStore;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::support::data::dataset;
use crate::support::dynamodb_local;

const PAGES: &str = r#"query($sku: String!, $after: String) {
  first: comments(sku: $sku, first: 20) { totalCount edges { node { rating } } pageInfo { endCursor } }
  next: comments(sku: $sku, first: 20, after: $after) { edges { node { rating } } }
  last: comments(sku: $sku, last: 20) { edges { node { rating } } }
  deep: comments(sku: $sku, first: 20, offset: 150) { edges { node { rating } } }
  rated: comments(sku: $sku, first: 20, ratings: [4, 5]) { totalCount edges { node { rating } } }
  helpful: comments(sku: $sku, first: 20, orderBy: MOST_HELPFUL) { edges { node { rating } } }
}"#;

/// The same published comments as `plain`, under `sku`, with fresh ids.
fn twin(plain: &[Comment], sku: &str) -> Vec<Comment> {
    plain
        .iter()
        .enumerate()
        .map(|(i, c)| Comment {
            id: CommentId::from_parts(c.created_at_ms, 1_000_000 + i as u128),
            sku: Sku::parse(sku).expect("sku"),
            ..c.clone()
        })
        .collect()
}

/// What the request read (`extensions.cost` without the budget), and how many comments each
/// list answered and counted (the twins' ids differ, so ties of one millisecond may be ordered
/// differently: the pages' comments are compared by number, not by order).
async fn cost_of(app: &TestApp, sku: &str) -> (Value, Value) {
    let first = app
        .graphql(PAGES, json!({ "sku": sku, "after": null }))
        .await;
    let after = first["data"]["first"]["pageInfo"]["endCursor"].clone();
    let response = app
        .graphql(PAGES, json!({ "sku": sku, "after": after }))
        .await;
    assert!(response.get("errors").is_none(), "{response:#}");
    let mut cost = response["extensions"]["cost"].clone();
    cost.as_object_mut()
        .expect("a cost")
        .remove("throttleStatus");
    let data = &response["data"];
    let shape: serde_json::Map<String, Value> =
        ["first", "next", "last", "deep", "rated", "helpful"]
            .iter()
            .map(|list| {
                let edges = data[list]["edges"].as_array().map_or(0, Vec::len);
                ((*list).to_owned(), json!([edges, data[list]["totalCount"]]))
            })
            .collect();
    (cost, Value::Object(shape))
}

#[tokio::test]
async fn a_page_on_a_product_with_hidden_comments_reads_what_it_reads_without_them() {
    let store = dynamodb_local::dynamo_store().await;
    let plain = dataset("COST-PLAIN", 200);
    let public = twin(&plain, "COST-MIXED");
    let mut unseen = twin(&dataset("COST-UNSEEN", 22), "COST-MIXED");
    for (i, comment) in unseen.iter_mut().enumerate() {
        comment.id = CommentId::from_parts(comment.created_at_ms, 2_000_000 + i as u128);
        comment.moderation.status = if i % 2 == 0 {
            CommentStatus::Hidden
        } else {
            CommentStatus::Pending
        };
    }
    for batch in [&plain, &public, &unseen] {
        store.put_batch(batch).await.expect("seeded");
    }
    let app = TestApp::on_dynamodb(store.table(), &[]).await;
    let (plain_cost, plain_data) = cost_of(&app, "COST-PLAIN").await;
    let (mixed_cost, mixed_data) = cost_of(&app, "COST-MIXED").await;
    assert_eq!(plain_data["first"], json!([20, 200]));
    assert_eq!(mixed_data, plain_data, "the same pages");
    assert_eq!(mixed_cost, plain_cost, "the same reads");
    assert!(
        plain_cost["itemsRead"].as_u64().expect("items") > 100,
        "{plain_cost}"
    );
    app.stop().await.expect("clean stop");
}
