//! Writes that only their author or a moderator can make (`--auth jwt`): tokens from a test
//! identity provider whose keys (RSA and EC) are made here and whose JWKS is served over HTTP
//! by the test, against the real server.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};
use serde_json::{Value, json};

use crate::helpers::process::{dynapage_command, serve_fails_to_start};
use crate::helpers::{TestApp, error_codes};
use crate::support::dynamodb_local;
use crate::support::jwks::{AUDIENCE, ISSUER, JwksServer, TestKey, at, claims, forged};

const ADD: &str = r#"mutation($sku: String!, $author: String) {
  addComment(input: { sku: $sku, author: $author, body: "Great shirt", rating: 5 }) {
    comment { id author viewerCanUpdate viewerCanDelete }
  }
}"#;
const UPDATE: &str = r#"mutation($id: ID!) {
  updateComment(input: { id: $id, body: "edited" }) { comment { body } }
}"#;
const DELETE: &str =
    r#"mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }"#;
const COMMENTS: &str = r#"query($sku: String!) {
  product(sku: $sku) { comments(first: 50) { totalCount edges { node { id author body viewerCanUpdate viewerCanDelete } } } }
}"#;

/// One GraphQL POST with an optional bearer token: status, headers and body.
async fn post(
    app: &TestApp,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> (StatusCode, HeaderMap, Value) {
    let answer = app.graphql_reply(token, query, variables).await;
    let status = StatusCode::from_u16(answer.status).expect("a status");
    let body = answer.json();
    (status, answer.headers, body)
}

/// `data` of a request that must succeed.
async fn ok(app: &TestApp, token: Option<&str>, query: &str, variables: Value) -> Value {
    let (status, _, body) = post(app, token, query, variables).await;
    assert!(
        status == StatusCode::OK && body.get("errors").is_none(),
        "{status}: {body:#}"
    );
    body["data"].clone()
}

async fn comments(app: &TestApp, token: Option<&str>, sku: &str) -> Value {
    ok(app, token, COMMENTS, json!({ "sku": sku })).await["product"]["comments"].clone()
}

async fn server(jwks: &JwksServer, extra: &[&str]) -> TestApp {
    TestApp::under_jwt(jwks, 0, extra).await
}

#[tokio::test]
async fn every_bad_token_is_refused_with_unauthenticated_and_nothing_is_written() {
    let (rsa, ec, ed) = (
        TestKey::rsa("rsa-1"),
        TestKey::ec("ec-1"),
        TestKey::ed("ed-1"),
    );
    let stranger = TestKey::rsa("rsa-1"); // another provider's key, under a kid we publish
    let unpublished = TestKey::ec("ec-unpublished");
    let jwks = JwksServer::start(&[&rsa, &ec, &ed]).await;
    let app = server(&jwks, &[]).await;
    let sku = json!({ "sku": "GUARDED" });

    // No token: a read passes, a write is refused on its field.
    let (status, _, body) = post(&app, None, ADD, sku.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body:#}");
    assert_eq!(body["data"], Value::Null, "{body:#}");
    assert_eq!(error_codes(&body), ["UNAUTHENTICATED"], "{body:#}");

    let flipped = {
        let token = rsa.sign(&claims("alice", json!({})));
        let (head, signature) = token.rsplit_once('.').expect("three parts");
        let mut bytes =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, signature)
                .expect("base64url");
        bytes[10] ^= 0x01;
        format!(
            "{head}.{}",
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &bytes)
        )
    };
    // HS256 "signed" with the RSA key's public PEM: verifies only where a server lets the
    // token's `alg` pick how the published key is used.
    let hmac_with_public_key = {
        let key = jsonwebtoken::EncodingKey::from_secret(rsa.public_pem.as_bytes());
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(rsa.kid.clone());
        jsonwebtoken::encode(&header, &claims("alice", json!({})), &key).expect("HS256")
    };
    let bad_tokens = [
        (
            "expired",
            ec.sign(&claims("alice", json!({ "exp": at(-120) }))),
        ),
        (
            "not yet valid",
            ec.sign(&claims("alice", json!({ "nbf": at(600) }))),
        ),
        (
            "wrong issuer",
            ec.sign(&claims("alice", json!({ "iss": "https://evil.test/" }))),
        ),
        (
            "wrong audience",
            ec.sign(&claims("alice", json!({ "aud": "other-api" }))),
        ),
        ("unknown kid", unpublished.sign(&claims("alice", json!({})))),
        (
            "alg none",
            forged(
                &json!({ "alg": "none", "kid": "rsa-1" }),
                &claims("alice", json!({})),
                b"",
            ),
        ),
        ("HS256 with the public key", hmac_with_public_key),
        ("flipped signature byte", flipped),
        (
            "another provider's key",
            stranger.sign(&claims("alice", json!({}))),
        ),
        (
            "no sub",
            ec.sign(&json!({ "iss": ISSUER, "aud": AUDIENCE, "exp": at(600) })),
        ),
        ("not a JWT", "definitely-not-a-jwt".to_owned()),
    ];
    for (case, token) in &bad_tokens {
        for query in [ADD, COMMENTS] {
            let (status, headers, body) = post(&app, Some(token), query, sku.clone()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{case}: {body:#}");
            assert_eq!(error_codes(&body), ["UNAUTHENTICATED"], "{case}: {body:#}");
            assert!(
                body.get("data").is_none(),
                "{case}: a refused request has no data: {body:#}"
            );
            assert_eq!(
                headers
                    .get(WWW_AUTHENTICATE)
                    .map(|v| v.to_str().expect("ASCII")),
                Some("Bearer error=\"invalid_token\""),
                "{case}"
            );
        }
    }
    let after = comments(&app, None, "GUARDED").await;
    assert_eq!(after["totalCount"], 0, "nothing was written: {after:#}");
    assert_eq!(after["edges"], json!([]));

    // The same provider's good tokens pass, RSA, EC and EdDSA alike.
    for key in [&rsa, &ec, &ed] {
        let token = key.sign(&claims("alice", json!({ "name": "Alice" })));
        let added = ok(&app, Some(&token), ADD, sku.clone()).await;
        assert_eq!(added["addComment"]["comment"]["author"], "Alice");
    }
    app.stop().await.expect("clean stop");
}

/// alice and bob are authors, carol a moderator (a role in a nested claim).
async fn only_authors_and_moderators_change_comments(app: TestApp, key: &TestKey) {
    let alice = key.sign(&claims("auth0|alice", json!({ "name": "Alice" })));
    let bob = key.sign(&claims("auth0|bob", json!({ "name": "Bob" })));
    let carol = key.sign(&claims(
        "auth0|carol",
        json!({ "realm_access": { "roles": ["reader", "moderator"] } }),
    ));
    let sku = "OWNED";

    // The author's name comes from the token; giving one is refused.
    let (_, _, body) = post(
        &app,
        Some(&alice),
        ADD,
        json!({ "sku": sku, "author": "Mallory" }),
    )
    .await;
    assert_eq!(error_codes(&body), ["BAD_USER_INPUT"], "{body:#}");
    let added = ok(&app, Some(&alice), ADD, json!({ "sku": sku })).await;
    let comment = &added["addComment"]["comment"];
    assert_eq!(
        (
            &comment["author"],
            &comment["viewerCanUpdate"],
            &comment["viewerCanDelete"]
        ),
        (&json!("Alice"), &json!(true), &json!(true))
    );
    let id = comment["id"].as_str().expect("an id").to_owned();

    // Bob may neither edit nor delete it, and nothing changes.
    for query in [UPDATE, DELETE] {
        let (status, _, body) = post(&app, Some(&bob), query, json!({ "id": id })).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(error_codes(&body), ["FORBIDDEN"], "{body:#}");
        assert_eq!(body["data"], Value::Null, "{body:#}");
    }
    for query in [UPDATE, DELETE] {
        let (_, _, body) = post(&app, None, query, json!({ "id": id })).await;
        assert_eq!(error_codes(&body), ["UNAUTHENTICATED"], "{body:#}");
    }
    // viewerCanUpdate/viewerCanDelete as each of them sees the comment.
    for (who, token, may) in [
        ("alice", Some(alice.as_str()), true),
        ("bob", Some(bob.as_str()), false),
        ("carol", Some(carol.as_str()), true),
        ("anonymous", None, false),
    ] {
        let list = comments(&app, token, sku).await;
        let node = &list["edges"][0]["node"];
        assert_eq!(node["body"], "Great shirt", "{who}: unchanged");
        assert_eq!(
            (&node["viewerCanUpdate"], &node["viewerCanDelete"]),
            (&json!(may), &json!(may)),
            "{who}"
        );
    }

    // Alice edits her own comment; the moderator edits it too, then deletes it.
    let edited = ok(&app, Some(&alice), UPDATE, json!({ "id": id })).await;
    assert_eq!(edited["updateComment"]["comment"]["body"], "edited");
    ok(&app, Some(&carol), UPDATE, json!({ "id": id })).await;
    ok(&app, Some(&carol), DELETE, json!({ "id": id })).await;
    let (_, _, body) = post(&app, Some(&alice), DELETE, json!({ "id": id })).await;
    assert_eq!(error_codes(&body), ["NOT_FOUND"], "gone: {body:#}");
    app.stop().await.expect("clean stop");
}

const NESTED_ROLES: [&str; 2] = ["--auth-roles-claim", "realm_access.roles"];

#[tokio::test]
async fn on_the_embedded_store_only_authors_and_moderators_change_comments() {
    let key = TestKey::ec("ec-owned");
    let jwks = JwksServer::start(&[&key]).await;
    let app = server(&jwks, &NESTED_ROLES).await;
    only_authors_and_moderators_change_comments(app, &key).await;
}

#[tokio::test]
async fn on_dynamodb_only_authors_and_moderators_change_comments() {
    let key = TestKey::rsa("rsa-owned");
    let jwks = JwksServer::start(&[&key]).await;
    let store = dynamodb_local::dynamo_store().await;
    let endpoint = dynamodb_local::endpoint().await;
    let app = server(
        &jwks,
        &[
            "--store",
            "dynamodb",
            "--dynamodb-endpoint",
            &endpoint,
            "--dynamodb-table",
            store.table(),
            NESTED_ROLES[0],
            NESTED_ROLES[1],
        ],
    )
    .await;
    only_authors_and_moderators_change_comments(app, &key).await;
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_cached_keys_outlive_a_jwks_outage() {
    let (old, new, later) = (
        TestKey::rsa("2026-old"),
        TestKey::ec("2026-new"),
        TestKey::ec("2027"),
    );
    let jwks = JwksServer::start(&[&old]).await;
    let app = server(&jwks, &[]).await;
    let read = |token: String| {
        let app = &app;
        async move {
            post(app, Some(&token), COMMENTS, json!({ "sku": "ROTATE" }))
                .await
                .0
        }
    };
    assert_eq!(jwks.fetches(), 1, "fetched once at start-up");
    assert_eq!(
        read(old.sign(&claims("a", json!({})))).await,
        StatusCode::OK
    );
    assert_eq!(jwks.fetches(), 1, "a cached key costs no fetch");

    // The provider publishes a new key, then signs with it: one fetch finds it.
    jwks.publish(&[&old, &new]);
    assert_eq!(
        read(new.sign(&claims("a", json!({})))).await,
        StatusCode::OK
    );
    assert_eq!(jwks.fetches(), 2, "one fetch for the unknown kid");
    for _ in 0..5 {
        assert_eq!(
            read(new.sign(&claims("a", json!({})))).await,
            StatusCode::OK
        );
    }
    assert_eq!(jwks.fetches(), 2, "then cached");

    // The endpoint goes down: both cached keys keep working, an unknown one fails closed, and a
    // burst of unknown kids costs at most one fetch per few seconds.
    jwks.set_down(true);
    let started = std::time::Instant::now();
    let before = jwks.fetches();
    for i in 0..20 {
        // A new `jti` each time: tokens the server has not verified before, so it is the
        // cached keys that verify them.
        let fresh = || claims("a", json!({ "jti": format!("outage-{i}") }));
        assert_eq!(read(later.sign(&fresh())).await, StatusCode::UNAUTHORIZED);
        assert_eq!(read(old.sign(&fresh())).await, StatusCode::OK);
        assert_eq!(read(new.sign(&fresh())).await, StatusCode::OK);
    }
    let allowed =
        1 + (started.elapsed().as_secs() / dynapage::auth::jwks::MIN_REFETCH.as_secs()) as usize;
    let fetched = jwks.fetches() - before;
    assert!(
        fetched <= allowed,
        "{fetched} fetches for 20 unknown kids in {:?}",
        started.elapsed()
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_dynamodb_server_will_not_start_until_auth_is_chosen() {
    let endpoint = dynamodb_local::endpoint().await;
    let stderr =
        serve_fails_to_start(&["--store", "dynamodb", "--dynamodb-endpoint", &endpoint]).await;
    assert!(
        stderr.contains("--auth / DYNAPAGE_AUTH is required with --store dynamodb"),
        "{stderr}"
    );
    let stderr = serve_fails_to_start(&["--auth", "jwt"]).await;
    assert!(
        stderr.contains("--auth jwt needs --auth-jwks-url"),
        "{stderr}"
    );
}

#[tokio::test]
async fn with_auth_off_anyone_writes_and_names_the_author() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--auth", "off"]).await;
    let (_, _, body) = post(&app, None, ADD, json!({ "sku": "OPEN" })).await;
    assert_eq!(
        error_codes(&body),
        ["BAD_USER_INPUT"],
        "author is required: {body:#}"
    );
    let added = ok(&app, None, ADD, json!({ "sku": "OPEN", "author": "Ann" })).await;
    let comment = &added["addComment"]["comment"];
    assert_eq!(
        (
            &comment["author"],
            &comment["viewerCanUpdate"],
            &comment["viewerCanDelete"]
        ),
        (&json!("Ann"), &json!(true), &json!(true))
    );
    // A token is not looked at: not even a broken one is refused.
    let id = comment["id"].as_str().expect("an id");
    ok(&app, Some("not-a-jwt"), DELETE, json!({ "id": id })).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_token_from_dynapage_token_works_against_a_server_reading_its_jwks_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key_dir = dir.path().join("keys");
    let key_dir = key_dir.to_str().expect("UTF-8 path");
    let token_for = |sub: &str, name: &str, roles: &[&str]| {
        let mut command = dynapage_command("token");
        command.args(["--sub", sub, "--name", name, "--key-dir", key_dir]);
        for role in roles {
            command.args(["--role", role]);
        }
        command.stdout(std::process::Stdio::piped());
        async move {
            let output = command.output().await.expect("runs");
            assert!(output.status.success(), "dynapage token failed");
            String::from_utf8(output.stdout)
                .expect("UTF-8")
                .trim()
                .to_owned()
        }
    };
    let alice = token_for("alice", "Alice", &[]).await;
    let moderator = token_for("mod", "Mo", &["moderator"]).await;
    let jwks = format!("file:{key_dir}/jwks.json");
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--auth",
        "jwt",
        "--auth-jwks-url",
        &jwks,
        "--auth-issuer",
        dynapage::auth::local::ISSUER,
        "--auth-audience",
        dynapage::auth::local::AUDIENCE,
    ])
    .await;
    let added = ok(&app, Some(&alice), ADD, json!({ "sku": "LOCAL" })).await;
    assert_eq!(added["addComment"]["comment"]["author"], "Alice");
    let id = added["addComment"]["comment"]["id"]
        .as_str()
        .expect("an id");
    ok(&app, Some(&moderator), DELETE, json!({ "id": id })).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn each_signed_in_user_has_a_writes_budget_of_their_own_behind_one_address() {
    let key = TestKey::ec("ec-budget");
    let jwks = JwksServer::start(&[&key]).await;
    // One write a minute each; every request comes from 127.0.0.1.
    let app = server(
        &jwks,
        &["--rate-limit-writes", "1", "--rate-limit-cost", "0"],
    )
    .await;
    let alice = key.sign(&claims("alice", json!({ "name": "Alice" })));
    let bob = key.sign(&claims("bob", json!({ "name": "Bob" })));
    let sku = json!({ "sku": "BUDGETS" });
    ok(&app, Some(&alice), ADD, sku.clone()).await;
    let (status, headers, body) = post(&app, Some(&alice), ADD, sku.clone()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body:#}");
    assert_eq!(error_codes(&body), ["RATE_LIMITED"], "{body:#}");
    assert!(headers.contains_key("retry-after"), "{headers:?}");
    // Bob, from the same address, still has his.
    ok(&app, Some(&bob), ADD, sku.clone()).await;
    assert_eq!(comments(&app, None, "BUDGETS").await["totalCount"], 2);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_server_whose_jwks_is_down_at_start_up_serves_reads_and_accepts_tokens_once_it_is_back() {
    let key = TestKey::ec("ec-late");
    let jwks = JwksServer::start(&[&key]).await;
    jwks.set_down(true);
    let app = server(&jwks, &[]).await;
    let token = key.sign(&claims("alice", json!({ "name": "Alice" })));
    assert_eq!(
        comments(&app, None, "LATE").await["totalCount"],
        0,
        "reads need no keys"
    );
    let (status, _, body) = post(&app, Some(&token), ADD, json!({ "sku": "LATE" })).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no key yet: {body:#}");
    jwks.set_down(false);
    // The refused token's fetch was the last one: the next may come MIN_REFETCH later.
    tokio::time::sleep(dynapage::auth::jwks::MIN_REFETCH).await;
    ok(&app, Some(&token), ADD, json!({ "sku": "LATE" })).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn on_the_durable_embedded_store_only_authors_and_moderators_change_comments() {
    let key = TestKey::ec("ec-durable");
    let jwks = JwksServer::start(&[&key]).await;
    let dir = tempfile::tempdir().expect("a data directory");
    let mut extra = vec!["--data-dir", dir.path().to_str().expect("a UTF-8 path")];
    extra.extend(NESTED_ROLES);
    let app = server(&jwks, &extra).await;
    only_authors_and_moderators_change_comments(app, &key).await;
}
