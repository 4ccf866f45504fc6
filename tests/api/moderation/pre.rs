//! `--moderation pre`: a new comment waits for a moderator and an author's edit of a published
//! one sends it back; under `--auth off` nobody moderates, and pre-moderation refuses to start.

use serde_json::json;

use super::decisions::{People, moderate};
use crate::helpers::process::serve_fails_to_start;
use crate::helpers::{TestApp, error_codes};
use crate::support::jwks::{JwksServer, TestKey};

const EDIT: &str = r#"mutation($id: ID!) {
  updateComment(input: { id: $id, body: "changed after approval" }) { comment { moderation { status } } }
}"#;
const MINE: &str =
    r#"query($id: ID!) { node(id: $id) { ... on Comment { moderation { status } } } }"#;

#[tokio::test]
async fn under_pre_moderation_a_comment_waits_for_a_moderator_and_an_edit_sends_it_back() {
    let key = TestKey::rsa("pre-1");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &["--moderation", "pre"]).await;
    let people = People::signed_by(&key);
    let sku = "PREMODERATED";
    let id = app
        .add_comment(Some(&people.alice), sku, "waiting", 4)
        .await;
    let mine = app
        .graphql_as(&people.alice, MINE, json!({ "id": id }))
        .await;
    assert_eq!(
        mine["data"]["node"]["moderation"]["status"], "PENDING",
        "{mine:#}"
    );
    assert_eq!(app.total(sku, json!(null)).await, 0, "not public yet");
    let refused = app.graphql(MINE, json!({ "id": id })).await;
    assert_eq!(error_codes(&refused), ["NOT_FOUND"], "{refused:#}");

    let published = moderate(&app, Some(&people.carol), &id, "PUBLISH", None).await;
    assert!(published.get("errors").is_none(), "{published:#}");
    assert_eq!(app.total(sku, json!(null)).await, 1);

    let edited = app
        .graphql_as(&people.alice, EDIT, json!({ "id": id }))
        .await;
    assert_eq!(
        edited["data"]["updateComment"]["comment"]["moderation"]["status"], "PENDING",
        "{edited:#}"
    );
    assert_eq!(app.total(sku, json!(null)).await, 0, "back to review");

    // A moderator's own comment, and a moderator's edit, are published at once.
    let own = app
        .add_comment(Some(&people.carol), sku, "from the shop", 5)
        .await;
    assert_eq!(app.total(sku, json!(null)).await, 1);
    let edited = app
        .graphql_as(&people.carol, EDIT, json!({ "id": own }))
        .await;
    assert_eq!(
        edited["data"]["updateComment"]["comment"]["moderation"]["status"], "PUBLISHED",
        "{edited:#}"
    );
    let rejected = moderate(&app, Some(&people.carol), &id, "REJECT", Some("OFF_TOPIC")).await;
    assert!(rejected.get("errors").is_none(), "{rejected:#}");
    assert_eq!(app.total(sku, json!(null)).await, 1);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn under_auth_off_nobody_moderates_and_pre_moderation_refuses_to_start() {
    let app = TestApp::embedded(3).await;
    let id = crate::helpers::pages::newest_ids(&app, 1).await.remove(0);
    let refused = moderate(&app, None, &id, "HIDE", Some("SPAM")).await;
    assert_eq!(error_codes(&refused), ["UNAUTHENTICATED"], "{refused:#}");
    app.stop().await.expect("clean stop");
    let message = serve_fails_to_start(&["--moderation", "pre"]).await;
    assert!(
        message.contains("--moderation pre") && message.contains("--auth jwt"),
        "{message}"
    );
}
