//! Every request pays, whatever its outcome (issue 42, items 3 and 4), performed against the
//! real server: a document of free fields pays for its bytes, a `304` and a bad token are not
//! free, a `subscribe` the checks refuse pays the failure floor, and registering a persisted
//! query pays for what it stores, within a share per client, in a Redis store that keeps its
//! bound whatever is registered. Each ends with a normal client served.
//!
//! Budgets here refill at 1 point a second, so the assertions count requests and points, and
//! allow for the seconds a test takes.

use std::time::Instant;

use serde_json::{Value, json};

use crate::helpers::websocket::{Client, errors_of};
use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::jwks::{JwksServer, TestKey};
use crate::support::redis_server::{RedisServer, connect};
use dynapage::graphql::bytes_floor;
use dynapage::persisted::sha256_hex;

const PAGE: &str =
    r#"query($sku: String!) { comments(sku: $sku, first: 2) { edges { node { id } } } }"#;

/// POSTs `body` (its bytes as sent); the status and the JSON answer.
async fn post(app: &TestApp, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut headers = headers.to_vec();
    headers.push(("content-type", "application/json"));
    let answer = app.post_graphql(body.to_string(), &headers).await;
    let json = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
    (answer.status, json)
}

fn cost(answer: &Value, field: &str) -> u64 {
    answer["extensions"]["cost"][field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field}: {answer:#}"))
}

fn available(answer: &Value) -> u64 {
    answer["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]
        .as_u64()
        .unwrap_or_else(|| panic!("a throttle status: {answer:#}"))
}

async fn a_normal_page_is_served(app: &TestApp, headers: &[(&str, &str)]) {
    let body = json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } });
    let (status, answer) = post(app, &body, headers).await;
    assert_eq!(status, 200, "{answer:#}");
    let edges = answer["data"]["comments"]["edges"].as_array().map(Vec::len);
    assert_eq!(edges, Some(2), "{answer:#}");
}

#[tokio::test]
async fn a_document_of_free_fields_pays_for_its_bytes_and_an_honest_page_its_price() {
    let app = TestApp::cost_budgeted(20, 10_000, &["--trusted-proxies", "127.0.0.1"]).await;
    let attacker = [("x-forwarded-for", "198.51.100.7")];
    // Issue 42, item 3: 7,000 unknown arguments on `__typename` ran for 0 points.
    let arguments: String = (0..5_000).map(|i| format!(" a{i}: {i}")).collect();
    let free = json!({ "query": format!("{{ __typename({arguments}) }}") });
    let bytes = free.to_string().len();
    assert!(bytes > 50_000, "{bytes}");
    let (status, answer) = post(&app, &free, &attacker).await;
    assert_eq!(status, 200);
    assert_eq!(answer["data"]["__typename"], "Query", "it ran: {answer:#}");
    assert_eq!(cost(&answer, "requestedQueryCost"), bytes_floor(bytes));
    assert_eq!(cost(&answer, "actualQueryCost"), bytes_floor(bytes));
    assert!(bytes_floor(bytes) > 480, "{}", bytes_floor(bytes));
    // A document of long comments alike.
    let comments = json!({ "query": format!("# {}\n{{ __typename }}", "x".repeat(30_000)) });
    let (_, answer) = post(&app, &comments, &attacker).await;
    assert_eq!(
        cost(&answer, "requestedQueryCost"),
        bytes_floor(comments.to_string().len())
    );
    // The budget runs out at about 10,000 / 600 such requests, and the client is refused.
    let started = Instant::now();
    let mut sent = 2;
    let refused = loop {
        let (status, answer) = post(&app, &free, &attacker).await;
        sent += 1;
        if status == 429 {
            break answer;
        }
        assert!(sent < 40, "the budget never ran out");
    };
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        sent as u64 <= 2 + (10_000 + refilled) / bytes_floor(bytes) + 1,
        "{sent} requests"
    );
    assert_eq!(refused["errors"][0]["extensions"]["code"], "RATE_LIMITED");
    // An honest page pays its price, far above its bytes, and another client is served.
    let body = json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } });
    let (_, honest) = post(&app, &body, &[]).await;
    assert_eq!(cost(&honest, "requestedQueryCost"), 2 * 3 + 1);
    assert!(bytes_floor(body.to_string().len()) < 2 * 3 + 1);
    a_normal_page_is_served(&app, &[]).await;
}

