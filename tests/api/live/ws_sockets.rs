//! What a WebSocket's token and silence end: a bad `Authorization` header refuses the upgrade
//! like any request (401 and a GraphQL error body); a socket closes at its token's `exp`
//! (4403, which the `graphql-ws` client answers by reconnecting); a legacy `graphql-ws` socket
//! that goes silent is closed, as a listening one is not.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::websocket::{Client, try_open};
use crate::helpers::{Api, TestApp};
use crate::support::jwks::{JwksServer, TestKey, at, claims};

#[tokio::test]
async fn a_bad_token_on_the_upgrade_is_refused_and_a_socket_closes_when_its_token_expires() {
    let key = TestKey::rsa("ws-exp");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;

    let writer = key.sign(&claims("writer", json!({ "name": "Writer" })));
    let forged = [("authorization", "Bearer not.a.token")];
    match try_open(&app.address, "graphql-transport-ws", &forged, false).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401);
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer error=\"invalid_token\""
            );
            let body: Value =
                serde_json::from_slice(response.body().as_deref().unwrap_or_default())
                    .expect("a GraphQL error body");
            assert_eq!(body["errors"][0]["extensions"]["code"], "UNAUTHENTICATED");
        }
        other => panic!("upgraded with a forged token: {:?}", other.map(|_| ())),
    }

    // A token good for two more seconds, in the header: the socket works, then closes.
    let short = key.sign(&claims("bob", json!({ "exp": at(2) })));
    let bearer = format!("Bearer {short}");
    let header = [("authorization", bearer.as_str())];
    let mut client = Client::ready_at(&app.address, &header, false).await;
    let started = Instant::now();
    client.subscribe("1", json!({ "sku": "EXPIRING" })).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let id = app
        .add_comment(Some(&writer), "EXPIRING", "before the expiry", 3)
        .await;
    assert_eq!(client.event().await["edge"]["node"]["id"], id);
    let closed = loop {
        let message = client.next().await;
        if message["type"] == "close" {
            break message;
        }
    };
    assert_eq!(closed["code"], 4403, "{closed:#}");
    assert!(
        closed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("expired")),
        "{closed:#}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));

    // A fresh token in connection_init works as before.
    let fresh = key.sign(&claims("bob", json!({})));
    let mut again = Client::signed_in(&app, &fresh).await;
    again.subscribe("1", json!({ "sku": "EXPIRING" })).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let id = app
        .add_comment(Some(&writer), "EXPIRING", "after a reconnect", 3)
        .await;
    assert_eq!(again.event().await["edge"]["node"]["id"], id);
}

/// Whether the server closed `client`'s socket within `within`, reading (and so answering
/// pings) only after `quiet`.
async fn closed_after_silence(client: &mut Client, quiet: Duration, within: Duration) -> bool {
    tokio::time::sleep(quiet).await;
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, client.socket.next()).await {
            Err(_) => return false,
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return true,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

#[tokio::test]
async fn a_legacy_graphql_ws_socket_that_goes_silent_is_closed_and_a_listening_one_is_not() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--websocket-keepalive-ms", "300"]).await;
    let mut silent = Client::legacy_ready(&app).await;
    assert!(
        closed_after_silence(
            &mut silent,
            Duration::from_millis(1_500),
            Duration::from_secs(3)
        )
        .await,
        "a legacy socket that answers no ping is closed"
    );

    // A legacy client that reads answers the ping frames by itself and stays.
    let mut listening = Client::legacy_ready(&app).await;
    listening.start("1", json!({ "sku": "LEGACY_KEPT" })).await;
    let writer = {
        let api = Api::clone(&app);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_200)).await;
            api.add_comment(None, "LEGACY_KEPT", "later", 2).await;
        })
    };
    let data = loop {
        let message = listening.next().await;
        if message["type"] == "data" {
            break message;
        }
        assert_eq!(message["type"], "ka", "{message:#}");
    };
    assert_eq!(
        data["payload"]["data"]["commentEvents"]["edge"]["node"]["body"],
        "later"
    );
    writer.await.expect("the writer");
}
