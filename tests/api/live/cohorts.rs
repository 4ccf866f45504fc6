//! Cohorts: subscribers who asked the same thing share one execution of the selection set per
//! event. Many subscribers of one document, over both protocols, get the same events (to the
//! byte of their payload) while the server executes each event once; a different filter is a
//! cohort of its own; a selection that asks `viewerCanUpdate` runs once per viewer, and each
//! viewer sees their own answer; a subscriber that resumes in a running cohort gets its own
//! replay once and then the cohort's events, nothing twice.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::websocket::Client;
use crate::helpers::{RATE_LIMITS_OFF, TestApp};
use crate::support::counters::Counters;

const EXECUTIONS: &str = "dynapage_subscription_executions_total";
const DELIVERIES: &str = "dynapage_subscription_events_total";

/// The raw text of the next `next`/`data` message, pings answered.
async fn next_text(client: &mut Client) -> String {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), client.socket.next())
            .await
            .expect("a message within 5 s")
            .expect("the socket is open")
            .expect("a message");
        if let Message::Text(text) = message {
            let value: Value = serde_json::from_str(&text).expect("JSON");
            match value["type"].as_str() {
                Some("ping") => client.send(json!({ "type": "pong" })).await,
                Some("ka") => {}
                _ => return text.to_string(),
            }
        }
    }
}

/// A legacy `graphql-ws` client subscribed to [`EVENTS`] with `variables` as operation `id`.
async fn legacy(app: &TestApp, id: &str, variables: Value) -> Client {
    let mut client = Client::legacy_ready(app).await;
    client.start(id, variables).await;
    client
}

#[tokio::test]
async fn subscribers_of_one_document_share_one_execution_per_event_over_both_protocols() {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    // Every socket here comes from one address: one client, which may hold 5 sockets unless
    // told otherwise.
    let app = TestApp::spawn(&["--demo-comments", "0", "--max-sockets-per-client", "20"]).await;
    let mut clients = Vec::new();
    for n in 0..12 {
        let mut client = Client::ready(&app).await;
        client
            .subscribe(&format!("sub-{n}"), json!({ "sku": "COHORT" }))
            .await;
        clients.push(client);
    }
    let mut old = Vec::new();
    for n in 0..3 {
        old.push(legacy(&app, &format!("old-{n}"), json!({ "sku": "COHORT" })).await);
    }
    // Another filter is another cohort.
    let mut fives = Client::ready(&app).await;
    fives
        .subscribe("5", json!({ "sku": "COHORT", "ratings": [5] }))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let executed = counters.get(EXECUTIONS);

    let ids = [
        app.add_comment(None, "COHORT", "one", 5).await,
        app.add_comment(None, "COHORT", "two", 3).await,
        app.add_comment(None, "COHORT", "three", 5).await,
    ];
    let mut payloads: Vec<String> = Vec::new();
    for (n, client) in clients.iter_mut().enumerate() {
        for (k, id) in ids.iter().enumerate() {
            let text = next_text(client).await;
            let message: Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(message["type"], "next", "{text}");
            assert_eq!(message["id"], format!("sub-{n}"), "{text}");
            let event = &message["payload"]["data"]["commentEvents"];
            assert_eq!(event["kind"], "ADDED", "{text}");
            assert_eq!(event["edge"]["node"]["id"], *id, "in order: {text}");
            let payload = message["payload"].to_string();
            match payloads.get(k) {
                Some(first) => assert_eq!(*first, payload, "the same payload for everyone"),
                None => payloads.push(payload),
            }
        }
    }
    for (n, client) in old.iter_mut().enumerate() {
        for payload in &payloads {
            let message: Value = serde_json::from_str(&next_text(client).await).expect("JSON");
            assert_eq!(message["type"], "data", "legacy clients get `data`");
            assert_eq!(message["id"], format!("old-{n}"));
            assert_eq!(message["payload"].to_string(), *payload);
        }
    }
    for rating_five in [&ids[0], &ids[2]] {
        assert_eq!(fives.event().await["edge"]["node"]["id"], *rating_five);
    }
    assert_eq!(
        counters.get(EXECUTIONS) - executed,
        3 + 2,
        "one execution per event and cohort: 3 for the 15 subscribers of all ratings, 2 for the one of fives"
    );
    assert!(counters.get(DELIVERIES) >= 15 * 3 + 2);

    // Nothing more, nothing twice.
    app.add_comment(None, "ELSEWHERE", "not theirs", 5).await;
    let last = app.add_comment(None, "COHORT", "last", 1).await;
    for client in clients.iter_mut().chain(old.iter_mut()) {
        let message: Value = serde_json::from_str(&next_text(client).await).expect("JSON");
        assert_eq!(
            message["payload"]["data"]["commentEvents"]["edge"]["node"]["id"],
            last
        );
    }
}

