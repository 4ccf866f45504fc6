//! Keeping the index true over real backends: DynamoDB Local's stream feeds a real Redis
//! through the sync worker (in `serve --sync` and as the `dynapage sync` process, killed and
//! restarted), and `reindex` and `verify` repair and detect drift. Each test has its own table
//! and Redis key prefix.

use std::process::Stdio;
use std::time::{Duration, Instant};

use dynapage::domain::{Access, ChangeEvent, IndexEntry, Rating, RatingSet};
use dynapage::index::PageIndex;
use dynapage::store::CommentStore;
use serde_json::{Value, json};

use crate::helpers::process::{exit_code, stdout};
use crate::helpers::{DELETE_COMMENT, EDIT_COMMENT, TestApp};
use crate::support::backends::Backends;
use crate::support::data::{generated, sku};
use crate::support::dynamodb_local::{dynamo_store, endpoint};

#[tokio::test]
async fn writes_through_the_api_reach_the_redis_index_through_the_stream() {
    let backends = Backends::new().await;
    let app = backends.serve_syncing(&[]).await;

    let mut ids = Vec::new();
    for rating in [3, 5, 3] {
        ids.push(app.add_comment(None, "STREAMED", "ok", rating).await);
    }
    app.until_total("STREAMED", Value::Null, 3).await;
    app.until_total("STREAMED", json!([3]), 2).await;

    app.data(EDIT_COMMENT, json!({ "id": ids[0], "rating": 1 }))
        .await;
    app.until_total("STREAMED", json!([1]), 1).await;
    app.until_total("STREAMED", json!([3]), 1).await;

    app.data(DELETE_COMMENT, json!({ "id": ids[1] })).await;
    app.until_total("STREAMED", Value::Null, 2).await;
    app.until_total("STREAMED", json!([5]), 0).await;

    let verified = backends.run("verify", &[]).await;
    assert_eq!(
        exit_code(&verified),
        Some(0),
        "verify finds no drift: {}",
        stdout(&verified)
    );
    assert!(stdout(&verified).contains("no drift: 1 products, 2 comments"));
    app.stop().await.expect("the server and its sync task stop");
}

