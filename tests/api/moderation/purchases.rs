//! Verified purchases through the API: `addComment(input: { purchaseProof })` with a proof the
//! shop signed (its own JWKS, served by the test) verifies a comment, and every bad proof is
//! refused with `BAD_USER_INPUT` naming the check, writing nothing; `verified: true` pages the
//! verified comments exactly as an oracle (the unfiltered list, filtered) says, in every order,
//! forward, backward, by offset and by page; the rating summary counts them; `commentEvents`
//! hears only them; `/demo` shows the badge, the filter and the shop's statement. On the
//! embedded store and on DynamoDB Local + Redis.

use serde_json::{Value, json};

use super::decisions::{People, jwt_people, serve_with_tokens};
use crate::helpers::websocket::Client;
use crate::helpers::{TestApp, error_codes, eventually};
use crate::support::backends::Backends;
use crate::support::jwks::{JwksServer, TestKey, at};

const SHOP: &str = "https://shop.test/";
pub(crate) const STATEMENT: &str =
    "Reviews marked “Verified purchase” come from an order link we e-mail after delivery.";

const ADD: &str = r#"mutation($sku: String!, $rating: Int!, $proof: String) {
  addComment(input: { sku: $sku, body: "a review", rating: $rating, purchaseProof: $proof }) {
    comment { id verifiedPurchase }
  }
}"#;

const LIST: &str = r#"query($sku: String!, $verified: Boolean, $ratings: [Int!], $orderBy: CommentOrder,
  $first: Int, $after: String, $last: Int, $before: String, $offset: Int, $containing: ID) {
  product(sku: $sku) {
    comments(verified: $verified, ratings: $ratings, orderBy: $orderBy, first: $first,
      after: $after, last: $last, before: $before, offset: $offset, containing: $containing) {
      totalCount
      nodes { id verifiedPurchase rating }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      pageCursors { pageCount }
    }
  }
}"#;

const SUMMARY: &str = r#"query($sku: String!) {
  verificationStatement
  product(sku: $sku) { ratingSummary { total verifiedCount counts { rating count verifiedCount } } }
  ratingSummaries(skus: [$sku]) { summary { verifiedCount } }
}"#;

/// The shop's signing key, its JWKS, and the server flags that trust it.
pub(crate) struct Shop {
    key: TestKey,
    jwks: JwksServer,
}

impl Shop {
    pub(crate) async fn start() -> Self {
        let key = TestKey::ed("shop-1");
        let jwks = JwksServer::start(&[&key]).await;
        Self { key, jwks }
    }

