//! The index on a real six-node Redis Cluster (three masters, three replicas): `reindex`,
//! `verify`, the stream consumer and the `ratings` filter through the real binary, given the
//! six URLs as `--redis-url` and no `--redis-cluster`; and a master killed in the middle of a
//! walk. (The `PageIndex` contract also runs on the shared cluster: `contracts::index`.)

use std::time::{Duration, Instant};

use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::redis::RedisConfig;
use serde_json::{Value, json};

use crate::helpers::process::{exit_code, stdout};
use crate::helpers::{DELETE_COMMENT, DEMO_SKU, EDIT_COMMENT, TestApp, error_codes, seed_demo};
use crate::support::backends::Backends;
use crate::support::redis_cluster::{RedisCluster, cli, shared_cluster_urls};

const DEEP: &str = "query($offset: Int, $ratings: [Int!]) {
  comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: $offset, ratings: $ratings) {
    totalCount edges { cursor node { id rating } } pageInfo { hasNextPage hasPreviousPage } } }";

#[tokio::test]
async fn reindex_verify_sync_and_the_ratings_filter_work_on_a_six_node_cluster() {
    const COUNT: u64 = 1_500;
    let backends = Backends::on(&shared_cluster_urls()).await;
    seed_demo(&backends.store, COUNT).await;

    let rebuilt = backends.run("reindex", &["--segments", "3"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt).contains("reindexed 1500 comments of 1 products"),
        "{}",
        stdout(&rebuilt)
    );
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    let app = backends.serve_syncing(&[]).await;
    let embedded = TestApp::embedded_like_dynamodb(COUNT).await;
    for ratings in [Value::Null, json!([3, 5]), json!([1])] {
        for offset in [0, 150, 700, 1_490] {
            let variables = json!({ "offset": offset, "ratings": ratings });
            assert_eq!(
                app.graphql(DEEP, variables.clone()).await["data"],
                embedded.graphql(DEEP, variables).await["data"],
                "offset {offset}, ratings {ratings}"
            );
        }
    }

    // Writes through the API reach the cluster through the stream.
    let id = app.add_comment(None, DEMO_SKU, "clustered", 2).await;
    app.until_total(DEMO_SKU, Value::Null, COUNT as i64 + 1)
        .await;
    let before_edit = app.total(DEMO_SKU, json!([5])).await;
    app.data(EDIT_COMMENT, json!({ "id": id, "rating": 5 }))
        .await;
    app.until_total(DEMO_SKU, json!([5]), before_edit + 1).await;
    app.data(DELETE_COMMENT, json!({ "id": id })).await;
    app.until_total(DEMO_SKU, Value::Null, COUNT as i64).await;
    backends.until_no_drift("after writes on the cluster").await;
    app.stop().await.expect("stops");
}

/// What one step of the walk saw.
struct Step {
    at: Instant,
    total_ok: bool,
    deep_ok: bool,
}