/// `GET /graphql` of the normal page, with `headers`; the status and the `RateLimit` field's
/// points left.
async fn get_page(app: &TestApp, headers: &[(&str, &str)]) -> (u16, Option<u64>, Option<String>) {
    let variables = json!({ "sku": DEMO_SKU }).to_string();
    let mut request = app
        .client
        .get(format!("{}/graphql", app.address))
        .query(&[("query", PAGE), ("variables", variables.as_str())]);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sent");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let left = header("ratelimit").and_then(|v| {
        let r = v.split(';').find_map(|p| p.strip_prefix("r="))?;
        r.parse().ok()
    });
    (response.status().as_u16(), left, header("etag"))
}

#[tokio::test]
async fn revalidations_and_bad_tokens_are_not_free() {
    let app = TestApp::cost_budgeted(20, 40, &["--response-cache-bytes", "1048576"]).await;
    get_page(&app, &[]).await;
    let (_, left, etag) = get_page(&app, &[]).await;
    let etag = etag.expect("an ETag once the answer is verified");
    let left = left.expect("the budget");
    let revalidate = [("if-none-match", etag.as_str())];
    let started = Instant::now();
    let mut not_modified = 0;
    let status = loop {
        let (status, left, _) = get_page(&app, &revalidate).await;
        if status != 304 {
            break status;
        }
        assert!(left.is_some(), "a 304 shows the budget");
        not_modified += 1;
        assert!(not_modified < 200, "revalidating never ran out of budget");
    };
    assert_eq!(status, 429, "a spent budget is refused revalidations too");
    let refilled = started.elapsed().as_secs() + 1;
    // The URL's bytes are about 150: 2 points a revalidation.
    assert!(
        (left / 2..=(left + refilled) / 2).contains(&not_modified),
        "{not_modified} revalidations from {left} points, at 2 each"
    );
    app.stop().await.expect("clean stop");

    // Bad tokens: 401 while the address can pay the failure floor (10 points), then 429.
    let key = TestKey::ec("ec-pays");
    let jwks = JwksServer::start(&[&key]).await;
    let budget = ["--rate-limit-cost", "1", "--rate-limit-cost-burst", "35"];
    let app = TestApp::under_jwt(
        &jwks,
        20,
        &[&budget[..], &["--rate-limit-writes", "0"]].concat(),
    )
    .await;
    let bad = [("authorization", "Bearer not.a.token")];
    let body = json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } });
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let (status, answer) = post(&app, &body, &bad).await;
        let code = answer["errors"][0]["extensions"]["code"].clone();
        statuses.push((status, code));
    }
    assert_eq!(
        statuses[..3],
        [
            (401, json!("UNAUTHENTICATED")),
            (401, json!("UNAUTHENTICATED")),
            (401, json!("UNAUTHENTICATED"))
        ]
    );
    assert_eq!(statuses[4], (429, json!("RATE_LIMITED")), "{statuses:?}");
    // A client with a good token is its own payer, and is served.
    let good = key.sign(&crate::support::jwks::claims("alice", json!({})));
    let authorization = format!("Bearer {good}");
    a_normal_page_is_served(&app, &[("authorization", authorization.as_str())]).await;
}

#[tokio::test]
async fn a_subscribe_the_checks_refuse_pays_the_failure_floor() {
    let app = TestApp::cost_budgeted(20, 35, &[]).await;
    let mut client = Client::ready(&app).await;
    let mut codes = Vec::new();
    for n in 0..5 {
        // A query over the WebSocket is refused by the request check (BAD_REQUEST).
        let id = format!("q{n}");
        client.subscribe_to(&id, "{ __typename }", json!({})).await;
        let answer = client.answer_to(&id).await;
        codes.push(errors_of(&answer)[0]["extensions"]["code"].clone());
    }
    assert_eq!(
        codes[..3],
        [
            json!("BAD_REQUEST"),
            json!("BAD_REQUEST"),
            json!("BAD_REQUEST")
        ]
    );
    assert_eq!(codes[4], json!("RATE_LIMITED"), "{codes:?}");
}

/// An automatic persisted query with its text, for registration.
fn registering(text: &str) -> Value {
    json!({
        "query": text,
        "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(text) } },
    })
}

/// The same by its hash alone.
fn by_hash(text: &str) -> Value {
    json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(text) } } })
}

