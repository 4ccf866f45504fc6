//! The rest of the public surfaces, with the response cache on and a CDN purge recorder: a
//! decision is a change of its product, so a cached page is never served with a hidden comment
//! (nor without a comment published again), the product's tag is purged, and `/demo` and its
//! JSON-LD follow; the page-number fields, `containing:`, every order and `ratingSummaries`
//! show published comments only.

use std::time::Duration;

use serde_json::{Value, json};

use super::decisions::{People, moderate};
use crate::caching::purges::{purge_recorder, purges_of};
use crate::helpers::{TestApp, error_codes};
use crate::support::jwks::{JwksServer, TestKey};

const SKU: &str = "SURFACED";
const LISTS: &str = r#"query($sku: String!) {
  product(sku: $sku) {
    comments(first: 2, numbering: FROM_END) {
      totalCount startOffset edges { node { id } }
      pageCursors(numbering: FROM_END) { pageCount last { page } }
    }
    oldest: comments(first: 10, orderBy: OLDEST) { edges { node { id } } }
    highest: comments(first: 10, orderBy: HIGHEST_RATED) { edges { node { id } } }
    lowest: comments(first: 10, orderBy: LOWEST_RATED) { edges { node { id } } }
  }
  ratingSummaries(skus: [$sku]) { summary { total } }
}"#;
const CONTAINING: &str = r#"query($sku: String!, $id: ID!) {
  comments(sku: $sku, first: 2, containing: $id) { totalCount }
}"#;

/// Every comment id the lists show, and what they count.
fn shown(data: &Value) -> (Vec<String>, Value) {
    let product = &data["product"];
    let mut ids = Vec::new();
    for list in ["comments", "oldest", "highest", "lowest"] {
        for edge in product[list]["edges"].as_array().expect("edges") {
            ids.push(edge["node"]["id"].as_str().expect("an id").to_owned());
        }
    }
    let counts = json!([
        product["comments"]["totalCount"],
        product["comments"]["pageCursors"]["pageCount"],
        data["ratingSummaries"][0]["summary"]["total"],
    ]);
    (ids, counts)
}

/// An anonymous GET of `/demo` for the product: its HTML.
async fn demo(app: &TestApp) -> String {
    let response = app
        .client
        .get(format!("{}/demo?sku={SKU}", app.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 200);
    response.text().await.expect("a page")
}

#[tokio::test]
async fn a_decision_reaches_the_cache_the_cdn_the_storefront_and_every_list() {
    let key = TestKey::rsa("surfaces-1");
    let jwks = JwksServer::start(&[&key]).await;
    let (url, purges) = purge_recorder().await;
    let app = TestApp::under_jwt(
        &jwks,
        0,
        &[
            "--response-cache-bytes",
            "8000000",
            "--purge-url",
            &url,
            "--purge-format",
            "varnish",
        ],
    )
    .await;
    let people = People::signed_by(&key);
    let mut ids = Vec::new();
    for (body, rating) in [("first of three", 2), ("the rude one", 5), ("third", 4)] {
        ids.push(
            app.add_comment(Some(&people.alice), SKU, body, rating)
                .await,
        );
    }
    let hidden = ids[1].clone();
    let vars = json!({ "sku": SKU });
    let before = app.data(LISTS, vars.clone()).await;
    // Asked again: from the cache now, the next answers must still follow the decision.
    assert_eq!(app.data(LISTS, vars.clone()).await, before);
    let (seen, counts) = shown(&before);
    assert!(seen.contains(&hidden));
    assert_eq!(counts, json!([3, 2, 3]));
    assert!(demo(&app).await.contains("the rude one"));
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let tag = format!("sku-{SKU}");
    let purged = purges_of(&purges, &tag).len();

    let decided = moderate(&app, Some(&people.carol), &hidden, "HIDE", Some("ABUSIVE")).await;
    assert!(decided.get("errors").is_none(), "{decided:#}");
    let after = app.data(LISTS, vars.clone()).await;
    let (seen, counts) = shown(&after);
    assert!(!seen.contains(&hidden), "not in any list: {after:#}");
    assert_eq!(counts, json!([2, 1, 2]));
    assert_eq!(after["product"]["comments"]["startOffset"], 0);
    let containing = app
        .graphql(CONTAINING, json!({ "sku": SKU, "id": hidden }))
        .await;
    assert_eq!(error_codes(&containing), ["NOT_FOUND"], "{containing:#}");
    let page = demo(&app).await;
    assert!(!page.contains("the rude one") && page.contains("third"));
    assert!(
        page.contains("\"reviewCount\":2"),
        "the JSON-LD counts two reviews"
    );
    crate::helpers::eventually("the product's tag is purged", || async {
        (purges_of(&purges, &tag).len() > purged).then_some(())
    })
    .await;

    let published = moderate(&app, Some(&people.carol), &hidden, "PUBLISH", None).await;
    assert!(published.get("errors").is_none(), "{published:#}");
    let again = app.data(LISTS, vars).await;
    let (seen, counts) = shown(&again);
    assert!(seen.contains(&hidden));
    assert_eq!(counts, json!([3, 2, 3]));
    let page = demo(&app).await;
    assert!(page.contains("the rude one") && page.contains("\"reviewCount\":3"));
    app.stop().await.expect("clean stop");
}
