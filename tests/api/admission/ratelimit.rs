//! Rate limits over real HTTP: a client over its cost or writes budget gets 429 with
//! `Retry-After` and `RATE_LIMITED`, spends and writes nothing, and passes again once the budget
//! has refilled; two server processes sharing one `redis-server` keep one budget; the address
//! comes from `X-Forwarded-For` only through a trusted proxy; with Redis down each process
//! limits on its own; and every response says the budget in `extensions.cost`.
//!
//! Budgets here refill at 1 point a second (or 3 writes a minute), so nothing a test does
//! between two requests refills a whole query's cost: the assertions count requests, never
//! time them.

use std::time::Duration;

use dynapage::ratelimit::{
    Charge, ClientKey, Limit, MemoryLimiter, RateLimiter, RateLimits, RedisLimiter,
};
use dynapage::redis::{RedisConfig, RedisHandle};
use serde_json::{Value, json};

use crate::helpers::process::ServerProcess;
use crate::helpers::raw_http::Reply;
use crate::helpers::{Api, TestApp};
use crate::support::redis_server::{RedisServer, shared_url, unique_prefix};

/// Complexity 2 (`product` and `sku`): the cheapest query that reaches a resolver.
const CHEAP: &str = r#"{ product(sku: "RATE_LIMITED") { sku } }"#;
const ADD_TWO: &str = r#"mutation {
  a: addComment(input: { sku: "RATE_WRITES", author: "a", body: "one", rating: 5 }) { comment { id } }
  b: addComment(input: { sku: "RATE_WRITES", author: "b", body: "two", rating: 4 }) { comment { id } }
}"#;
const ADD_ONE: &str = r#"mutation {
  addComment(input: { sku: "RATE_WRITES", author: "c", body: "three", rating: 3 }) { comment { id } }
}"#;

/// One HTTP answer of `/graphql`, read for its budget.
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    cache_control: Option<String>,
    body: Value,
}

/// An embedded server whose cost budget is `burst` points refilled at 1 a second, writes off.
async fn cost_limited(burst: u32, extra: &[&str]) -> TestApp {
    TestApp::cost_budgeted(0, burst, extra).await
}

impl Answer {
    fn cost(&self) -> &Value {
        &self.body["extensions"]["cost"]
    }

    fn available(&self) -> u64 {
        self.cost()["throttleStatus"]["currentlyAvailable"]
            .as_u64()
            .unwrap_or_else(|| panic!("a throttle status: {:#}", self.body))
    }

    fn code(&self) -> Option<&str> {
        self.body["errors"][0]["extensions"]["code"].as_str()
    }

