//! The response cache (`http::response_cache`) and the validators it gives, read as raw bytes:
//! a repeat is answered from the cache with one index read, a write to the product makes the
//! next answer fresh, `If-None-Match` answers 304 over GET and POST, a viewer's request is
//! never cached, and the outcomes are counted. On the embedded index and on Redis (whose
//! versions `apply.lua` keeps). A hit is paid for by the bytes it sends; `Dynapage-Cost` and
//! `If-None-Match: *` tell nobody whether someone else asked the same query lately.

use serde_json::json;

use crate::helpers::raw_http::{Raw, graphql_path};
use crate::helpers::{DEMO_SKU, TestApp};

const PAGE: &str = "query($sku: String!) { comments(sku: $sku, first: 5) { totalCount edges { node { id body } } } }";
const CACHE_ON: [&str; 2] = ["--response-cache-bytes", "1048576"];

/// The path of a GET of the page of `sku`.
pub(crate) fn page_path(sku: &str) -> String {
    graphql_path(PAGE, &json!({ "sku": sku }))
}

async fn get_page(app: &TestApp, headers: &[(&str, &str)]) -> Raw {
    app.raw_request("GET", &page_path(DEMO_SKU), headers, "")
        .await
}

async fn post_page(app: &TestApp, headers: &[(&str, &str)]) -> Raw {
    let body = json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } }).to_string();
    let mut headers = headers.to_vec();
    headers.push(("Content-Type", "application/json"));
    app.raw_request("POST", "/graphql", &headers, &body).await
}

/// `dynapage_response_cache_total{outcome}` now, for a hit, a miss, a stale answer and a
/// bypass (counters are shared by the test process's servers, so tests compare differences).
async fn outcomes(app: &TestApp) -> [f64; 4] {
    let metrics = app.metrics().await;
    ["hit", "miss", "stale", "bypass"]
        .map(|outcome| metrics.value("dynapage_response_cache_total", &[("outcome", outcome)]))
}

fn cost(raw: &Raw) -> String {
    raw.header("dynapage-cost").expect("a cost header")
}

/// The story on one server: first answer, verified answer, hits, 304s, a write, a fresh answer.
async fn repeats_are_hits_until_a_write(app: &TestApp) {
    let first = get_page(app, &[]).await;
    assert_eq!(first.status, 200);
    assert!(
        first.json().get("extensions").is_none(),
        "{:?}",
        first.json()
    );
    assert!(
        first.header("etag").is_none(),
        "a first answer is not trusted"
    );
    assert_eq!(
        first.header("surrogate-key").as_deref(),
        Some("sku-DAFT_PUNK_TSHIRT")
    );
    assert_eq!(
        first.header("cache-control").as_deref(),
        Some("public, max-age=5, stale-while-revalidate=30")
    );
    assert!(cost(&first).contains("store-queries=1"), "{}", cost(&first));
    let verified = get_page(app, &[]).await;
    let etag = verified.header("etag").expect("an ETag once verified");
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "strong: {etag}"
    );
    let before = outcomes(app).await;
    let hit = get_page(app, &[]).await;
    assert_eq!(hit.status, 200);
    assert_eq!(hit.body, verified.body, "the same bytes");
    assert_eq!(hit.header("etag"), Some(etag.clone()));
    assert_eq!(
        cost(&hit),
        cost(&verified),
        "what computing it read, hit or not"
    );
    let not_modified = get_page(app, &[("If-None-Match", &etag)]).await;
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.clone()));
    let over_post = post_page(app, &[("If-None-Match", &format!("\"other\", W/{etag}"))]).await;
    assert_eq!(over_post.status, 304, "POST validates too");
    let after = outcomes(app).await;
    assert!(
        after[0] >= before[0] + 3.0,
        "three hits: {before:?} -> {after:?}"
    );

    app.add_comment(None, DEMO_SKU, "fresh news", 4).await;
    let fresh = crate::helpers::eventually("the write reaches the index", || async {
        let page = get_page(app, &[("If-None-Match", &etag)]).await;
        (page.status == 200).then_some(page)
    })
    .await;
    assert_ne!(fresh.header("etag"), Some(etag.clone()));
    let body = fresh.json();
    assert_eq!(
        body["data"]["comments"]["edges"][0]["node"]["body"],
        "fresh news"
    );
    assert!(outcomes(app).await[2] > after[2], "counted stale");
    let again = get_page(app, &[]).await;
    assert_eq!(again.body, fresh.body);
    assert_eq!(cost(&again), cost(&fresh));
}

