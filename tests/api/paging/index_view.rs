//! One index call per connection: everything a page derives from the Redis index (a deep
//! offset's bound, `totalCount`, `startOffset`, every `pageCursors` link) comes from one
//! `read.lua` call, and the answers equal the embedded server's, which counts in a treap.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::redis_server::{shared_url, unique_prefix};

const COMMENTS: u64 = 1_000;

const QUERY: &str = r#"
query($sku: String!, $ratings: [Int!], $first: Int, $last: Int, $offset: Int, $after: String) {
  comments(sku: $sku, ratings: $ratings, first: $first, last: $last, offset: $offset,
           after: $after) {
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
    totalCount
    startOffset
    pageCursors(size: 20, around: 5) {
      pageCount
      first { ...Link } last { ...Link } previous { ...Link } next { ...Link } around { ...Link }
    }
  }
}
fragment Link on PageCursor { page cursor offset isCurrent }"#;

fn variables(args: &Value) -> Value {
    let mut variables = json!({ "sku": DEMO_SKU });
    for (k, v) in args.as_object().expect("an object") {
        variables[k] = v.clone();
    }
    variables
}

#[tokio::test]
async fn a_page_with_total_count_start_offset_and_page_cursors_costs_one_redis_index_call() {
    let (url, prefix, demo) = (shared_url(), unique_prefix(), COMMENTS.to_string());
    let redis = TestApp::spawn(&[
        "--demo-comments",
        &demo,
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        &prefix,
    ])
    .await;
    let embedded = TestApp::embedded(COMMENTS).await;

    let first_page = redis
        .graphql(QUERY, variables(&json!({ "first": 20 })))
        .await;
    let after = first_page["data"]["comments"]["pageInfo"]["endCursor"].clone();
    assert!(after.is_string(), "{first_page:#}");
    // Deep offsets (beyond the store-read threshold of 100), shallow ones, a cursor, filters,
    // an empty page past the end: each is one call, and the answers are the embedded ones.
    for args in [
        json!({ "first": 20 }),
        json!({ "first": 20, "offset": 40 }),
        json!({ "first": 20, "offset": 500 }),
        json!({ "first": 20, "offset": 990 }),
        json!({ "first": 20, "offset": 5000 }),
        json!({ "first": 20, "after": after, "offset": 300 }),
        json!({ "first": 20, "after": after }),
        json!({ "first": 20, "offset": 300, "ratings": [3, 5] }),
        json!({ "first": 20, "offset": 150, "ratings": [1, 4, 5] }),
        json!({ "first": 20, "offset": 120, "ratings": [2] }),
        json!({ "last": 20 }),
    ] {
        let (a, b) = (
            redis.graphql(QUERY, variables(&args)).await,
            embedded.graphql(QUERY, variables(&args)).await,
        );
        assert!(a.get("errors").is_none(), "{args}: {a:#}");
        assert_eq!(a["data"], b["data"], "{args}");
        assert_eq!(
            a["extensions"]["cost"]["indexCalls"], 1,
            "{args}: the page's bound, totalCount, startOffset and pageCursors in one call: {a:#}"
        );
    }

    // Aliased totalCounts read the same view.
    let aliased = redis
        .graphql(
            "query($sku: String!) { comments(sku: $sku, first: 20, offset: 600) { a: totalCount b: totalCount startOffset } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    assert_eq!(aliased["data"]["comments"]["a"], COMMENTS, "{aliased:#}");
    assert_eq!(aliased["data"]["comments"]["b"], COMMENTS, "{aliased:#}");
    assert_eq!(
        aliased["data"]["comments"]["startOffset"], 600,
        "{aliased:#}"
    );
    assert_eq!(
        aliased["extensions"]["cost"]["indexCalls"], 1,
        "{aliased:#}"
    );
}

#[tokio::test]
async fn while_the_index_lags_a_first_page_is_viewed_again_from_its_real_first_edge() {
    use dynapage::domain::{Comment, CommentId, Rating, Sku};
    use dynapage::store::CommentStore;

    let backends = crate::support::backends::Backends::on(&shared_url()).await;
    crate::helpers::seed_demo(&backends.store, 250).await;
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(crate::helpers::process::exit_code(&reindexed), Some(0));
    // No `--sync`: comments written from now on stay out of the index, as during a stream lag.
    let app = backends.serve(&[]).await;
    let newest: Vec<Comment> = (0..3u64)
        .map(|i| Comment {
            purchase: None,
            id: CommentId::from_parts(4_102_444_800_000 + i, u128::from(i) + 1),
            sku: Sku::parse(DEMO_SKU).expect("sku"),
            author: "late".into(),
            author_sub: None,
            body: format!("not indexed yet {i}"),
            rating: Rating::ALL[4],
            created_at_ms: 4_102_444_800_000 + i,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
            moderation: Default::default(),
            reply: None,
            reporters: Vec::new(),
        })
        .collect();
    backends.store.put_batch(&newest).await.expect("written");

    let response = app
        .graphql(
            "query($sku: String!) { comments(sku: $sku, first: 5) { edges { node { id } } totalCount startOffset pageCursors(around: 3) { pageCount around { page isCurrent } } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    let comments = &response["data"]["comments"];
    assert!(response.get("errors").is_none(), "{response:#}");
    // The store's first edge is a comment the index does not hold: the index's prediction (its
    // own newest) was wrong, so the view was asked again from the real edge.
    assert_eq!(comments["startOffset"], 0, "{response:#}");
    assert_eq!(
        comments["totalCount"], 250,
        "the index's count: {response:#}"
    );
    assert_eq!(comments["pageCursors"]["around"][0]["isCurrent"], true);
    assert_eq!(
        response["extensions"]["cost"]["indexCalls"], 2,
        "{response:#}"
    );
}