#[tokio::test]
async fn a_selection_that_asks_what_the_viewer_may_do_runs_once_per_viewer() {
    use crate::support::jwks::{JwksServer, TestKey, claims};

    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let key = TestKey::rsa("cohort-key");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let alice_token = key.sign(&claims("alice", json!({ "name": "Alice" })));
    let bob_token = key.sign(&claims("bob", json!({ "name": "Bob" })));
    const MINE: &str = "subscription { commentEvents(sku: \"MINE\") { kind edge { node { id viewerCanUpdate viewerCanDelete } } } }";

    let signed_in = |token: String| {
        let app = &app;
        async move {
            let mut client = Client::signed_in(app, &token).await;
            client.subscribe_to("1", MINE, json!({})).await;
            client
        }
    };
    let mut alices = vec![
        signed_in(alice_token.clone()).await,
        signed_in(alice_token.clone()).await,
    ];
    let mut bob = signed_in(bob_token).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let executed = counters.get(EXECUTIONS);

    let id = app.add_comment(Some(&alice_token), "MINE", "hers", 5).await;
    for alice in &mut alices {
        assert_eq!(
            alice.event().await["edge"]["node"],
            json!({ "id": id, "viewerCanUpdate": true, "viewerCanDelete": true })
        );
    }
    assert_eq!(
        bob.event().await["edge"]["node"],
        json!({ "id": id, "viewerCanUpdate": false, "viewerCanDelete": false })
    );
    assert_eq!(
        counters.get(EXECUTIONS) - executed,
        2,
        "one execution for Alice's two sockets, one for Bob's"
    );
}

#[tokio::test]
async fn a_selection_of_a_comments_moderation_runs_per_viewer_and_moderators_see_it() {
    use crate::support::jwks::{JwksServer, TestKey, claims};

    let key = TestKey::rsa("cohort-moderation");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let alice = key.sign(&claims("alice", json!({ "name": "Alice" })));
    let carol = key.sign(&claims(
        "carol",
        json!({ "name": "Carol", "roles": ["moderator"] }),
    ));
    const WATCH: &str = "subscription { commentEvents(sku: \"WATCHED\") { kind edge { node { id moderation { status } reportCount } } } }";
    let mut moderator = Client::signed_in(&app, &carol).await;
    moderator.subscribe_to("1", WATCH, json!({})).await;
    let mut anonymous = Client::ready(&app).await;
    anonymous.subscribe_to("1", WATCH, json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let id = app.add_comment(Some(&alice), "WATCHED", "watched", 4).await;
    assert_eq!(
        moderator.event().await["edge"]["node"],
        json!({ "id": id, "moderation": { "status": "PUBLISHED" }, "reportCount": 0 }),
        "a moderator's subscription sees what a moderator's query sees"
    );
    assert_eq!(
        anonymous.event().await["edge"]["node"],
        json!({ "id": id, "moderation": null, "reportCount": null }),
        "and nobody else does"
    );
}

/// Adds two comments to `sku` back to back, each seen by `live`: the first one's cursor and the
/// second one's id.
async fn two_comments(app: &TestApp, live: &mut Client, sku: &str) -> (Value, String) {
    let first = app.add_comment(None, sku, "first", 4).await;
    let event = live.event().await;
    assert_eq!(event["edge"]["node"]["id"], first);
    let second = app.add_comment(None, sku, "second", 4).await;
    assert_eq!(live.event().await["edge"]["node"]["id"], second);
    (event["edge"]["cursor"].clone(), second)
}

/// Two subscribers resumed from `cursor` on `sku`, open together: same document, same
/// variables, so one cohort, each given its own replay, which must be `second` alone.
async fn resumed_pair(app: &TestApp, sku: &str, cursor: &Value, second: &str) -> Vec<Client> {
    let mut resumed = Vec::new();
    for _ in 0..2 {
        let mut client = Client::ready(app).await;
        client
            .subscribe("r", json!({ "sku": sku, "after": cursor }))
            .await;
        assert_eq!(
            client.event().await["edge"]["node"]["id"],
            second,
            "the replay"
        );
        resumed.push(client);
    }
    resumed
}

#[tokio::test]
async fn a_subscriber_resuming_beside_a_running_cohort_gets_its_replay_once_then_the_live_events() {
    let app = TestApp::embedded(0).await;
    let mut live = Client::ready(&app).await;
    live.subscribe("1", json!({ "sku": "RESUME" })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (cursor, second) = two_comments(&app, &mut live, "RESUME").await;
    let mut resumed = resumed_pair(&app, "RESUME", &cursor, &second).await;
    let third = app.add_comment(None, "RESUME", "third", 4).await;
    for client in resumed.iter_mut().chain([&mut live]) {
        let event = client.event().await;
        assert_eq!(event["kind"], "ADDED");
        assert_eq!(event["edge"]["node"]["id"], third, "live, once");
    }
}

/// Comments written back to back often share a millisecond. A comment written after another
/// must sort newer than it even then, or a subscriber resuming from the first one's cursor is
/// never given the second (its replay gives what is newer than the cursor; the live event
/// went out before it subscribed). With random ties about one round in a hundred lost it here
/// (nine runs of this test in ten failed).
#[tokio::test]
async fn back_to_back_comments_replay_to_every_subscriber_resumed_between_them() {
    // Three sockets at a time from one address, and 300 subscriptions in about a second.
    let mut args = vec![
        "--demo-comments",
        "0",
        "--max-sockets-per-client",
        "10",
        "--rate-limit-subscriptions",
        "0",
    ];
    args.extend(RATE_LIMITS_OFF);
    let app = TestApp::spawn(&args).await;
    let mut live = Client::ready(&app).await;
    live.subscribe("1", json!({ "sku": "BACK_TO_BACK" })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..150 {
        let (cursor, second) = two_comments(&app, &mut live, "BACK_TO_BACK").await;
        // Closed at the end of the round.
        let _resumed = resumed_pair(&app, "BACK_TO_BACK", &cursor, &second).await;
    }
}