#[tokio::test]
async fn on_the_embedded_index_a_repeat_costs_one_index_read_until_its_product_changes() {
    let app = TestApp::spawn(&["--demo-comments", "30", CACHE_ON[0], CACHE_ON[1]]).await;
    repeats_are_hits_until_a_write(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn on_redis_the_versions_kept_by_the_apply_script_decide_the_same() {
    let (app, _redis) = TestApp::on_redis(30, &CACHE_ON).await;
    repeats_are_hits_until_a_write(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_viewers_request_and_a_write_to_another_product_never_touch_the_cache_wrongly() {
    let app = TestApp::spawn(&["--demo-comments", "30", CACHE_ON[0], CACHE_ON[1]]).await;
    let before = outcomes(&app).await;
    for _ in 0..3 {
        let signed = get_page(&app, &[("Authorization", "Bearer anything")]).await;
        assert!(
            signed.header("etag").is_none(),
            "never from or into the cache"
        );
        assert!(signed.header("surrogate-key").is_none());
        assert!(
            signed
                .header("cache-control")
                .unwrap_or_default()
                .starts_with("private")
        );
        assert!(
            signed.json()["extensions"]["cost"].is_object(),
            "its cost in its body"
        );
    }
    assert!(
        outcomes(&app).await[3] >= before[3] + 3.0,
        "counted as bypass"
    );
    get_page(&app, &[]).await;
    let etag = get_page(&app, &[]).await.header("etag").expect("an ETag");
    app.add_comment(None, "ANOTHER_PRODUCT", "elsewhere", 4)
        .await;
    let page = get_page(&app, &[("If-None-Match", &etag)]).await;
    assert_eq!(
        page.status, 304,
        "another product's write changes nothing here"
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn with_the_cache_off_bodies_keep_their_cost_and_no_etag_is_given() {
    let app = TestApp::spawn(&["--demo-comments", "30", "--response-cache-bytes", "0"]).await;
    for _ in 0..2 {
        let page = get_page(&app, &[]).await;
        assert!(page.header("etag").is_none());
        assert!(page.json()["extensions"]["cost"]["storeQueries"].as_u64() >= Some(1));
        assert_eq!(
            page.header("surrogate-key").as_deref(),
            Some("sku-DAFT_PUNK_TSHIRT")
        );
    }
    app.stop().await.expect("clean stop");
}

/// Nothing is free (issues 22 and 42): a hit takes from its client's budget what it sends (1
/// point a KiB begun of its body as sent), a `304` what its request's bytes cost (every request
/// pays for its bytes), both show the budget in the `RateLimit` fields, and a client whose
/// budget is spent is refused hits and revalidations (429 `RATE_LIMITED`). Without the charge
/// the loop below would never be refused.
#[tokio::test]
async fn a_hit_costs_its_kib_sent_a_304_its_bytes_and_a_spent_budget_is_refused_both() {
    let app = TestApp::cost_budgeted(30, 100, &CACHE_ON).await;
    get_page(&app, &[]).await;
    let verified = get_page(&app, &[]).await;
    let etag = verified.header("etag").expect("an ETag once verified");
    let revalidate = [("If-None-Match", etag.as_str())];
    let first_304 = get_page(&app, &revalidate).await;
    let second_304 = get_page(&app, &revalidate).await;
    assert_eq!((first_304.status, second_304.status), (304, 304));
    // The request's URL is a few hundred bytes: a 304 takes its 10 points a KiB (2 to 4).
    let revalidation = first_304.remaining().saturating_sub(second_304.remaining());
    assert!(
        (1..=5).contains(&revalidation),
        "a 304 takes what its bytes cost: {:?} then {:?}",
        first_304.header("ratelimit"),
        second_304.header("ratelimit")
    );

    let price = (verified.body.len().div_ceil(1024) as u64).max(revalidation);
    let started = std::time::Instant::now();
    let mut left = second_304.remaining();
    let budget = left;
    let mut hits = 0;
    let refused = loop {
        let page = get_page(&app, &[]).await;
        if page.status != 200 {
            break page;
        }
        assert_eq!(page.body, verified.body);
        let now = page.remaining();
        assert!(
            now + price <= left + 1,
            "{now} after {left}: a hit took less than {price}"
        );
        left = now;
        hits += 1;
        assert!(hits <= 300, "hits never ran out of budget");
    };
    // `price` points a hit; the budget refills a point a second meanwhile.
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        hits >= budget / price && hits <= (budget + refilled) / price,
        "{hits} hits of {price} points from a budget of {budget}"
    );
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.json()["errors"][0]["extensions"]["code"],
        "RATE_LIMITED"
    );
    assert!(refused.header("retry-after").is_some());
    assert_eq!(refused.header("cache-control").as_deref(), Some("no-store"));

    let spent = get_page(&app, &revalidate).await;
    assert_eq!(spent.status, 429, "a spent budget revalidates no more");
    assert!(spent.header("ratelimit").is_some());
    app.stop().await.expect("clean stop");
}

const LARGE: &str = "query($sku: String!) { comments(sku: $sku, first: 100) { edges { cursor node { id author body rating createdAt } } } }";

/// A GET of `query` for the demo product from the client `from` (`X-Forwarded-For`, which
/// the server trusts from 127.0.0.1), with `headers`.
async fn get_as(app: &TestApp, from: &str, query: &str, headers: &[(&str, &str)]) -> Raw {
    let path = graphql_path(query, &json!({ "sku": DEMO_SKU }));
    let mut headers = headers.to_vec();
    headers.push(("X-Forwarded-For", from));
    app.raw_request("GET", &path, &headers, "").await
}

/// The attack of issue 42: one client repeating a large kept answer. It runs out of budget
/// after about budget / (the answer's size price) hits, as sent (gzip makes it cheaper, since
/// it sends less), where one point a hit let it go on for thousands; a client reading a small
/// page meanwhile pays a point or two a hit and is served throughout.
#[tokio::test]
async fn a_client_repeating_a_large_cached_answer_runs_out_by_its_size_while_small_pages_stay_cheap()
 {
    let large_cache = [CACHE_ON[0], "8388608", "--trusted-proxies", "127.0.0.1"];
    let app = TestApp::cost_budgeted(150, 3000, &large_cache).await;
    // The attacker computes the answer twice (first, verified), as anyone would.
    for _ in 0..2 {
        assert_eq!(get_as(&app, "10.9.0.1", LARGE, &[]).await.status, 200);
    }
    let first_hit = get_as(&app, "10.9.0.1", LARGE, &[]).await;
    let price = first_hit.body.len().div_ceil(1024) as u64;
    assert!(
        price >= 10,
        "a large answer: {} bytes",
        first_hit.body.len()
    );
    let budget = first_hit.remaining() + price;
    let gzip = [("Accept-Encoding", "gzip")];
    let zipped = get_as(&app, "10.9.0.2", LARGE, &gzip).await;
    assert_eq!(zipped.header("content-encoding").as_deref(), Some("gzip"));
    let zipped_price = zipped.body.len().div_ceil(1024) as u64;
    assert!(
        zipped_price < price,
        "{zipped_price} for gzip against {price}"
    );
    let taken = 3_000 - zipped.remaining();
    assert!(
        taken == zipped_price || taken + 1 == zipped_price,
        "priced as sent: {taken} taken for {zipped_price}"
    );

    let started = std::time::Instant::now();
    let mut hits = 1;
    let mut small = Vec::new();
    loop {
        let page = get_as(&app, "10.9.0.1", LARGE, &[]).await;
        if page.status == 429 {
            break;
        }
        assert_eq!(page.status, 200);
        hits += 1;
        assert!(hits <= 1_000, "the large hits never ran out");
        if hits % 20 == 0 {
            let honest = get_as(&app, "10.9.0.3", PAGE, &[]).await;
            assert_eq!(honest.status, 200, "a normal client keeps being served");
            small.push(honest);
        }
    }
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        hits >= budget / price && hits <= (budget + refilled) / price + 1,
        "{hits} hits of {price} points from {budget}"
    );
    // The honest client's hits (after its first two runs) cost what they send: a point or two.
    let hits_left: Vec<u64> = small.iter().skip(2).map(Raw::remaining).collect();
    for pair in hits_left.windows(2) {
        assert!(
            pair[0] - pair[1].min(pair[0]) <= 2,
            "a small hit took more than 2 points: {hits_left:?}"
        );
    }
    app.stop().await.expect("clean stop");
}

/// Privacy of recency: `Dynapage-Cost` says what computing the answer read, the same whether
/// this request computed it or a hit served it (it used to say `items-read=0` on a hit), and
/// `If-None-Match: *` is answered as if it were not sent, `200` with the body, whether or not
/// the answer is kept (it used to be `304` exactly when someone had asked lately).
#[tokio::test]
async fn neither_dynapage_cost_nor_if_none_match_star_tells_whether_someone_asked_lately() {
    let app = TestApp::spawn(&["--demo-comments", "30", CACHE_ON[0], CACHE_ON[1]]).await;
    let star = [("If-None-Match", "*")];
    let never_asked = get_page(&app, &star).await;
    assert_eq!(never_asked.status, 200);
    let computed_cost = cost(&never_asked);
    assert!(computed_cost.contains("store-queries=1"), "{computed_cost}");
    let verified = get_page(&app, &star).await;
    assert_eq!(verified.status, 200);
    let before = outcomes(&app).await;
    let kept = get_page(&app, &star).await;
    assert_eq!(kept.status, 200, "a kept answer is not a 304 to `*`");
    assert_eq!(kept.body, verified.body);
    assert!(outcomes(&app).await[0] > before[0], "it was a hit");
    assert_eq!(cost(&kept), computed_cost, "a hit says what computing read");
    let listed = [("If-None-Match", "\"nothing\", *")];
    assert_eq!(get_page(&app, &listed).await.status, 200);
    // A client's own ETag still revalidates.
    let etag = kept.header("etag").expect("an ETag");
    assert_eq!(
        get_page(&app, &[("If-None-Match", &etag)]).await.status,
        304
    );
    app.stop().await.expect("clean stop");
}