    fn message(&self) -> &str {
        self.body["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
    }

    /// Asserts a rate-limit refusal: 429, `RATE_LIMITED`, no `data`, nothing read.
    fn assert_refused(&self) {
        assert_eq!(self.status, 429, "{self:#?}");
        assert_eq!(self.code(), Some("RATE_LIMITED"), "{self:#?}");
        assert!(
            self.body.get("data").is_none(),
            "nothing executed: {self:#?}"
        );
        assert_eq!(self.cost()["actualQueryCost"], Value::Null, "{self:#?}");
        assert_eq!(self.cost()["itemsRead"], 0, "{self:#?}");
        assert_eq!(self.cost()["storeQueries"], 0, "{self:#?}");
        assert_eq!(self.cache_control.as_deref(), Some("no-store"));
    }

    fn assert_ok(&self) {
        assert_eq!(self.status, 200, "{self:#?}");
        assert!(self.body.get("errors").is_none(), "{self:#?}");
    }
}

/// POSTs `query` to `server` with extra `headers`.
async fn post(server: &Api, query: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = server
        .client
        .post(server.url("/graphql"))
        .json(&json!({ "query": query }));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let reply = Reply::of(request).await;
    Answer {
        status: reply.status,
        retry_after: reply
            .header("retry-after")
            .map(|v| v.parse().expect("Retry-After in seconds")),
        cache_control: reply.header("cache-control").map(str::to_owned),
        body: reply.json(),
    }
}

#[tokio::test]
async fn a_spent_budget_answers_429_with_retry_after_and_rate_limited_and_refills() {
    let app = cost_limited(6, &[]).await;
    for left in [4, 2, 0] {
        let answer = post(&app, CHEAP, &[]).await;
        answer.assert_ok();
        assert_eq!(answer.cost()["requestedQueryCost"], 2);
        assert_eq!(answer.cost()["actualQueryCost"], 2);
        assert_eq!(answer.available(), left, "{answer:#?}");
    }
    // Under both media types, a refusal is 429.
    for accept in ["application/json", "application/graphql-response+json"] {
        let refused = post(&app, CHEAP, &[("accept", accept)]).await;
        refused.assert_refused();
        let retry = refused.retry_after.expect("a Retry-After header");
        assert!((1..=2).contains(&retry), "2 points at 1 a second: {retry}");
        assert!(refused.message().contains("retry in"), "{refused:#?}");
        assert_eq!(refused.cost()["requestedQueryCost"], 2);
        assert!(refused.available() < 2, "{refused:#?}");
    }
    // Refused requests took nothing: after Retry-After the query passes.
    let retry = post(&app, CHEAP, &[])
        .await
        .retry_after
        .expect("Retry-After");
    tokio::time::sleep(Duration::from_secs(retry)).await;
    post(&app, CHEAP, &[]).await.assert_ok();
}

#[tokio::test]
async fn a_query_costing_more_than_the_whole_budget_is_told_it_can_never_pass() {
    let app = cost_limited(1, &[]).await;
    let refused = post(&app, CHEAP, &[]).await;
    refused.assert_refused();
    assert_eq!(refused.retry_after, None, "waiting would not help");
    assert!(refused.message().contains("never pass"), "{refused:#?}");
    assert_eq!(refused.available(), 1, "the budget is untouched");
}

#[tokio::test]
async fn writes_are_counted_per_root_field_and_a_refused_mutation_writes_nothing() {
    let app = TestApp::writes_budgeted(0, 3).await;
    post(&app, ADD_TWO, &[]).await.assert_ok();
    // Two aliases are two writes: one is left, so two more are refused as a whole.
    let refused = post(&app, ADD_TWO, &[]).await;
    refused.assert_refused();
    assert!(refused.message().contains("3 writes"), "{refused:#?}");
    let retry = refused.retry_after.expect("Retry-After");
    assert!(
        (1..=20).contains(&retry),
        "one write comes back every 20 s: {retry}"
    );
    assert_eq!(
        refused.cost()["throttleStatus"],
        Value::Null,
        "the cost budget is off"
    );
    let page = app
        .data(
            r#"{ comments(sku: "RATE_WRITES", first: 10) { edges { node { author } } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        page["comments"]["edges"].as_array().map(Vec::len),
        Some(2),
        "the refused mutation wrote nothing: {page:#}"
    );
    post(&app, ADD_ONE, &[]).await.assert_ok();
    post(&app, ADD_ONE, &[]).await.assert_refused();
    // Queries spend no writes.
    post(&app, CHEAP, &[]).await.assert_ok();
    let four = format!(
        "mutation {{ {} }}",
        (0..4)
            .map(|i| format!(
                r#"m{i}: addComment(input: {{ sku: "RATE_WRITES", author: "d", body: "x", rating: 1 }}) {{ comment {{ id }} }}"#
            ))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let never = post(&app, &four, &[]).await;
    never.assert_refused();
    assert_eq!(never.retry_after, None);
    assert!(never.message().contains("never pass"), "{never:#?}");
}

#[tokio::test]
async fn extensions_cost_says_the_budget_on_every_response() {
    let app = TestApp::spawn(&["--demo-comments", "30", "--rate-limit-cost", "1000"]).await;
    let page = post(
        &app,
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 10) { edges { cursor } pageInfo { hasNextPage } } }"#,
        &[],
    )
    .await;
    page.assert_ok();
    let cost = page.cost();
    let requested = cost["requestedQueryCost"].as_u64().expect("a cost");
    assert!(requested > 10, "ten edges and more: {cost}");
    assert_eq!(cost["actualQueryCost"], requested);
    assert_eq!(
        cost["throttleStatus"],
        json!({ "maximumAvailable": 10000, "currentlyAvailable": 10000 - requested, "restoreRate": 1000 })
    );
    assert_eq!(cost["itemsRead"], 11, "beside what the page read");
    assert!(
        cost["storeQueries"].is_u64() && cost["indexCalls"].is_u64(),
        "{cost}"
    );

