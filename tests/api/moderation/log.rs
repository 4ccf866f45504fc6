//! `moderationLog`: every decision and reply is an entry (who, what, the status before and
//! after, the reason and note, when), newest first, across the shop and per product, exact in
//! its count and in both directions; refused decisions write none; a deleted comment's entries
//! stay; moderators only. On the embedded store, `--data-dir` across a restart, and DynamoDB
//! Local (where each entry is written in the decision's transaction).

use serde_json::{Value, json};

use super::decisions::{People, jwt_people, moderate, serve_with_tokens};
use crate::helpers::process::{exit_code, stdout};
use crate::helpers::{TestApp, error_codes};
use crate::support::backends::Backends;

const LOG: &str = r#"query($sku: String, $first: Int, $after: String, $last: Int, $before: String) {
  moderationLog(sku: $sku, first: $first, after: $after, last: $last, before: $before) {
    totalCount
    edges { cursor node { id sku actor action previousStatus status reason note at comment { id } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;
const REPLY: &str = r#"mutation($id: ID!, $body: String) {
  replyToComment(input: { commentId: $id, body: $body }) { comment { id } }
}"#;
const DELETE: &str =
    r#"mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }"#;
const NODE: &str = r#"query($id: ID!) { node(id: $id) { id ... on ModerationEntry { action } } }"#;

async fn log(app: &TestApp, token: &str, args: Value) -> Value {
    let answer = app.graphql_as(token, LOG, args).await;
    assert!(answer.get("errors").is_none(), "{answer:#}");
    answer["data"]["moderationLog"].clone()
}

fn actions(page: &Value) -> Vec<String> {
    page["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("edges: {page:#}"))
        .iter()
        .map(|e| e["node"]["action"].as_str().expect("an action").to_owned())
        .collect()
}

/// Decisions and replies on two products, then the log read every way.
async fn the_log_records_every_decision(app: &TestApp, people: &People, skus: [&str; 2]) {
    let [a, b] = skus;
    let carol = people.carol.as_str();
    let first = app.add_comment(Some(&people.alice), a, "first", 2).await;
    let other = app.add_comment(Some(&people.bob), b, "other", 5).await;
    let ok = |answer: Value| assert!(answer.get("errors").is_none(), "{answer:#}");
    ok(moderate(app, Some(carol), &first, "HIDE", Some("ABUSIVE")).await);
    // Refused decisions write nothing, to the comment or to the log.
    let refused = moderate(app, Some(carol), &first, "REJECT", Some("SPAM")).await;
    assert_eq!(error_codes(&refused), ["BAD_USER_INPUT"], "{refused:#}");
    let refused = moderate(app, Some(&people.bob), &other, "HIDE", Some("SPAM")).await;
    assert_eq!(error_codes(&refused), ["FORBIDDEN"], "{refused:#}");
    ok(moderate(app, Some(carol), &first, "PUBLISH", None).await);
    let reply = json!({ "id": other, "body": "Thank you!" });
    ok(app.graphql_as(carol, REPLY, reply).await);
    ok(app
        .graphql_as(carol, REPLY, json!({ "id": other, "body": null }))
        .await);
    // The same reply removed again changes nothing and is not logged.
    ok(app
        .graphql_as(carol, REPLY, json!({ "id": other, "body": null }))
        .await);

    let whole = log(app, carol, json!({})).await;
    assert_eq!(whole["totalCount"], 4, "{whole:#}");
    assert_eq!(
        actions(&whole),
        ["REMOVE_REPLY", "REPLY", "PUBLISH", "HIDE"]
    );
    let hide = &whole["edges"][3]["node"];
    assert_eq!(hide["actor"], "auth0|carol");
    assert_eq!(hide["sku"], a);
    assert_eq!(
        (
            &hide["previousStatus"],
            &hide["status"],
            &hide["reason"],
            &hide["note"]
        ),
        (
            &json!("PUBLISHED"),
            &json!("HIDDEN"),
            &json!("ABUSIVE"),
            &json!("see rule 3")
        )
    );
    assert_eq!(hide["comment"]["id"], json!(first));
    assert_eq!(whole["edges"][2]["node"]["reason"], Value::Null);
    assert_eq!(whole["edges"][1]["node"]["note"], "Thank you!");
    assert_eq!(
        whole["pageInfo"],
        json!({ "hasNextPage": false, "hasPreviousPage": false,
                "startCursor": whole["edges"][0]["cursor"], "endCursor": whole["edges"][3]["cursor"] })
    );

    // Per product, and paged both ways, exact at both ends.
    let of_a = log(app, carol, json!({ "sku": a })).await;
    assert_eq!(
        (of_a["totalCount"].clone(), actions(&of_a)),
        (json!(2), vec!["PUBLISH".into(), "HIDE".into()])
    );
    let top = log(app, carol, json!({ "first": 2 })).await;
    assert_eq!(actions(&top), ["REMOVE_REPLY", "REPLY"]);
    assert_eq!(
        (
            &top["pageInfo"]["hasNextPage"],
            &top["pageInfo"]["hasPreviousPage"]
        ),
        (&json!(true), &json!(false))
    );
    let next = log(
        app,
        carol,
        json!({ "first": 2, "after": top["pageInfo"]["endCursor"] }),
    )
    .await;
    assert_eq!(actions(&next), ["PUBLISH", "HIDE"]);
    assert_eq!(
        (
            &next["pageInfo"]["hasNextPage"],
            &next["pageInfo"]["hasPreviousPage"]
        ),
        (&json!(false), &json!(true))
    );
    let tail = log(app, carol, json!({ "last": 1 })).await;
    assert_eq!(actions(&tail), ["HIDE"]);
    assert_eq!(
        (
            &tail["pageInfo"]["hasNextPage"],
            &tail["pageInfo"]["hasPreviousPage"]
        ),
        (&json!(false), &json!(true))
    );
    let back = log(
        app,
        carol,
        json!({ "last": 2, "before": tail["pageInfo"]["startCursor"] }),
    )
    .await;
    assert_eq!(actions(&back), ["REPLY", "PUBLISH"]);
    assert_eq!(
        (
            &back["pageInfo"]["hasNextPage"],
            &back["pageInfo"]["hasPreviousPage"]
        ),
        (&json!(true), &json!(true))
    );

    // Asking for none still says whether there are any.
    let none = log(app, carol, json!({ "first": 0 })).await;
    assert_eq!(
        (
            none["edges"].clone(),
            &none["pageInfo"]["hasNextPage"],
            &none["pageInfo"]["hasPreviousPage"]
        ),
        (json!([]), &json!(true), &json!(false))
    );

    // A cursor of one log is no cursor of another; moderators only.
    let foreign = app
        .graphql_as(
            carol,
            LOG,
            json!({ "sku": b, "after": top["pageInfo"]["endCursor"] }),
        )
        .await;
    assert_eq!(error_codes(&foreign), ["BAD_CURSOR"], "{foreign:#}");
    // A made-up cursor naming an entry newer than any (as the unsealed cursors of an earlier
    // release spelled one) is refused, not answered with an empty page that claims entries
    // before it; so is a comment connection's cursor.
    use base64::Engine as _;
    let forged =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("log::7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    let page = app
        .graphql_as(
            carol,
            "query($sku: String!) { comments(sku: $sku, first: 1) { pageInfo { endCursor } } }",
            json!({ "sku": b }),
        )
        .await;
    let comment_cursor = page["data"]["comments"]["pageInfo"]["endCursor"].clone();
    assert!(comment_cursor.is_string(), "a comment cursor: {page:#}");
    for cursor in [json!(forged), comment_cursor] {
        for argument in ["after", "before"] {
            let answer = app
                .graphql_as(carol, LOG, json!({ argument: cursor.clone(), "first": 1 }))
                .await;
            assert_eq!(error_codes(&answer), ["BAD_CURSOR"], "{cursor}: {answer:#}");
        }
    }
    let forbidden = app.graphql_as(&people.alice, LOG, json!({})).await;
    assert_eq!(error_codes(&forbidden), ["FORBIDDEN"], "{forbidden:#}");
    let anonymous = app.graphql(LOG, json!({})).await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );

    // An entry is a node, for moderators; deleting its comment keeps it.
    let entry_id = hide["id"].clone();
    let node = app.graphql_as(carol, NODE, json!({ "id": entry_id })).await;
    assert_eq!(node["data"]["node"]["action"], "HIDE", "{node:#}");
    let hidden = app
        .graphql_as(&people.alice, NODE, json!({ "id": entry_id }))
        .await;
    assert_eq!(hidden["data"]["node"], Value::Null, "{hidden:#}");
    ok(app
        .graphql_as(&people.alice, DELETE, json!({ "id": first }))
        .await);
    let after_delete = log(app, carol, json!({ "sku": a })).await;
    assert_eq!(after_delete["totalCount"], 2);
    assert_eq!(after_delete["edges"][1]["node"]["comment"], Value::Null);
}

#[tokio::test]
async fn the_log_records_every_decision_on_the_embedded_store() {
    let (jwks, people) = jwt_people("log-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    the_log_records_every_decision(&app, &people, ["LA", "LB"]).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn the_log_survives_a_restart_of_the_durable_store() {
    let (jwks, people) = jwt_people("log-2").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("data");
    let flags = ["--data-dir", path.to_str().expect("UTF-8")];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    the_log_records_every_decision(&app, &people, ["SA", "SB"]).await;
    app.stop().await.expect("clean stop");
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let whole = log(&app, &people.carol, json!({})).await;
    assert_eq!(whole["totalCount"], 4);
    assert_eq!(
        actions(&whole),
        ["REMOVE_REPLY", "REPLY", "PUBLISH", "HIDE"]
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn the_log_records_every_decision_on_dynamodb() {
    let (jwks, people) = jwt_people("log-3").await;
    let backends = Backends::new().await;
    let app = serve_with_tokens(&backends, &jwks, &[]).await;
    the_log_records_every_decision(&app, &people, ["DA", "DB"]).await;
    // Exported and imported into the same table at once: every entry is there already, and
    // none is counted twice.
    let work = tempfile::tempdir().expect("a directory");
    let file = work.path().join("log.jsonl");
    let file = file.to_str().expect("UTF-8");
    let exported = backends.run("export", &["--out", file]).await;
    assert_eq!(exit_code(&exported), Some(0), "{exported:?}");
    let imported = backends.run("import", &["--in", file]).await;
    assert_eq!(exit_code(&imported), Some(0), "{imported:?}");
    assert!(
        stdout(&imported).contains("4 moderation log entries"),
        "{imported:?}"
    );
    let whole = log(&app, &people.carol, json!({})).await;
    assert_eq!(whole["totalCount"], 4, "{whole:#}");
    app.stop().await.expect("clean stop");
}
