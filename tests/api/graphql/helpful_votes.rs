//! Helpful votes through the API (`markHelpful`, `helpfulCount`, `viewerFoundHelpful`): one
//! vote per viewer, taken back with `helpful: false`; the client address as the voter under
//! `--auth off` and the token's subject under `--auth jwt`, where an author may not mark their
//! own comment; a vote spends a write of the budget; a page's votes are one batched read (and
//! so are the votes of comments read by id); the
//! answers that depend on the voter are never shared, and a cached page never shows an old
//! count; the mutation's bytes; live subscribers see a vote as `UPDATED` with the new count.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::helpers::raw_http::graphql_path;
use crate::helpers::websocket::Client;
use crate::helpers::{TestApp, error_codes};
use crate::support::backends::Backends;
use crate::support::jwks::{JwksServer, TestKey, claims};
use crate::support::redis_server::shared_url;

const MARK: &str = "mutation($id: ID!, $helpful: Boolean!) {
  markHelpful(input: { commentId: $id, helpful: $helpful, clientMutationId: \"m\" }) {
    clientMutationId comment { id helpfulCount viewerFoundHelpful }
  }
}";
const MARK_DEFAULT: &str = "mutation($id: ID!) {
  markHelpful(input: { commentId: $id }) { comment { helpfulCount viewerFoundHelpful } }
}";
const PAGE: &str = "query($sku: String!) {
  comments(sku: $sku, first: 10) { edges { node { id helpfulCount viewerFoundHelpful } } }
}";

/// One GraphQL POST from `from` (an `X-Forwarded-For` the server trusts) with an optional
/// bearer token: the body.
async fn post(
    app: &TestApp,
    from: &str,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> Value {
    app.graphql_request(token, query, variables)
        .header("x-forwarded-for", from)
        .send()
        .await
        .expect("request sent")
        .json()
        .await
        .expect("a JSON body")
}

/// Each comment of the page of `sku` as `(helpfulCount, viewerFoundHelpful)`, by id.
async fn page(
    app: &TestApp,
    from: &str,
    token: Option<&str>,
    sku: &str,
) -> Vec<(String, i64, bool)> {
    let body = post(app, from, token, PAGE, json!({ "sku": sku })).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    body["data"]["comments"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            let node = &e["node"];
            (
                node["id"].as_str().expect("id").to_owned(),
                node["helpfulCount"].as_i64().expect("a count"),
                node["viewerFoundHelpful"].as_bool().expect("a flag"),
            )
        })
        .collect()
}

fn marked(body: &Value) -> (i64, bool) {
    assert!(body.get("errors").is_none(), "{body:#}");
    let comment = &body["data"]["markHelpful"]["comment"];
    (
        comment["helpfulCount"].as_i64().expect("a count"),
        comment["viewerFoundHelpful"].as_bool().expect("a flag"),
    )
}

async fn open_server() -> TestApp {
    TestApp::spawn(&["--demo-comments", "0", "--trusted-proxies", "127.0.0.1"]).await
}

/// A page's `(id, count, viewerFoundHelpful)`s by id: two comments added in one millisecond
/// are ordered by their ids' random part, so the page's order between them is not fixed.
fn by_id(mut page: Vec<(String, i64, bool)>) -> Vec<(String, i64, bool)> {
    page.sort();
    page
}

#[tokio::test]
async fn marking_twice_counts_once_per_address_and_taking_back_uncounts() {
    let app = open_server().await;
    let id = app.add_comment(None, "VOTED", "helpful words", 5).await;
    let other = app.add_comment(None, "VOTED", "other words", 4).await;
    let (ann, bob) = ("192.0.2.1", "198.51.100.2");
    let vote = |helpful: bool| json!({ "id": id, "helpful": helpful });

    let first = post(&app, ann, None, MARK, vote(true)).await;
    assert_eq!(first["data"]["markHelpful"]["clientMutationId"], "m");
    assert_eq!(marked(&first), (1, true));
    assert_eq!(
        marked(&post(&app, ann, None, MARK, vote(true)).await),
        (1, true),
        "twice counts once"
    );
    assert_eq!(
        marked(&post(&app, ann, None, MARK_DEFAULT, json!({ "id": id })).await),
        (1, true),
        "`helpful` is true when left out"
    );
    assert_eq!(
        by_id(page(&app, ann, None, "VOTED").await),
        by_id(vec![(other.clone(), 0, false), (id.clone(), 1, true)])
    );
    assert_eq!(
        by_id(page(&app, bob, None, "VOTED").await),
        by_id(vec![(other.clone(), 0, false), (id.clone(), 1, false)]),
        "another address is another voter"
    );
    assert_eq!(
        marked(&post(&app, bob, None, MARK, vote(true)).await),
        (2, true)
    );
    assert_eq!(
        marked(&post(&app, ann, None, MARK, vote(false)).await),
        (1, false)
    );
    assert_eq!(
        marked(&post(&app, ann, None, MARK, vote(false)).await),
        (1, false),
        "taking back nothing changes nothing"
    );
    assert_eq!(
        by_id(page(&app, bob, None, "VOTED").await),
        by_id(vec![(other, 0, false), (id, 1, true)])
    );
}

