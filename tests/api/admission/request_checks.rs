//! One request check for every transport: a document past the alias or depth limit is refused
//! with the same message and `extensions.code` over HTTP (POST /graphql) and in a
//! `graphql-transport-ws` `subscribe` over a real WebSocket.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::websocket::{Client, errors_of};

/// The first error's message and code of a WebSocket operation's answer (a `next` whose
/// payload has `errors`, or an `error` whose payload is the list), reading on to its
/// `complete`.
async fn websocket_refusal(client: &mut Client, id: &str, query: &str) -> (Value, Value) {
    client.subscribe_to(id, query, json!({})).await;
    let message = client.next().await;
    assert_eq!(message["id"], id, "{message:#}");
    match message["type"].as_str() {
        Some("next") => {
            let complete = client.next().await;
            assert_eq!(complete["type"], "complete", "{complete:#}");
        }
        Some("error") => {}
        _ => panic!("not a refusal: {message:#}"),
    }
    let error = &errors_of(&message)[0];
    (
        error["message"].clone(),
        error["extensions"]["code"].clone(),
    )
}

#[tokio::test]
async fn a_too_deep_or_too_aliased_document_is_refused_alike_over_http_and_websocket() {
    let app = TestApp::embedded(0).await;
    let mut client = Client::ready(&app).await;

    let aliases: Vec<String> = (0..31).map(|i| format!("k{i}: kind")).collect();
    let aliased = format!(
        "subscription {{ commentEvents(sku: \"A\") {{ {} }} }}",
        aliases.join(" ")
    );
    let deep = "subscription { commentEvents(sku: \"A\") { edge { node { product { comments(first: 1) { nodes { product { comments(first: 1) { nodes { product { comments(first: 1) { nodes { id } } } } } } } } } } } } }";
    let mut spreads = String::from("subscription { ...F0 }");
    for i in 0..100 {
        spreads.push_str(&format!(
            " fragment F{i} on Subscription {{ ...F{} }}",
            i + 1
        ));
    }
    spreads.push_str(" fragment F100 on Subscription { commentEvents(sku: \"A\") { kind } }");

    for (id, query, expected) in [
        (
            "aliases",
            aliased.as_str(),
            "the query selects 31 aliased fields (fragments counted at every spread); at most 30 are allowed",
        ),
        (
            "depth",
            deep,
            "the query nests fields 13 deep; at most 12 are allowed",
        ),
        (
            "spreads",
            spreads.as_str(),
            "the query's fragment spreads nest too deeply",
        ),
    ] {
        let http = app.graphql(query, json!({})).await;
        let over_http = (
            http["errors"][0]["message"].clone(),
            http["errors"][0]["extensions"]["code"].clone(),
        );
        assert_eq!(
            over_http,
            (json!(expected), json!("GRAPHQL_VALIDATION_FAILED")),
            "{id} over HTTP: {http:#}"
        );
        let over_websocket = websocket_refusal(&mut client, id, query).await;
        assert_eq!(over_websocket, over_http, "{id}: WebSocket and HTTP differ");
    }
}
