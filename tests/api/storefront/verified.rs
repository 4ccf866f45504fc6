//! Verified purchases on the storefront, in headless Chromium against the real server under
//! `--auth jwt` with the shop's purchase proofs: every comment of the verified view carries the
//! "Verified purchase" badge, the filter shows the product's count, ticking it opens the verified
//! list (its pages the API's `verified: true` pages), and the shop's statement is on the page.

use serde_json::{Value, json};

use super::demo::{browse_with, ids};
use crate::helpers::{TestApp, eventually};
use crate::moderation::purchases::{STATEMENT, Shop};
use crate::support::jwks::{JwksServer, TestKey, claims};

const SKU: &str = "VERIFIED_DEMO";

const PAGE: &str = r#"query($verified: Boolean, $offset: Int) {
  product(sku: "VERIFIED_DEMO") {
    comments(verified: $verified, first: 4, offset: $offset) { totalCount nodes { id } }
  }
}"#;

async fn api_page(app: &TestApp, verified: bool, offset: i32) -> (Vec<String>, Value) {
    let answer = app
        .graphql(PAGE, json!({ "verified": verified, "offset": offset }))
        .await;
    let comments = &answer["data"]["product"]["comments"];
    (ids(&comments["nodes"]), comments["totalCount"].clone())
}

#[tokio::test]
async fn the_demo_shows_the_badge_the_filter_and_the_statement() {
    let key = TestKey::rsa("verified-page");
    let jwks = JwksServer::start(&[&key]).await;
    let shop = Shop::start().await;
    let flags = shop.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let alice = key.sign(&claims("auth0|alice", json!({ "name": "Alice" })));
    let add = r#"mutation($proof: String, $rating: Int!) {
      addComment(input: { sku: "VERIFIED_DEMO", body: "worn every day", rating: $rating, purchaseProof: $proof }) { comment { id } }
    }"#;
    for i in 0..11 {
        let proof =
            (i % 4 != 0).then(|| shop.proof("auth0|alice", SKU, &format!("o-{i}"), json!({})));
        let answer = app
            .graphql_as(&alice, add, json!({ "proof": proof, "rating": 1 + i % 5 }))
            .await;
        assert!(answer.get("errors").is_none(), "{answer:#}");
    }
    eventually("11 comments, 8 verified", || async {
        let (_, all) = api_page(&app, false, 0).await;
        let (_, verified) = api_page(&app, true, 0).await;
        (all == 11 && verified == 8).then_some(())
    })
    .await;
    let steps = json!([
        { "goto": format!("/demo?sku={SKU}&size=4") },
        { "click": "#verified" },
        { "click": "#pager a[data-page-link=\"next\"]" },
        { "click": "#verified-clear a" },
    ]);
    let shots = browse_with(&app, steps, true).await;
    let (all, _) = api_page(&app, false, 0).await;
    assert_eq!(shots[0]["ids"], json!(all), "{:#}", shots[0]);
    assert_eq!(shots[0]["verifiedChecked"], false);
    assert_eq!(shots[0]["verifiedCount"], "8", "the filter's count");
    assert_eq!(
        shots[0]["statement"],
        json!(format!("How reviews are verified: {STATEMENT}"))
    );
    let (first, _) = api_page(&app, true, 0).await;
    assert_eq!(
        shots[1]["url"],
        json!(format!("/demo?sku={SKU}&verified=1&size=4"))
    );
    assert_eq!(shots[1]["ids"], json!(first), "{:#}", shots[1]);
    assert_eq!(shots[1]["verifiedChecked"], true);
    assert_eq!(
        shots[1]["verifiedBadges"], 4,
        "every verified comment has the badge"
    );
    assert_eq!(shots[1]["pageOf"], "Page 1 of 2");
    let (second, _) = api_page(&app, true, 4).await;
    assert_eq!(shots[2]["ids"], json!(second), "{:#}", shots[2]);
    assert_eq!(shots[2]["verifiedBadges"], 4);
    assert_eq!(shots[3]["verifiedChecked"], false, "back to every review");
    assert_eq!(shots[3]["ids"], json!(all));
    app.stop().await.expect("clean stop");
}