/// A master killed during a walk: cursor pages (DynamoDB only) go on; `totalCount` and deep
/// offsets answer `INDEX_UNAVAILABLE` at most until a replica has been promoted (and the client
/// has learnt the new topology), then right again, both of them; nothing drifted.
#[tokio::test]
async fn a_master_killed_during_a_walk_fails_over_and_counts_and_deep_offsets_come_back() {
    const COUNT: u64 = 2_000;
    let mut cluster = RedisCluster::start();
    let backends = Backends::on(&cluster.urls()).await;
    seed_demo(&backends.store, COUNT).await;
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    let app = backends.serve(&[]).await;
    let embedded = TestApp::embedded_like_dynamodb(COUNT).await;
    let deep = json!({ "offset": 1_200, "ratings": null });
    let expected_deep = embedded.graphql(DEEP, deep.clone()).await["data"].clone();

    let product_key = format!("{}idx:{{{DEMO_SKU}}}:r5", backends.prefix);
    let master = cluster.master_of(&product_key);
    // Every write has reached the replicas, so the promoted one holds the whole index.
    assert_eq!(cli(master, &["WAIT", "1", "5000"]).trim(), "1");

    const WALK: &str = "query($after: String) {
      comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, after: $after) {
        edges { node { id } } pageInfo { hasNextPage endCursor } } }";
    let mut after = Value::Null;
    let mut walked = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut killed_at = None;
    let mut promoted_at = None;
    loop {
        let page = app.graphql(WALK, json!({ "after": after })).await;
        let connection = &page["data"]["comments"];
        assert!(
            page.get("errors").is_none(),
            "cursor pages need no index: {page:#}"
        );
        walked.extend(
            connection["edges"]
                .as_array()
                .expect("edges")
                .iter()
                .map(|e| e["node"]["id"].clone()),
        );

        let counted = app
            .graphql(DEEP, json!({ "offset": 0, "ratings": null }))
            .await;
        let total_ok = counted["data"]["comments"]["totalCount"] == json!(COUNT);
        if !total_ok {
            assert_eq!(error_codes(&counted), ["INDEX_UNAVAILABLE"], "{counted:#}");
        }
        let jumped = app.graphql(DEEP, deep.clone()).await;
        let deep_ok = jumped["data"] == expected_deep;
        if !deep_ok {
            assert_eq!(error_codes(&jumped), ["INDEX_UNAVAILABLE"], "{jumped:#}");
        }
        steps.push(Step {
            at: Instant::now(),
            total_ok,
            deep_ok,
        });

        if walked.len() == 200 {
            cluster.kill(master);
            killed_at = Some(Instant::now());
        }
        if killed_at.is_some()
            && promoted_at.is_none()
            && cluster
                .serving_master(&product_key)
                .is_some_and(|port| port != master)
            && cluster.is_healthy()
        {
            promoted_at = Some(Instant::now());
        }
        if connection["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = connection["pageInfo"]["endCursor"].clone();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (killed_at, promoted_at) = (
        killed_at.expect("the master was killed"),
        promoted_at.expect("a replica was promoted during the walk"),
    );

    let mut expected_ids = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = embedded.graphql(WALK, json!({ "after": after })).await;
        let connection = &page["data"]["comments"];
        expected_ids.extend(
            connection["edges"]
                .as_array()
                .expect("edges")
                .iter()
                .map(|e| e["node"]["id"].clone()),
        );
        if connection["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = connection["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(walked.len(), COUNT as usize);
    assert!(
        walked == expected_ids,
        "the walk saw every comment once, in order (first difference at {:?})",
        walked.iter().zip(&expected_ids).position(|(a, b)| a != b)
    );

    let failed: Vec<&Step> = steps
        .iter()
        .filter(|s| !(s.total_ok && s.deep_ok))
        .collect();
    let last_failure = failed.iter().map(|s| s.at).max();
    eprintln!(
        "failover: {} steps, {} with INDEX_UNAVAILABLE, promoted {} ms after the kill, last \
         failure {} ms after the kill",
        steps.len(),
        failed.len(),
        (promoted_at - killed_at).as_millis(),
        last_failure.map_or(0, |at| at.saturating_duration_since(killed_at).as_millis())
    );
    assert!(
        steps
            .iter()
            .filter(|s| s.at < killed_at)
            .all(|s| s.total_ok && s.deep_ok),
        "before the kill every answer was right"
    );
    // The client learns the new topology when a request fails against the dead node, with a
    // short back-off: allow it two seconds after the promotion.
    let settled = promoted_at + Duration::from_secs(2);
    assert!(
        steps
            .iter()
            .filter(|s| s.at > settled)
            .all(|s| s.total_ok && s.deep_ok),
        "after the promotion, counts and deep offsets answer right"
    );
    assert!(
        steps.iter().filter(|s| s.at > settled).count() >= 5,
        "the walk went on long enough after the promotion to show it"
    );
    // Healing is not partial: once the count is right again and the promotion is done, so is
    // every deep offset (the bug this guards against left deep offsets failing long after the
    // count had healed). While the promotion is under way, a count may already reach the new
    // master on a request before the deep offset's does: seen once in CI, 90 ms before the
    // promotion was observed, under the load of two CI runs.
    let first_healed = steps
        .iter()
        .position(|s| s.at > killed_at && s.total_ok)
        .expect("the count came back");
    assert!(
        steps[first_healed..]
            .iter()
            .filter(|s| s.at > promoted_at)
            .all(|s| s.deep_ok),
        "a deep offset failed after the count had come back and the promotion was done"
    );

    let index = RedisIndex::connect(RedisConfig::new(&cluster.urls(), &backends.prefix))
        .await
        .expect("the index builds");
    assert_eq!(
        index
            .count(
                &dynapage::domain::Sku::parse(DEMO_SKU).expect("sku"),
                dynapage::domain::RatingSet::ALL
            )
            .await
            .expect("count"),
        COUNT
    );
    let verified = backends.run("verify", &[]).await;
    assert_eq!(
        exit_code(&verified),
        Some(0),
        "no drift after the failover: {}",
        stdout(&verified)
    );
    app.stop().await.expect("stops");
}

/// Scripts are not replicated, so a promoted replica (or a restarted node) has none. The index
/// loads them on the node that holds the product's keys and needs no other node for that: with
/// every script cache emptied and a node down (a replica of another shard), both scripts still
/// answer at once.
#[tokio::test]
async fn scripts_missing_on_the_nodes_are_loaded_where_the_keys_live_even_with_a_node_down() {
    use dynapage::domain::{ChangeEvent, IndexEntry, Listing, Order, RatingSet, Sku};

    let mut cluster = RedisCluster::start();
    let prefix = crate::support::redis_server::unique_prefix();
    let index = RedisIndex::connect(RedisConfig::new(&cluster.urls(), &prefix))
        .await
        .expect("the index builds");
    let sku = Sku::parse("SCRIPTED").expect("sku");
    let events: Vec<ChangeEvent> = crate::support::data::generated("SCRIPTED", 4, 300)
        .iter()
        .map(|c| ChangeEvent::Upsert {
            old: None,
            new: IndexEntry::from(c),
        })
        .collect();
    index.apply(&events).await.expect("apply");
    let expected = index
        .key_at(
            &sku,
            Listing::flat(RatingSet::ALL),
            Order::NewestFirst,
            None,
            123,
        )
        .await
        .expect("key_at");

    let master = cluster.master_of(&format!("{prefix}idx:{{SCRIPTED}}:r1"));
    let other_replica = cluster
        .replicas()
        .into_iter()
        .find(|(_, replica_of)| *replica_of != master)
        .map(|(port, _)| port)
        .expect("a replica of another master");
    cluster.kill(other_replica);
    for port in cluster.live() {
        assert_eq!(cli(port, &["SCRIPT", "FLUSH"]).trim(), "OK");
    }
    assert_eq!(
        index
            .key_at(
                &sku,
                Listing::flat(RatingSet::ALL),
                Order::NewestFirst,
                None,
                123
            )
            .await
            .expect("key_at with the scripts gone and a node down"),
        expected
    );
    assert!(
        index.apply(&events).await.expect("apply").is_empty(),
        "and the apply script too"
    );
}

/// A category page's 48 aliased `product(sku:) { ratingSummary }` (and 48 lone totals) on the
/// Cluster: the products' keys live in many slots, so their counts are one pipeline per slot,
/// all sent at once, and `indexCalls` counts each; the answers are each product's own.
#[tokio::test]
async fn aliased_lookups_on_a_cluster_make_one_index_call_per_slot() {
    use crate::graphql::batched_lookups::{
        MANY_ALIASES, aliased_lookups_answer_as_alone_in_one_batch, shelf,
    };
    use redis::cluster_routing::Slot;

    let slots: std::collections::HashSet<Slot> = shelf()
        .iter()
        .map(|sku| Slot::for_key(format!("{{{sku}}}")))
        .collect();
    assert!(slots.len() > 1, "the shelf spans several slots");
    let (urls, prefix) = (
        shared_cluster_urls(),
        crate::support::redis_server::unique_prefix(),
    );
    let mut args = vec![
        "--demo-comments",
        "0",
        "--index",
        "redis",
        "--redis-url",
        &urls,
    ];
    args.extend(["--redis-prefix", &prefix]);
    args.extend(MANY_ALIASES);
    let app = TestApp::spawn(&args).await;
    aliased_lookups_answer_as_alone_in_one_batch(&app, slots.len() as u64).await;
    app.stop().await.expect("stops");
}
