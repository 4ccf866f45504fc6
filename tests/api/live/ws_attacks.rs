//! The WebSocket attacks of issue 22 (items 1-4), each performed with raw frames against the
//! real server, refused or bounded, and followed by a normal client that still subscribes and
//! hears an event: a subscription document that reads connections per event and resumes deep
//! in the past; a socket that stops reading while events flood; one client taking every
//! subscription slot; many subscriptions in one message.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;

use crate::helpers::process::{ServerProcess, rss_mib};
use crate::helpers::websocket::{Client, EVENTS, errors_of, try_open};
use crate::helpers::{Api, DEMO_SKU, TestApp};

/// The code and message of a refusal (`next` with errors, or `error`).
fn refusal(message: &Value) -> (String, String) {
    let error = &errors_of(message)[0];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (text(&error["extensions"]["code"]), text(&error["message"]))
}

/// A normal client's story: it subscribes to `sku` and hears the comment written next.
pub(crate) async fn a_normal_client_still_subscribes(app: &Api, client: &mut Client, sku: &str) {
    client
        .subscribe_to("normal", EVENTS, json!({ "sku": sku }))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let written = app.add_comment(None, sku, "still served", 4).await;
    let event = client.answer_to("normal").await;
    assert_eq!(
        event["payload"]["data"]["commentEvents"]["edge"]["node"]["id"], written,
        "{event:#}"
    );
}

/// The issue's field: each event would read a connection 100 deep over four partitions.
const CONNECTION_PER_EVENT: &str = r#"commentEvents(sku: "HELMET_REPLICA") { edge { node { product { comments(first: 1, offset: 100, ratings: [1, 2, 3, 4]) { pageInfo { hasNextPage } } } } } }"#;

#[tokio::test]
async fn item1_a_subscription_of_many_root_fields_or_of_connections_is_refused_before_it_runs() {
    let app = TestApp::embedded(0).await;
    let mut client = Client::ready(&app).await;
    let twenty = format!(
        "subscription {{ {} }}",
        [CONNECTION_PER_EVENT; 20].join(" ")
    );
    let single = format!("subscription {{ {CONNECTION_PER_EVENT} }}");
    let hidden = "subscription { ...E } \
        fragment E on Subscription { commentEvents(sku: \"HELMET_REPLICA\") { edge { node { product { ...P } } } } } \
        fragment P on Product { ratingSummary { __typename } }";
    for (id, document, says) in [
        (
            "twenty",
            twenty.as_str(),
            "exactly one root field; this one selects 20",
        ),
        ("single", single.as_str(), "query `comments` separately"),
        (
            "hidden",
            hidden,
            "`ratingSummary` cannot be selected in a subscription",
        ),
    ] {
        client.subscribe_to(id, document, json!({})).await;
        let (code, message) = refusal(&client.answer_to(id).await);
        assert_eq!(code, "GRAPHQL_VALIDATION_FAILED", "{id}: {message}");
        assert!(message.contains(says), "{id}: {message}");
    }
    a_normal_client_still_subscribes(&app, &mut client, "AFTER_ITEM_1").await;
}