    pub(crate) fn flags(&self) -> Vec<String> {
        [
            "--purchase-jwks-url",
            &self.jwks.url,
            "--purchase-issuer",
            SHOP,
            "--verification-statement",
            STATEMENT,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// A proof that `sub` bought `sku` in `order`, with `extra` claims over the defaults.
    pub(crate) fn proof(&self, sub: &str, sku: &str, order: &str, extra: Value) -> String {
        let mut claims = json!({
            "iss": SHOP, "sub": sub, "sku": sku, "order": order, "purpose": "review",
            "iat": at(0), "exp": at(3_600),
        });
        if let (Some(map), Value::Object(extra)) = (claims.as_object_mut(), extra) {
            map.extend(extra);
        }
        self.key.sign(&claims)
    }
}

fn ok(answer: &Value) -> &Value {
    assert!(answer.get("errors").is_none(), "{answer:#}");
    &answer["data"]
}

async fn list(app: &TestApp, variables: Value) -> Value {
    ok(&app.graphql(LIST, variables).await)["product"]["comments"].clone()
}

fn ids(page: &Value) -> Vec<String> {
    page["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// The refusals: each `BAD_USER_INPUT` naming what failed, each writing nothing.
async fn bad_proofs_are_refused(app: &TestApp, shop: &Shop, people: &People, sku: &str) {
    let alice = people.alice.as_str();
    let add = |proof: String| async move {
        app.graphql_as(
            alice,
            ADD,
            json!({ "sku": sku, "rating": 5, "proof": proof }),
        )
        .await
    };
    let used = shop.proof("auth0|alice", sku, "order-1", json!({}));
    let first = add(used.clone()).await;
    assert_eq!(
        ok(&first)["addComment"]["comment"]["verifiedPurchase"],
        true
    );
    let foreign = TestKey::ed("shop-1");
    let cases = [
        (used, "already used"),
        (shop.proof("auth0|bob", sku, "order-2", json!({})), "`sub`"),
        (
            shop.proof("auth0|alice", "OTHER", "order-3", json!({})),
            "`sku`",
        ),
        (
            shop.proof("auth0|alice", sku, "order-4", json!({ "exp": at(-600) })),
            "expired",
        ),
        (
            shop.proof("auth0|alice", sku, "order-5", json!({ "purpose": "login" })),
            "`purpose`",
        ),
        (
            shop.proof(
                "auth0|alice",
                sku,
                "order-6",
                json!({ "iss": "https://evil.test/" }),
            ),
            "issuer",
        ),
        (shop.proof("auth0|alice", sku, "", json!({})), "`order`"),
        (
            foreign.sign(
                &json!({ "iss": SHOP, "sub": "auth0|alice", "sku": sku, "order": "o-7",
            "purpose": "review", "exp": at(600) }),
            ),
            "signature",
        ),
        ("not a token".to_owned(), "well-formed"),
    ];
    for (proof, says) in cases {
        let answer = add(proof).await;
        assert_eq!(error_codes(&answer), ["BAD_USER_INPUT"], "{answer:#}");
        let message = answer["errors"][0]["message"].as_str().expect("a message");
        assert!(
            message.contains("purchaseProof") && message.contains(says),
            "{says}: {message}"
        );
        assert_eq!(answer["data"], Value::Null, "{answer:#}");
    }
    let all = eventually("one comment", || async {
        let page = list(app, json!({ "sku": sku, "first": 10 })).await;
        (page["totalCount"] == 1).then_some(page)
    })
    .await;
    assert_eq!(ids(&all).len(), 1, "no refused proof wrote a comment");
}

/// `verified: true` against the oracle (every comment, filtered), in each order, by `first`,
/// `last`, `offset` and `containing`.
async fn the_verified_list_is_exact(app: &TestApp, shop: &Shop, people: &People, sku: &str) {
    let writers = [("auth0|alice", &people.alice), ("auth0|bob", &people.bob)];
    for i in 0..24u32 {
        let (sub, token) = writers[(i % 2) as usize];
        let proof = (i % 3 != 1).then(|| shop.proof(sub, sku, &format!("order-{i}"), json!({})));
        let rating = 1 + (i * 7) % 5;
        let answer = app
            .graphql_as(
                token,
                ADD,
                json!({ "sku": sku, "rating": rating, "proof": proof }),
            )
            .await;
        assert_eq!(
            ok(&answer)["addComment"]["comment"]["verifiedPurchase"],
            proof.is_some()
        );
    }
    let every = eventually("24 comments indexed", || async {
        let page = list(app, json!({ "sku": sku, "first": 100 })).await;
        let verified = list(app, json!({ "sku": sku, "first": 1, "verified": true })).await;
        (page["totalCount"] == 24 && verified["totalCount"] == 16).then_some(page)
    })
    .await;
    let summary = ok(&app.graphql(SUMMARY, json!({ "sku": sku })).await).clone();
    assert_eq!(summary["verificationStatement"], STATEMENT);
    let rating_summary = &summary["product"]["ratingSummary"];
    assert_eq!(
        (
            rating_summary["total"].clone(),
            rating_summary["verifiedCount"].clone()
        ),
        (json!(24), json!(16))
    );
    assert_eq!(
        summary["ratingSummaries"][0]["summary"]["verifiedCount"],
        16
    );
    for count in rating_summary["counts"].as_array().expect("counts") {
        let of = every["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .filter(|n| n["rating"] == count["rating"] && n["verifiedPurchase"] == true);
        assert_eq!(count["verifiedCount"], json!(of.count()), "{count}");
    }
    for order in [
        "NEWEST",
        "OLDEST",
        "HIGHEST_RATED",
        "LOWEST_RATED",
        "MOST_HELPFUL",
    ] {
        for ratings in [Value::Null, json!([2, 4, 5])] {
            let all = list(
                app,
                json!({ "sku": sku, "first": 100, "orderBy": order, "ratings": ratings }),
            )
            .await;
            let oracle: Vec<String> = all["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .filter(|n| n["verifiedPurchase"] == true)
                .map(|n| n["id"].as_str().expect("id").to_owned())
                .collect();
            let base =
                json!({ "sku": sku, "verified": true, "orderBy": order, "ratings": ratings });
            let with = |extra: Value| {
                let mut v = base.clone();
                v.as_object_mut()
                    .expect("object")
                    .extend(extra.as_object().expect("object").clone());
                v
            };
            // Forward, three at a time.
            let (mut walked, mut after) = (Vec::new(), Value::Null);
            loop {
                let page = list(app, with(json!({ "first": 3, "after": after }))).await;
                assert_eq!(page["totalCount"], json!(oracle.len()), "{order} {ratings}");
                walked.extend(ids(&page));
                if page["pageInfo"]["hasNextPage"] != true {
                    break;
                }
                after = page["pageInfo"]["endCursor"].clone();
            }
            assert_eq!(walked, oracle, "forward, {order} {ratings}");
            // Backward from the end, with hasPreviousPage true to the data.
            let last = list(app, with(json!({ "last": 2 }))).await;
            assert_eq!(
                ids(&last),
                oracle[oracle.len().saturating_sub(2)..],
                "{order}"
            );
            assert_eq!(last["pageInfo"]["hasPreviousPage"], json!(oracle.len() > 2));
            let before = list(
                app,
                with(json!({ "last": 2, "before": last["pageInfo"]["startCursor"] })),
            )
            .await;
            let end = oracle.len().saturating_sub(2);
            assert_eq!(ids(&before), oracle[end.saturating_sub(2)..end], "{order}");
            // A page jump and its page count.
            let jump = list(app, with(json!({ "first": 3, "offset": 3 }))).await;
            assert_eq!(
                ids(&jump),
                oracle[3.min(oracle.len())..6.min(oracle.len())],
                "{order}"
            );
            assert_eq!(
                jump["pageCursors"]["pageCount"],
                json!(oracle.len().div_ceil(3))
            );
            // The page holding a verified comment; an unverified one is not in the list.
            if let Some(target) = oracle.get(4) {
                let holding = list(app, with(json!({ "first": 3, "containing": target }))).await;
                assert!(ids(&holding).contains(target), "{order}");
            }
        }
    }
    let unverified = every["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["verifiedPurchase"] == false)
        .expect("an unverified comment")["id"]
        .clone();
    let refused = app
        .graphql(
            LIST,
            json!({ "sku": sku, "verified": true, "first": 3, "containing": unverified }),
        )
        .await;
    assert_eq!(error_codes(&refused), ["NOT_FOUND"], "{refused:#}");
    let cursor = every["pageInfo"]["startCursor"].clone();
    let foreign = app
        .graphql(
            LIST,
            json!({ "sku": sku, "verified": true, "first": 3, "after": cursor }),
        )
        .await;
    assert_eq!(
        error_codes(&foreign),
        ["BAD_CURSOR"],
        "a cursor belongs to its filter"
    );
}

/// `commentEvents(verified: true)` hears a verified comment and not another.
async fn the_verified_subscription_hears_only_verified(
    app: &TestApp,
    shop: &Shop,
    people: &People,
    sku: &str,
) {
    let mut client = Client::ready(app).await;
    let query = r#"subscription($sku: String!) { commentEvents(sku: $sku, verified: true) { kind totalCount edge { node { verifiedPurchase body } } } }"#;
    client.subscribe_to("v", query, json!({ "sku": sku })).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let add = |proof: Option<String>, body: &'static str| {
        let vars = json!({ "sku": sku, "rating": 3, "proof": proof });
        let mutation = ADD.replace("\"a review\"", &format!("\"{body}\""));
        async move { ok(&app.graphql_as(&people.bob, &mutation, vars).await).clone() }
    };
    add(None, "not verified").await;
    add(
        Some(shop.proof("auth0|bob", sku, "live-order", json!({}))),
        "verified",
    )
    .await;
    let event = client.answer_to("v").await;
    assert_eq!(
        event["payload"]["data"]["commentEvents"]["edge"]["node"]["body"], "verified",
        "{event:#}"
    );
    assert_eq!(event["payload"]["data"]["commentEvents"]["kind"], "ADDED");
}

async fn verified_purchases_through_the_api(
    app: &TestApp,
    shop: &Shop,
    people: &People,
    prefix: &str,
) {
    bad_proofs_are_refused(app, shop, people, &format!("{prefix}_BAD")).await;
    the_verified_list_is_exact(app, shop, people, &format!("{prefix}_LIST")).await;
    the_verified_subscription_hears_only_verified(app, shop, people, &format!("{prefix}_LIVE"))
        .await;
    // The storefront: the filter with its count, the badge on each verified comment, the statement.
    let sku = format!("{prefix}_LIST");
    let page = reqwest::get(app.url(&format!("/demo?sku={sku}&verified=1&size=20")))
        .await
        .expect("the page")
        .text()
        .await
        .expect("HTML");
    assert!(page.contains("data-verified=\"1\""), "{page}");
    assert!(
        page.contains("id=\"verified\" name=\"verified\" value=\"1\" checked"),
        "{page}"
    );
    assert!(
        page.contains("Verified purchases only<span class=\"count\">16</span>"),
        "{page}"
    );
    assert_eq!(
        page.matches("data-verified-badge").count(),
        16,
        "every shown comment is verified"
    );
    assert!(
        page.contains("come from an order link we e-mail after delivery"),
        "{page}"
    );
}

#[tokio::test]
async fn verified_purchases_on_the_embedded_store() {
    let (jwks, people) = jwt_people("purchases-1").await;
    let shop = Shop::start().await;
    let flags = shop.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    verified_purchases_through_the_api(&app, &shop, &people, "VE").await;
    // Alice's export says which of her comments are verified, and holds no order hash.
    let (_, _, export) = super::privacy::export(&app, Some(&people.alice)).await;
    let comments = export["comments"].as_array().expect("comments");
    let verified = comments
        .iter()
        .filter(|c| c["verifiedPurchase"] == true)
        .count();
    assert!(verified >= 9 && verified < comments.len(), "{export:#}");
    assert!(
        comments.iter().all(|c| c.get("purchase").is_none()),
        "{export:#}"
    );
    app.stop().await.expect("clean stop");
    // A server that verifies no purchases refuses a proof, and writes nothing.
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let proof = shop.proof("auth0|alice", "VN", "o", json!({}));
    let answer = app
        .graphql_as(
            &people.alice,
            ADD,
            json!({ "sku": "VN", "rating": 5, "proof": proof }),
        )
        .await;
    assert_eq!(error_codes(&answer), ["BAD_USER_INPUT"], "{answer:#}");
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("verifies no purchases")
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn verified_purchases_on_dynamodb_and_redis() {
    let (jwks, people) = jwt_people("purchases-2").await;
    let shop = Shop::start().await;
    let redis_url = crate::support::redis_server::shared_url();
    let backends = Backends::on(&redis_url).await;
    let mut flags = shop.flags();
    flags.extend(
        [
            "--purchase-order-key",
            "an order key of thirty-two bytes or more",
        ]
        .map(str::to_owned),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let app = serve_with_tokens(&backends, &jwks, &flags).await;
    verified_purchases_through_the_api(&app, &shop, &people, "VD").await;
    super::decisions::verify_says(&backends, true).await;
}
