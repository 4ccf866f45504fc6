//! Writes go to the store; pages and `totalCount` follow (through the change feed).

use serde_json::{Value, json};

use crate::helpers::{TestApp, eventually};

const ADD: &str = "mutation($input: AddCommentInput!) { addComment(input: $input) {
  clientMutationId comment { id body author rating createdAt updatedAt product { sku } } commentEdge { cursor node { id } } } }";

#[tokio::test]
async fn an_added_comment_tops_the_next_page_and_counts() {
    let app = TestApp::embedded(30).await;
    let before = app.total("DAFT_PUNK_TSHIRT", Value::Null).await;
    let input = json!({ "sku": "DAFT_PUNK_TSHIRT", "author": "  Thomas ", "body": " One more time ", "rating": 5, "clientMutationId": "m1" });
    let added = app.data(ADD, json!({ "input": input })).await["addComment"].clone();
    assert_eq!(added["clientMutationId"], "m1");
    assert_eq!(
        added["comment"]["body"], "One more time",
        "white space is trimmed"
    );
    assert_eq!(added["comment"]["author"], "Thomas");
    assert_eq!(added["comment"]["updatedAt"], Value::Null);
    assert_eq!(added["comment"]["product"]["sku"], "DAFT_PUNK_TSHIRT");

    let page = app.page("DAFT_PUNK_TSHIRT", json!({ "first": 3 })).await;
    assert_eq!(
        page.ids[0],
        added["comment"]["id"].as_str().expect("id"),
        "newest first"
    );
    assert_eq!(
        page.cursors[0],
        added["commentEdge"]["cursor"].as_str().expect("cursor"),
        "the edge's cursor is the connection's"
    );
    eventually("totalCount follows the write", || async {
        (app.total("DAFT_PUNK_TSHIRT", Value::Null).await == before + 1).then_some(())
    })
    .await;
}

#[tokio::test]
async fn changing_a_rating_moves_the_comment_between_rating_filters() {
    let app = TestApp::embedded(0).await;
    let id = app.add_comment(None, "MOVER", "so-so", 3).await;
    eventually("indexed as 3 stars", || async {
        (app.total("MOVER", json!([3])).await == 1).then_some(())
    })
    .await;

    let update = "mutation($id: ID!) { updateComment(input: { id: $id, rating: 5, clientMutationId: \"u\" }) { clientMutationId comment { id body rating updatedAt } } }";
    let updated = app.data(update, json!({ "id": id })).await["updateComment"].clone();
    assert_eq!(updated["clientMutationId"], "u");
    assert_eq!(
        (
            updated["comment"]["rating"].clone(),
            updated["comment"]["body"].clone()
        ),
        (json!(5), json!("so-so"))
    );
    assert!(updated["comment"]["updatedAt"].is_string());

    let fives = app.page("MOVER", json!({ "ratings": [5] })).await;
    assert_eq!(fives.ids, vec![id]);
    assert!(
        app.page("MOVER", json!({ "ratings": [3] }))
            .await
            .ids
            .is_empty()
    );
    eventually("the index moves the member", || async {
        (app.total("MOVER", json!([3])).await == 0 && app.total("MOVER", json!([5])).await == 1)
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_deleted_comment_leaves_pages_and_counts_but_its_cursor_still_works() {
    let app = TestApp::embedded(0).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let body = format!("comment {i}");
        ids.push(app.add_comment(None, "SHRINK", &body, 1 + i % 5).await);
    }
    let page = app.page("SHRINK", json!({ "first": 5 })).await;
    let middle_cursor = page.cursors[2].clone();
    let delete = "mutation($id: ID!) { deleteComment(input: { id: $id, clientMutationId: \"d\" }) { deletedCommentId clientMutationId } }";
    let deleted = app.data(delete, json!({ "id": page.ids[2] })).await;
    assert_eq!(
        deleted["deleteComment"],
        json!({ "deletedCommentId": page.ids[2], "clientMutationId": "d" })
    );

    let after = app
        .page("SHRINK", json!({ "first": 5, "after": middle_cursor }))
        .await;
    assert_eq!(
        after.ids,
        page.ids[3..],
        "a deleted comment's cursor still marks its place"
    );
    assert!(after.has_previous_page);
    let before = app
        .page("SHRINK", json!({ "last": 5, "before": middle_cursor }))
        .await;
    assert_eq!(before.ids, page.ids[..2]);
    assert!(before.has_next_page);
    eventually("totalCount drops", || async {
        (app.total("SHRINK", Value::Null).await == 4).then_some(())
    })
    .await;
}

#[tokio::test]
async fn node_and_nodes_refetch_comments_and_products() {
    let app = TestApp::embedded(10).await;
    let page = app.page("DAFT_PUNK_TSHIRT", json!({ "first": 2 })).await;
    let product = app
        .data("{ product(sku: \"DAFT_PUNK_TSHIRT\") { id } }", json!({}))
        .await["product"]["id"]
        .clone();
    let query = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Product { sku } } }";
    let data = app
        .data(query, json!({ "ids": [page.ids[1], product, page.ids[0]] }))
        .await;
    assert_eq!(
        data["nodes"],
        json!([
            { "__typename": "Comment", "id": page.ids[1] },
            { "__typename": "Product", "id": product, "sku": "DAFT_PUNK_TSHIRT" },
            { "__typename": "Comment", "id": page.ids[0] },
        ])
    );
    let one = app
        .data(
            "query($id: ID!) { node(id: $id) { id ... on Comment { product { sku } } } }",
            json!({ "id": page.ids[0] }),
        )
        .await;
    assert_eq!(one["node"]["product"]["sku"], "DAFT_PUNK_TSHIRT");
}
