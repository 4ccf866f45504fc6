//! `viewer.comments`: a signed-in author's own comments in every status, newest first, across
//! products, with `moderation` filled in, exact `totalCount`, cursors both ways and `offset`
//! jumps, whole or by status; on the embedded store, `--data-dir` (across a restart), DynamoDB
//! Local + Redis and the six-node Cluster; `verify` checks the authors' lists and `reindex`
//! rebuilds them.

use serde_json::{Value, json};

use super::decisions::{
    People, jwt_people, lose_list, moderate, reindex, serve_with_tokens, verify_says,
};
use crate::helpers::{TestApp, eventually};
use crate::support::backends::Backends;

const OWN: &str = r#"query($status: CommentStatus, $first: Int, $after: String, $last: Int, $before: String, $offset: Int) {
  viewer {
    comments(status: $status, first: $first, after: $after, last: $last, before: $before, offset: $offset) {
      totalCount
      startOffset
      edges { node { id body moderation { status reason note } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const EDIT: &str = r#"mutation($id: ID!, $body: String!) {
  updateComment(input: { id: $id, body: $body }) { comment { id } }
}"#;

const DELETE: &str = r#"mutation($id: ID!) {
  deleteComment(input: { id: $id }) { deletedCommentId }
}"#;

/// `viewer.comments` as `token` asks it, with `args`.
async fn own(app: &TestApp, token: &str, args: Value) -> Value {
    let answer = app.graphql_as(token, OWN, args).await;
    assert!(answer.get("errors").is_none(), "{answer:#}");
    answer["data"]["viewer"]["comments"].clone()
}

/// The ids of a page's edges.
fn ids(page: &Value) -> Vec<String> {
    page["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("edges: {page:#}"))
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// The page once its `totalCount` is `total` (the index follows the store, on DynamoDB
/// through the stream).
async fn settled(app: &TestApp, token: &str, args: Value, total: usize) -> Value {
    eventually(&format!("{args} holding {total}"), || {
        let args = args.clone();
        async move {
            let page = own(app, token, args).await;
            (page["totalCount"] == json!(total)).then_some(page)
        }
    })
    .await
}

/// Every id of the list, walking it `size` at a time forward with `after`.
async fn walk(app: &TestApp, token: &str, args: Value, size: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let mut page_args = args.clone();
        page_args["first"] = json!(size);
        page_args["after"] = after;
        let page = own(app, token, page_args).await;
        seen.extend(ids(&page));
        if page["pageInfo"]["hasNextPage"] != json!(true) {
            return seen;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
}

/// The whole contract on one server under `--moderation pre`: alice writes six comments on two
/// products and bob two; a moderator publishes, hides and rejects some of alice's; she edits
/// one back to pending and deletes another. Each step shows in her lists, and in none of bob's.
async fn authors_see_their_own(app: &TestApp, people: &People, skus: [&str; 2]) {
    let [a, b] = skus;
    let mut mine = Vec::new();
    for i in 0..6 {
        let sku = if i % 2 == 0 { a } else { b };
        mine.push(
            app.add_comment(Some(&people.alice), sku, &format!("mine {i}"), 1 + i % 5)
                .await,
        );
    }
    let mut bobs = Vec::new();
    for i in 0..2 {
        bobs.push(
            app.add_comment(Some(&people.bob), a, &format!("bob {i}"), 5)
                .await,
        );
    }
    mine.reverse(); // newest first
    bobs.reverse();
    let alice = people.alice.as_str();
    let page = settled(app, alice, json!({ "first": 4 }), 6).await;
    assert_eq!(ids(&page), mine[..4], "newest first: {page:#}");
    assert_eq!(page["startOffset"], 0);
    assert_eq!(page["edges"][0]["node"]["moderation"]["status"], "PENDING");
    assert_eq!(
        walk(app, alice, json!({}), 4).await,
        mine,
        "every comment once"
    );
    let bob_page = settled(app, &people.bob, json!({}), 2).await;
    assert_eq!(ids(&bob_page), bobs);

    // Jumps and backward pages, exact at both ends.
    let jump = own(app, alice, json!({ "first": 2, "offset": 4 })).await;
    assert_eq!(ids(&jump), mine[4..], "{jump:#}");
    assert_eq!(jump["startOffset"], 4);
    assert_eq!(jump["pageInfo"]["hasNextPage"], false);
    assert_eq!(jump["pageInfo"]["hasPreviousPage"], true);
    let tail = own(app, alice, json!({ "last": 2 })).await;
    assert_eq!(ids(&tail), mine[4..], "{tail:#}");
    let before = tail["pageInfo"]["startCursor"].clone();
    let back = own(app, alice, json!({ "last": 10, "before": before })).await;
    assert_eq!(ids(&back), mine[..4], "{back:#}");
    assert_eq!(back["pageInfo"]["hasPreviousPage"], false);
    assert_eq!(back["pageInfo"]["hasNextPage"], true);

    // Decisions: the author sees each status, with the statement of reasons.
    let carol = people.carol.as_str();
    for (id, decision, reason) in [
        (&mine[0], "PUBLISH", None),
        (&mine[1], "PUBLISH", None),
        (&mine[2], "REJECT", Some("OFF_TOPIC")),
        (&mine[1], "HIDE", Some("ABUSIVE")),
        (&mine[3], "PUBLISH", None),
    ] {
        let decided = moderate(app, Some(carol), id, decision, reason).await;
        assert!(decided.get("errors").is_none(), "{decided:#}");
    }
    let published = settled(app, alice, json!({ "status": "PUBLISHED" }), 2).await;
    assert_eq!(ids(&published), [mine[0].clone(), mine[3].clone()]);
    let hidden = settled(app, alice, json!({ "status": "HIDDEN" }), 1).await;
    assert_eq!(ids(&hidden), [mine[1].clone()]);
    let moderation = &hidden["edges"][0]["node"]["moderation"];
    assert_eq!(moderation["reason"], "ABUSIVE", "{hidden:#}");
    assert_eq!(moderation["note"], "see rule 3", "{hidden:#}");
    settled(app, alice, json!({ "status": "REJECTED" }), 1).await;
    let pending = settled(app, alice, json!({ "status": "PENDING" }), 2).await;
    assert_eq!(ids(&pending), mine[4..]);
    let all = settled(app, alice, json!({}), 6).await;
    assert_eq!(ids(&all), mine, "the whole list keeps every status");

    // An edit of a published comment returns it to pending; a deletion takes it away.
    let edited = app
        .graphql_as(alice, EDIT, json!({ "id": mine[0], "body": "edited" }))
        .await;
    assert!(edited.get("errors").is_none(), "{edited:#}");
    let deleted = app
        .graphql_as(alice, DELETE, json!({ "id": mine[5] }))
        .await;
    assert!(deleted.get("errors").is_none(), "{deleted:#}");
    let pending = settled(app, alice, json!({ "status": "PENDING" }), 2).await;
    assert_eq!(ids(&pending), [mine[0].clone(), mine[4].clone()]);
    settled(app, alice, json!({ "status": "PUBLISHED" }), 1).await;
    let all = settled(app, alice, json!({}), 5).await;
    assert_eq!(ids(&all), mine[..5]);
    assert_eq!(all["edges"][0]["node"]["body"], "edited");
    let bob_page = settled(app, &people.bob, json!({ "status": "PENDING" }), 2).await;
    assert_eq!(ids(&bob_page), bobs);

    // Without a token there is no viewer.
    let anonymous = app
        .graphql("{ viewer { comments { totalCount } } }", json!({}))
        .await;
    assert_eq!(
        anonymous["data"],
        json!({ "viewer": null }),
        "{anonymous:#}"
    );
    assert!(anonymous.get("errors").is_none(), "{anonymous:#}");
}

#[tokio::test]
async fn authors_page_their_own_comments_on_the_embedded_store() {
    let (jwks, people) = jwt_people("own-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &["--moderation", "pre"]).await;
    authors_see_their_own(&app, &people, ["OA", "OB"]).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn authors_lists_survive_a_restart_of_the_durable_store() {
    let (jwks, people) = jwt_people("own-2").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("data");
    let flags = [
        "--moderation",
        "pre",
        "--data-dir",
        path.to_str().expect("UTF-8"),
    ];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    authors_see_their_own(&app, &people, ["DA", "DB"]).await;
    app.stop().await.expect("clean stop");
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let alice = people.alice.as_str();
    settled(&app, alice, json!({}), 5).await;
    settled(&app, alice, json!({ "status": "PENDING" }), 2).await;
    settled(&app, &people.bob, json!({}), 2).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn under_auth_off_there_is_no_viewer() {
    let app = TestApp::embedded(3).await;
    let answer = app
        .graphql("{ viewer { comments { totalCount } } }", json!({}))
        .await;
    assert_eq!(answer["data"], json!({ "viewer": null }), "{answer:#}");
    assert!(answer.get("errors").is_none(), "{answer:#}");
    app.stop().await.expect("clean stop");
}

/// The scenario on DynamoDB Local and the Redis at `redis_url`, the server following the
/// stream; then `verify` is clean, and, on a single Redis (`lose_a_list`), after alice's whole
/// list is lost from Redis, `verify` says so and `reindex` brings it back.
async fn on_dynamodb_and(redis_url: &str, kid: &str, lose_a_list: bool) {
    let (jwks, people) = jwt_people(kid).await;
    let backends = Backends::on(redis_url).await;
    let app = serve_with_tokens(&backends, &jwks, &["--moderation", "pre"]).await;
    authors_see_their_own(&app, &people, ["YA", "YB"]).await;
    verify_says(&backends, true).await;
    if !lose_a_list {
        app.stop().await.expect("clean stop");
        return;
    }
    // `!@` and alice's `sub` (`auth0|alice`) in base64url; a status in each rating's place.
    lose_list(&backends, redis_url, "!@YXV0aDB8YWxpY2U").await;
    let alice = people.alice.as_str();
    settled(&app, alice, json!({}), 0).await;
    verify_says(&backends, false).await;
    reindex(&backends).await;
    settled(&app, alice, json!({}), 5).await;
    verify_says(&backends, true).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn authors_lists_page_exactly_on_dynamodb_and_redis_and_reindex_rebuilds_them() {
    on_dynamodb_and(&crate::support::redis_server::shared_url(), "own-3", true).await;
}

#[tokio::test]
async fn authors_lists_page_exactly_on_dynamodb_and_a_redis_cluster() {
    let cluster = crate::support::redis_cluster::shared_cluster_urls();
    on_dynamodb_and(&cluster, "own-4", false).await;
}