    let mutation = post(&app, ADD_ONE, &[]).await;
    mutation.assert_ok();
    assert!(mutation.cost()["requestedQueryCost"].as_u64() > Some(0));
    assert_eq!(
        mutation.cost()["actualQueryCost"],
        mutation.cost()["requestedQueryCost"]
    );

    // Requests that fail parsing or validation pay the failure floor (10 points per KiB begun)
    // and see the budget it left. (Until issue 22 they spent nothing: requestedQueryCost null.)
    for invalid in ["{ product(sku: \"A\") { nope } }", "{ product("] {
        let answer = post(&app, invalid, &[]).await;
        assert_eq!(
            answer.code(),
            Some("GRAPHQL_VALIDATION_FAILED"),
            "{answer:#?}"
        );
        assert_eq!(answer.cost()["requestedQueryCost"], 10);
        assert_eq!(answer.cost()["actualQueryCost"], 10);
        assert!(
            answer.available() <= 9990,
            "10 points were taken: {answer:#?}"
        );
    }

    // Without limits the cost is still reported; the budget is null.
    let unlimited = TestApp::embedded(0).await;
    let answer = post(&unlimited, CHEAP, &[]).await;
    answer.assert_ok();
    assert_eq!(
        answer.cost(),
        &json!({
            "requestedQueryCost": 2, "actualQueryCost": 2, "throttleStatus": null,
            "itemsRead": 0, "storeQueries": 0, "indexCalls": 0
        })
    );
}

#[tokio::test]
async fn x_forwarded_for_names_the_client_only_from_a_trusted_proxy() {
    // A budget of one CHEAP query per client.
    let proxied = cost_limited(2, &["--trusted-proxies", "10.0.0.0/8,127.0.0.1"]).await;
    let from = |client: &'static str| [("x-forwarded-for", client)];
    post(&proxied, CHEAP, &from("203.0.113.1"))
        .await
        .assert_ok();
    post(&proxied, CHEAP, &from("203.0.113.1"))
        .await
        .assert_refused();
    post(&proxied, CHEAP, &from("203.0.113.2"))
        .await
        .assert_ok();
    // What the client writes left of the right-most untrusted address does not count...
    post(&proxied, CHEAP, &from("198.51.100.9, 203.0.113.2"))
        .await
        .assert_refused();
    // ...while trusted proxies right of it are walked through.
    post(&proxied, CHEAP, &from("203.0.113.3, 10.1.2.3"))
        .await
        .assert_ok();
    post(&proxied, CHEAP, &from("203.0.113.3"))
        .await
        .assert_refused();
    // The proxy itself, without the header, is a client of its own.
    post(&proxied, CHEAP, &[]).await.assert_ok();

    // From a peer that is not trusted, the header is ignored: every request is 127.0.0.1's.
    let direct = cost_limited(2, &[]).await;
    post(&direct, CHEAP, &from("203.0.113.1")).await.assert_ok();
    post(&direct, CHEAP, &from("203.0.113.2"))
        .await
        .assert_refused();
}

#[tokio::test]
async fn two_server_processes_sharing_one_redis_server_enforce_one_budget_that_refills() {
    let redis = RedisServer::start();
    let (url, prefix) = (redis.url(), unique_prefix());
    // Ten points at 1 a second: five CHEAP queries, whichever process answers them.
    let args = [
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-prefix",
        &prefix,
        "--demo-comments",
        "0",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "10",
        "--rate-limit-writes",
        "0",
    ];
    let mut first = ServerProcess::uncached(&args).await;
    let mut second = ServerProcess::uncached(&args).await;
    let (a, b) = (Api::clone(&first), Api::clone(&second));

    let mut passed = Vec::new();
    let refused = loop {
        let server = if passed.len() % 2 == 0 { &a } else { &b };
        let answer = post(server, CHEAP, &[]).await;
        if answer.status == 429 {
            break answer;
        }
        answer.assert_ok();
        passed.push(answer.available());
        assert!(passed.len() <= 6, "two budgets, not one: {passed:?}");
    };
    refused.assert_refused();
    assert!(passed.len() >= 5, "{passed:?}");
    assert!(
        passed.windows(2).all(|w| w[1] < w[0]),
        "each process sees what the other spent: {passed:?}"
    );
    // The other process refuses too: the budget is the same.
    let other = if passed.len() % 2 == 0 { &b } else { &a };
    post(other, CHEAP, &[]).await.assert_refused();

    // It refills for both.
    let retry = refused.retry_after.expect("Retry-After");
    tokio::time::sleep(Duration::from_secs(retry)).await;
    post(other, CHEAP, &[]).await.assert_ok();

    for server in [&mut first, &mut second] {
        let status = server.terminate(Duration::from_secs(15)).await;
        assert!(status.success(), "{status:?}");
    }
}