/// What is left of 127.0.0.1's cost budget, as a cheap query reports it.
async fn budget_left(app: &TestApp) -> i64 {
    let response = app
        .graphql("{ product(sku: \"X\") { sku } }", json!({}))
        .await;
    response["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]
        .as_i64()
        .unwrap_or_else(|| panic!("a budget: {response:#}"))
}

#[tokio::test]
async fn item1_a_resume_too_far_behind_reads_nothing_and_a_resume_pays_for_what_it_replays() {
    // A slow refill, so what the budget loses is what the requests took (from the default
    // burst, 10,000 points).
    let app = TestApp::cost_budgeted(1200, 10_000, &[]).await;
    let deep = app
        .page(DEMO_SKU, json!({ "first": 1, "offset": 1_100 }))
        .await;
    let mid = app
        .page(DEMO_SKU, json!({ "first": 1, "offset": 300 }))
        .await;
    let mut client = Client::ready(&app).await;

    let before = budget_left(&app).await;
    let started = Instant::now();
    client
        .subscribe("deep", json!({ "sku": DEMO_SKU, "after": deep.cursors[0] }))
        .await;
    // The hub started after the demo comments were written: its own EVENTS_MISSED first.
    let mut messages = Vec::new();
    for _ in 0..2 {
        messages.push(refusal(&client.answer_to("deep").await));
    }
    assert!(
        messages.iter().all(|(code, _)| code == "EVENTS_MISSED"),
        "{messages:?}"
    );
    assert!(messages[1].1.contains("more than 1000"), "{messages:?}");
    let spent = before - budget_left(&app).await;
    assert!(
        spent < 30,
        "the deep resume read nothing and cost about its document: {spent} in {:?}",
        started.elapsed()
    );

    let before = budget_left(&app).await;
    client
        .subscribe("mid", json!({ "sku": DEMO_SKU, "after": mid.cursors[0] }))
        .await;
    assert_eq!(refusal(&client.answer_to("mid").await).0, "EVENTS_MISSED");
    for _ in 0..300 {
        let event = client.answer_to("mid").await;
        assert_eq!(event["type"], "next", "{event:#}");
        assert_eq!(event["payload"]["data"]["commentEvents"]["kind"], "ADDED");
    }
    let spent = before - budget_left(&app).await;
    assert!(spent >= 300, "the replay of 300 comments cost {spent}");

    // A budget that cannot hold a replay refuses the resume.
    let poor = TestApp::cost_budgeted(1200, 200, &[]).await;
    let mid = poor
        .page(DEMO_SKU, json!({ "first": 1, "offset": 300 }))
        .await;
    let mut refused = Client::ready(&poor).await;
    refused
        .subscribe("mid", json!({ "sku": DEMO_SKU, "after": mid.cursors[0] }))
        .await;
    let codes = [
        refusal(&refused.answer_to("mid").await).0,
        refusal(&refused.answer_to("mid").await).0,
    ];
    assert_eq!(codes, ["EVENTS_MISSED", "RATE_LIMITED"]);

    a_normal_client_still_subscribes(&app, &mut client, "AFTER_RESUMES").await;
}

/// A socket that opens once the server has closed the client's other one (one socket per
/// client): how long that took.
async fn open_when_a_socket_is_free(address: &str, tiny_window: bool) -> (Client, Duration) {
    let started = Instant::now();
    loop {
        match try_open(address, "graphql-transport-ws", &[], tiny_window).await {
            Ok(socket) => {
                let mut client = Client { socket };
                client.init(json!({})).await;
                return (client, started.elapsed());
            }
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 429, "{response:?}");
                assert!(started.elapsed() < Duration::from_secs(20), "never freed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(other) => panic!("{other}"),
        }
    }
}

#[tokio::test]
async fn item2_a_socket_that_never_reads_is_closed_at_its_send_deadline_and_its_memory_returned() {
    let mut server = ServerProcess::unmetered(&[
        "--websocket-send-timeout-ms",
        "1000",
        "--max-sockets-per-client",
        "1",
        // Large enough that only the send deadline can close the socket.
        "--subscription-buffer",
        "100000",
    ])
    .await;
    let pid = server.pid();
    let (mut warm, _) = open_when_a_socket_is_free(&server.address, false).await;
    a_normal_client_still_subscribes(&server, &mut warm, "FLOOD").await;
    drop(warm);
    let baseline = rss_mib(pid);

    let (mut silent, _) = open_when_a_socket_is_free(&server.address, true).await;
    for id in 0..20 {
        silent
            .subscribe_to(&id.to_string(), EVENTS, json!({ "sku": "FLOOD" }))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Each comment is twenty events of 4 kB for the socket: far more than its buffers hold.
    let body = "x".repeat(4_000);
    let mut peak = baseline;
    for n in 0..400 {
        server.add_comment(None, "FLOOD", &body, 3).await;
        if n % 50 == 0 {
            peak = peak.max(rss_mib(pid));
        }
    }
    let (mut normal, waited) = open_when_a_socket_is_free(&server.address, false).await;
    let after = rss_mib(pid);
    eprintln!(
        "RSS: baseline {baseline:.1} MiB, peak {peak:.1} MiB, after the close {after:.1} MiB; the socket was free {waited:?} after the flood"
    );
    assert!(
        waited < Duration::from_secs(3),
        "closed within the 1 s deadline of its last send: {waited:?}"
    );
    assert!(
        after < baseline + 40.0,
        "memory returned: {baseline:.1} -> {after:.1} MiB"
    );
    a_normal_client_still_subscribes(&server, &mut normal, "FLOOD").await;
    drop(silent);
    server.terminate(Duration::from_secs(10)).await;
}

#[tokio::test]
async fn item3_one_client_holds_a_small_share_of_the_subscriptions_and_others_still_subscribe() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--trusted-proxies",
        "127.0.0.1",
        "--max-subscriptions",
        "30",
    ])
    .await;
    let attacker = [("x-forwarded-for", "203.0.113.9")];
    let mut sockets = Vec::new();
    for _ in 0..5 {
        sockets.push(Client::ready_at(&app.address, &attacker, false).await);
    }
    match try_open(&app.address, "graphql-transport-ws", &attacker, false).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429);
            let body: Value =
                serde_json::from_slice(response.body().as_deref().unwrap_or_default())
                    .expect("a GraphQL error body");
            assert_eq!(body["errors"][0]["extensions"]["code"], "TOO_MANY_SOCKETS");
        }
        other => panic!("a sixth socket opened: {:?}", other.map(|_| ())),
    }
    // Ten subscriptions on each of five sockets: twenty are held, thirty refused.
    let mut refused = 0;
    for socket in &mut sockets {
        for id in 0..10 {
            socket
                .subscribe_to(&id.to_string(), EVENTS, json!({ "sku": "TAKEN" }))
                .await;
        }
        while let Ok(Some(Ok(message))) =
            tokio::time::timeout(Duration::from_millis(300), socket.socket.next()).await
        {
            let text = message.into_text().unwrap_or_default();
            if text.contains("TOO_MANY_SUBSCRIPTIONS") {
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 30, "the client holds 20 of the server's 30");

    let normal_client = [("x-forwarded-for", "198.51.100.1")];
    let mut normal = Client::ready_at(&app.address, &normal_client, false).await;
    a_normal_client_still_subscribes(&app, &mut normal, "TAKEN").await;
}

#[tokio::test]
async fn opening_subscriptions_has_a_rate_of_its_own() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--rate-limit-subscriptions", "3"]).await;
    let mut client = Client::ready(&app).await;
    for id in ["1", "2", "3"] {
        client
            .subscribe_to(id, EVENTS, json!({ "sku": "CHURN" }))
            .await;
        // Running (a subscription ended before it first runs is checked by nothing, and ran
        // nothing), then ended: churn.
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.send(json!({ "id": id, "type": "complete" })).await;
    }
    client
        .subscribe_to("4", EVENTS, json!({ "sku": "CHURN" }))
        .await;
    let (code, message) = refusal(&client.answer_to("4").await);
    assert_eq!(code, "RATE_LIMITED", "{message}");
    assert!(message.contains("retry in"), "{message}");
}