#[tokio::test]
async fn a_sync_worker_killed_while_writes_go_on_catches_up_after_a_restart() {
    let backends = Backends::new().await;
    let first = generated("KILLED", 1, 300);
    backends.store.put_batch(&first[..100]).await.expect("seed");
    let mut worker = backends.spawn_sync();

    let killed_sku = sku("KILLED");
    let deadline = Instant::now() + Duration::from_secs(15);
    while backends
        .index
        .count(&killed_sku, RatingSet::ALL)
        .await
        .expect("count")
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the worker never applied a batch"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Writes go on while the worker dies without a chance to checkpoint (SIGKILL).
    let writer = {
        let store = backends.store.clone();
        let rest = first[100..].to_vec();
        tokio::spawn(async move {
            for chunk in rest.chunks(25) {
                store.put_batch(chunk).await.expect("write");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    worker.start_kill().expect("SIGKILL the worker");
    worker.wait().await.expect("the worker is gone");
    writer.await.expect("the writer finished");
    for comment in first.iter().step_by(7) {
        backends
            .store
            .delete(comment.id, &Access::Any)
            .await
            .expect("delete");
    }

    let checkpoints = backends.checkpoint_keys().await;
    assert!(
        !checkpoints.is_empty(),
        "the killed worker left a checkpoint to resume from"
    );

    let mut worker = backends.spawn_sync();
    backends.until_no_drift("after the restart").await;
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    // SIGTERM is a graceful stop: the batch in hand is finished and the worker exits 0.
    let status = crate::helpers::process::terminate(&mut worker, Duration::from_secs(10)).await;
    assert!(status.success(), "a stopped worker exits 0: {status}");
}

#[tokio::test]
async fn reindex_repairs_a_corrupted_index_that_verify_reported() {
    let backends = Backends::new().await;
    let mut comments = generated("CORRUPT_A", 1, 150);
    comments.extend(generated("CORRUPT_B", 2, 150));
    backends.store.put_batch(&comments).await.expect("seed");

    let rebuilt = backends.run("reindex", &["--segments", "3"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(stdout(&rebuilt).contains("reindexed 300 comments of 2 products"));
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    // Drop two members, add a comment the table never had, and move one to another rating.
    let removed: Vec<IndexEntry> = comments[..2].iter().map(IndexEntry::from).collect();
    let bogus = IndexEntry::from(&generated("CORRUPT_A", 99, 1)[0]);
    let mut moved = IndexEntry::from(&comments[200]);
    moved.rating = Rating::new(i64::from(moved.rating.get() % 5 + 1)).expect("valid rating");
    let mut events: Vec<ChangeEvent> = removed
        .iter()
        .map(|old| ChangeEvent::removal(old.clone()))
        .collect();
    events.push(ChangeEvent::Upsert {
        old: None,
        new: bogus.clone(),
    });
    events.push(ChangeEvent::Upsert {
        old: None,
        new: moved.clone(),
    });
    backends.index.apply(&events).await.expect("corrupt");

    let verified = backends.run("verify", &[]).await;
    let report = stdout(&verified);
    assert_eq!(exit_code(&verified), Some(1), "drift exits 1: {report}");
    assert!(
        report.contains("DRIFT CORRUPT_A: table=150 index=149 missing=2 extra=1 mismatched=0"),
        "{report}"
    );
    assert!(
        report.contains("DRIFT CORRUPT_B: table=150 index=150 missing=0 extra=0 mismatched=1"),
        "{report}"
    );
    for id in [removed[0].key.id(), removed[1].key.id(), bogus.key.id()] {
        assert!(report.contains(&id.to_string()), "{id} is named: {report}");
    }
    assert!(report.contains("drift in 2 of 2 products (300 comments in the table)"));

    // The removals left tombstones newer than the table's comments (the index is ahead of the
    // table, as after a restore from a backup): the versions refuse the scanned state, and the
    // confirm step repairs them. The bogus comment is removed; the moved one is set back.
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt)
            .contains("2 older than what the index held; read again: 1 removed, 2 repaired"),
        "{}",
        stdout(&rebuilt)
    );
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));
}

#[tokio::test]
async fn reindex_and_verify_with_a_sku_touch_only_that_product() {
    let backends = Backends::new().await;
    let mut comments = generated("ONLY_A", 1, 120);
    comments.extend(generated("ONLY_B", 2, 80));
    backends.store.put_batch(&comments).await.expect("seed");

    let rebuilt = backends.run("reindex", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(stdout(&rebuilt).contains("reindexed 120 comments of 1 products (200 scanned)"));
    let count = |name: &'static str| {
        let index = backends.index.clone();
        async move {
            index
                .count(&sku(name), RatingSet::ALL)
                .await
                .expect("count")
        }
    };
    assert_eq!(count("ONLY_A").await, 120);
    assert_eq!(count("ONLY_B").await, 0, "the other product is untouched");

    let only_a = backends.run("verify", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&only_a), Some(0), "{}", stdout(&only_a));
    assert!(stdout(&only_a).contains("no drift: 1 products, 120 comments"));
    let everything = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&everything), Some(1), "ONLY_B is missing");
    assert!(stdout(&everything).contains("DRIFT ONLY_B: table=80 index=0 missing=80"));

    let rebuilt = backends.run("reindex", &["--sku", "ONLY_B"]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    // A deleted comment leaves ONLY_A's index stale, and reindexing ONLY_B leaves it so.
    backends
        .store
        .delete(comments[0].id, &Access::Any)
        .await
        .expect("delete");
    let only_b = backends.run("verify", &["--sku", "ONLY_B"]).await;
    assert_eq!(exit_code(&only_b), Some(0), "{}", stdout(&only_b));
    let only_a = backends.run("verify", &["--sku", "ONLY_A"]).await;
    assert_eq!(exit_code(&only_a), Some(1), "{}", stdout(&only_a));
    assert!(stdout(&only_a).contains("DRIFT ONLY_A: table=119 index=120 missing=0 extra=1"));
}

