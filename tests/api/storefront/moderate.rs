//! The moderator's page (`/demo/moderate`) in headless Chromium, against the real server under
//! `--auth jwt --moderation pre`: a moderator signs in with a token, sees the pending queue
//! with its counts, publishes a comment, and the storefront page shows it; then hides a
//! published one, and it leaves the storefront page, its count and its JSON-LD.

use serde_json::{Value, json};

use super::demo::{assert_shows_the_api_list, browse_with, drive};
use super::demo_pages::{fetch, json_ld};
use crate::helpers::{TestApp, eventually};
use crate::support::jwks::{JwksServer, TestKey, claims};

const SKU: &str = "MOD_DEMO";

/// Runs `steps` on the moderator's page in a fresh headless Chromium (see `moderate-demo.mjs`,
/// and `drive` for what fails the test). Returns a snapshot after each step.
pub(super) async fn moderate(app: &TestApp, steps: Value) -> Vec<Value> {
    drive(app, "moderate-demo.mjs", json!({ "steps": steps })).await
}

/// Opening `url` on the moderator's page and signing in with `token`.
pub(super) fn signed_in(url: &str, token: &str) -> Vec<Value> {
    vec![
        json!({ "goto": url }),
        json!({ "fill": "#token", "value": token }),
        json!({ "click": "#sign-in button[type=submit]" }),
    ]
}

/// The storefront page of the product as a shopper's browser shows it: it must equal the API's
/// list (when it has comments); returns the ids shown.
async fn storefront(app: &TestApp) -> Vec<String> {
    let url = format!("/demo?sku={SKU}");
    let snapshots = browse_with(app, json!([{ "goto": url }]), true).await;
    let ids: Vec<String> = snapshots[0]["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|id| id.as_str().expect("an id").to_owned())
        .collect();
    if !ids.is_empty() {
        assert_shows_the_api_list(app, &snapshots[0]).await;
    }
    ids
}

#[tokio::test]
async fn a_moderator_publishes_and_hides_from_the_moderation_page_and_the_storefront_follows() {
    let key = TestKey::rsa("moderate-page");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &["--moderation", "pre"]).await;
    let alice = key.sign(&claims("auth0|alice", json!({ "name": "Alice" })));
    let carol = key.sign(&claims(
        "auth0|carol",
        json!({ "name": "Carol", "roles": ["moderator"] }),
    ));
    let mut written = Vec::new();
    for (body, rating) in [("first", 5), ("second", 4), ("third", 2)] {
        written.push(app.add_comment(Some(&alice), SKU, body, rating).await);
    }
    assert!(storefront(&app).await.is_empty(), "nothing published yet");

    // Sign in, see the pending queue (oldest first) with its count; publish two.
    let mut steps = signed_in("/demo/moderate", &carol);
    for id in &written[..2] {
        steps.push(json!({
            "click": format!("li[data-comment-id=\"{id}\"] button[data-decision=\"PUBLISH\"]")
        }));
    }
    let shots = moderate(&app, Value::Array(steps)).await;
    assert_eq!(shots[0]["state"], "signed-out", "{:#}", shots[0]);
    let desk = &shots[2];
    assert_eq!(desk["state"], "ready", "{desk:#}");
    assert_eq!(desk["ids"], json!(written), "oldest first: {desk:#}");
    assert_eq!(desk["queues"]["PENDING"], "3", "{desk:#}");
    assert_eq!(desk["current"], json!(["PENDING"]));
    let done = &shots[4];
    assert_eq!(done["ids"], json!([written[2]]), "{done:#}");
    assert_eq!(done["queues"]["PENDING"], "1", "{done:#}");
    assert_eq!(done["log"], json!(["PUBLISH", "PUBLISH"]), "{done:#}");
    assert_eq!(done["error"], Value::Null);

    // The storefront shows them, newest first.
    let published = vec![written[1].clone(), written[0].clone()];
    eventually("the storefront shows both", || async {
        (storefront(&app).await == published).then_some(())
    })
    .await;

    // Hide one from the product's published comments, with a reason: it leaves the storefront,
    // its count and its JSON-LD.
    let url = format!("/demo/moderate?queue=PUBLISHED&sku={SKU}");
    let mut steps = signed_in(&url, &carol);
    let hidden = &written[0];
    let item = format!("li[data-comment-id=\"{hidden}\"]");
    steps.extend([
        json!({ "select": format!("{item} select[name=reason]"), "value": "ABUSIVE" }),
        json!({ "fill": format!("{item} input[name=note]"), "value": "rule 3" }),
        json!({ "click": format!("{item} button[data-decision=\"HIDE\"]") }),
    ]);
    let shots = moderate(&app, Value::Array(steps)).await;
    let before = &shots[2];
    assert_eq!(before["ids"], json!(published), "{before:#}");
    assert_eq!(before["queues"]["PUBLISHED"], "2", "{before:#}");
    let after = shots.last().expect("a snapshot");
    assert_eq!(after["ids"], json!([written[1]]), "{after:#}");
    assert_eq!(after["queues"]["HIDDEN"], "1", "{after:#}");
    assert_eq!(after["log"][0], "HIDE", "newest first: {after:#}");
    assert_eq!(storefront(&app).await, vec![written[1].clone()]);
    let (status, html) = fetch(&app, &format!("/demo?sku={SKU}")).await;
    assert_eq!(status, 200);
    let data = json_ld(&html).expect("JSON-LD");
    assert_eq!(data["aggregateRating"]["reviewCount"], 1, "{data:#}");
    let reviews = data["review"].as_array().expect("reviews");
    assert_eq!(reviews.len(), 1, "{data:#}");
    assert_eq!(reviews[0]["reviewBody"], "second");
    assert!(
        !html.contains(">first<"),
        "the hidden comment is not on the page"
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn the_moderation_page_is_never_cached_and_keeps_to_its_origin() {
    let app = TestApp::embedded(0).await;
    let response = app
        .client
        .get(format!("{}/demo/moderate", app.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let csp = headers["content-security-policy"].to_str().expect("ASCII");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = response.text().await.expect("a page");
    assert!(html.contains("noindex"), "kept out of search engines");
    let script = app
        .client
        .get(format!("{}/demo/moderate.js", app.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(script.status(), 200);
    assert!(
        script.headers()["content-type"]
            .to_str()
            .expect("ASCII")
            .starts_with("text/javascript")
    );
    app.stop().await.expect("clean stop");
}
