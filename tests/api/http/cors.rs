//! Browser clients on other origins: CORS for the configured origins only, and caching headers
//! that never let a mutation (or an error) be cached.

use clap::Parser;
use dynapage::cli::{Cli, Command};
use serde_json::{Value, json};

use crate::helpers::TestApp;

const SHOP: &str = "https://shop.example.com";

async fn preflight(app: &TestApp, origin: &str) -> reqwest::Response {
    app.client
        .request(reqwest::Method::OPTIONS, format!("{}/graphql", app.address))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type, apollographql-client-name",
        )
        .send()
        .await
        .expect("sent")
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

#[tokio::test]
async fn a_preflight_from_an_allowed_origin_gets_cors_headers_and_others_do_not() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--cors-origin",
        "http://localhost:3000",
        "--cors-origin",
        &format!("{SHOP},https://admin.example.com"),
    ])
    .await;

    let allowed = preflight(&app, SHOP).await;
    assert!(allowed.status().is_success(), "{}", allowed.status());
    assert_eq!(
        header(&allowed, "access-control-allow-origin").as_deref(),
        Some(SHOP)
    );
    let methods = header(&allowed, "access-control-allow-methods").unwrap_or_default();
    assert!(
        methods.contains("POST") && methods.contains("GET"),
        "{methods}"
    );
    let headers = header(&allowed, "access-control-allow-headers").unwrap_or_default();
    assert!(headers.contains("content-type"), "{headers}");
    assert_eq!(header(&allowed, "access-control-allow-credentials"), None);

    let other = preflight(&app, "https://evil.example.net").await;
    assert_eq!(header(&other, "access-control-allow-origin"), None);

    let response = app
        .client
        .post(format!("{}/graphql", app.address))
        .header("origin", "http://localhost:3000")
        .json(&json!({ "query": "{ product(sku: \"A\") { sku } }" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some("http://localhost:3000")
    );
    let exposed = header(&response, "access-control-expose-headers").unwrap_or_default();
    assert!(exposed.contains("x-request-id"), "{exposed}");
}

#[tokio::test]
async fn without_configured_origins_no_cross_origin_call_is_allowed() {
    let app = TestApp::embedded(0).await;
    let response = preflight(&app, SHOP).await;
    assert_eq!(header(&response, "access-control-allow-origin"), None);
}

#[test]
fn a_malformed_origin_is_refused_naming_the_flag() {
    let cli = Cli::try_parse_from(["dynapage", "serve", "--cors-origin", "shop.example.com/"])
        .expect("parses");
    let Some(Command::Serve(args)) = cli.command else {
        panic!("serve")
    };
    let error = args
        .server
        .http_options()
        .expect_err("not an origin")
        .to_string();
    assert!(
        error.contains("--cors-origin / DYNAPAGE_CORS_ORIGIN"),
        "{error}"
    );
}

#[tokio::test]
async fn queries_over_get_are_cached_briefly_but_errors_and_posts_never() {
    let app = TestApp::embedded(5).await;
    let get = |query: &str| {
        app.client
            .get(format!("{}/graphql", app.address))
            .query(&[("query", query)])
            .send()
    };
    let cached = get("{ product(sku: \"VINYL_RAM\") { comments { totalCount } } }")
        .await
        .expect("sent");
    assert_eq!(
        header(&cached, "cache-control").as_deref(),
        Some(dynapage::http::GET_QUERY_CACHE_CONTROL)
    );

    let failed = get("{ comments(sku: \"A\", first: -1) { totalCount } }")
        .await
        .expect("sent");
    assert_eq!(
        header(&failed, "cache-control").as_deref(),
        Some("no-store")
    );
    let body: Value = failed.json().await.expect("json");
    assert!(body["errors"].is_array());

    let refused = get("mutation { deleteComment(input: { id: \"x\" }) { deletedCommentId } }")
        .await
        .expect("sent");
    assert_eq!(refused.status(), 405);
    assert_eq!(
        header(&refused, "cache-control").as_deref(),
        Some("no-store")
    );

    let posted = app
        .client
        .post(format!("{}/graphql", app.address))
        .json(&json!({ "query": "mutation { addComment(input: { sku: \"A\", author: \"a\", body: \"b\", rating: 1 }) { comment { id } } }" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        header(&posted, "cache-control").as_deref(),
        Some("no-store")
    );
}
