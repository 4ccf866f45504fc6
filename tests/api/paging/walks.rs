//! Walking a product's comments page by page, both ways, and jumping with `offset`.

use serde_json::json;

use crate::helpers::{DEMO_SKU, Page, TestApp};

const COMMENTS: u64 = 1_000;

async fn walk_forward(app: &TestApp, sku: &str, size: i64) -> Vec<Page> {
    let mut pages = vec![app.page(sku, json!({ "first": size })).await];
    while pages.last().is_some_and(|p| p.has_next_page) {
        let after = pages.last().and_then(|p| p.end_cursor.clone());
        pages.push(
            app.page(sku, json!({ "first": size, "after": after }))
                .await,
        );
        assert!(pages.len() < 1_000, "the walk does not end");
    }
    pages
}

async fn walk_backward(app: &TestApp, sku: &str, size: i64) -> Vec<Page> {
    let mut pages = vec![app.page(sku, json!({ "last": size })).await];
    while pages.last().is_some_and(|p| p.has_previous_page) {
        let before = pages.last().and_then(|p| p.start_cursor.clone());
        pages.push(
            app.page(sku, json!({ "last": size, "before": before }))
                .await,
        );
        assert!(pages.len() < 1_000, "the walk does not end");
    }
    pages
}

fn all_ids(pages: &[Page]) -> Vec<String> {
    pages.iter().flat_map(|p| p.ids.clone()).collect()
}

#[tokio::test]
async fn forward_and_backward_walks_visit_every_comment_once_in_the_same_order() {
    let app = TestApp::embedded(COMMENTS).await;
    let forward = walk_forward(&app, DEMO_SKU, 37).await;
    let ids = all_ids(&forward);
    assert_eq!(ids.len() as u64, COMMENTS);
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len() as u64, COMMENTS, "a comment was visited twice");

    let backward = walk_backward(&app, DEMO_SKU, 37).await;
    let mut back_ids: Vec<String> = backward.into_iter().rev().flat_map(|p| p.ids).collect();
    assert_eq!(back_ids.len() as u64, COMMENTS);
    assert_eq!(ids, back_ids, "backward walk differs from the forward walk");
    back_ids.dedup();
    assert_eq!(back_ids.len() as u64, COMMENTS);

    assert!(
        !forward[0].has_previous_page,
        "the first page has nothing before it"
    );
    assert!(
        forward[1..].iter().all(|p| p.has_previous_page),
        "later pages have something before them"
    );
    assert_eq!(forward.len(), COMMENTS.div_ceil(37) as usize);
}

#[tokio::test]
async fn end_cursor_is_the_last_edge_cursor_and_cursors_are_stable() {
    let app = TestApp::embedded(100).await;
    let a = app.page(DEMO_SKU, json!({ "first": 10 })).await;
    let b = app.page(DEMO_SKU, json!({ "first": 10 })).await;
    assert_eq!(a, b, "the same page twice gives the same cursors");
    assert_eq!(a.end_cursor.as_ref(), a.cursors.last());
    assert_eq!(a.start_cursor.as_ref(), a.cursors.first());
    assert!(
        a.cursors.iter().all(|c| c.len() <= 64),
        "cursors stay within 64 characters"
    );
}

#[tokio::test]
async fn an_offset_jump_lands_where_walking_lands_on_both_sides_of_the_index_threshold() {
    let app = TestApp::embedded(COMMENTS).await;
    let ids = all_ids(&walk_forward(&app, DEMO_SKU, 100).await);
    // 50 is read straight from the store; 150, 500 and 990 go through the index (threshold 100).
    for offset in [0usize, 1, 50, 99, 100, 101, 150, 500, 990, 999] {
        let page = app
            .page(DEMO_SKU, json!({ "first": 20, "offset": offset }))
            .await;
        let end = (offset + 20).min(ids.len());
        assert_eq!(page.ids, ids[offset..end], "first: 20, offset: {offset}");
        assert_eq!(
            page.has_previous_page,
            offset > 0,
            "hasPreviousPage at {offset}"
        );
        assert_eq!(
            page.has_next_page,
            end < ids.len(),
            "hasNextPage at {offset}"
        );

        let page = app
            .page(DEMO_SKU, json!({ "last": 20, "offset": offset }))
            .await;
        let end = ids.len() - offset;
        assert_eq!(
            page.ids,
            ids[end.saturating_sub(20)..end],
            "last: 20, offset: {offset}"
        );
    }
}

#[tokio::test]
async fn an_offset_after_a_cursor_counts_from_the_cursor() {
    let app = TestApp::embedded(COMMENTS).await;
    let ids = all_ids(&walk_forward(&app, DEMO_SKU, 100).await);
    let anchor = app.page(DEMO_SKU, json!({ "first": 100 })).await;
    let after = anchor.end_cursor.clone();
    for offset in [5usize, 250] {
        let page = app
            .page(
                DEMO_SKU,
                json!({ "first": 10, "after": after, "offset": offset }),
            )
            .await;
        assert_eq!(
            page.ids,
            ids[100 + offset..110 + offset],
            "offset {offset} after the 100th comment"
        );
    }
}

#[tokio::test]
async fn an_offset_past_the_end_gives_an_empty_page_that_knows_it_is_past_the_end() {
    let app = TestApp::embedded(COMMENTS).await;
    for offset in [COMMENTS, COMMENTS + 50, 1_000_000] {
        let page = app
            .page(DEMO_SKU, json!({ "first": 10, "offset": offset }))
            .await;
        assert!(page.ids.is_empty());
        assert!(page.has_previous_page && !page.has_next_page);
        assert_eq!((page.start_cursor, page.end_cursor), (None, None));
    }
}

#[tokio::test]
async fn a_deep_offset_reads_one_page_from_the_store_and_asks_the_index_once() {
    let app = TestApp::embedded(COMMENTS).await;
    let response = app
        .graphql(
            "query($sku: String!) { comments(sku: $sku, first: 20, offset: 900) { edges { cursor } pageInfo { hasNextPage hasPreviousPage } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    let cost = &response["extensions"]["cost"];
    assert_eq!(cost["itemsRead"], 21, "n + 1 items: {response:#}");
    assert_eq!(cost["indexCalls"], 1);
    assert_eq!(cost["storeQueries"], 1);
}

#[tokio::test]
async fn a_product_without_comments_has_an_empty_connection() {
    let app = TestApp::embedded(10).await;
    let data = app
        .data("{ product(sku: \"NOBODY_REVIEWED_THIS\") { sku comments { totalCount edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }", json!({}))
        .await;
    let connection = &data["product"]["comments"];
    assert_eq!(connection["totalCount"], 0);
    assert_eq!(connection["edges"], json!([]));
    assert_eq!(
        connection["pageInfo"],
        json!({ "hasNextPage": false, "hasPreviousPage": false, "startCursor": null, "endCursor": null })
    );
}
