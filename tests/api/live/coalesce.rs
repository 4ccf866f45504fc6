//! `--websocket-coalesce-ms`: a socket's live events that come within the window leave in one
//! write (counted by `dynapage_websocket_writes_total`), each once and in order; without a
//! window the same events, 100 ms apart, leave one by one.

use std::time::Duration;

use serde_json::json;

use crate::helpers::TestApp;
use crate::helpers::websocket::Client;
use crate::support::counters::Counters;

const WRITES: &str = "dynapage_websocket_writes_total";

/// Comments added, 100 ms apart, in each test.
const EVENTS: usize = 5;

/// Subscribes one socket to a product, adds [`EVENTS`] comments 100 ms apart, and returns the
/// writes the socket's events took; every event must arrive once, in order.
async fn writes_for(coalesce_ms: &str) -> u64 {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--websocket-coalesce-ms",
        coalesce_ms,
    ])
    .await;
    let mut client = Client::ready(&app).await;
    client.subscribe("s", json!({ "sku": "COALESCE" })).await;
    // The subscription goes live after its `subscribe` is read; nothing else tells when.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = counters.get(WRITES);
    let mut ids = Vec::new();
    for n in 0..EVENTS {
        let body = format!("event {n}");
        ids.push(app.add_comment(None, "COALESCE", &body, 4).await);
        // Events apart in time, as a product's comments come.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for id in &ids {
        assert_eq!(client.event().await["edge"]["node"]["id"], *id, "in order");
    }
    let writes = counters.get(WRITES) - before;
    // Nothing twice: the next event is the next comment.
    let last = app.add_comment(None, "COALESCE", "last", 4).await;
    assert_eq!(client.event().await["edge"]["node"]["id"], last);
    writes
}

#[tokio::test]
async fn events_within_the_window_leave_in_one_write_each_once_and_in_order() {
    // Five comments 100 ms apart take about half a second (more on a loaded machine): within
    // the 1 s window, or split by its end at most once.
    let writes = writes_for("1000").await;
    assert!(
        (1..=2).contains(&writes),
        "{EVENTS} events within the window took {writes} writes"
    );
}

#[tokio::test]
async fn without_a_window_events_apart_in_time_leave_one_by_one() {
    // Two events share a write only when the writer was held up for 100 ms; allow it once.
    let writes = writes_for("0").await;
    assert!(
        writes >= EVENTS as u64 - 1,
        "{EVENTS} events 100 ms apart took {writes} writes"
    );
}
