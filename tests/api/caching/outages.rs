//! A Redis that stalls does not stall cached pages (issue 42, item 8): the response cache's
//! version read gives up after a short timeout and the cache is bypassed while Redis is away,
//! so a kept page that needs nothing else of the index answers at once, a burst of them gets
//! no 503, and each bypass is counted. The stall is real: `CLIENT PAUSE` on the server's own
//! `redis-server` (every command of every client waits until it ends).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::raw_http::{Raw, graphql_path};
use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::redis_server::connect;

/// A page whose edges come from the store alone (no `totalCount`, no offset).
const PAGE: &str =
    "query($sku: String!) { comments(sku: $sku, first: 5) { edges { node { id body } } } }";

async fn get(app: &TestApp) -> Raw {
    let path = graphql_path(PAGE, &json!({ "sku": DEMO_SKU }));
    app.raw_request("GET", &path, &[], "").await
}

/// How many times the response cache was bypassed for Redis being away.
async fn unavailable(app: &TestApp) -> f64 {
    let metrics = app.metrics().await;
    metrics.value(
        "dynapage_response_cache_total",
        &[("outcome", "unavailable")],
    )
}

#[tokio::test]
async fn while_redis_stalls_cached_pages_answer_at_once_and_a_burst_gets_no_503() {
    let (app, redis) = TestApp::on_redis(30, &["--response-cache-bytes", "1048576"]).await;
    for _ in 0..3 {
        assert_eq!(get(&app).await.status, 200);
    }
    let kept = get(&app).await;
    assert!(kept.header("etag").is_some(), "a hit before the stall");

    let mut conn = connect(&redis.url()).await;
    let before = unavailable(&app).await;
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(6000)
        .arg("ALL")
        .query_async(&mut conn)
        .await
        .expect("CLIENT PAUSE");
    let stalled = Instant::now();

    for _ in 0..5 {
        let started = Instant::now();
        let page = get(&app).await;
        assert_eq!(page.status, 200);
        assert_eq!(
            page.json()["data"],
            kept.json()["data"],
            "the same page, computed"
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a cached page waited {:?} for Redis",
            started.elapsed()
        );
    }
    let burst = (0..40).map(|_| get(&app));
    let started = Instant::now();
    let pages = futures::future::join_all(burst).await;
    let statuses: Vec<u16> = pages.iter().map(|p| p.status).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "40 pages took {:?}",
        started.elapsed()
    );
    assert!(
        stalled.elapsed() < Duration::from_millis(5_500),
        "the stall lasted through the checks"
    );
    assert!(
        unavailable(&app).await >= before + 45.0,
        "every bypass is counted"
    );

    // Once Redis answers again, hits come back.
    tokio::time::sleep_until((stalled + Duration::from_millis(6_200)).into()).await;
    crate::helpers::eventually("the cache serves hits again", || async {
        get(&app).await.header("etag").is_some().then_some(())
    })
    .await;
    app.stop().await.expect("clean stop");
}
