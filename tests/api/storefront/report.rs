//! Reports from the storefront demo, in headless Chromium, against the real server under
//! `--auth jwt`: a signed-in reader reports a comment from `/demo` (its Report button, a reason,
//! Send), the moderator's page shows it in the `REPORTED` queue with its count, and keeping it
//! there dismisses the report; reporting one's own comment shows the API's refusal.

use serde_json::{Value, json};

use super::demo::drive;
use super::moderate::{moderate, signed_in};
use crate::helpers::{TestApp, eventually};
use crate::support::jwks::{JwksServer, TestKey, claims};

const SKU: &str = "REPORT_DEMO";

/// Reports `comment` from the storefront page as the reader of `token`, with `reason`; the
/// page's snapshot afterwards.
async fn report_from_the_page(app: &TestApp, token: &str, comment: &str, reason: &str) -> Value {
    let config = json!({
        "url": format!("/demo?sku={SKU}"),
        "token": token,
        "comment": comment,
        "reason": reason,
    });
    drive(app, "report-demo.mjs", config).await.remove(0)
}

#[tokio::test]
async fn a_reader_reports_from_the_storefront_and_the_moderator_page_shows_and_closes_it() {
    let key = TestKey::rsa("report-page");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let person = |sub: &str, extra: Value| key.sign(&claims(sub, extra));
    let alice = person("auth0|alice", json!({ "name": "Alice" }));
    let bob = person("auth0|bob", json!({ "name": "Bob" }));
    let carol = person(
        "auth0|carol",
        json!({ "name": "Carol", "roles": ["moderator"] }),
    );
    let first = app
        .add_comment(Some(&alice), SKU, "buy at example.com", 5)
        .await;
    let second = app.add_comment(Some(&alice), SKU, "fine shirt", 4).await;

    let reported = report_from_the_page(&app, &bob, &first, "SPAM").await;
    assert_eq!(
        reported["buttons"], 2,
        "a Report button on each comment: {reported:#}"
    );
    assert_eq!(reported["reported"], "OPEN", "{reported:#}");
    assert_eq!(reported["error"], Value::Null);
    let own = report_from_the_page(&app, &alice, &second, "FAKE").await;
    assert_eq!(own["reported"], Value::Null, "{own:#}");
    assert!(
        own["error"].as_str().is_some_and(|e| e.contains("own")),
        "the API's refusal is shown: {own:#}"
    );

    // The moderator's page: the REPORTED queue with its count; keeping the comment dismisses.
    let url = "/demo/moderate?queue=REPORTED";
    let mut steps = signed_in(url, &carol);
    steps.push(json!({
        "click": format!("li[data-comment-id=\"{first}\"] button[data-decision=\"PUBLISH\"]")
    }));
    let shots = eventually("the REPORTED queue holds the report", || async {
        let shots = moderate(&app, Value::Array(steps.clone())).await;
        (shots[2]["queues"]["REPORTED"] == "1").then_some(shots)
    })
    .await;
    let desk = &shots[2];
    assert_eq!(desk["ids"], json!([first]), "{desk:#}");
    assert_eq!(desk["reports"], json!([1]), "{desk:#}");
    assert_eq!(
        desk["reasons"],
        json!([["SPAM"]]),
        "the reader's reason: {desk:#}"
    );
    assert_eq!(desk["statuses"], json!(["PUBLISHED"]));
    let done = &shots[3];
    assert_eq!(done["queues"]["REPORTED"], "0", "{done:#}");
    assert_eq!(done["log"][0], "DISMISS_REPORTS", "newest first: {done:#}");
    assert_eq!(done["error"], Value::Null);
    app.stop().await.expect("clean stop");
}
