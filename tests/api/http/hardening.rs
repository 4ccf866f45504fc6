//! The lesser hardening items of issue 22, each performed against the real server: settings a
//! production server must not run without, request ids a client cannot forge, text that cannot
//! hide what it says, author names that never publish the provider's user id, and signing keys
//! that stop working once the provider withdraws them.

use serde_json::{Value, json};

use crate::helpers::process::{free_port, serve_fails_to_start};
use crate::helpers::{Api, DEMO_SKU, TestApp, error_codes};
use crate::support::dynamodb_local;
use crate::support::jwks::{JwksServer, TestKey, claims};

const PAGE: &str = r#"query($sku: String!) { comments(sku: $sku, first: 2) { edges { cursor } } }"#;

#[tokio::test]
async fn a_dynamodb_server_will_not_start_without_a_cursor_secret() {
    let endpoint = dynamodb_local::endpoint().await;
    let stderr = serve_fails_to_start(&[
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--auth",
        "off",
    ])
    .await;
    assert!(
        stderr
            .contains("--cursor-secret / DYNAPAGE_CURSOR_SECRET is required with --store dynamodb"),
        "{stderr}"
    );
    // The embedded demo still starts without one (with a warning), and pages.
    let app = TestApp::embedded(5).await;
    let data = app.data(PAGE, json!({ "sku": DEMO_SKU })).await;
    assert_eq!(data["comments"]["edges"].as_array().map(Vec::len), Some(2));
    app.stop().await.expect("clean stop");
}

/// The `x-request-id` a request sent with `id` is answered with.
async fn answered_request_id(app: &TestApp, id: &str) -> String {
    let response = app
        .graphql_request(None, PAGE, json!({ "sku": DEMO_SKU }))
        .header("x-request-id", id)
        .send()
        .await
        .expect("request sent");
    assert!(response.status().is_success());
    let id = response
        .headers()
        .get("x-request-id")
        .expect("every response names its request")
        .to_str()
        .expect("ASCII")
        .to_owned();
    let body: Value = response.json().await.expect("JSON");
    assert!(body.get("errors").is_none(), "{body:#}");
    id
}

#[tokio::test]
async fn a_clients_request_id_is_replaced_unless_a_trusted_proxy_sent_it() {
    let forged = "01JFORGEDBYACLIENT00000000";
    let direct = TestApp::embedded(5).await;
    let answered = answered_request_id(&direct, forged).await;
    assert_ne!(answered, forged, "a client cannot pick its request id");
    assert_eq!(answered.len(), 26, "a fresh ULID: {answered}");
    let injected = answered_request_id(&direct, "a\tb").await;
    assert_eq!(injected.len(), 26, "{injected}");
    direct.stop().await.expect("clean stop");

    // Behind a trusted proxy (the test's 127.0.0.1), the proxy's id is kept, if it is one.
    let proxied = TestApp::spawn(&["--demo-comments", "5", "--trusted-proxies", "127.0.0.1"]).await;
    assert_eq!(
        answered_request_id(&proxied, "trace-4bf92f35").await,
        "trace-4bf92f35"
    );
    let spaced = answered_request_id(&proxied, "two words").await;
    assert_ne!(spaced, "two words");
    proxied.stop().await.expect("clean stop");
}

const ADD: &str = r#"mutation($sku: String!, $author: String, $body: String!) {
  addComment(input: { sku: $sku, author: $author, body: $body, rating: 4 }) { comment { id author body } }
}"#;
const AUTHORS: &str = r#"query($sku: String!) {
  comments(sku: $sku, first: 50) { totalCount edges { node { author body } } }
}"#;

