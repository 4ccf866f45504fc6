//! The live feed across servers and through Redis outages, on real DynamoDB Local and
//! `redis-server`: a client that subscribed on one server and resumes with its cursor on a server
//! started since (which holds nothing of what happened before it) is given exactly the edits and
//! deletions it missed, once and in order, from the Redis change log; a server whose Redis goes
//! away retries reading the change log with backoff, warning once rather than twice a second,
//! and delivers events again once Redis is back.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::process::ServerProcess;
use crate::helpers::websocket::{Client, EVENTS, Socket, open_socket};
use crate::helpers::{DELETE_COMMENT, EDIT_COMMENT};
use crate::support::backends::Backends;
use crate::support::redis_server::{RedisServer, shared_url};

/// `(kind, id, body)` of a `commentEvents` payload (the id of a deletion's comment).
fn summary(event: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let node = &event["edge"]["node"];
    let id = node["id"].as_str().or(event["deletedCommentId"].as_str());
    (
        text(&event["kind"]),
        id.unwrap_or_default().to_owned(),
        text(&node["body"]),
    )
}

#[tokio::test]
async fn a_client_resuming_on_a_server_started_since_gets_the_missed_edits_and_deletions_once_in_order()
 {
    let backends = Backends::on(&shared_url()).await;
    let a = backends.serve(&[]).await;
    // One `sync` applies the table's stream and appends to the change log; servers only read it.
    let _sync = backends.spawn_sync();
    let sku = "RESUMED_ELSEWHERE";
    let mut on_a = Client::ready(&a).await;
    on_a.subscribe("a", json!({ "sku": sku })).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = a.add_comment(None, sku, "kept", 4).await;
    let edited = a.add_comment(None, sku, "to edit", 3).await;
    let deleted = a.add_comment(None, sku, "to delete", 2).await;
    let mut cursor = Value::Null;
    for id in [&kept, &edited, &deleted] {
        let event = on_a.event().await;
        assert_eq!(summary(&event).0, "ADDED", "{event:#}");
        assert_eq!(&summary(&event).1, id, "{event:#}");
        cursor = event["edge"]["cursor"].clone();
    }
    drop(on_a);

    // While the client is away: an edit, a deletion, another edit.
    a.data(
        EDIT_COMMENT,
        json!({ "id": edited, "body": "edited while away" }),
    )
    .await;
    a.data(DELETE_COMMENT, json!({ "id": deleted })).await;
    a.data(EDIT_COMMENT, json!({ "id": kept, "body": "kept, edited" }))
        .await;
    // Until the last change is in the index (and so in the change log, appended right after).
    crate::helpers::eventually("the deletion reaching the index", || async {
        let page = a.page(sku, json!({ "first": 10 })).await;
        (page.ids.len() == 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Server B starts now: its own memory holds nothing from before, the change log does.
    let b = backends.serve(&[]).await;
    let mut on_b = Client::ready(&b).await;
    on_b.subscribe("b", json!({ "sku": sku, "after": cursor }))
        .await;
    let mut replayed = Vec::new();
    for _ in 0..3 {
        replayed.push(summary(&on_b.event().await));
    }
    let expected = [
        ("UPDATED", &edited, "edited while away"),
        ("DELETED", &deleted, ""),
        ("UPDATED", &kept, "kept, edited"),
    ]
    .map(|(kind, id, body)| (kind.to_owned(), id.clone(), body.to_owned()));
    assert_eq!(replayed, expected, "exactly the missed changes, in order");
    let more = tokio::time::timeout(Duration::from_millis(700), on_b.socket.next()).await;
    assert!(more.is_err(), "nothing more, nothing twice: {more:?}");

    // Then live, through either server.
    let live = a.add_comment(None, sku, "live again", 5).await;
    let event = on_b.event().await;
    assert_eq!(summary(&event), ("ADDED".into(), live, "live again".into()));
}

/// A `graphql-transport-ws` socket to `server` subscribed to `sku`'s events, the
/// acknowledgement left unread.
async fn subscribe(server: &ServerProcess, sku: &str) -> Socket {
    let mut socket = open_socket(&server.address, "graphql-transport-ws").await;
    for message in [
        json!({ "type": "connection_init", "payload": {} }),
        json!({ "id": "1", "type": "subscribe", "payload": { "query": EVENTS, "variables": { "sku": sku } } }),
    ] {
        let text = Message::Text(message.to_string().into());
        socket.send(text).await.expect("sent");
    }
    socket
}

/// The next `next` message's payload on `socket` within `within` (pings answered).
async fn next_event(socket: &mut Socket, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let message = tokio::time::timeout_at(deadline, socket.next())
            .await
            .expect("an event in time")
            .expect("the socket is open")
            .expect("a message");
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(&text).expect("JSON");
        match value["type"].as_str() {
            Some("ping") => {
                let pong = Message::Text(json!({ "type": "pong" }).to_string().into());
                socket.send(pong).await.expect("pong");
            }
            Some("next") => return value["payload"].clone(),
            _ => {}
        }
    }
}

#[tokio::test]
async fn while_redis_is_away_the_feed_backs_off_warning_once_and_events_flow_again_after() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let args = [
        "--demo-comments",
        "0",
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--rate-limit-writes",
        "0",
        "--rate-limit-cost",
        "0",
    ];
    let server = ServerProcess::logging(&args, "warn,dynapage::live::redis_log=debug").await;
    let mut socket = subscribe(&server, "BACKED_OFF").await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    redis.stop();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let warned = server.lines_with("reading the change log failed; retrying with backoff");
    let retried = server.lines_with("reading the change log failed again");
    // The old fixed 500 ms retry warned about twelve times in six seconds.
    assert_eq!(warned, 1, "one warning per outage:\n{}", server.log());
    assert!(
        (2..=8).contains(&retried),
        "retried, less and less often:\n{}",
        server.log()
    );

    // Redis comes back (empty: it persists nothing); a comment written now reaches the socket.
    redis.restart();
    server.add_comment(None, "BACKED_OFF", "back", 4).await;
    // The reader's wait after six seconds down is at most 4 s.
    let payload = next_event(&mut socket, Duration::from_secs(15)).await;
    assert_eq!(
        payload["data"]["commentEvents"]["kind"], "ADDED",
        "{payload:#}"
    );
    assert_eq!(
        payload["data"]["commentEvents"]["edge"]["node"]["body"],
        "back"
    );
    // The line is written before the event is sent, but reaches this test through a pipe
    // read by another task: wait for it rather than race that task.
    let readable = "the change log is readable again";
    let waited = std::time::Instant::now();
    while server.lines_with(readable) == 0 && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.lines_with(readable), 1, "{}", server.log());
}