#[tokio::test]
async fn with_redis_down_each_server_keeps_the_limits_in_process_until_redis_is_back() {
    let (app, mut redis) = TestApp::without_its_index(
        0,
        &[
            "--rate-limit-cost",
            "1",
            "--rate-limit-cost-burst",
            "4",
            "--rate-limit-writes",
            "0",
        ],
    )
    .await;
    // Redis is stopped: the budget still holds, in this process's buckets, which are full at
    // the first outage (a client within its budget is served on, not refused), and hold one
    // burst: then the rate.
    let mut served = 0;
    let refused = loop {
        let answer = post(&app, CHEAP, &[]).await;
        if answer.status == 429 {
            break answer;
        }
        answer.assert_ok();
        served += 1;
        assert!(served <= 4, "one burst of 4 points, not more");
    };
    assert!(served >= 1, "the first request of the outage is served");
    refused.assert_refused();
    let retry = refused.retry_after.expect("Retry-After");
    assert!(retry <= 4, "the rate refills it: {retry} s");
    tokio::time::sleep(Duration::from_secs(retry)).await;
    post(&app, CHEAP, &[]).await.assert_ok();
    // Every series is served from start-up at 0 (`http::metrics`): these moved.
    let metrics = app.metrics().await;
    for (name, labels) in [
        ("dynapage_rate_limit_store_errors_total", &[][..]),
        ("dynapage_rate_limit_fallback_checks_total", &[]),
        ("dynapage_rate_limited_total", &[("limit", "cost")]),
    ] {
        assert!(
            metrics.value(name, labels) >= 1.0,
            "{name} {labels:?} counted:\n{}",
            metrics.text
        );
    }

    // Back (empty): within a second or so the budgets are kept in Redis again.
    redis.restart();
    let url = redis.url();
    let key = "dynapage:rl:{ip:127.0.0.1}:c";
    let kept = crate::helpers::eventually("the budget kept in Redis again", || {
        let (app, url) = (&app, url.clone());
        async move {
            post(app, CHEAP, &[]).await;
            let client = redis::Client::open(url).expect("redis url");
            let mut conn = client.get_multiplexed_async_connection().await.ok()?;
            let tat: Option<String> = redis::cmd("GET")
                .arg(key)
                .query_async(&mut conn)
                .await
                .ok()?;
            tat
        }
    })
    .await;
    assert!(kept.parse::<f64>().is_ok(), "{kept}");
}

/// The same charges, in the same order, answered by the in-process limiter and by the Redis
/// script: both stores do the same arithmetic.
#[tokio::test]
async fn the_redis_script_and_the_in_process_limiter_answer_alike() {
    let prefix = unique_prefix();
    let redis = RedisHandle::open(RedisConfig::new(&shared_url(), &prefix))
        .expect("a valid Redis configuration");
    let limits = RateLimits::new(1, 10, 2);
    let stores = [
        RateLimiter::Memory(MemoryLimiter::new(limits).into()),
        RateLimiter::Redis(RedisLimiter::new(&redis, limits).into()),
    ];
    let client = ClientKey::new(Some("alike"), std::net::Ipv4Addr::LOCALHOST.into());
    let charges = [
        (3, 0),
        (3, 1),
        (1, 1),
        (3, 1),
        (4, 0),
        (11, 0),
        (0, 3),
        (1, 0),
        (0, 0),
    ];
    let mut answers = Vec::new();
    for store in &stores {
        let mut seen = Vec::new();
        for (cost, writes) in charges {
            let verdict = store.check(&client, Charge { cost, writes }).await;
            seen.push((
                verdict.refused.map(|r| (r.limit, r.retry_after.is_some())),
                verdict.cost.map(|c| c.currently_available),
            ));
        }
        answers.push(seen);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0],
        vec![
            (None, Some(7)),
            (None, Some(4)),
            (None, Some(3)),
            (Some((Limit::Writes, true)), Some(3)),
            (Some((Limit::Cost, true)), Some(3)),
            (Some((Limit::Cost, false)), Some(3)),
            (Some((Limit::Writes, false)), Some(3)),
            (None, Some(2)),
            (None, Some(2)),
        ]
    );
}

