//! `moderationQueue`: a moderator's queues (pending, hidden, rejected), across the shop and per
//! product, oldest first, with exact `totalCount`, cursors both ways and `offset` jumps, on the
//! embedded store, `--data-dir` (across a restart), DynamoDB Local + Redis and the six-node
//! Cluster; `verify` checks the queues and `reindex` rebuilds them.

use serde_json::{Value, json};

use super::decisions::{
    People, jwt_people, lose_list, moderate, reindex, serve_with_tokens, verify_says,
};
use crate::helpers::process::{exit_code, stdout};
use crate::helpers::{TestApp, error_codes, eventually};
use crate::support::backends::Backends;

const QUEUE: &str = r#"query($queue: ModerationQueue!, $sku: String, $first: Int, $after: String, $last: Int, $before: String, $offset: Int) {
  moderationQueue(queue: $queue, sku: $sku, first: $first, after: $after, last: $last, before: $before, offset: $offset) {
    totalCount
    startOffset
    edges { node { id moderation { status } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// `moderationQueue` as `token` asks it, with `args` (the queue, and any paging).
async fn queue(app: &TestApp, token: &str, args: Value) -> Value {
    app.graphql_as(token, QUEUE, args).await
}

/// The ids of a queue page's edges.
fn ids(page: &Value) -> Vec<String> {
    page["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("edges: {page:#}"))
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// The queue's page once its `totalCount` is `total` (the index follows the store, on DynamoDB
/// through the stream).
async fn settled(app: &TestApp, token: &str, args: Value, total: usize) -> Value {
    eventually(&format!("{args} holding {total}"), || {
        let args = args.clone();
        async move {
            let answer = queue(app, token, args).await;
            let page = &answer["data"]["moderationQueue"];
            (page["totalCount"] == json!(total)).then(|| page.clone())
        }
    })
    .await
}

/// Every id of a queue, walking it `size` at a time forward with `after`.
async fn walk(app: &TestApp, token: &str, args: Value, size: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let mut page_args = args.clone();
        page_args["first"] = json!(size);
        page_args["after"] = after;
        let answer = queue(app, token, page_args).await;
        let page = &answer["data"]["moderationQueue"];
        seen.extend(ids(page));
        if page["pageInfo"]["hasNextPage"] != json!(true) {
            return seen;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
}

/// The whole contract on one server under `--moderation pre`: who may read a queue, the order,
/// the counts, paging both ways and jumps, and decisions moving comments between queues.
async fn queues_hold_what_waits(app: &TestApp, people: &People, skus: [&str; 2]) {
    let [a, b] = skus;
    let mut all = Vec::new();
    let mut of_a = Vec::new();
    for i in 0..5 {
        let id = app
            .add_comment(Some(&people.alice), a, &format!("a{i}"), 4)
            .await;
        all.push(id.clone());
        of_a.push(id);
        if i < 3 {
            all.push(
                app.add_comment(Some(&people.bob), b, &format!("b{i}"), 2)
                    .await,
            );
        }
    }
    let carol = people.carol.as_str();
    let pending = json!({ "queue": "PENDING" });
    let page = settled(app, carol, json!({ "queue": "PENDING", "first": 3 }), 8).await;
    assert_eq!(ids(&page), all[..3], "oldest first: {page:#}");
    assert_eq!(page["startOffset"], 0);
    assert_eq!(page["edges"][0]["node"]["moderation"]["status"], "PENDING");
    assert_eq!(
        walk(app, carol, pending.clone(), 3).await,
        all,
        "every comment once"
    );
    let of_a_page = settled(app, carol, json!({ "queue": "PENDING", "sku": a }), 5).await;
    assert_eq!(ids(&of_a_page), of_a);
    settled(app, carol, json!({ "queue": "PENDING", "sku": b }), 3).await;

    // Jumps and backward pages, exact at both ends.
    let jump = queue(
        app,
        carol,
        json!({ "queue": "PENDING", "first": 2, "offset": 6 }),
    )
    .await;
    let jump = &jump["data"]["moderationQueue"];
    assert_eq!(ids(jump), all[6..], "{jump:#}");
    assert_eq!(jump["pageInfo"]["hasNextPage"], false);
    assert_eq!(jump["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(jump["startOffset"], 6);
    let tail = queue(app, carol, json!({ "queue": "PENDING", "last": 3 })).await;
    let tail = &tail["data"]["moderationQueue"];
    assert_eq!(ids(tail), all[5..], "{tail:#}");
    let before = tail["pageInfo"]["startCursor"].clone();
    let back = queue(
        app,
        carol,
        json!({ "queue": "PENDING", "last": 10, "before": before }),
    )
    .await;
    let back = &back["data"]["moderationQueue"];
    assert_eq!(ids(back), all[..5], "{back:#}");
    assert_eq!(back["pageInfo"]["hasPreviousPage"], false);
    assert_eq!(back["pageInfo"]["hasNextPage"], true);

    // Moderators only; a SKU as for any product.
    let forbidden = queue(app, &people.alice, pending.clone()).await;
    assert_eq!(error_codes(&forbidden), ["FORBIDDEN"], "{forbidden:#}");
    let anonymous = app.graphql(QUEUE, pending.clone()).await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );
    let bad = queue(
        app,
        carol,
        json!({ "queue": "PENDING", "sku": "no such{sku}" }),
    )
    .await;
    assert_eq!(error_codes(&bad), ["BAD_USER_INPUT"], "{bad:#}");

    // Decisions move comments between queues, and in and out of the product's list.
    for (id, decision, reason) in [
        (&of_a[0], "PUBLISH", None),
        (&of_a[1], "REJECT", Some("OFF_TOPIC")),
        (&of_a[0], "HIDE", Some("ABUSIVE")),
        (&of_a[2], "PUBLISH", None),
    ] {
        let decided = moderate(app, Some(carol), id, decision, reason).await;
        assert!(decided.get("errors").is_none(), "{decided:#}");
    }
    let waiting: Vec<String> = all
        .iter()
        .filter(|id| ![&of_a[0], &of_a[1], &of_a[2]].contains(id))
        .cloned()
        .collect();
    let page = settled(app, carol, pending.clone(), 5).await;
    assert_eq!(ids(&page), waiting);
    let page = settled(app, carol, json!({ "queue": "PENDING", "sku": a }), 2).await;
    assert_eq!(ids(&page), of_a[3..]);
    let hidden = settled(app, carol, json!({ "queue": "HIDDEN" }), 1).await;
    assert_eq!(ids(&hidden), [of_a[0].clone()]);
    assert_eq!(hidden["edges"][0]["node"]["moderation"]["status"], "HIDDEN");
    let rejected = settled(app, carol, json!({ "queue": "REJECTED", "sku": a }), 1).await;
    assert_eq!(ids(&rejected), [of_a[1].clone()]);
    settled(app, carol, json!({ "queue": "REJECTED", "sku": b }), 0).await;
    app.until_total(a, Value::Null, 1).await;
}

#[tokio::test]
async fn queues_page_exactly_on_the_embedded_store() {
    let (jwks, people) = jwt_people("queue-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &["--moderation", "pre"]).await;
    queues_hold_what_waits(&app, &people, ["QA", "QB"]).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn queues_survive_a_restart_of_the_durable_store() {
    let (jwks, people) = jwt_people("queue-2").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("data");
    let flags = [
        "--moderation",
        "pre",
        "--data-dir",
        path.to_str().expect("UTF-8"),
    ];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    queues_hold_what_waits(&app, &people, ["DA", "DB"]).await;
    app.stop().await.expect("clean stop");
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let carol = people.carol.as_str();
    settled(&app, carol, json!({ "queue": "PENDING" }), 5).await;
    settled(&app, carol, json!({ "queue": "HIDDEN", "sku": "DA" }), 1).await;
    settled(&app, carol, json!({ "queue": "REJECTED" }), 1).await;
    app.stop().await.expect("clean stop");
}

/// The scenario on DynamoDB Local and the Redis at `redis_url`, the server following the
/// stream; then `verify` is clean, and, on a single Redis (`lose_a_queue`), after the shop's
/// pending queue is lost from Redis, `verify` says so and `reindex` brings it back.
async fn on_dynamodb_and(redis_url: &str, kid: &str, lose_a_queue: bool) {
    let (jwks, people) = jwt_people(kid).await;
    let backends = Backends::on(redis_url).await;
    let app = serve_with_tokens(&backends, &jwks, &["--moderation", "pre"]).await;
    queues_hold_what_waits(&app, &people, ["YA", "YB"]).await;
    verify_says(&backends, true).await;
    if !lose_a_queue {
        app.stop().await.expect("clean stop");
        return;
    }
    lose_list(&backends, redis_url, "!PENDING").await;
    let carol = people.carol.as_str();
    settled(&app, carol, json!({ "queue": "PENDING" }), 0).await;
    verify_says(&backends, false).await;
    reindex(&backends).await;
    settled(&app, carol, json!({ "queue": "PENDING" }), 5).await;
    verify_says(&backends, true).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn queues_page_exactly_on_dynamodb_and_redis_and_reindex_rebuilds_them() {
    on_dynamodb_and(&crate::support::redis_server::shared_url(), "queue-3", true).await;
}

#[tokio::test]
async fn queues_page_exactly_on_dynamodb_and_a_redis_cluster() {
    let cluster = crate::support::redis_cluster::shared_cluster_urls();
    on_dynamodb_and(&cluster, "queue-4", false).await;
}

/// A queue page costs what a product's page costs: on DynamoDB Local + Redis, a product of 400
/// published comments and a hidden queue of 400 (of another product) answer a deep page, a
/// page with its count and a backward page with the same store queries, items and index calls;
/// and so does an author's own list of those 400 (`viewer.comments`).
#[tokio::test]
async fn a_queue_page_costs_what_a_product_page_costs() {
    use dynapage::domain::{CommentId, CommentStatus, Sku};
    use dynapage::store::CommentStore;

    let (jwks, people) = jwt_people("queue-5").await;
    let backends = Backends::new().await;
    let published = crate::support::data::dataset("COST-P", 400);
    let hidden: Vec<_> = published
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut twin = c.clone();
            twin.id = CommentId::from_parts(c.created_at_ms, 1_000_000 + i as u128);
            twin.sku = Sku::parse("COST-Q").expect("sku");
            twin.moderation.status = CommentStatus::Hidden;
            twin.author_sub = Some("auth0|alice".to_owned());
            twin
        })
        .collect();
    backends.store.put_batch(&published).await.expect("put");
    backends.store.put_batch(&hidden).await.expect("put");
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&reindexed), Some(0), "{}", stdout(&reindexed));
    let extra = jwks.serve_args();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let app = backends.serve(&extra).await;
    let cost = |query: String| {
        let app = &app;
        let carol = people.carol.clone();
        async move {
            let answer = app.graphql_as(&carol, &query, json!({})).await;
            assert!(answer.get("errors").is_none(), "{answer:#}");
            let mut cost = answer["extensions"]["cost"].clone();
            cost.as_object_mut()
                .expect("a cost")
                .remove("throttleStatus");
            cost.as_object_mut()
                .expect("a cost")
                .remove("requestedQueryCost");
            cost.as_object_mut()
                .expect("a cost")
                .remove("actualQueryCost");
            let page = answer["data"]
                .as_object()
                .expect("data")
                .values()
                .next()
                .cloned();
            (
                cost,
                page.expect("a page")["edges"]
                    .as_array()
                    .map_or(0, Vec::len),
            )
        }
    };
    for args in [
        "first: 20, offset: 300",
        "first: 20",
        "last: 20",
        "first: 5, offset: 398",
    ] {
        let product = cost(format!(
            "{{ comments(sku: \"COST-P\", {args}, orderBy: OLDEST) {{ totalCount edges {{ node {{ id }} }} }} }}"
        ))
        .await;
        let queue = cost(format!(
            "{{ moderationQueue(queue: HIDDEN, sku: \"COST-Q\", {args}) {{ totalCount edges {{ node {{ id }} }} }} }}"
        ))
        .await;
        assert_eq!(queue, product, "{args}");
        let shop = cost(format!(
            "{{ moderationQueue(queue: HIDDEN, {args}) {{ totalCount edges {{ node {{ id }} }} }} }}"
        ))
        .await;
        assert_eq!(shop, product, "{args}: the shop's queue");
        // The same 400 comments are all alice's: her own list, newest first, costs what the
        // product's list by its default order does.
        let newest = cost(format!(
            "{{ comments(sku: \"COST-P\", {args}) {{ totalCount edges {{ node {{ id }} }} }} }}"
        ))
        .await;
        let alice = people.alice.clone();
        let own = {
            let query = format!(
                "{{ viewer {{ comments({args}) {{ totalCount edges {{ node {{ id }} }} }} }} }}"
            );
            let answer = app.graphql_as(&alice, &query, json!({})).await;
            assert!(answer.get("errors").is_none(), "{answer:#}");
            let mut cost = answer["extensions"]["cost"].clone();
            for field in ["throttleStatus", "requestedQueryCost", "actualQueryCost"] {
                cost.as_object_mut().expect("a cost").remove(field);
            }
            let edges = answer["data"]["viewer"]["comments"]["edges"]
                .as_array()
                .map_or(0, Vec::len);
            (cost, edges)
        };
        assert_eq!(own, newest, "{args}: the author's own list");
    }
    app.stop().await.expect("clean stop");
}
