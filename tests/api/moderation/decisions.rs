//! Decisions under `--moderation post`: a hidden comment leaves every public surface and comes
//! back when published again; its author and moderators still see it, with the statement of
//! reasons; anyone else is refused; a decision that does not apply writes nothing.

use serde_json::{Value, json};

use crate::helpers::websocket::Client;
use crate::helpers::{TestApp, error_codes};
use crate::support::jwks::{JwksServer, TestKey, claims};

pub(super) const MODERATE: &str = r#"mutation($id: ID!, $decision: ModerationDecision!, $reason: ModerationReason, $note: String) {
  moderateComment(input: { commentId: $id, decision: $decision, reason: $reason, note: $note, clientMutationId: "m1" }) {
    comment { id moderation { status reason note decidedAt } }
    clientMutationId
  }
}"#;
const SURFACES: &str = r#"query($sku: String!, $id: ID!) {
  product(sku: $sku) {
    comments(first: 10) { totalCount edges { node { id } } }
    fives: comments(first: 10, ratings: [5]) { totalCount edges { node { id } } }
    jump: comments(first: 1, offset: 1) { totalCount edges { node { id } } }
    helpful: comments(first: 10, orderBy: MOST_HELPFUL) { totalCount edges { node { id } } }
    ratingSummary { total counts { rating count } }
  }
  nodes(ids: [$id]) { id }
}"#;
const NODE: &str = r#"query($id: ID!) {
  node(id: $id) { id ... on Comment { body moderation { status reason note } } }
}"#;

/// Tokens of the test's identity provider: authors alice and bob, moderator carol.
pub(super) struct People {
    pub alice: String,
    pub bob: String,
    pub carol: String,
}

impl People {
    pub(super) fn signed_by(key: &TestKey) -> Self {
        let person = |sub: &str, extra: Value| key.sign(&claims(sub, extra));
        Self {
            alice: person("auth0|alice", json!({ "name": "Alice" })),
            bob: person("auth0|bob", json!({ "name": "Bob" })),
            carol: person(
                "auth0|carol",
                json!({ "name": "Carol", "roles": ["moderator"] }),
            ),
        }
    }
}

/// A JWKS serving a fresh key named `kid`, and alice's, bob's and carol's tokens signed with
/// it (hold the server for as long as the tokens are used).
pub(super) async fn jwt_people(kid: &str) -> (JwksServer, People) {
    let key = TestKey::rsa(kid);
    let jwks = JwksServer::start(&[&key]).await;
    let people = People::signed_by(&key);
    (jwks, people)
}

/// A server on `backends` (DynamoDB Local and a Redis) following the stream, verifying the
/// tokens of `jwks`, with `flags` besides.
pub(super) async fn serve_with_tokens(
    backends: &crate::support::backends::Backends,
    jwks: &JwksServer,
    flags: &[&str],
) -> TestApp {
    let mut extra = jwks.serve_args();
    extra.extend(flags.iter().map(|flag| (*flag).to_owned()));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    backends.serve_syncing(&extra).await
}

/// Deletes the sets by time of the list the index keeps under `name` from the Redis at
/// `redis_url`, as if they were lost.
pub(super) async fn lose_list(
    backends: &crate::support::backends::Backends,
    redis_url: &str,
    name: &str,
) {
    let mut redis = crate::support::redis_server::connect(redis_url).await;
    for rating in 1..=5 {
        let key = format!("{}idx:{{{name}}}:r{rating}", backends.prefix);
        let _: () = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .expect("DEL");
    }
}

/// Runs `verify` and asserts that it finds the index `clean` (or not).
pub(super) async fn verify_says(backends: &crate::support::backends::Backends, clean: bool) {
    use crate::helpers::process::{exit_code, stdout};
    let verified = backends.run("verify", &[]).await;
    assert_eq!(
        exit_code(&verified) == Some(0),
        clean,
        "{}",
        stdout(&verified)
    );
}

/// Runs `reindex`, which must succeed.
pub(super) async fn reindex(backends: &crate::support::backends::Backends) {
    use crate::helpers::process::{exit_code, stdout};
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{}", stdout(&rebuilt));
}

pub(super) async fn moderate(
    app: &TestApp,
    token: Option<&str>,
    id: &str,
    decision: &str,
    reason: Option<&str>,
) -> Value {
    let variables =
        json!({ "id": id, "decision": decision, "reason": reason, "note": "see rule 3" });
    match token {
        Some(token) => app.graphql_as(token, MODERATE, variables).await,
        None => app.graphql(MODERATE, variables).await,
    }
}

fn ids(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
        .collect()
}

