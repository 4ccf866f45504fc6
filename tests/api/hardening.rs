//! The lesser hardening items of issue 22, each performed against the real server: settings a
//! production server must not run without, request ids a client cannot forge, text that cannot
//! hide what it says, author names that never publish the provider's user id, and signing keys
//! that stop working once the provider withdraws them.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp, serve_fails_to_start};
use crate::support::dynamodb_local;

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
        .client
        .post(format!("{}/graphql", app.address))
        .header("x-request-id", id)
        .json(&json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } }))
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
