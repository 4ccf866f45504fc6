//! A person's data through the API: `eraseMyData` (the viewer's own, or anyone's for a
//! moderator; a confirmation; a dry run that writes nothing), `GET /me/export` (the signed-in
//! person's JSON document, `no-store`), and `dynapage erase-person`; on the embedded store, on
//! `--data-dir`, and on DynamoDB Local + Redis (single and Cluster), where the index, counts
//! and `verify` follow the stream.

use serde_json::{Value, json};

use super::decisions::{People, jwt_people, serve_with_tokens, verify_says};
use crate::helpers::{TestApp, error_codes, eventually};
use crate::support::backends::Backends;

const ERASE: &str = r#"mutation($confirmation: String, $mode: ErasureMode, $dryRun: Boolean, $subject: String) {
  eraseMyData(input: { confirmation: $confirmation, mode: $mode, dryRun: $dryRun, subject: $subject, clientMutationId: "e1" }) {
    mode dryRun commentsDeleted commentsAnonymized helpfulVotesRemoved reportsRemoved clientMutationId
  }
}"#;

const VOTE: &str = r#"mutation($id: ID!) { markHelpful(input: { commentId: $id, helpful: true }) { comment { helpfulCount } } }"#;

const REPORT: &str = r#"mutation($id: ID!) { reportComment(input: { commentId: $id, reason: SPAM }) { report { status } } }"#;

const PUBLIC: &str = r#"query($sku: String!) {
  product(sku: $sku) { comments(first: 10) { totalCount edges { node { id author body helpfulCount } } } }
}"#;

const QUEUE: &str = r#"{ moderationQueue(queue: REPORTED, first: 10) { totalCount } }"#;

const MINE: &str = r#"{ viewer { comments { totalCount } reports { totalCount } } }"#;

fn ok(answer: &Value) -> &Value {
    assert!(answer.get("errors").is_none(), "{answer:#}");
    &answer["data"]
}

async fn erase(app: &TestApp, token: &str, variables: Value) -> Value {
    app.graphql_as(token, ERASE, variables).await
}

/// `sku`'s public comments once there are `total` of them.
async fn public(app: &TestApp, sku: &str, total: usize) -> Value {
    eventually(
        &format!("{sku} holding {total} public comments"),
        || async move {
            let answer = app.graphql(PUBLIC, json!({ "sku": sku })).await;
            let comments = ok(&answer)["product"]["comments"].clone();
            (comments["totalCount"] == json!(total)).then_some(comments)
        },
    )
    .await
}