#[tokio::test]
async fn a_token_without_a_usable_name_cannot_add_and_the_sub_is_never_shown() {
    let key = TestKey::ec("ec-names");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let sku = "NAMES";
    let add = |body: &str| json!({ "sku": sku, "body": body });

    // Auth0's and Cognito's access tokens carry no name; others may carry a blank one.
    for (case, extra) in [
        ("no name claim", json!({})),
        ("an empty name", json!({ "name": "" })),
        ("a blank name", json!({ "name": "  \t " })),
        ("an invisible name", json!({ "name": "\u{200B}\u{3164}" })),
        ("a name that is not a string", json!({ "name": 7 })),
    ] {
        let token = key.sign(&claims("auth0|64f1c0ffee", extra));
        let body = app.graphql_as(&token, ADD, add("hello")).await;
        assert_eq!(error_codes(&body), ["BAD_USER_INPUT"], "{case}: {body:#}");
        let message = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("`name` claim"), "{case}: {message}");
        assert!(!message.contains("auth0|"), "{case}: {message}");
        assert_eq!(body["data"], Value::Null, "{case}: {body:#}");
    }
    let listed = app.graphql(AUTHORS, json!({ "sku": sku })).await;
    assert_eq!(listed["data"]["comments"]["totalCount"], 0, "{listed:#}");

    // A named token writes under its name, cleaned like any text; the sub appears nowhere.
    let named = key.sign(&claims(
        "auth0|64f1c0ffee",
        json!({ "name": "\u{202E}Zoë\u{202C} " }),
    ));
    let added = app.graphql_as(&named, ADD, add("hello")).await;
    assert_eq!(
        added["data"]["addComment"]["comment"]["author"], "Zoë",
        "{added:#}"
    );
    let listed = app.graphql(AUTHORS, json!({ "sku": sku })).await;
    assert!(!listed.to_string().contains("auth0|"), "{listed:#}");
    assert_eq!(listed["data"]["comments"]["totalCount"], 1, "{listed:#}");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn bodies_lose_bidi_overrides_and_control_characters_and_blank_ones_are_refused() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--auth", "off"]).await;
    let sku = "TEXT";
    let add = |author: &str, body: &str| json!({ "sku": sku, "author": author, "body": body });
    for (case, author, body) in [
        ("spaces", "Ann", " \n\t "),
        ("zero-width characters", "Ann", "\u{200B}\u{200D}\u{FEFF}"),
        ("only bidi overrides", "Ann", "\u{202E}\u{2066}\u{2069}"),
        ("only controls", "Ann", "\u{0}\u{7}\u{1B}"),
        ("a filler as the author", "\u{3164}", "fine"),
    ] {
        let answer = app.graphql(ADD, add(author, body)).await;
        assert_eq!(
            error_codes(&answer),
            ["BAD_USER_INPUT"],
            "{case}: {answer:#}"
        );
    }
    let answer = app
        .graphql(
            ADD,
            add(
                "\u{202E}nimda\u{202C}",
                "Great\u{1B}[2J shirt\r\nfits\u{2067} well\u{0}",
            ),
        )
        .await;
    let comment = &answer["data"]["addComment"]["comment"];
    assert_eq!(comment["author"], "nimda", "{answer:#}");
    assert_eq!(comment["body"], "Great[2J shirt\nfits well", "{answer:#}");
    // Edits are cleaned and checked the same way.
    let id = comment["id"].as_str().expect("an id");
    let edit = r#"mutation($id: ID!, $body: String!) {
      updateComment(input: { id: $id, body: $body }) { comment { body } }
    }"#;
    let blank = app
        .graphql(edit, json!({ "id": id, "body": "\u{2060}" }))
        .await;
    assert_eq!(error_codes(&blank), ["BAD_USER_INPUT"], "{blank:#}");
    let edited = app
        .graphql(edit, json!({ "id": id, "body": "ok\u{202D}!" }))
        .await;
    assert_eq!(
        edited["data"]["updateComment"]["comment"]["body"], "ok!",
        "{edited:#}"
    );
    // A normal client still pages through what was written.
    let listed = app.graphql(AUTHORS, json!({ "sku": sku })).await;
    assert_eq!(listed["data"]["comments"]["totalCount"], 1, "{listed:#}");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_key_the_provider_withdrew_stops_working_at_the_next_fetch_even_for_tokens_seen_before() {
    let (kept, withdrawn, unknown) = (
        TestKey::ec("2026-kept"),
        TestKey::rsa("2026-leaked"),
        TestKey::ec("never-published"),
    );
    let jwks = JwksServer::start(&[&kept, &withdrawn]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let status = |token: String| {
        let app = &app;
        async move {
            let answer = app
                .graphql_reply(Some(&token), AUTHORS, json!({ "sku": "KEYS" }))
                .await;
            answer.status
        }
    };
    let leaked = withdrawn.sign(&claims("mallory", json!({ "name": "M" })));
    let good = kept.sign(&claims("alice", json!({ "name": "Alice" })));
    assert_eq!(
        status(leaked.clone()).await,
        200,
        "verified, and remembered"
    );
    assert_eq!(status(good.clone()).await, 200);

    // The provider withdraws the leaked key; the next fetch (here, for an unknown kid) sees it.
    jwks.publish(&[&kept]);
    let before = jwks.fetches();
    assert_eq!(status(unknown.sign(&claims("x", json!({})))).await, 401);
    assert_eq!(jwks.fetches(), before + 1, "one fetch");
    assert_eq!(
        status(leaked).await,
        401,
        "the remembered token no longer passes"
    );
    assert_eq!(status(good).await, 200, "a kept key still works");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_jwks_over_plain_http_is_refused_unless_it_is_on_this_machine() {
    let stderr = serve_fails_to_start(&[
        "--auth",
        "jwt",
        "--auth-jwks-url",
        "http://id.shop.example/.well-known/jwks.json",
        "--auth-issuer",
        "https://id.shop.example/",
        "--auth-audience",
        "shop",
    ])
    .await;
    assert!(
        stderr.contains("--auth-jwks-url / DYNAPAGE_AUTH_JWKS_URL"),
        "{stderr}"
    );
    assert!(stderr.contains("https://"), "{stderr}");
    // The test provider serves on 127.0.0.1 over http://: accepted (a sidecar, a test).
    let key = TestKey::ec("ec-loopback");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let token = key.sign(&claims("alice", json!({ "name": "Alice" })));
    let added = app
        .graphql_as(&token, ADD, json!({ "sku": "LOOP", "body": "hi" }))
        .await;
    assert_eq!(
        added["data"]["addComment"]["comment"]["author"], "Alice",
        "{added:#}"
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn with_metrics_addr_the_metrics_leave_the_public_listener_for_their_own() {
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let app = TestApp::spawn(&["--demo-comments", "5", "--metrics-addr", &metrics_addr]).await;
    app.data(PAGE, json!({ "sku": DEMO_SKU })).await;
    let public = app
        .client
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .expect("answered");
    assert_eq!(public.status(), 404, "not on the public listener");
    let metrics = Api::at(&format!("http://{metrics_addr}")).metrics().await;
    let queries = [("kind", "query"), ("outcome", "ok")];
    let counted = metrics.value("dynapage_graphql_requests_total", &queries);
    assert!(counted >= 1.0, "the page was counted: {}", metrics.text);
    app.stop().await.expect("clean stop");
    // Stopped with the server.
    let gone = reqwest::get(format!("http://{metrics_addr}/metrics")).await;
    assert!(gone.is_err(), "{gone:?}");
}