#[tokio::test]
async fn a_memory_index_over_dynamodb_is_filled_at_start_up_and_follows_the_stream() {
    let store = dynamo_store().await;
    store
        .put_batch(&generated("FILLED", 3, 50))
        .await
        .expect("seed");
    let endpoint = endpoint().await;
    let app = TestApp::spawn(&[
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        store.table(),
        "--index",
        "memory",
        "--sync-poll-ms",
        "50",
    ])
    .await;
    assert_eq!(
        app.total("FILLED", Value::Null).await,
        50,
        "filled by a scan before serving"
    );
    app.add_comment(None, "FILLED", "late", 4).await;
    app.until_total("FILLED", Value::Null, 51).await;
    app.stop().await.expect("stops");
}

/// Issue 4's promise at test scale: with DynamoDB + Redis + the stream, a deep page equals the
/// embedded backend's page and costs n + 1 items plus one index call.
#[tokio::test]
async fn a_deep_offset_over_dynamodb_and_redis_equals_the_embedded_page_at_first_page_cost() {
    const COUNT: u64 = 6_000;
    let backends = Backends::new().await;
    crate::helpers::seed_demo(&backends.store, COUNT).await;
    let real = backends.serve_syncing(&[]).await;
    real.until_total(crate::helpers::DEMO_SKU, Value::Null, COUNT as i64)
        .await;
    backends.until_no_drift("after the stream caught up").await;
    let embedded = TestApp::embedded_like_dynamodb(COUNT).await;

    let query =
        "query($offset: Int) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: $offset) {
      edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage } } }";
    for offset in [150, 4_500, 5_990] {
        let (a, b) = (
            real.graphql(query, json!({ "offset": offset })).await,
            embedded.graphql(query, json!({ "offset": offset })).await,
        );
        assert_eq!(a["data"], b["data"], "offset {offset}");
        let cost = &a["extensions"]["cost"];
        assert_eq!(
            [
                &cost["itemsRead"],
                &cost["storeQueries"],
                &cost["indexCalls"]
            ],
            [&json!(21.min(COUNT - offset)), &json!(1), &json!(1)],
            "offset {offset}: {cost}"
        );
    }
    let verify = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verify), Some(0), "{}", stdout(&verify));
}

/// Redis restarted empty: the server recovers by itself, and `reindex` makes the counts right.
#[tokio::test]
async fn after_redis_restarts_empty_a_reindex_restores_counts_and_verify_is_clean() {
    let mut redis = crate::support::redis_server::RedisServer::start();
    let store = dynamo_store().await;
    crate::helpers::seed_demo(&store, 300).await;
    let endpoint = endpoint().await;
    let url = redis.url();
    let args = [
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        store.table(),
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        "restart:",
    ];
    // No stream consumer here: it would replay the stream into the restarted Redis by itself
    // (which is fine, but then this test could not show that `reindex` alone restores it).
    let app = TestApp::spawn(&args).await;
    let run = |command: &'static str| {
        let args = args.map(str::to_owned);
        async move {
            tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
                .arg(command)
                .args(&args)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .output()
                .await
                .expect("dynapage runs")
        }
    };
    let filled = run("reindex").await;
    assert_eq!(
        exit_code(&filled),
        Some(0),
        "{}",
        String::from_utf8_lossy(&filled.stderr)
    );
    app.until_total(crate::helpers::DEMO_SKU, Value::Null, 300)
        .await;

    redis.stop();
    let page = app
        .graphql(
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 100) { totalCount edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        page["data"]["comments"]["edges"].as_array().map(Vec::len),
        Some(100)
    );
    assert_eq!(crate::helpers::error_codes(&page), ["INDEX_UNAVAILABLE"]);

    redis.restart();
    let drift = run("verify").await;
    assert_eq!(
        exit_code(&drift),
        Some(1),
        "an empty index drifts: {}",
        stdout(&drift)
    );
    let reindex = run("reindex").await;
    assert_eq!(
        exit_code(&reindex),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reindex.stderr)
    );
    app.until_total(crate::helpers::DEMO_SKU, Value::Null, 300)
        .await;
    let clean = run("verify").await;
    assert_eq!(exit_code(&clean), Some(0), "{}", stdout(&clean));
}

#[tokio::test]
async fn sync_reindex_and_verify_refuse_the_embedded_backends_naming_the_flags() {
    for command in ["sync", "reindex", "verify"] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
            .arg(command)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("dynapage runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(exit_code(&output), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("`{command}`"))
                && stderr.contains("--store dynamodb --index redis"),
            "{command}: {stderr}"
        );
    }
}
