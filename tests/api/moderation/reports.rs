//! Reports through the API: `reportComment` (once per reader and comment, never one's own,
//! only signed in), `Comment.reportCount` (moderators only), the `REPORTED` queue with exact
//! counts, `viewer.reports` with each report's outcome, `node` on a report (its reader and
//! moderators only), decisions that close reports (upheld, dismissed, logged), and
//! `--report-hide-threshold`; on the embedded store, `--data-dir` across a restart, and DynamoDB
//! Local + Redis (then `verify` is clean).

use serde_json::{Value, json};

use super::decisions::{
    People, jwt_people, lose_list, moderate, reindex, serve_with_tokens, verify_says,
};
use crate::helpers::{TestApp, error_codes, eventually};
use crate::support::backends::Backends;

const REPORT: &str = r#"mutation($id: ID!, $reason: ReportReason!, $details: String) {
  reportComment(input: { commentId: $id, reason: $reason, details: $details, clientMutationId: "r1" }) {
    report { id reason details status createdAt decidedAt comment { id } }
    clientMutationId
  }
}"#;

const MINE: &str = r#"query($first: Int, $after: String, $last: Int, $before: String) {
  viewer {
    reports(first: $first, after: $after, last: $last, before: $before) {
      totalCount
      edges { cursor node { id status reason decidedAt comment { id } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const QUEUE: &str = r#"query($sku: String) {
  moderationQueue(queue: REPORTED, sku: $sku, first: 10) {
    totalCount
    edges { node { id reportCount openReports { reason details status } moderation { status } } }
  }
}"#;

const COUNT: &str = r#"query($id: ID!) { node(id: $id) { ... on Comment { reportCount openReports { reason } } } }"#;

const NODE: &str = r#"query($id: ID!) { node(id: $id) { id ... on Report { status } } }"#;

const LOG: &str = r#"query($sku: String) {
  moderationLog(sku: $sku, first: 10) { edges { node { action actor note } } }
}"#;

const PUBLIC: &str = r#"query($sku: String!) {
  product(sku: $sku) { comments(first: 10) { totalCount edges { node { id } } } }
}"#;

async fn report(app: &TestApp, token: Option<&str>, id: &str, details: Option<&str>) -> Value {
    let variables = json!({ "id": id, "reason": "SPAM", "details": details });
    match token {
        Some(token) => app.graphql_as(token, REPORT, variables).await,
        None => app.graphql(REPORT, variables).await,
    }
}

fn ok(answer: &Value) -> &Value {
    assert!(answer.get("errors").is_none(), "{answer:#}");
    &answer["data"]
}

/// `token`'s reports once their `totalCount` is `total`, and the first page of `args`.
async fn mine(app: &TestApp, token: &str, args: Value) -> Value {
    let answer = app.graphql_as(token, MINE, args).await;
    ok(&answer)["viewer"]["reports"].clone()
}

/// The `REPORTED` queue (of `sku`, or the shop's) once it holds `total` comments.
async fn queue_of(app: &TestApp, moderator: &str, sku: Option<&str>, total: usize) -> Value {
    eventually(
        &format!("the REPORTED queue holding {total}"),
        || async move {
            let answer = app
                .graphql_as(moderator, QUEUE, json!({ "sku": sku }))
                .await;
            let queue = ok(&answer)["moderationQueue"].clone();
            (queue["totalCount"] == json!(total)).then_some(queue)
        },
    )
    .await
}

/// The whole flow on one server under `--moderation post`: bob reports alice's comments, carol
/// (a moderator) sees the reports and decides; bob sees what became of them.
async fn readers_report_and_moderators_close(app: &TestApp, people: &People, sku: &str) {
    let (alice, bob, carol) = (
        people.alice.as_str(),
        people.bob.as_str(),
        people.carol.as_str(),
    );
    let first = app
        .add_comment(Some(alice), sku, "buy at example.com", 5)
        .await;
    let second = app.add_comment(Some(alice), sku, "fine shirt", 4).await;

    let filed = report(app, Some(bob), &first, Some("a link farm")).await;
    let payload = &ok(&filed)["reportComment"];
    assert_eq!(payload["clientMutationId"], "r1");
    let filed_report = &payload["report"];
    assert_eq!(
        (
            &filed_report["status"],
            &filed_report["reason"],
            &filed_report["details"]
        ),
        (&json!("OPEN"), &json!("SPAM"), &json!("a link farm"))
    );
    assert_eq!(filed_report["decidedAt"], Value::Null);
    assert_eq!(filed_report["comment"]["id"], json!(first));
    let report_id = filed_report["id"].clone();
    let again = report(app, Some(bob), &first, Some("other words")).await;
    assert_eq!(
        ok(&again)["reportComment"]["report"],
        *filed_report,
        "a second report answers the first"
    );

    // Refusals write nothing.
    let own = report(app, Some(alice), &first, None).await;
    assert_eq!(error_codes(&own), ["FORBIDDEN"], "{own:#}");
    let anonymous = report(app, None, &first, None).await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );
    let long = "x".repeat(1_001);
    let too_long = report(app, Some(carol), &first, Some(&long)).await;
    assert_eq!(error_codes(&too_long), ["BAD_USER_INPUT"], "{too_long:#}");
    let product_id = "UHJvZHVjdDpYWA"; // Product:XX
    let not_a_comment = report(app, Some(bob), product_id, None).await;
    assert_eq!(error_codes(&not_a_comment), ["BAD_USER_INPUT"]);

    // Moderators see the count and the queue; nobody else sees a count.
    let queue = queue_of(app, carol, None, 1).await;
    assert_eq!(queue["edges"][0]["node"]["id"], json!(first));
    assert_eq!(queue["edges"][0]["node"]["reportCount"], 1);
    assert_eq!(
        queue["edges"][0]["node"]["openReports"],
        json!([{ "reason": "SPAM", "details": "a link farm", "status": "OPEN" }]),
        "a moderator reads each open report"
    );
    queue_of(app, carol, Some(sku), 1).await;
    for token in [bob, alice] {
        let answer = app.graphql_as(token, COUNT, json!({ "id": first })).await;
        assert_eq!(ok(&answer)["node"]["reportCount"], Value::Null);
        assert_eq!(ok(&answer)["node"]["openReports"], Value::Null);
    }
    let answer = app.graphql(COUNT, json!({ "id": first })).await;
    assert_eq!(ok(&answer)["node"]["reportCount"], Value::Null);
    let refused = app.graphql_as(bob, QUEUE, json!({})).await;
    assert_eq!(error_codes(&refused), ["FORBIDDEN"]);

    // The reader sees their report; a report is a node for its reader and moderators only.
    let page = mine(app, bob, json!({})).await;
    assert_eq!(page["totalCount"], 1, "{page:#}");
    assert_eq!(page["edges"][0]["node"]["status"], "OPEN");
    for (token, seen) in [(bob, true), (carol, true), (alice, false)] {
        let answer = app
            .graphql_as(token, NODE, json!({ "id": report_id }))
            .await;
        assert_eq!(
            answer["data"]["node"]["id"] == report_id,
            seen,
            "{answer:#}"
        );
    }

    // A hiding upholds the report, logged; the comment leaves the queue and the public list.
    let hidden = moderate(app, Some(carol), &first, "HIDE", Some("SPAM")).await;
    ok(&hidden);
    queue_of(app, carol, None, 0).await;
    let page = mine(app, bob, json!({})).await;
    let node = &page["edges"][0]["node"];
    assert_eq!(node["status"], "UPHELD", "{page:#}");
    assert!(node["decidedAt"].is_string());
    assert_eq!(node["comment"], Value::Null, "hidden from its reader");
    let log = app.graphql_as(carol, LOG, json!({ "sku": sku })).await;
    let actions: Vec<&Value> = ok(&log)["moderationLog"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| &e["node"]["action"])
        .collect();
    assert_eq!(
        actions,
        [&json!("UPHOLD_REPORTS"), &json!("HIDE")],
        "{log:#}"
    );

    // Publishing a reported published comment keeps it and dismisses its reports.
    ok(&report(app, Some(bob), &second, None).await);
    ok(&report(app, Some(carol), &second, None).await);
    let queue = queue_of(app, carol, Some(sku), 1).await;
    assert_eq!(queue["edges"][0]["node"]["reportCount"], 2);
    ok(&moderate(app, Some(carol), &second, "PUBLISH", None).await);
    queue_of(app, carol, Some(sku), 0).await;
    let page = mine(app, bob, json!({ "first": 1 })).await;
    assert_eq!(page["totalCount"], 2);
    assert_eq!(
        page["edges"][0]["node"]["status"], "DISMISSED",
        "newest first"
    );
    assert_eq!(page["edges"][0]["node"]["comment"]["id"], json!(second));
    assert_eq!(page["pageInfo"]["hasNextPage"], true);
    let after = page["pageInfo"]["endCursor"].clone();
    let rest = mine(app, bob, json!({ "first": 5, "after": after })).await;
    assert_eq!(rest["edges"].as_array().map(Vec::len), Some(1));
    assert_eq!(rest["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(rest["pageInfo"]["hasNextPage"], false);
    let tail = mine(app, bob, json!({ "last": 1 })).await;
    assert_eq!(tail["edges"][0]["node"]["status"], "UPHELD");
    // A cursor of bob's list is no cursor in carol's.
    let foreign = app.graphql_as(carol, MINE, json!({ "after": after })).await;
    assert_eq!(error_codes(&foreign), ["BAD_CURSOR"], "{foreign:#}");
    let public = app.graphql(PUBLIC, json!({ "sku": sku })).await;
    assert_eq!(ok(&public)["product"]["comments"]["totalCount"], 1);
}

#[tokio::test]
async fn readers_report_and_moderators_close_reports_on_the_embedded_store() {
    let (jwks, people) = jwt_people("reports-1").await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    readers_report_and_moderators_close(&app, &people, "RA").await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn reports_survive_a_restart_of_the_durable_store() {
    let (jwks, people) = jwt_people("reports-2").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("data");
    let flags = ["--data-dir", path.to_str().expect("UTF-8")];
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    readers_report_and_moderators_close(&app, &people, "RD").await;
    app.stop().await.expect("clean stop");
    let app = TestApp::under_jwt(&jwks, 0, &flags).await;
    let page = mine(&app, &people.bob, json!({})).await;
    assert_eq!(page["totalCount"], 2, "{page:#}");
    let statuses: Vec<&Value> = page["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| &e["node"]["status"])
        .collect();
    assert_eq!(statuses, [&json!("DISMISSED"), &json!("UPHELD")]);
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn reports_work_on_dynamodb_and_redis_and_reindex_rebuilds_the_reported_queue() {
    let (jwks, people) = jwt_people("reports-3").await;
    let redis_url = crate::support::redis_server::shared_url();
    let backends = Backends::on(&redis_url).await;
    let app = serve_with_tokens(&backends, &jwks, &[]).await;
    readers_report_and_moderators_close(&app, &people, "RY").await;
    verify_says(&backends, true).await;
    // A reported comment whose queue Redis lost: `verify` says so, `reindex` puts it back.
    let third = app.add_comment(Some(&people.alice), "RY", "third", 3).await;
    ok(&report(&app, Some(&people.bob), &third, None).await);
    let carol = people.carol.as_str();
    queue_of(&app, carol, Some("RY"), 1).await;
    lose_list(&backends, &redis_url, "!REPORTED!RY").await;
    queue_of(&app, carol, Some("RY"), 0).await;
    verify_says(&backends, false).await;
    reindex(&backends).await;
    let queue = queue_of(&app, carol, Some("RY"), 1).await;
    assert_eq!(queue["edges"][0]["node"]["id"], json!(third));
    verify_says(&backends, true).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn enough_readers_hide_a_comment_until_a_moderator_decides() {
    let (jwks, people) = jwt_people("reports-4").await;
    let app = TestApp::under_jwt(&jwks, 0, &["--report-hide-threshold", "2"]).await;
    let comment = app.add_comment(Some(&people.alice), "RT", "fine", 5).await;
    ok(&report(&app, Some(&people.bob), &comment, None).await);
    let public = app.graphql(PUBLIC, json!({ "sku": "RT" })).await;
    assert_eq!(ok(&public)["product"]["comments"]["totalCount"], 1);
    ok(&report(&app, Some(&people.carol), &comment, None).await);
    let public = app.graphql(PUBLIC, json!({ "sku": "RT" })).await;
    assert_eq!(
        ok(&public)["product"]["comments"]["totalCount"],
        0,
        "hidden"
    );
    let log = app
        .graphql_as(&people.carol, LOG, json!({ "sku": "RT" }))
        .await;
    let entry = &ok(&log)["moderationLog"]["edges"][0]["node"];
    assert_eq!(entry["action"], "HIDE_ON_REPORTS", "{log:#}");
    assert_eq!(entry["actor"], "dynapage:report-hide-threshold");
    // The author is told why; a moderator publishes it again, dismissing the reports.
    let own = app
        .graphql_as(
            &people.alice,
            r#"{ viewer { comments { edges { node { moderation { status reason note } } } } } }"#,
            json!({}),
        )
        .await;
    let moderation = &ok(&own)["viewer"]["comments"]["edges"][0]["node"]["moderation"];
    assert_eq!(moderation["status"], "HIDDEN", "{own:#}");
    assert_eq!(moderation["reason"], "OTHER");
    ok(&moderate(&app, Some(&people.carol), &comment, "PUBLISH", None).await);
    let public = app.graphql(PUBLIC, json!({ "sku": "RT" })).await;
    assert_eq!(ok(&public)["product"]["comments"]["totalCount"], 1);
    let page = mine(&app, &people.bob, json!({})).await;
    assert_eq!(page["edges"][0]["node"]["status"], "DISMISSED");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn under_auth_off_nobody_reports() {
    let app = TestApp::embedded(1).await;
    let id = app.add_comment(None, "RO", "fine", 5).await;
    let answer = report(&app, None, &id, None).await;
    assert_eq!(error_codes(&answer), ["UNAUTHENTICATED"], "{answer:#}");
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn reports_work_on_dynamodb_and_a_redis_cluster() {
    let (jwks, people) = jwt_people("reports-5").await;
    let cluster = crate::support::redis_cluster::shared_cluster_urls();
    let backends = Backends::on(&cluster).await;
    let app = serve_with_tokens(&backends, &jwks, &[]).await;
    readers_report_and_moderators_close(&app, &people, "RC").await;
    app.stop().await.expect("clean stop");
}

/// A queue page of reported comments reads their open reports in one batched store read,
/// however many comments it holds (the request's loader), each report priced as an item.
#[tokio::test]
async fn a_queue_pages_open_reports_are_one_store_read() {
    const PAGE: &str = r#"query($reports: Boolean!) {
      moderationQueue(queue: REPORTED, first: 10) {
        totalCount
        edges { node { id openReports @include(if: $reports) { reason } } }
      }
    }"#;
    let (jwks, people) = jwt_people("reports-6").await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    for i in 0..3 {
        let id = app
            .add_comment(Some(&people.alice), "RB", &format!("c{i}"), 4)
            .await;
        ok(&report(&app, Some(&people.bob), &id, None).await);
        ok(&report(&app, Some(&people.carol), &id, None).await);
    }
    let carol = people.carol.as_str();
    queue_of(&app, carol, None, 3).await;
    let cost = |answer: &Value, what: &str| answer["extensions"]["cost"][what].as_u64();
    let without = app
        .graphql_as(carol, PAGE, json!({ "reports": false }))
        .await;
    let with = app
        .graphql_as(carol, PAGE, json!({ "reports": true }))
        .await;
    let edges = ok(&with)["moderationQueue"]["edges"].clone();
    for edge in edges.as_array().expect("edges") {
        assert_eq!(
            edge["node"]["openReports"].as_array().map(Vec::len),
            Some(2)
        );
    }
    let queries = |answer: &Value| cost(answer, "storeQueries").expect("storeQueries");
    let items = |answer: &Value| cost(answer, "itemsRead").expect("itemsRead");
    assert_eq!(queries(&with), queries(&without) + 1, "{with:#}");
    assert_eq!(items(&with), items(&without) + 6, "{with:#}");
    app.stop().await.expect("clean stop");
}
