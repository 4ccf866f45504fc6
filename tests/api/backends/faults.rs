//! Backend faults and request limits: a store outage answers `STORE_UNAVAILABLE` quickly and
//! recovers; index latency is cut off by the index's own timeout; requests are bounded in time
//! and in number; hostile queries are refused before they run.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{DEMO_SKU, TestApp, error_codes, socket_address};
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::redis_server::RedisServer;

/// A server on embedded data whose Redis index sits behind a fault proxy.
async fn app_with_slow_index_possible(extra: &[&str]) -> (TestApp, FaultProxy, RedisServer) {
    let redis = RedisServer::start();
    let proxy = FaultProxy::start(socket_address(&redis.url())).await;
    let url = format!("redis://{}", proxy.address);
    let mut args = vec![
        "--demo-comments",
        "200",
        "--index",
        "redis",
        "--redis-url",
        &url,
    ];
    args.extend_from_slice(extra);
    (TestApp::spawn(&args).await, proxy, redis)
}

#[tokio::test]
async fn a_store_outage_answers_store_unavailable_without_hanging_and_recovers() {
    let (app, proxy) = TestApp::on_proxied_dynamodb(&[]).await;
    let first = app.page(DEMO_SKU, json!({ "first": 30 })).await;

    proxy.set(Fault::Refuse);
    let started = Instant::now();
    let query = "query($c: String) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 30, after: $c) { edges { cursor } } }";
    let response = app.graphql(query, json!({ "c": first.end_cursor })).await;
    assert_eq!(
        error_codes(&response),
        ["STORE_UNAVAILABLE"],
        "{response:#}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "answered in {:?}",
        started.elapsed()
    );
    let add = "mutation { addComment(input: { sku: \"X\", author: \"a\", body: \"b\", rating: 1 }) { comment { id } } }";
    assert_eq!(
        error_codes(&app.graphql(add, json!({})).await),
        ["STORE_UNAVAILABLE"]
    );
    crate::helpers::until_readyz(&app, 503).await;

    proxy.set(Fault::None);
    let next = app
        .page(DEMO_SKU, json!({ "first": 30, "after": first.end_cursor }))
        .await;
    assert_eq!(next.ids.len(), 30, "pages come back with the store");
    assert!(next.has_previous_page && next.has_next_page);
}