#[tokio::test]
async fn a_bad_or_unknown_comment_id_is_refused_and_nothing_is_written() {
    let app = open_server().await;
    let id = app.add_comment(None, "VOTED", "words", 5).await;
    let deleted = app.deleted_comment_id().await;
    for (bad, code) in [
        (json!("not an id"), "BAD_USER_INPUT"),
        (
            json!(
                dynapage::graphql::GlobalId::Product(
                    dynapage::domain::Sku::parse("VOTED").expect("sku")
                )
                .encode()
            ),
            "BAD_USER_INPUT",
        ),
        (json!(deleted), "NOT_FOUND"),
    ] {
        let body = post(
            &app,
            "192.0.2.1",
            None,
            MARK,
            json!({ "id": bad, "helpful": true }),
        )
        .await;
        assert_eq!(error_codes(&body), [code], "{body:#}");
        assert_eq!(body["data"], Value::Null, "{body:#}");
    }
    assert_eq!(
        page(&app, "192.0.2.1", None, "VOTED").await,
        vec![(id, 0, false)]
    );
}

#[tokio::test]
async fn under_jwt_a_vote_needs_a_token_and_an_author_may_not_mark_their_own_comment() {
    let key = TestKey::ec("ec-votes");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 0, &[]).await;
    let ann = key.sign(&claims("ann", json!({ "name": "Ann" })));
    let bob = key.sign(&claims("bob", json!({ "name": "Bob" })));
    let id = app.add_comment(Some(&ann), "JWT_VOTES", "mine", 5).await;
    let vote = json!({ "id": id, "helpful": true });

    let anonymous = post(&app, "192.0.2.1", None, MARK, vote.clone()).await;
    assert_eq!(
        error_codes(&anonymous),
        ["UNAUTHENTICATED"],
        "{anonymous:#}"
    );
    let own = post(&app, "192.0.2.1", Some(&ann), MARK, vote.clone()).await;
    assert_eq!(error_codes(&own), ["FORBIDDEN"], "{own:#}");
    let message = own["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("your own"), "{message}");
    assert_eq!(
        marked(&post(&app, "192.0.2.1", Some(&bob), MARK, vote).await),
        (1, true)
    );
    assert_eq!(
        page(&app, "192.0.2.1", Some(&bob), "JWT_VOTES").await,
        vec![(id.clone(), 1, true)]
    );
    assert_eq!(
        page(&app, "192.0.2.1", Some(&ann), "JWT_VOTES").await,
        vec![(id.clone(), 1, false)]
    );
    assert_eq!(
        page(&app, "192.0.2.1", None, "JWT_VOTES").await,
        vec![(id, 1, false)],
        "false without a viewer (the address is nobody's vote under jwt)"
    );
}

#[tokio::test]
async fn every_vote_spends_a_write_of_the_budget_even_one_that_changes_nothing() {
    let app = TestApp::writes_budgeted(0, 3).await;
    let id = app.add_comment(None, "VOTE_BUDGET", "words", 5).await;
    let vote = json!({ "id": id, "helpful": true });
    for _ in 0..2 {
        marked(&post(&app, "192.0.2.1", None, MARK, vote.clone()).await);
    }
    let response = app
        .graphql_reply(None, MARK, json!({ "id": id, "helpful": false }))
        .await;
    assert_eq!(
        response.status, 429,
        "the add and two votes spent the 3 writes"
    );
    let body = response.json();
    assert_eq!(error_codes(&body), ["RATE_LIMITED"], "{body:#}");
    let counts: Vec<i64> = page(&app, "192.0.2.1", None, "VOTE_BUDGET")
        .await
        .into_iter()
        .map(|(_, count, _)| count)
        .collect();
    assert_eq!(counts, [1], "the refused withdrawal wrote nothing");
}