#[tokio::test]
async fn item4_one_message_is_one_subscription_and_the_connection_limit_counts_them() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--max-subscriptions-per-connection",
        "3",
    ])
    .await;
    let mut client = Client::ready(&app).await;
    let field = "commentEvents(sku: \"MANY\") { kind }";
    let many = format!("subscription {{ {} }}", [field; 300].join(" "));
    client.subscribe_to("many", &many, json!({})).await;
    let (code, message) = refusal(&client.answer_to("many").await);
    assert_eq!(code, "GRAPHQL_VALIDATION_FAILED");
    assert!(message.contains("selects 300"), "{message}");

    for id in ["1", "2", "3", "4", "5"] {
        client
            .subscribe_to(id, EVENTS, json!({ "sku": "MANY" }))
            .await;
    }
    // Answers to several operations come in any order.
    let mut refused = Vec::new();
    while refused.len() < 2 {
        let message = client.next().await;
        if message["type"] != "complete" {
            refused.push((message["id"].clone(), refusal(&message).0));
        }
    }
    refused.sort_by_key(|(id, _)| id.to_string());
    let code = || "TOO_MANY_SUBSCRIPTIONS".to_owned();
    assert_eq!(refused, [(json!("4"), code()), (json!("5"), code())]);
    app.add_comment(None, "MANY", "one comment", 5).await;
    let mut heard = Vec::new();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_millis(700), client.socket.next()).await
    {
        let message: Value =
            serde_json::from_str(&message.into_text().unwrap_or_default()).unwrap_or_default();
        if message["type"] == "next" {
            heard.push(message["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    heard.sort();
    assert_eq!(
        heard,
        ["1", "2", "3"],
        "three subscriptions, one event each"
    );

    let mut normal = Client::ready(&app).await;
    a_normal_client_still_subscribes(&app, &mut normal, "MANY").await;
}
