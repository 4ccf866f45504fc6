//! `--websocket-coalesce-ms`: a socket's live events that come within the window leave in one
//! write (counted by `dynapage_websocket_writes_total`), each once and in order; without a
//! window an event leaves at once, in a write of its own.

use std::time::Duration;

use serde_json::json;

use crate::helpers::TestApp;
use crate::helpers::websocket::Client;
use crate::support::counters::Counters;

const WRITES: &str = "dynapage_websocket_writes_total";

/// Subscribes one socket to a product, adds `events` comments one after the other (each once
/// the one before arrived, when `one_by_one`), and returns the writes the socket's events took;
/// every event must arrive once, in order.
async fn writes_for(coalesce_ms: &str, events: usize, one_by_one: bool) -> u64 {
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
    let mut received = 0;
    for n in 0..events {
        let body = format!("event {n}");
        ids.push(app.add_comment(None, "COALESCE", &body, 4).await);
        if one_by_one {
            assert_eq!(client.event().await["edge"]["node"]["id"], ids[n]);
            received += 1;
        } else {
            // Events apart in time, as a product's comments come.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for id in &ids[received..] {
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
    // Five comments 20 ms apart take about 100 ms (more on a loaded machine): well within 1 s.
    let writes = writes_for("1000", 5, false).await;
    assert!(
        (1..=2).contains(&writes),
        "5 events within the window took {writes} writes"
    );
}

#[tokio::test]
async fn without_a_window_each_event_leaves_in_its_own_write() {
    // Each comment is added once the one before arrived: nothing else can share its write.
    let writes = writes_for("0", 5, true).await;
    assert_eq!(writes, 5, "one write per event");
}
