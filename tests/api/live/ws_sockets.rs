//! What a WebSocket's token and silence end: a bad `Authorization` header refuses the upgrade
//! like any request (401 and a GraphQL error body); a socket closes at its token's `exp`
//! (4403, which the `graphql-ws` client answers by reconnecting); a legacy `graphql-ws` socket that goes silent is closed, as a listening one is not.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::TestApp;
use crate::live::subscriptions::{Client, EVENTS};
use crate::support::jwks::{JwksServer, TestKey, at, claims};

/// Connects to `app` with `protocol` and `headers` on the upgrade.
async fn connect(
    app: &TestApp,
    protocol: &str,
    headers: &[(&'static str, String)],
) -> Result<Client, tungstenite::Error> {
    let url = format!("{}/graphql", app.address.replacen("http", "ws", 1));
    let mut request = url.into_client_request().expect("a request");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        protocol.parse().expect("a header value"),
    );
    for (name, value) in headers {
        request
            .headers_mut()
            .insert(*name, value.parse().expect("a header value"));
    }
    let (socket, _) = tokio_tungstenite::connect_async(request).await?;
    Ok(Client { socket })
}

/// Adds a comment as the holder of `token`; its id.
async fn add(app: &TestApp, token: &str, sku: &str, body: &str) -> Value {
    let mutation = "mutation($sku: String!, $body: String!) { addComment(input: { sku: $sku, body: $body, rating: 3 }) { comment { id } } }";
    let written: Value = app
        .client
        .post(format!("{}/graphql", app.address))
        .bearer_auth(token)
        .json(&json!({ "query": mutation, "variables": { "sku": sku, "body": body } }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    let id = written["data"]["addComment"]["comment"]["id"].clone();
    assert!(id.is_string(), "{written:#}");
    id
}

#[tokio::test]
async fn a_bad_token_on_the_upgrade_is_refused_and_a_socket_closes_when_its_token_expires() {
    let key = TestKey::rsa("ws-exp");
    let jwks = JwksServer::start(&[&key]).await;
    let mut args = jwks.serve_args();
    args.extend(["--demo-comments", "0"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let app = TestApp::spawn(&args).await;

    let writer = key.sign(&claims("writer", json!({ "name": "Writer" })));
    let forged = [("authorization", "Bearer not.a.token".to_owned())];
    match connect(&app, "graphql-transport-ws", &forged).await {
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
    let header = [("authorization", format!("Bearer {short}"))];
    let mut client = connect(&app, "graphql-transport-ws", &header)
        .await
        .expect("a good token upgrades");
    client
        .send(json!({ "type": "connection_init", "payload": {} }))
        .await;
    assert_eq!(client.next().await["type"], "connection_ack");
    let started = Instant::now();
    client.subscribe("1", json!({ "sku": "EXPIRING" })).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let id = add(&app, &writer, "EXPIRING", "before the expiry").await;
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
    let mut again = connect(&app, "graphql-transport-ws", &[])
        .await
        .expect("opens");
    again
        .send(json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {fresh}") } }))
        .await;
    assert_eq!(again.next().await["type"], "connection_ack");
    again.subscribe("1", json!({ "sku": "EXPIRING" })).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let id = add(&app, &writer, "EXPIRING", "after a reconnect").await;
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
    let init = json!({ "type": "connection_init", "payload": {} });
    let start = json!({ "id": "1", "type": "start", "payload": { "query": EVENTS, "variables": { "sku": "LEGACY_KEPT" } } });

    let mut silent = connect(&app, "graphql-ws", &[]).await.expect("opens");
    silent.send(init.clone()).await;
    assert_eq!(silent.next().await["type"], "connection_ack");
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
    let mut listening = connect(&app, "graphql-ws", &[]).await.expect("opens");
    listening.send(init).await;
    assert_eq!(listening.next().await["type"], "connection_ack");
    listening.send(start).await;
    let writer = {
        let address = app.address.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_200)).await;
            let add = "mutation { addComment(input: { sku: \"LEGACY_KEPT\", author: \"a\", body: \"later\", rating: 2 }) { comment { id } } }";
            reqwest::Client::new()
                .post(format!("{address}/graphql"))
                .json(&json!({ "query": add }))
                .send()
                .await
                .expect("sent");
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
