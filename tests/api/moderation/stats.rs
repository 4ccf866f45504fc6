//! `moderationStats`: the transparency report, counts by status and rating for the shop or one
//! product, since a time; moderators only; exact on the embedded store, DynamoDB Local + Redis
//! and the six-node Cluster.

use serde_json::{Value, json};

use super::decisions::{People, jwt_people, moderate, serve_with_tokens};
use crate::helpers::{TestApp, error_codes, eventually};
use crate::support::backends::Backends;

const STATS: &str = r#"query($sku: String, $since: DateTime) {
  moderationStats(sku: $sku, since: $since) { status rating count }
}"#;

/// The report as `{ "STATUS": [ones, …, fives] }`, once it equals `expected` (the index follows
/// the store, on DynamoDB through the stream).
async fn settled(app: &TestApp, token: &str, args: Value, expected: Value) {
    eventually(&format!("{args} reporting {expected}"), || {
        let args = args.clone();
        let expected = expected.clone();
        async move {
            let answer = app.graphql_as(token, STATS, args).await;
            let rows = answer["data"]["moderationStats"].as_array()?.clone();
            assert_eq!(rows.len(), 20, "every status and rating: {answer:#}");
            let mut report = serde_json::Map::new();
            for row in rows {
                let counts = report
                    .entry(row["status"].as_str().expect("a status").to_owned())
                    .or_insert_with(|| json!([]));
                counts
                    .as_array_mut()
                    .expect("counts")
                    .push(row["count"].clone());
            }
            (Value::Object(report) == expected).then_some(())
        }
    })
    .await;
}

fn report(pending: [u64; 5], published: [u64; 5], hidden: [u64; 5], rejected: [u64; 5]) -> Value {
    json!({ "PENDING": pending, "PUBLISHED": published, "HIDDEN": hidden, "REJECTED": rejected })
}

/// Two products under `--moderation pre`: comments rated 1 to 5, decisions in every direction,
/// then more comments after a moment the report counts `since`.
async fn the_report_counts_every_status_and_rating(
    app: &TestApp,
    people: &People,
    skus: [&str; 2],
) {
    let [a, b] = skus;
    let mut on_a = Vec::new();
    for rating in 1..=5 {
        on_a.push(app.add_comment(Some(&people.alice), a, "a", rating).await);
    }
    let on_b = app.add_comment(Some(&people.bob), b, "b", 1).await;
    let carol = people.carol.as_str();
    for (id, decision, reason) in [
        (&on_a[0], "REJECT", Some("SPAM")),
        (&on_a[1], "PUBLISH", None),
        (&on_a[4], "PUBLISH", None),
        (&on_a[4], "HIDE", Some("ABUSIVE")),
        (&on_b, "PUBLISH", None),
    ] {
        let decided = moderate(app, Some(carol), id, decision, reason).await;
        assert!(decided.get("errors").is_none(), "{decided:#}");
    }
    let product = report(
        [0, 0, 1, 1, 0],
        [0, 1, 0, 0, 0],
        [0, 0, 0, 0, 1],
        [1, 0, 0, 0, 0],
    );
    settled(app, carol, json!({ "sku": a }), product).await;
    let shop = report(
        [0, 0, 1, 1, 0],
        [1, 1, 0, 0, 0],
        [0, 0, 0, 0, 1],
        [1, 0, 0, 0, 0],
    );
    settled(app, carol, json!({}), shop.clone()).await;

    // Only what was written since a moment: one more comment on each product.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    app.add_comment(Some(&people.alice), a, "later", 2).await;
    let later = app.add_comment(Some(&people.bob), b, "later", 5).await;
    let decided = moderate(app, Some(carol), &later, "PUBLISH", None).await;
    assert!(decided.get("errors").is_none(), "{decided:#}");
    let since_then = report([0, 1, 0, 0, 0], [0, 0, 0, 0, 1], [0; 5], [0; 5]);
    settled(app, carol, json!({ "since": since }), since_then).await;
    let on_a_since = report([0, 1, 0, 0, 0], [0; 5], [0; 5], [0; 5]);
    settled(app, carol, json!({ "sku": a, "since": since }), on_a_since).await;
    let everything = report(
        [0, 1, 1, 1, 0],
        [1, 1, 0, 0, 1],
        [0, 0, 0, 0, 1],
        [1, 0, 0, 0, 0],
    );
    settled(app, carol, json!({}), everything).await;

    // Moderators only; a SKU as for any product.
    let forbidden = app.graphql_as(&people.alice, STATS, json!({})).await;
    assert_eq!(error_codes(&forbidden), ["FORBIDDEN"], "{forbidden:#}");
    let anonymous = app.graphql(STATS, json!({})).await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );
    let bad = app
        .graphql_as(carol, STATS, json!({ "sku": "no such{sku}" }))
        .await;
    assert_eq!(error_codes(&bad), ["BAD_USER_INPUT"], "{bad:#}");
}

#[tokio::test]
async fn the_report_is_exact_on_the_embedded_store() {
    let (jwks, people) = jwt_people("stats-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &["--moderation", "pre"]).await;
    the_report_counts_every_status_and_rating(&app, &people, ["SA", "SB"]).await;
    app.stop().await.expect("clean stop");
}

async fn on_dynamodb_and(redis_url: &str, kid: &str) {
    let (jwks, people) = jwt_people(kid).await;
    let backends = Backends::on(redis_url).await;
    let app = serve_with_tokens(&backends, &jwks, &["--moderation", "pre"]).await;
    the_report_counts_every_status_and_rating(&app, &people, ["SA", "SB"]).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn the_report_is_exact_on_dynamodb_and_redis() {
    on_dynamodb_and(&crate::support::redis_server::shared_url(), "stats-2").await;
}

#[tokio::test]
async fn the_report_is_exact_on_dynamodb_and_a_redis_cluster() {
    let cluster = crate::support::redis_cluster::shared_cluster_urls();
    on_dynamodb_and(&cluster, "stats-3").await;
}