/// A Redis blip refuses no client that keeps to its budget: a steady reader (about four pages
/// a second, at most half its rate) and a hostile one (as fast as it can) share a server whose Redis
/// stops mid-way. The reader is never refused, before, during or after the outage (its pages
/// lose only what the index gives: `totalCount` is null with `INDEX_UNAVAILABLE`); the hostile
/// client is refused, and during the outage gets no more than one burst plus the rate.
#[tokio::test]
async fn a_redis_blip_refuses_no_reader_within_its_budget_and_holds_a_flooding_one() {
    let (app, mut redis) = TestApp::on_redis(
        3,
        &[
            "--rate-limit-cost",
            "60",
            "--rate-limit-cost-burst",
            "180",
            "--rate-limit-writes",
            "0",
            "--trusted-proxies",
            "127.0.0.1",
            "--response-cache-bytes",
            "0",
        ],
    )
    .await;
    let reader = [("x-forwarded-for", "203.0.113.7")];
    let flooder = [("x-forwarded-for", "203.0.113.66")];
    const PAGE: &str =
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 2) { totalCount nodes { id } } }"#;
    let page_cost = post(&app, PAGE, &reader).await.cost()["actualQueryCost"]
        .as_u64()
        .expect("a cost");
    assert!(
        page_cost * 4 <= 30,
        "the reader keeps to half its rate: {page_cost}"
    );

    let (mut reader_refused, mut degraded) = (0, 0);
    let mut flood_served_in_outage = 0u64;
    let started = std::time::Instant::now();
    let outage = Duration::from_secs(3)..Duration::from_secs(6);
    let (mut stopped, mut restarted) = (false, false);
    while started.elapsed() < Duration::from_secs(8) {
        let now = started.elapsed();
        if now >= outage.start && !stopped {
            redis.stop();
            stopped = true;
        }
        if now >= outage.end && !restarted {
            redis.restart();
            restarted = true;
        }
        let answer = post(&app, PAGE, &reader).await;
        if answer.status == 429 {
            reader_refused += 1;
        } else {
            assert_eq!(answer.status, 200, "{answer:#?}");
            if answer.body["data"]["comments"]["totalCount"].is_null() {
                assert_eq!(answer.code(), Some("INDEX_UNAVAILABLE"), "{answer:#?}");
                degraded += 1;
            }
        }
        // The flooder, between two of the reader's requests: as many as it can in 250 ms.
        let until = std::time::Instant::now() + Duration::from_millis(250);
        while std::time::Instant::now() < until {
            let flood = post(&app, PAGE, &flooder).await;
            let in_outage = outage.contains(&started.elapsed());
            if flood.status == 200 && in_outage {
                flood_served_in_outage += page_cost;
            }
        }
    }
    assert_eq!(
        reader_refused, 0,
        "the reader within its budget is never refused"
    );
    assert!(
        degraded >= 1,
        "the outage was seen: pages lost their totalCount"
    );
    // One burst per server, then the rate, over the three seconds of the outage (and a
    // second of slack for the moment Redis takes to stop).
    let most = 180 + 60 * 4;
    assert!(
        flood_served_in_outage <= most,
        "the flooder spent {flood_served_in_outage} points in the outage, more than {most}"
    );
    let refused = post(&app, PAGE, &flooder).await;
    assert_eq!(refused.status, 429, "{refused:#?}");
    app.stop().await.expect("clean stop");
}