/// `extensions.cost` of `query`'s answer: `(itemsRead, storeQueries)`.
async fn cost(app: &TestApp, query: &str, variables: Value) -> (i64, i64) {
    let body = app.graphql(query, variables).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let cost = &body["extensions"]["cost"];
    (
        cost["itemsRead"].as_i64().expect("itemsRead"),
        cost["storeQueries"].as_i64().expect("storeQueries"),
    )
}

#[tokio::test]
async fn a_page_reads_the_viewer_s_votes_in_one_batched_read_and_so_do_comments_by_id() {
    let app = TestApp::embedded(30).await;
    let plain =
        "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 10) { edges { node { id helpfulCount } } } }";
    let voted = "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 10) { edges { node { id viewerFoundHelpful } } nodes { viewerFoundHelpful } } }";
    let (items, queries) = cost(&app, plain, json!({})).await;
    assert_eq!(
        cost(&app, voted, json!({})).await,
        (items + 10, queries + 1),
        "ten keys in one read, shared by `edges` and `nodes`"
    );
    let ids: Vec<Value> = app.data(plain, json!({})).await["comments"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .take(3)
        .map(|e| e["node"]["id"].clone())
        .collect();
    let nodes =
        "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Comment { viewerFoundHelpful } } }";
    let (items, queries) = cost(&app, nodes, json!({ "ids": ids })).await;
    assert_eq!(
        (items, queries),
        (3 + 3, 1 + 1),
        "the comments, then their votes, each in one batched read of the request's loader"
    );
}

#[tokio::test]
async fn votes_of_an_address_are_never_shared_and_a_cached_page_never_shows_an_old_count() {
    let app = TestApp::spawn(&["--demo-comments", "5", "--response-cache-bytes", "1048576"]).await;
    let get = |query: &str| graphql_path(query, &json!({}));
    let counts = get(
        "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 2) { edges { node { id helpfulCount } } } }",
    );
    let mine = get(
        "{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 2) { edges { node { id viewerFoundHelpful } } } }",
    );

    let answer = app.raw_request("GET", &mine, &[], "").await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("cache-control").as_deref(),
        Some("private, max-age=5"),
        "the address's own votes: never in a shared cache"
    );
    assert!(
        answer.header("etag").is_none(),
        "and never in the response cache"
    );

    let first = app.raw_request("GET", &counts, &[], "").await;
    assert!(
        first
            .header("cache-control")
            .is_some_and(|c| c.starts_with("public")),
        "{:?}",
        first.header("cache-control")
    );
    let id = first.json()["data"]["comments"]["edges"][0]["node"]["id"].clone();
    assert_eq!(
        first.json()["data"]["comments"]["edges"][0]["node"]["helpfulCount"],
        0
    );
    // The second answer is kept with its versions, the third is a hit.
    app.raw_request("GET", &counts, &[], "").await;
    let hit = app.raw_request("GET", &counts, &[], "").await;
    assert!(hit.header("etag").is_some(), "a hit has its ETag");
    let vote = app.data(MARK_DEFAULT, json!({ "id": id })).await;
    assert_eq!(vote["markHelpful"]["comment"]["helpfulCount"], 1);
    let after = crate::helpers::eventually("the vote's change reaches the index", || async {
        let answer = app.raw_request("GET", &counts, &[], "").await;
        (answer.json()["data"]["comments"]["edges"][0]["node"]["helpfulCount"] == 1)
            .then_some(answer)
    })
    .await;
    assert_ne!(
        after.header("etag"),
        hit.header("etag"),
        "a new version, a new ETag"
    );
}

