//! The live feed across servers and through Redis outages, on real DynamoDB Local and
//! `redis-server`: a client that subscribed on one server and resumes with its cursor on a server
//! started since (which holds nothing of what happened before it) is given exactly the edits and
//! deletions it missed, once and in order, from the Redis change log; a server whose Redis goes
//! away retries reading the change log with backoff, warning once rather than twice a second,
//! and delivers events again once Redis is back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{TestApp, dynapage_command};
use crate::live::subscriptions::{Client, EVENTS, add};
use crate::support::redis_server::{RedisServer, shared_url};
use crate::sync::commands::Backends;

const EDIT: &str = "mutation($id: ID!, $body: String) { updateComment(input: { id: $id, body: $body }) { comment { id } } }";
const DELETE: &str =
    "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }";

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
    let args: Vec<&str> = backends.args.iter().map(String::as_str).collect();
    let a = TestApp::spawn(&args).await;
    // One `sync` applies the table's stream and appends to the change log; servers only read it.
    let _sync = dynapage_command("sync")
        .args(&args)
        .args(["--poll-ms", "50"])
        .spawn()
        .expect("sync starts");
    let sku = "RESUMED_ELSEWHERE";
    let mut on_a = Client::ready(&a).await;
    on_a.subscribe("a", json!({ "sku": sku })).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = add(&a, sku, "kept", 4).await;
    let edited = add(&a, sku, "to edit", 3).await;
    let deleted = add(&a, sku, "to delete", 2).await;
    let mut cursor = Value::Null;
    for id in [&kept, &edited, &deleted] {
        let event = on_a.event().await;
        assert_eq!(summary(&event).0, "ADDED", "{event:#}");
        assert_eq!(&summary(&event).1, id, "{event:#}");
        cursor = event["edge"]["cursor"].clone();
    }
    drop(on_a);

    // While the client is away: an edit, a deletion, another edit.
    a.data(EDIT, json!({ "id": edited, "body": "edited while away" }))
        .await;
    a.data(DELETE, json!({ "id": deleted })).await;
    a.data(EDIT, json!({ "id": kept, "body": "kept, edited" }))
        .await;
    // Until the last change is in the index (and so in the change log, appended right after).
    crate::helpers::eventually("the deletion reaching the index", || async {
        let page = a.page(sku, json!({ "first": 10 })).await;
        (page.ids.len() == 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Server B starts now: its own memory holds nothing from before, the change log does.
    let b = TestApp::spawn(&args).await;
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
    let live = add(&a, sku, "live again", 5).await;
    let event = on_b.event().await;
    assert_eq!(summary(&event), ("ADDED".into(), live, "live again".into()));
}

/// A `dynapage serve` child process whose standard error is collected.
struct LoggingServer {
    _child: tokio::process::Child,
    address: String,
    log: Arc<Mutex<String>>,
}

impl LoggingServer {
    /// `serve <args>` on a free port, logging `RUST_LOG`, once it answers `/healthz`.
    async fn start(args: &[&str], rust_log: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let listen = format!("127.0.0.1:{port}");
        let mut child = dynapage_command("serve")
            .args(["--listen", &listen])
            .args(args)
            .env("RUST_LOG", rust_log)
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("serve starts");
        let log = Arc::new(Mutex::new(String::new()));
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut log = sink.lock().expect("log");
                log.push_str(&line);
                log.push('\n');
            }
        });
        let address = format!("http://{listen}");
        let client = reqwest::Client::new();
        for _ in 0..600 {
            let healthy = client.get(format!("{address}/healthz")).send().await;
            if healthy.is_ok_and(|r| r.status().is_success()) {
                return Self {
                    _child: child,
                    address,
                    log,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("serve did not become healthy: {}", log.lock().expect("log"));
    }

    fn lines_with(&self, text: &str) -> usize {
        let log = self.log.lock().expect("log");
        log.lines().filter(|line| line.contains(text)).count()
    }

    fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    /// A `graphql-transport-ws` socket subscribed to `sku`'s events.
    async fn subscribe(&self, sku: &str) -> crate::live::subscriptions::Socket {
        let protocol = "graphql-transport-ws";
        let mut socket = crate::live::subscriptions::open_socket(&self.address, protocol).await;
        for message in [
            json!({ "type": "connection_init", "payload": {} }),
            json!({ "id": "1", "type": "subscribe", "payload": { "query": EVENTS, "variables": { "sku": sku } } }),
        ] {
            let text = Message::Text(message.to_string().into());
            socket.send(text).await.expect("sent");
        }
        socket
    }
}

/// The next `next` message's payload on `socket` within `within` (pings answered).
async fn next_event(socket: &mut crate::live::subscriptions::Socket, within: Duration) -> Value {
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
    let server = LoggingServer::start(&args, "warn,dynapage::live::redis_log=debug").await;
    let mut socket = server.subscribe("BACKED_OFF").await;
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
    let app = reqwest::Client::new();
    let query = "mutation { addComment(input: { sku: \"BACKED_OFF\", author: \"a\", body: \"back\", rating: 4 }) { comment { id } } }";
    let written: Value = app
        .post(format!("{}/graphql", server.address))
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert!(written.get("errors").is_none(), "{written:#}");
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
