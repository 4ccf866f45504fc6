//! What holds through a gateway besides reads: the signed-in viewer (the gateway forwards
//! `Authorization`), each client's own rate limits (its address from the gateway's
//! `X-Forwarded-For`, `--trusted-proxies`), automatic persisted queries at the gateway, and a
//! live subscription through Hive Gateway, which reaches dynapage over graphql-ws.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::stack::Stack;
use crate::helpers::{Api, TestApp, error_codes};
use crate::support::jwks::{JwksServer, TestKey, claims};

const WRITE: &str = "mutation($body: String!, $author: String) { addComment(input: { sku: \"SKU-01\", author: $author, body: $body, rating: 4 }) { comment { author viewerCanUpdate product { name } } } }";

/// `WRITE` through `gateway`: as the holder of `token`, or else anonymously from the client at
/// `address` (which the gateway forwards in `X-Forwarded-For`).
async fn write(gateway: &Api, token: &str, address: Option<&str>, body: &str) -> Value {
    let request = match address {
        None => gateway.graphql_request(Some(token), WRITE, json!({ "body": body })),
        Some(address) => gateway
            .graphql_request(None, WRITE, json!({ "body": body, "author": "anonymous" }))
            .header("x-forwarded-for", address),
    };
    request
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON")
}

#[tokio::test]
async fn the_signed_in_viewer_holds_through_both_gateways_and_keeps_one_write_budget() {
    let key = TestKey::rsa("gateway-key");
    let jwks = JwksServer::start(&[&key]).await;
    let limits = [
        "--federation",
        "--rate-limit-writes",
        "3",
        "--rate-limit-cost",
        "0",
    ];
    let app = TestApp::under_jwt(&jwks, 0, &limits).await;
    let stack = Stack::around(&app, 4).await;
    let token = key.sign(&claims("alice", json!({ "name": "alice" })));
    for (name, gateway) in stack.gateways() {
        let written = write(&gateway, &token, None, "signed in").await;
        let comment = &written["data"]["addComment"]["comment"];
        let expected = json!({ "author": "alice", "viewerCanUpdate": true, "product": { "name": "Product 1" } });
        assert_eq!(comment, &expected, "{name}: {written:#}");
        // The viewer's fields on a read: true for its author, false for anyone else.
        let mine = "{ product(sku: \"SKU-01\") { comments(first: 1) { edges { node { author viewerCanUpdate } } } } }";
        let signed = gateway.graphql_as(&token, mine, json!({})).await;
        let node = &signed["data"]["product"]["comments"]["edges"][0]["node"];
        assert_eq!(node["viewerCanUpdate"], true, "{name}: {signed:#}");
        let anonymous = gateway.graphql(mine, json!({})).await;
        let node = &anonymous["data"]["product"]["comments"]["edges"][0]["node"];
        assert_eq!(node["viewerCanUpdate"], false, "{name}: {anonymous:#}");
    }
    // A subject's writes are one budget through every gateway: its third of the minute passes,
    // its fourth does not.
    let (_, apollo) = &stack.gateways()[0];
    let third = write(apollo, &token, None, "third").await;
    assert_eq!(error_codes(&third), Vec::<String>::new(), "{third:#}");
    let fourth = write(apollo, &token, None, "fourth").await;
    assert!(refused_for_rate(&fourth), "{fourth:#}");
}

#[tokio::test]
async fn each_client_behind_a_gateway_keeps_its_own_write_budget() {
    let limits = [
        "--federation",
        "--demo-comments",
        "0",
        "--rate-limit-writes",
        "2",
        "--rate-limit-cost",
        "0",
        "--trusted-proxies",
        "127.0.0.1",
    ];
    let app = TestApp::spawn(&limits).await;
    let stack = Stack::around(&app, 4).await;
    for (n, (name, gateway)) in stack.gateways().into_iter().enumerate() {
        let (client, neighbour) = (
            format!("203.0.113.{}", 10 + n),
            format!("203.0.113.{}", 20 + n),
        );
        for body in ["one", "two"] {
            let written = write(&gateway, "", Some(&client), body).await;
            assert_eq!(
                error_codes(&written),
                Vec::<String>::new(),
                "{name}: {written:#}"
            );
        }
        let third = write(&gateway, "", Some(&client), "three").await;
        assert!(refused_for_rate(&third), "{name}: {third:#}");
        let other = write(&gateway, "", Some(&neighbour), "a neighbour's").await;
        assert_eq!(
            error_codes(&other),
            Vec::<String>::new(),
            "{name}: {other:#}"
        );
    }
}

/// Whether `response` (a gateway's) says dynapage refused the request with `RATE_LIMITED`:
/// dynapage answers such a request `429`, which a gateway reports as its own error with
/// dynapage's body inside (Apollo's under `extensions.response.body`).
fn refused_for_rate(response: &Value) -> bool {
    response.to_string().contains("\"RATE_LIMITED\"") && response["data"].is_null()
}

#[tokio::test]
async fn automatic_persisted_queries_work_at_the_gateway() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "5"]).await;
    let stack = Stack::around(&app, 4).await;
    let gateway = stack.gateway("apollo");
    let query = "{ product(sku: \"DAFT_PUNK_TSHIRT\") { name comments(first: 2) { totalCount } } }";
    let hash = format!("{:x}", Sha256::digest(query.as_bytes()));
    let persisted = json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
    let ask = |body: Value| {
        let request = gateway.client.post(gateway.url("/graphql")).json(&body);
        async move {
            request
                .send()
                .await
                .expect("sent")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };
    let unknown = ask(json!({ "extensions": persisted })).await;
    assert_eq!(
        error_codes(&unknown),
        ["PERSISTED_QUERY_NOT_FOUND"],
        "{unknown:#}"
    );
    let registered = ask(json!({ "query": query, "extensions": persisted })).await;
    let expected =
        json!({ "product": { "name": "DAFT_PUNK_TSHIRT", "comments": { "totalCount": 5 } } });
    assert_eq!(registered["data"], expected, "{registered:#}");
    let by_hash = ask(json!({ "extensions": persisted })).await;
    assert_eq!(by_hash["data"], expected, "{by_hash:#}");
}

#[tokio::test]
async fn comment_events_reach_a_client_of_hive_gateway_over_server_sent_events() {
    let app = TestApp::spawn(&["--federation", "--demo-comments", "0"]).await;
    let stack = Stack::around(&app, 4).await;
    let hive = stack.gateway("hive");
    let subscription = "subscription { commentEvents(sku: \"SKU-02\") { kind edge { node { body product { name } } } } }";
    let mut events = hive
        .client
        .post(hive.url("/graphql"))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": subscription }))
        .send()
        .await
        .expect("subscribed");
    assert_eq!(events.status(), 200);
    let body = "live through the gateway";
    let received = async {
        let mut text = String::new();
        while let Some(chunk) = events.chunk().await.expect("the event stream") {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains(body) {
                return text;
            }
        }
        panic!("the stream ended: {text}")
    };
    // The gateway opens its graphql-ws subscription to dynapage in its own time: write until
    // the event comes.
    let writes = async {
        loop {
            app.add_comment(None, "SKU-02", body, 5).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let text = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            text = received => text,
            () = writes => unreachable!("writes never end"),
        }
    })
    .await
    .expect("an event within 30 s");
    let data = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .find(|line| line.contains(body))
        .expect("a data line");
    let event: Value = serde_json::from_str(data.trim()).expect("JSON");
    let expected = json!({ "kind": "ADDED", "edge": { "node": { "body": body, "product": { "name": "Product 2" } } } });
    assert_eq!(event["data"]["commentEvents"], expected, "{event:#}");
}
