//! The GraphQL API on DynamoDB Local: the same product seeded into DynamoDB and into the
//! embedded store gives the same pages, cursors and flags, and a page of `n` reads `n + 1` items.

use dynapage::store::CommentStore;
use serde_json::json;

use crate::helpers::{DEMO_SKU, Page, TestApp};
use crate::support::dynamodb_local;

const COMMENTS: u64 = 600;

/// A server on a fresh DynamoDB Local table holding the demo product's first `count` comments.
async fn dynamodb_app(count: u64) -> TestApp {
    let store = dynamodb_local::dynamo_store().await;
    crate::helpers::seed_demo(&store, count).await;
    store.ping().await.expect("reachable");
    TestApp::on_dynamodb(store.table(), &[]).await
}

async fn walk(app: &TestApp, forward: bool) -> Vec<Page> {
    let (size, cursor_arg) = if forward {
        ("first", "after")
    } else {
        ("last", "before")
    };
    let mut pages = vec![app.page(DEMO_SKU, json!({ size: 45 })).await];
    loop {
        let last = pages.last().expect("a page");
        let (more, cursor) = if forward {
            (last.has_next_page, last.end_cursor.clone())
        } else {
            (last.has_previous_page, last.start_cursor.clone())
        };
        if !more {
            return pages;
        }
        pages.push(
            app.page(DEMO_SKU, json!({ size: 45, cursor_arg: cursor }))
                .await,
        );
    }
}

#[tokio::test]
async fn dynamodb_and_the_embedded_store_serve_identical_pages() {
    let dynamo = dynamodb_app(COMMENTS).await;
    let embedded = TestApp::embedded_like_dynamodb(COMMENTS).await;
    for forward in [true, false] {
        let (a, b) = (walk(&dynamo, forward).await, walk(&embedded, forward).await);
        assert_eq!(
            a.len(),
            b.len(),
            "walk (forward: {forward}): page counts differ"
        );
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!(
                "walk (forward: {forward}) differs at page {i}: first ids {:?} vs {:?}",
                a[i].ids.first(),
                b[i].ids.first()
            );
        }
        assert_eq!(a.iter().map(|p| p.ids.len() as u64).sum::<u64>(), COMMENTS);
    }
    let page = dynamo.page(DEMO_SKU, json!({ "first": 10 })).await;
    let window = json!({ "first": 100, "after": page.cursors[1], "before": page.cursors[8] });
    assert_eq!(
        dynamo.page(DEMO_SKU, window.clone()).await,
        embedded.page(DEMO_SKU, window).await
    );
    for args in [
        json!({ "first": 7, "offset": 33 }),
        json!({ "last": 7, "offset": 90 }),
        json!({ "first": 9, "last": 4 }),
    ] {
        assert_eq!(
            dynamo.page(DEMO_SKU, args.clone()).await,
            embedded.page(DEMO_SKU, args.clone()).await,
            "{args}"
        );
    }
}

#[tokio::test]
async fn a_page_of_n_reads_n_plus_one_items_and_one_more_per_boundary_query() {
    let app = dynamodb_app(200).await;
    let first = app.page(DEMO_SKU, json!({ "first": 20 })).await;
    let cost = |query: &'static str, vars: serde_json::Value| {
        let app = &app;
        async move {
            app.graphql(query, vars).await["extensions"]["cost"]["itemsRead"]
                .as_u64()
                .expect("cost")
        }
    };
    let plain = "query($c: String) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, after: $c) { edges { cursor } pageInfo { hasNextPage } } }";
    let both = "query($c: String) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, after: $c) { edges { cursor } pageInfo { hasNextPage hasPreviousPage } } }";
    assert_eq!(cost(plain, json!({ "c": null })).await, 21);
    assert_eq!(cost(plain, json!({ "c": first.end_cursor })).await, 21);
    assert_eq!(
        cost(both, json!({ "c": first.end_cursor })).await,
        22,
        "plus one for the boundary query"
    );
}

#[tokio::test]
async fn mutations_write_to_dynamodb() {
    let app = dynamodb_app(0).await;
    let id = app.add_comment(None, "DDB", "stored", 4).await;
    let page = app.page("DDB", json!({ "first": 5 })).await;
    assert_eq!(page.ids, vec![id.clone()]);
    let update = "mutation($id: ID!) { updateComment(input: { id: $id, rating: 1 }) { comment { rating } } }";
    assert_eq!(
        app.data(update, json!({ "id": id })).await["updateComment"]["comment"]["rating"],
        1
    );
    assert_eq!(
        app.page("DDB", json!({ "ratings": [1] })).await.ids.len(),
        1
    );
    assert!(
        app.page("DDB", json!({ "ratings": [4] }))
            .await
            .ids
            .is_empty()
    );
    let delete = "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }";
    app.data(delete, json!({ "id": id })).await;
    assert!(app.page("DDB", json!({ "first": 5 })).await.ids.is_empty());
}

#[tokio::test]
async fn a_missing_table_stops_start_up_with_a_message_that_names_the_fix() {
    let endpoint = dynamodb_local::endpoint().await;
    let cli = <dynapage::cli::Cli as clap::Parser>::try_parse_from([
        "dynapage",
        "serve",
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        "no_such_table",
        "--auth",
        "off",
        "--cursor-secret",
        crate::helpers::TEST_CURSOR_SECRET,
    ])
    .expect("parses");
    let Some(dynapage::cli::Command::Serve(args)) = cli.command else {
        panic!("serve")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let error = dynapage::cli::serve::run_with(*args, listener, Default::default())
        .await
        .expect_err("refuses to start");
    let message = format!("{error:#}");
    assert!(
        message.contains("no_such_table") && message.contains("--create-tables"),
        "{message}"
    );
}