/// `GET /me/export` as the holder of `token` (none: anonymous): status, headers, body.
pub(super) async fn export(
    app: &TestApp,
    token: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new().get(app.url("/me/export"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("sent");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let body = response.json().await.expect("JSON");
    (status, headers, body)
}

/// Alice writes two comments on `sku`, bob one; bob finds alice's first helpful, alice bob's,
/// and alice reports bob's. Then alice exports and erases her data; carol (a moderator)
/// anonymizes bob's.
async fn a_person_exports_and_erases(app: &TestApp, people: &People, sku: &str) {
    let (alice, bob, carol) = (
        people.alice.as_str(),
        people.bob.as_str(),
        people.carol.as_str(),
    );
    let first = app.add_comment(Some(alice), sku, "alice one", 5).await;
    app.add_comment(Some(alice), sku, "alice two", 4).await;
    let bobs = app.add_comment(Some(bob), sku, "bob's", 3).await;
    ok(&app.graphql_as(bob, VOTE, json!({ "id": first })).await);
    ok(&app.graphql_as(alice, VOTE, json!({ "id": bobs })).await);
    ok(&app.graphql_as(alice, REPORT, json!({ "id": bobs })).await);
    public(app, sku, 3).await;

    let anonymous = app
        .graphql(ERASE, json!({ "confirmation": "ERASE MY DATA" }))
        .await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );
    let not_hers = erase(
        app,
        bob,
        json!({ "subject": "auth0|alice", "confirmation": "ERASE MY DATA" }),
    )
    .await;
    assert_eq!(error_codes(&not_hers), ["FORBIDDEN"], "{not_hers:#}");
    let too_long = erase(
        app,
        carol,
        json!({ "subject": "x".repeat(3_000), "dryRun": true }),
    )
    .await;
    assert_eq!(error_codes(&too_long), ["BAD_USER_INPUT"], "{too_long:#}");
    let unconfirmed = erase(app, alice, json!({ "confirmation": "yes" })).await;
    assert_eq!(
        error_codes(&unconfirmed),
        ["BAD_USER_INPUT"],
        "{unconfirmed:#}"
    );

    let dry = erase(app, alice, json!({ "dryRun": true })).await;
    assert_eq!(
        ok(&dry)["eraseMyData"],
        json!({
            "mode": "DELETE", "dryRun": true, "commentsDeleted": 2, "commentsAnonymized": 0,
            "helpfulVotesRemoved": 1, "reportsRemoved": 1, "clientMutationId": "e1"
        })
    );
    public(app, sku, 3).await;

    let (status, _, refused) = export(app, None).await;
    assert_eq!(
        (status, error_codes(&refused)),
        (401, vec!["UNAUTHENTICATED".to_owned()])
    );
    let (status, headers, document) = export(app, Some(alice)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(document["subject"], "auth0|alice");
    let bodies: Vec<&Value> = document["comments"]
        .as_array()
        .expect("comments")
        .iter()
        .map(|c| &c["body"])
        .collect();
    assert_eq!(bodies, [&json!("alice one"), &json!("alice two")]);
    assert_eq!(document["helpfulVotes"].as_array().expect("votes").len(), 1);
    assert_eq!(document["reports"][0]["reason"], "SPAM");

    let done = erase(app, alice, json!({ "confirmation": "ERASE MY DATA" })).await;
    let receipt = &ok(&done)["eraseMyData"];
    assert_eq!(
        (
            &receipt["commentsDeleted"],
            &receipt["helpfulVotesRemoved"],
            &receipt["reportsRemoved"]
        ),
        (&json!(2), &json!(1), &json!(1))
    );
    let left = public(app, sku, 1).await;
    assert_eq!(
        left["edges"][0]["node"]["helpfulCount"], 0,
        "alice's vote went: {left:#}"
    );
    eventually("an empty REPORTED queue", || async move {
        let queue = app.graphql_as(carol, QUEUE, json!({})).await;
        (ok(&queue)["moderationQueue"]["totalCount"] == json!(0)).then_some(())
    })
    .await;
    let mine = app.graphql_as(alice, MINE, json!({})).await;
    assert_eq!(ok(&mine)["viewer"]["reports"]["totalCount"], 0);
    eventually("alice's list empty", || async move {
        let mine = app.graphql_as(alice, MINE, json!({})).await;
        (ok(&mine)["viewer"]["comments"]["totalCount"] == json!(0)).then_some(())
    })
    .await;
    let (_, _, document) = export(app, Some(alice)).await;
    assert_eq!(document["comments"], json!([]), "{document:#}");
    let again = erase(app, alice, json!({ "confirmation": "ERASE MY DATA" })).await;
    assert_eq!(
        ok(&again)["eraseMyData"]["commentsDeleted"],
        0,
        "nothing left"
    );

    // A moderator erases bob's data, keeping his comment under "Former customer".
    let anonymized = erase(
        app,
        carol,
        json!({ "subject": "auth0|bob", "mode": "ANONYMIZE", "confirmation": "ERASE MY DATA" }),
    )
    .await;
    assert_eq!(ok(&anonymized)["eraseMyData"]["commentsAnonymized"], 1);
    let kept = public(app, sku, 1).await;
    let node = &kept["edges"][0]["node"];
    assert_eq!(
        (&node["author"], &node["body"]),
        (&json!("Former customer"), &json!("bob's"))
    );
}

#[tokio::test]
async fn a_person_exports_and_erases_their_data_on_the_embedded_store() {
    let (jwks, people) = jwt_people("privacy-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    a_person_exports_and_erases(&app, &people, "PA").await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn an_erasure_lasts_across_a_restart_of_the_durable_store() {
    let (jwks, people) = jwt_people("privacy-2").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("data");
    let flags = ["--data-dir", path.to_str().expect("UTF-8")];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    a_person_exports_and_erases(&app, &people, "PD").await;
    app.stop().await.expect("clean stop");
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let kept = public(&app, "PD", 1).await;
    assert_eq!(kept["edges"][0]["node"]["author"], "Former customer");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn an_erasure_follows_the_stream_into_redis_and_verify_is_clean() {
    let (jwks, people) = jwt_people("privacy-3").await;
    let redis_url = crate::support::redis_server::shared_url();
    let backends = Backends::on(&redis_url).await;
    let app = serve_with_tokens(&backends, &jwks, &[]).await;
    a_person_exports_and_erases(&app, &people, "PY").await;
    verify_says(&backends, true).await;
    nothing_of_alice_in_redis(&backends, &redis_url).await;
    // The command line erases a person too: dry, then for real, then nothing is left.
    let alice_again = app
        .add_comment(Some(&people.alice), "PY", "alice again", 2)
        .await;
    public(&app, "PY", 2).await;
    let receipt = |output: &std::process::Output| -> Value {
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("a JSON receipt")
    };
    let before = backends.run("verify", &["--person", "auth0|alice"]).await;
    assert_eq!(
        before.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&before.stdout)
    );
    assert!(
        String::from_utf8_lossy(&before.stdout)
            .contains("1 comments, 0 helpful votes and 0 reports")
    );
    let dry = receipt(
        &backends
            .run("erase-person", &["--sub", "auth0|alice", "--dry-run"])
            .await,
    );
    assert_eq!(dry["receipt"]["commentsDeleted"], 1, "{dry:#}");
    public(&app, "PY", 2).await;
    let done = receipt(
        &backends
            .run("erase-person", &["--sub", "auth0|alice"])
            .await,
    );
    assert_eq!(done["receipt"]["commentsDeleted"], 1, "{done:#}");
    let left = public(&app, "PY", 1).await;
    assert_ne!(left["edges"][0]["node"]["id"], json!(alice_again));
    let again = receipt(
        &backends
            .run("erase-person", &["--sub", "auth0|alice"])
            .await,
    );
    let after = backends.run("verify", &["--person", "auth0|alice"]).await;
    let said = String::from_utf8_lossy(&after.stdout);
    assert_eq!(after.status.code(), Some(0), "{said}");
    assert!(said.contains("nothing of the person is left"), "{said}");
    assert_eq!(again["receipt"]["commentsDeleted"], 0, "{again:#}");
    verify_says(&backends, true).await;
    app.stop().await.expect("clean stop");
}

/// No key of the index names alice but the tombstones of her deleted comments, which expire
/// (her author's list went with her last comment), and no entry of the change log holds her
/// subject or her comments' text.
async fn nothing_of_alice_in_redis(backends: &Backends, redis_url: &str) {
    let mut redis = crate::support::redis_server::connect(redis_url).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", backends.prefix))
        .query_async(&mut redis)
        .await
        .expect("KEYS");
    assert!(
        keys.iter().any(|k| k.contains("PY")),
        "the product's keys: {keys:?}"
    );
    // An author's lists are named by the subject in base64url.
    let encoded = {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("auth0|alice")
    };
    assert!(keys.iter().all(|k| !k.contains("alice")), "{keys:?}");
    // What is left under her list's name are the tombstones of her deleted comments (a
    // deletion's version, no content), which Redis drops within 25 hours.
    let hers: Vec<&String> = keys.iter().filter(|k| k.contains(&encoded)).collect();
    for key in hers {
        assert!(key.contains("}:d:"), "{key} is not a tombstone");
        let ttl: i64 = redis::cmd("TTL")
            .arg(key)
            .query_async(&mut redis)
            .await
            .expect("TTL");
        assert!((1..=25 * 3600).contains(&ttl), "{key} expires in {ttl} s");
    }
    let log: redis::Value = redis::cmd("XRANGE")
        .arg(format!("{}{{changes}}", backends.prefix))
        .arg("-")
        .arg("+")
        .query_async(&mut redis)
        .await
        .expect("XRANGE");
    let text = strings_of(&log).join(" ");
    assert!(
        text.contains("PY"),
        "the change log holds the writes: {text}"
    );
    assert!(
        !text.contains("alice") && !text.contains(&encoded),
        "{text}"
    );
}

/// Every string a reply holds, as text.
fn strings_of(value: &redis::Value) -> Vec<String> {
    match value {
        redis::Value::BulkString(bytes) => vec![String::from_utf8_lossy(bytes).into_owned()],
        redis::Value::SimpleString(text) => vec![text.clone()],
        redis::Value::Array(items) => items.iter().flat_map(strings_of).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn an_erasure_works_on_dynamodb_and_a_redis_cluster() {
    let (jwks, people) = jwt_people("privacy-4").await;
    let cluster = crate::support::redis_cluster::shared_cluster_urls();
    let backends = Backends::on(&cluster).await;
    let app = serve_with_tokens(&backends, &jwks, &[]).await;
    a_person_exports_and_erases(&app, &people, "PC").await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn an_export_spends_the_persons_cost_budget() {
    let (jwks, people) = jwt_people("privacy-5").await;
    let flags = ["--rate-limit-cost", "10", "--rate-limit-cost-burst", "1500"];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let (status, _, _) = export(&app, Some(&people.alice)).await;
    assert_eq!(status, 200);
    let (status, _, refused) = export(&app, Some(&people.alice)).await;
    assert_eq!(
        (status, error_codes(&refused)),
        (429, vec!["RATE_LIMITED".to_owned()])
    );
    let (status, _, _) = export(&app, Some(&people.bob)).await;
    assert_eq!(status, 200, "bob's budget is his own");
    app.stop().await.expect("clean stop");
}