#[tokio::test]
async fn a_hidden_comment_leaves_every_public_surface_and_comes_back_when_published() {
    let key = TestKey::rsa("mod-1");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let people = People::signed_by(&key);
    let sku = "MODERATED";
    let five = app
        .add_comment(Some(&people.alice), sku, "five stars", 5)
        .await;
    let hidden = app
        .add_comment(Some(&people.alice), sku, "rude words", 5)
        .await;
    let three = app
        .add_comment(Some(&people.bob), sku, "three stars", 3)
        .await;

    let mut socket = Client::ready(&app).await;
    socket.subscribe("s", json!({ "sku": sku })).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let decided = moderate(&app, Some(&people.carol), &hidden, "HIDE", Some("ABUSIVE")).await;
    let payload = &decided["data"]["moderateComment"];
    assert_eq!(payload["clientMutationId"], "m1", "{decided:#}");
    assert_eq!(
        payload["comment"]["moderation"],
        json!({ "status": "HIDDEN", "reason": "ABUSIVE", "note": "see rule 3", "decidedAt": payload["comment"]["moderation"]["decidedAt"] })
    );
    assert!(payload["comment"]["moderation"]["decidedAt"].is_string());
    let event = socket.answer_to("s").await;
    let event = &event["payload"]["data"]["commentEvents"];
    assert_eq!(
        (
            &event["kind"],
            &event["deletedCommentId"],
            &event["totalCount"]
        ),
        (&json!("DELETED"), &json!(hidden), &json!(2)),
        "hiding a published comment is a deletion to subscribers"
    );

    // Anonymous: gone from every list, count, summary and lookup.
    let surfaces = app
        .data(SURFACES, json!({ "sku": sku, "id": hidden }))
        .await;
    let product = &surfaces["product"];
    assert_eq!(ids(&product["comments"]), [three.clone(), five.clone()]);
    assert_eq!(product["comments"]["totalCount"], 2);
    assert_eq!(ids(&product["fives"]), std::slice::from_ref(&five));
    assert_eq!(product["fives"]["totalCount"], 1);
    assert_eq!(
        ids(&product["jump"]),
        std::slice::from_ref(&five),
        "offset 1 skips only public comments"
    );
    assert_eq!(product["helpful"]["totalCount"], 2);
    assert!(!ids(&product["helpful"]).contains(&hidden));
    assert_eq!(product["ratingSummary"]["total"], 2);
    assert_eq!(
        product["ratingSummary"]["counts"][0],
        json!({ "rating": 5, "count": 1 })
    );
    assert_eq!(surfaces["nodes"], json!([null]));
    let anonymous = app.graphql(NODE, json!({ "id": hidden })).await;
    assert_eq!(error_codes(&anonymous), ["NOT_FOUND"], "{anonymous:#}");
    let stranger = app
        .graphql_as(&people.bob, NODE, json!({ "id": hidden }))
        .await;
    assert_eq!(error_codes(&stranger), ["NOT_FOUND"], "{stranger:#}");

    // The author sees it, with the statement of reasons; a moderator too.
    for token in [&people.alice, &people.carol] {
        let seen = app.graphql_as(token, NODE, json!({ "id": hidden })).await;
        assert_eq!(
            seen["data"]["node"]["moderation"],
            json!({ "status": "HIDDEN", "reason": "ABUSIVE", "note": "see rule 3" }),
            "{seen:#}"
        );
    }
    // Nobody else sees a published comment's moderation either.
    let public = app
        .graphql_as(&people.alice, NODE, json!({ "id": three }))
        .await;
    assert_eq!(
        public["data"]["node"]["moderation"],
        Value::Null,
        "{public:#}"
    );

    let published = moderate(&app, Some(&people.carol), &hidden, "PUBLISH", None).await;
    assert_eq!(
        published["data"]["moderateComment"]["comment"]["moderation"]["status"], "PUBLISHED",
        "{published:#}"
    );
    let event = socket.answer_to("s").await;
    let event = &event["payload"]["data"]["commentEvents"];
    assert_eq!(
        (&event["kind"], &event["edge"]["node"]["id"]),
        (&json!("ADDED"), &json!(hidden))
    );
    let surfaces = app
        .data(SURFACES, json!({ "sku": sku, "id": hidden }))
        .await;
    assert_eq!(surfaces["product"]["comments"]["totalCount"], 3);
    assert_eq!(
        ids(&surfaces["product"]["comments"]),
        [three, hidden.clone(), five]
    );
    assert_eq!(surfaces["product"]["ratingSummary"]["total"], 3);
    assert_eq!(surfaces["nodes"], json!([{ "id": hidden }]));
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn only_moderators_decide_and_a_decision_that_does_not_apply_writes_nothing() {
    let key = TestKey::rsa("mod-2");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let people = People::signed_by(&key);
    let id = app
        .add_comment(Some(&people.alice), "DECIDED", "fine", 4)
        .await;
    let cases = [
        (None, "HIDE", Some("SPAM"), "UNAUTHENTICATED"),
        (Some(&people.bob), "HIDE", Some("SPAM"), "FORBIDDEN"),
        (Some(&people.alice), "HIDE", Some("SPAM"), "FORBIDDEN"),
        (Some(&people.carol), "HIDE", None, "BAD_USER_INPUT"),
        (
            Some(&people.carol),
            "REJECT",
            Some("SPAM"),
            "BAD_USER_INPUT",
        ),
        (Some(&people.carol), "PUBLISH", None, "BAD_USER_INPUT"),
    ];
    for (token, decision, reason, code) in cases {
        let refused = moderate(&app, token.map(String::as_str), &id, decision, reason).await;
        assert_eq!(
            error_codes(&refused),
            [code],
            "{decision} {reason:?}: {refused:#}"
        );
        assert_eq!(refused["data"], Value::Null);
    }
    let gone = app
        .add_comment(Some(&people.alice), "DECIDED", "gone", 1)
        .await;
    let delete = r#"mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }"#;
    app.graphql_as(&people.alice, delete, json!({ "id": gone }))
        .await;
    let missing = moderate(&app, Some(&people.carol), &gone, "HIDE", Some("SPAM")).await;
    assert_eq!(error_codes(&missing), ["NOT_FOUND"], "{missing:#}");
    let long = json!({ "id": id, "decision": "HIDE", "reason": "SPAM", "note": "x".repeat(4_001) });
    let too_long = app.graphql_as(&people.carol, MODERATE, long).await;
    assert_eq!(error_codes(&too_long), ["BAD_USER_INPUT"], "{too_long:#}");
    let seen = app
        .graphql_as(&people.alice, NODE, json!({ "id": id }))
        .await;
    assert_eq!(
        seen["data"]["node"]["moderation"],
        json!({ "status": "PUBLISHED", "reason": null, "note": null }),
        "nothing was written"
    );
    app.stop().await.expect("clean stop");
}