/// The mutation's answer, byte for byte as a client reads it, and its refusal with the `null`
/// where the payload would be.
#[tokio::test]
async fn mark_helpful_answers_in_these_bytes() {
    let app = open_server().await;
    let id = app.add_comment(None, "BYTES", "words", 5).await;
    let body = json!({
        "query": "mutation($id: ID!) { markHelpful(input: { commentId: $id, clientMutationId: \"m1\" }) { clientMutationId comment { helpfulCount viewerFoundHelpful } } }",
        "variables": { "id": id },
    })
    .to_string();
    let headers = [("Content-Type", "application/json")];
    let answer = app.raw_request("POST", "/graphql", &headers, &body).await;
    let text = String::from_utf8(answer.body.clone()).expect("UTF-8");
    assert!(
        text.starts_with(r#"{"data":{"markHelpful":{"clientMutationId":"m1","comment":{"helpfulCount":1,"viewerFoundHelpful":true}}},"extensions":{"cost":{"#),
        "{text}"
    );
    let deleted = app.deleted_comment_id().await;
    let body = json!({
        "query": "mutation($id: ID!) { markHelpful(input: { commentId: $id }) { comment { helpfulCount } } }",
        "variables": { "id": deleted },
    })
    .to_string();
    let answer = app.raw_request("POST", "/graphql", &headers, &body).await;
    let text = String::from_utf8(answer.body.clone()).expect("UTF-8");
    assert!(
        text.starts_with(r#"{"data":null,"errors":[{"message":"#),
        "{text}"
    );
    assert!(
        text.contains(r#""path":["markHelpful"],"extensions":{"code":"NOT_FOUND""#),
        "{text}"
    );
}

/// A vote reaches live subscribers as `UPDATED` with the new count, and the subscriber's own
/// vote (the same address, `--auth off`) shows in `viewerFoundHelpful`.
#[tokio::test]
async fn a_vote_reaches_a_subscriber_as_updated_with_the_new_count() {
    let app = TestApp::embedded(0).await;
    let mut client = Client::ready(&app).await;
    let events = r#"subscription($sku: String!) {
  commentEvents(sku: $sku) { kind edge { node { id helpfulCount viewerFoundHelpful } } }
}"#;
    client
        .subscribe_to("1", events, json!({ "sku": "LIVE_VOTES" }))
        .await;
    let id = app.add_comment(None, "LIVE_VOTES", "vote for me", 5).await;
    let added = client.event().await;
    assert_eq!(added["kind"], "ADDED");
    app.data(MARK_DEFAULT, json!({ "id": id })).await;
    let updated = client.event().await;
    assert_eq!(updated["kind"], "UPDATED", "{updated:#}");
    assert_eq!(
        updated["edge"]["node"],
        json!({ "id": id, "helpfulCount": 1, "viewerFoundHelpful": true })
    );
    app.data(MARK, json!({ "id": id, "helpful": false })).await;
    let withdrawn = client.event().await;
    assert_eq!(withdrawn["edge"]["node"]["helpfulCount"], 0);
    assert_eq!(withdrawn["edge"]["node"]["viewerFoundHelpful"], false);
    // A vote that changes nothing is no event.
    app.data(MARK, json!({ "id": id, "helpful": false })).await;
    let quiet = tokio::time::timeout(Duration::from_millis(500), client.socket.next()).await;
    assert!(
        quiet.is_err(),
        "no event for a vote that changed nothing: {quiet:?}"
    );
}

/// The same through DynamoDB Streams: the vote's transaction is a `MODIFY` of the comment, and
/// `serve --sync` delivers it as `UPDATED` (the vote item's own record is skipped).
#[tokio::test]
async fn a_vote_in_dynamodb_reaches_a_subscriber_through_the_stream() {
    let backends = Backends::on(&shared_url()).await;
    let app = backends.serve_syncing(&[]).await;
    let mut client = Client::ready(&app).await;
    let events = r#"subscription($sku: String!) {
  commentEvents(sku: $sku) { kind totalCount edge { node { id helpfulCount } } }
}"#;
    client
        .subscribe_to("1", events, json!({ "sku": "STREAMED_VOTES" }))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let id = app
        .add_comment(None, "STREAMED_VOTES", "vote for me", 5)
        .await;
    assert_eq!(client.event().await["kind"], "ADDED");
    let voted = app.data(MARK_DEFAULT, json!({ "id": id })).await;
    assert_eq!(voted["markHelpful"]["comment"]["helpfulCount"], 1);
    let updated = client.event().await;
    assert_eq!(updated["kind"], "UPDATED", "{updated:#}");
    assert_eq!(updated["totalCount"], 1);
    assert_eq!(
        updated["edge"]["node"],
        json!({ "id": id, "helpfulCount": 1 })
    );
}