/// A valid text of about `bytes`, distinct for each `n` (a long comment pads it).
fn text_of(n: usize, bytes: usize) -> String {
    let query = format!("query Q{n} {{ product(sku: \"P{n}\") {{ sku }} }}");
    format!("# {}\n{query}", "p".repeat(bytes - query.len() - 3))
}

#[tokio::test]
async fn registrations_pay_for_their_bytes_are_capped_per_client_and_redis_keeps_its_bound() {
    let redis = RedisServer::start();
    let url = redis.url();
    let app = TestApp::spawn(&[
        "--demo-comments",
        "20",
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "100000",
        "--rate-limit-writes",
        "0",
        "--rate-limit-registrations",
        "3",
        "--persisted-queries-redis-bytes",
        "5000",
    ])
    .await;
    // Each registration pays its request's bytes and again the bytes it stores.
    let first = text_of(0, 1_500);
    let (status, answer) = post(&app, &registering(&first), &[]).await;
    assert_eq!(
        (status, &answer["data"]["product"]["sku"]),
        (200, &json!("P0"))
    );
    let body_bytes = registering(&first).to_string().len();
    assert_eq!(cost(&answer, "requestedQueryCost"), bytes_floor(body_bytes));
    let after_request = available(&answer);
    let started = Instant::now();
    let (_, next) = post(&app, &by_hash(&first), &[]).await;
    assert_eq!(next["data"]["product"]["sku"], "P0", "registered: {next:#}");
    let paid = after_request + started.elapsed().as_secs() + 1
        - available(&next)
        - cost(&next, "actualQueryCost");
    assert!(
        (bytes_floor(first.len())..=bytes_floor(first.len()) + 2).contains(&paid),
        "the registration paid {paid}, its text's bytes are {}",
        bytes_floor(first.len())
    );
    // Two more fit the client's share of three an hour; a fourth runs but is not kept.
    for n in 1..4 {
        let text = text_of(n, 1_500);
        let (status, answer) = post(&app, &registering(&text), &[]).await;
        assert_eq!(status, 200, "{answer:#}");
        assert!(answer.get("errors").is_none(), "{answer:#}");
    }
    let (_, fourth) = post(&app, &by_hash(&text_of(3, 1_500)), &[]).await;
    assert_eq!(
        fourth["errors"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_FOUND",
        "over the client's share: {fourth:#}"
    );
    // Redis holds at most its bound: three texts of 1.5 kB do not fit in 5,000 bytes with
    // their keeping, so the first registered left for the third.
    let mut conn = connect(&url).await;
    let held: u64 = redis::cmd("GET")
        .arg("dynapage:pq:{apq}:bytes")
        .query_async(&mut conn)
        .await
        .expect("GET");
    let texts: u64 = redis::cmd("HLEN")
        .arg("dynapage:pq:{apq}")
        .query_async(&mut conn)
        .await
        .expect("HLEN");
    assert!(held <= 5_000, "{held} bytes held");
    assert_eq!(texts, 2, "{held} bytes");
    let oldest: Option<String> = redis::cmd("HGET")
        .arg("dynapage:pq:{apq}")
        .arg(sha256_hex(&first))
        .query_async(&mut conn)
        .await
        .expect("HGET");
    assert!(oldest.is_none(), "the least recently registered left Redis");
    a_normal_page_is_served(&app, &[]).await;
    app.stop().await.expect("clean stop");
    drop(redis);
}

#[tokio::test]
async fn bodies_that_are_not_graphql_requests_pay_for_what_was_read() {
    let app = TestApp::cost_budgeted(20, 100, &[]).await;
    // 4,000 bytes that are not JSON: the failure floor of 4 KiB begun, 40 points each.
    let garbage = format!("{{{}", "x".repeat(3_999));
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let json = [("content-type", "application/json")];
        let answer = app.post_graphql(garbage.clone(), &json).await;
        statuses.push((
            answer.status,
            answer.json()["errors"][0]["extensions"]["code"].clone(),
        ));
    }
    let refused = (400, json!("BAD_REQUEST"));
    assert_eq!(statuses[..2], [refused.clone(), refused], "{statuses:?}");
    assert_eq!(statuses[3], (429, json!("RATE_LIMITED")), "{statuses:?}");
    // What is left (20 points: the refused ones took nothing) still pays for an honest page.
    a_normal_page_is_served(&app, &[]).await;
}