#[tokio::test]
async fn index_latency_is_cut_off_by_the_index_timeout_and_only_totalcount_fails() {
    let (app, proxy, _redis) = app_with_slow_index_possible(&[]).await;
    let query = "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 3) { totalCount edges { cursor } } }";
    assert_eq!(
        app.data(query, json!({})).await["comments"]["totalCount"],
        200
    );

    proxy.set(Fault::Delay(Duration::from_secs(5)));
    let started = Instant::now();
    let response = app.graphql(query, json!({})).await;
    let elapsed = started.elapsed();
    assert_eq!(
        error_codes(&response),
        ["INDEX_UNAVAILABLE"],
        "{response:#}"
    );
    assert_eq!(
        response["data"]["comments"]["edges"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert!(
        elapsed < Duration::from_millis(4_500),
        "the index timeout held: {elapsed:?}"
    );

    proxy.set(Fault::None);
    tokio::time::sleep(Duration::from_secs(5)).await; // let the delayed replies drain
    assert_eq!(
        app.data(query, json!({})).await["comments"]["totalCount"],
        200
    );
}

#[tokio::test]
async fn a_request_past_its_time_limit_answers_request_timeout() {
    let (app, proxy, _redis) = app_with_slow_index_possible(&["--request-timeout-ms", "400"]).await;
    proxy.set(Fault::Delay(Duration::from_secs(3)));
    let started = Instant::now();
    let response = app
        .graphql_reply(
            None,
            "{ comments(sku: \"DAFT_PUNK_TSHIRT\") { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(response.status, 504);
    let body = response.json();
    assert_eq!(error_codes(&body), ["REQUEST_TIMEOUT"], "{body:#}");
    // Answered by the time limit, not by the index's answer 3 s later (a margin for a machine
    // shared with the whole suite).
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_are_refused_with_503_not_queued() {
    let (app, proxy, _redis) =
        app_with_slow_index_possible(&["--max-concurrent-requests", "1"]).await;
    proxy.set(Fault::Delay(Duration::from_millis(1_500)));
    let slow = app.graphql(
        "{ comments(sku: \"DAFT_PUNK_TSHIRT\") { totalCount } }",
        json!({}),
    );
    let second = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        app.graphql_reply(None, "{ product(sku: \"A\") { sku } }", json!({}))
            .await
    };
    let (_, refused) = tokio::join!(slow, second);
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let body = refused.json();
    assert_eq!(error_codes(&body), ["SERVICE_UNAVAILABLE"]);
    proxy.set(Fault::None);
    assert_eq!(
        app.data("{ product(sku: \"A\") { sku } }", json!({})).await["product"]["sku"],
        "A"
    );
}

#[tokio::test]
async fn too_many_aliases_and_oversized_bodies_are_refused() {
    let app = TestApp::embedded(5).await;
    let aliases: String = (0..31)
        .map(|i| format!("a{i}: product(sku: \"A\") {{ sku }} "))
        .collect();
    let response = app.graphql(&format!("{{ {aliases} }}"), json!({})).await;
    assert_eq!(
        error_codes(&response),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{response:#}"
    );
    assert!(
        response["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("31 aliased fields")
    );
    let fine: String = (0..30)
        .map(|i| format!("a{i}: product(sku: \"A\") {{ sku }} "))
        .collect();
    assert!(
        app.graphql(&format!("{{ {fine} }}"), json!({}))
            .await
            .get("errors")
            .is_none()
    );

    let huge = format!(
        "{{ product(sku: \"{}\") {{ sku }} }}",
        "A".repeat(300 * 1024)
    );
    let response = app.graphql_reply(None, &huge, json!({})).await;
    assert_eq!(response.status, 413);
}

#[tokio::test]
async fn metrics_count_requests_and_backend_reads() {
    let app = TestApp::embedded(50).await;
    app.page(DEMO_SKU, json!({ "first": 5 })).await;
    let metrics = app.metrics().await;
    for (metric, kind) in [
        ("dynapage_graphql_requests_total", "counter"),
        ("dynapage_graphql_request_duration_seconds", "histogram"),
        ("dynapage_page_items_read", "histogram"),
    ] {
        assert_eq!(
            metrics.types.get(metric).map(String::as_str),
            Some(kind),
            "{metric} in /metrics:\n{}",
            metrics.text
        );
    }
    // Histograms, not summaries: buckets add up across replicas, quantiles do not.
    assert!(
        !metrics
            .samples
            .keys()
            .any(|s| s.labels.contains_key("quantile")),
        "a summary is exported:\n{}",
        metrics.text
    );
    let query = ("kind", "query");
    for le in ["0.0005", "10", "+Inf"] {
        let bucket = "dynapage_graphql_request_duration_seconds_bucket";
        metrics.value(bucket, &[query, ("le", le)]);
    }
    metrics.value("dynapage_page_items_read_bucket", &[("le", "21")]);
    metrics.value("dynapage_page_items_read_sum", &[]);
    assert_eq!(
        metrics.value("dynapage_page_items_read_bucket", &[("le", "+Inf")]),
        metrics.value("dynapage_page_items_read_count", &[]),
        "the last bucket holds every page"
    );
    assert!(
        metrics.value("dynapage_page_items_read_bucket", &[("le", "11")]) >= 1.0,
        "the page of 5 read 6 items"
    );
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish_then_stops() {
    let (app, proxy) = TestApp::on_proxied_dynamodb(&[]).await;
    proxy.set(Fault::Delay(Duration::from_millis(400)));
    let query = json!({ "query": "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 10) { edges { cursor } } }" });
    let url = format!("{}/graphql", app.address);
    let in_flight: Vec<_> = (0..16)
        .map(|_| app.client.post(&url).json(&query).send())
        .collect();
    let requests = futures::future::join_all(in_flight);
    let stop = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        let stopped = app.stop().await;
        (stopped, started.elapsed())
    };
    let (responses, (stopped, took)) = tokio::join!(requests, stop);
    stopped.expect("a clean stop");
    for response in responses {
        let body: serde_json::Value = response
            .expect("answered, not cut")
            .json()
            .await
            .expect("json");
        assert_eq!(
            body["data"]["comments"]["edges"].as_array().map(Vec::len),
            Some(10),
            "{body:#}"
        );
    }
    assert!(took < Duration::from_secs(10), "stopped in {took:?}");
}

#[tokio::test]
async fn shutdown_is_bounded_when_requests_hang() {
    let (app, proxy) = TestApp::on_proxied_dynamodb(&[
        "--shutdown-grace-ms",
        "500",
        "--request-timeout-ms",
        "2000",
    ])
    .await;
    proxy.set(Fault::Delay(Duration::from_secs(30)));
    let url = format!("{}/graphql", app.address);
    let hanging = app
        .client
        .post(&url)
        .json(&json!({ "query": "{ comments(sku: \"DAFT_PUNK_TSHIRT\") { edges { cursor } } }" }))
        .send();
    let stop = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        let stopped = app.stop().await;
        (stopped, started.elapsed())
    };
    let (_, (stopped, took)) = tokio::join!(hanging, stop);
    stopped.expect("stops without an error");
    assert!(
        took < Duration::from_secs(3),
        "the grace period bounds the stop: {took:?}"
    );
}
