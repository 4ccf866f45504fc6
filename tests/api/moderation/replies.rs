//! The shop's replies (`replyToComment`): moderators and merchants answer in the shop's name,
//! a new answer replaces the old one and `body: null` removes it; everyone sees it, in the API,
//! in live events and on `/demo`; anyone else is refused and nothing is written.

use serde_json::{Value, json};

use super::decisions::People;
use crate::helpers::websocket::Client;
use crate::helpers::{TestApp, error_codes};
use crate::support::jwks::{JwksServer, TestKey, claims};

const REPLY: &str = r#"mutation($id: ID!, $body: String) {
  replyToComment(input: { commentId: $id, body: $body, clientMutationId: "r1" }) {
    comment { id reply { body author createdAt updatedAt } }
    clientMutationId
  }
}"#;
const READ: &str = r#"query($id: ID!) {
  node(id: $id) { ... on Comment { reply { body author createdAt updatedAt } } }
}"#;

async fn reply(app: &TestApp, token: Option<&str>, id: &str, body: Value) -> Value {
    let variables = json!({ "id": id, "body": body });
    match token {
        Some(token) => app.graphql_as(token, REPLY, variables).await,
        None => app.graphql(REPLY, variables).await,
    }
}

#[tokio::test]
async fn a_merchant_answers_in_the_shops_name_and_everyone_sees_it_until_it_is_removed() {
    let key = TestKey::rsa("reply-1");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &["--shop-name", "Daft <Shop>"]).await;
    let people = People::signed_by(&key);
    let dave = key.sign(&claims("auth0|dave", json!({ "roles": ["merchant"] })));
    let sku = "ANSWERED";
    let id = app
        .add_comment(Some(&people.alice), sku, "runs small", 3)
        .await;
    let mut socket = Client::ready(&app).await;
    socket.subscribe("s", json!({ "sku": sku })).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let answered = reply(&app, Some(&dave), &id, json!("Thanks! Size up <one>.")).await;
    let payload = &answered["data"]["replyToComment"];
    assert_eq!(payload["clientMutationId"], "r1", "{answered:#}");
    let first = payload["comment"]["reply"].clone();
    assert_eq!(
        (&first["body"], &first["author"], &first["updatedAt"]),
        (
            &json!("Thanks! Size up <one>."),
            &json!("Daft <Shop>"),
            &Value::Null
        )
    );
    let event = socket.answer_to("s").await;
    assert_eq!(
        event["payload"]["data"]["commentEvents"]["kind"], "UPDATED",
        "{event:#}"
    );
    let read = app.data(READ, json!({ "id": id })).await;
    assert_eq!(read["node"]["reply"], first, "anonymous readers see it");

    let (status, html) = {
        let response = app
            .client
            .get(format!("{}/demo?sku={sku}", app.address))
            .send()
            .await
            .expect("sent");
        (
            response.status().as_u16(),
            response.text().await.expect("a page"),
        )
    };
    assert_eq!(status, 200);
    assert!(
        html.contains("Reply from Daft &lt;Shop&gt;")
            && html.contains("Thanks! Size up &lt;one&gt;."),
        "the storefront shows the reply, escaped"
    );

    let replaced = reply(
        &app,
        Some(&people.carol),
        &id,
        json!("We changed the chart."),
    )
    .await;
    let second = &replaced["data"]["replyToComment"]["comment"]["reply"];
    assert_eq!(second["body"], "We changed the chart.", "{replaced:#}");
    assert_eq!(second["createdAt"], first["createdAt"], "first given then");
    assert!(second["updatedAt"].is_string());
    let removed = reply(&app, Some(&dave), &id, Value::Null).await;
    assert_eq!(
        removed["data"]["replyToComment"]["comment"]["reply"],
        Value::Null,
        "{removed:#}"
    );
    assert_eq!(
        app.data(READ, json!({ "id": id })).await["node"]["reply"],
        Value::Null
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn only_moderators_and_merchants_answer_and_a_bad_answer_writes_nothing() {
    let key = TestKey::rsa("reply-2");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let people = People::signed_by(&key);
    let id = app
        .add_comment(Some(&people.alice), "GUARDED-REPLY", "fine", 4)
        .await;
    let cases = [
        (None, json!("hello"), "UNAUTHENTICATED"),
        (Some(&people.bob), json!("hello"), "FORBIDDEN"),
        (Some(&people.alice), json!("my own answer"), "FORBIDDEN"),
        (Some(&people.carol), json!(" \u{200B} "), "BAD_USER_INPUT"),
        (
            Some(&people.carol),
            json!("x".repeat(4_001)),
            "BAD_USER_INPUT",
        ),
    ];
    for (token, body, code) in cases {
        let refused = reply(&app, token.map(String::as_str), &id, body).await;
        assert_eq!(error_codes(&refused), [code], "{refused:#}");
    }
    let read = app.data(READ, json!({ "id": id })).await;
    assert_eq!(read["node"]["reply"], Value::Null, "nothing was written");
    app.stop().await.expect("clean stop");
    let open = TestApp::embedded(2).await;
    let first = crate::helpers::pages::newest_ids(&open, 1).await.remove(0);
    let refused = reply(&open, None, &first, json!("hello")).await;
    assert_eq!(error_codes(&refused), ["UNAUTHENTICATED"], "{refused:#}");
    open.stop().await.expect("clean stop");
}
