//! The storefront demo's pages as search engines read them: served with their comments in the
//! HTML (Chromium with JavaScript off sees the comments and the pager, follows pager links and
//! submits the rating form), with a canonical URL that names a page whose content stays put,
//! `prev`/`next` links and JSON-LD a review snippet can be made of. Every page equals the API's
//! answer for the same URL (read here from the raw HTML and from `/graphql`), comment text is
//! escaped wherever it goes, and a page costs its client what its query costs over `/graphql`.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp};
use crate::storefront::demo::{COMMENTS, assert_shows_the_api_list, browse_with, link, view};

/// The query every demo page is drawn from.
const QUERY: &str = include_str!("../../../playground/demo/storefront.graphql");

/// A comment's text as the page must show it, and never run.
const HOSTILE_BODY: &str =
    "</script><script>alert(1)</script> & <!-- \"quoted\" 'single' --> <b>bold</b>\nline two";
const HOSTILE_AUTHOR: &str = "<img src=x onerror=alert(2)> & Zoë";

/// A fetched page: its status and HTML.
pub(crate) async fn fetch(app: &TestApp, url: &str) -> (u16, String) {
    let response = app
        .client
        .get(format!("{}{url}", app.address))
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a page"))
}

/// HTML text back to the text it escapes (the five entities the server writes).
fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text between `start` and the next `end` after it, in `html`.
fn between<'a>(html: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = html.find(start)? + start.len();
    let len = html[from..].find(end)?;
    Some(&html[from..from + len])
}

/// The comments of a page's HTML, in order, as the API's `nodes { id author body rating
/// createdAt }` would list them.
fn shown_comments(html: &str) -> Vec<Value> {
    html.split("<li class=\"comment")
        .skip(1)
        .map(|item| {
            let text = |start, end| unescape(between(item, start, end).expect(start));
            let stars = text("aria-label=\"", " out of 5 stars\"");
            json!({
                "id": text("data-comment-id=\"", "\""),
                "author": text("<span class=\"author\">", "</span>"),
                "body": text("<p class=\"body\">", "</p>"),
                "rating": stars.parse::<i64>().expect("a rating"),
                "createdAt": text("<time datetime=\"", "\""),
            })
        })
        .collect()
}

/// The page's JSON-LD, parsed: exactly one block, or none.
pub(crate) fn json_ld(html: &str) -> Option<Value> {
    let open = "<script type=\"application/ld+json\">";
    assert!(html.matches(open).count() <= 1, "one JSON-LD block at most");
    let block = between(html, open, "</script>")?;
    assert!(!block.contains('<'), "no markup in the block: {block}");
    Some(serde_json::from_str(block).expect("the JSON-LD parses"))
}

/// `href` of `<link rel="{rel}">` in a page's head, unescaped.
fn head_link(html: &str, rel: &str) -> Option<String> {
    between(html, &format!("<link rel=\"{rel}\" href=\""), "\"").map(unescape)
}

/// The comments the API answers for a demo URL, asked with the same arguments in the plainest
/// query: `first`/`last` and `offset`, or `containing` for a permalink.
async fn api_comments(app: &TestApp, url: &str) -> Vec<Value> {
    let view = view(url);
    // Under NEWEST, page 1 of `numbering=oldest` holds the list's last comments; every other
    // order numbers its pages from its start.
    let numbering = if view.from_oldest {
        "FROM_END"
    } else {
        "FROM_START"
    };
    let ratings = (!view.ratings.is_empty()).then_some(&view.ratings);
    let (parameters, arguments, variables) = match &view.comment {
        Some(comment) => (
            "$containing: ID, $numbering: PageNumbering",
            "first: $size, containing: $containing, numbering: $numbering",
            json!({ "sku": view.sku, "orderBy": view.order, "ratings": ratings,
                    "size": view.size, "containing": comment, "numbering": numbering }),
        ),
        None => (
            "$offset: Int",
            if view.from_oldest {
                "last: $size, offset: $offset"
            } else {
                "first: $size, offset: $offset"
            },
            json!({ "sku": view.sku, "orderBy": view.order, "ratings": ratings,
                    "size": view.size, "offset": (view.page - 1) * view.size }),
        ),
    };
    let query = format!(
        "query($sku: String!, $orderBy: CommentOrder, $ratings: [Int!], $size: Int, {parameters}) {{
           comments(sku: $sku, orderBy: $orderBy, ratings: $ratings, {arguments}) {{
             nodes {{ id author body rating createdAt }}
           }}
         }}"
    );
    let data = app.data(&query, variables).await;
    data["comments"]["nodes"].as_array().expect("nodes").clone()
}

#[tokio::test]
async fn chromium_without_javascript_reads_the_comments_and_follows_the_pager_and_the_form() {
    let app = TestApp::embedded(COMMENTS).await;
    let run = browse_with(
        &app,
        json!([
            { "goto": "/demo?page=3" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#pager a[data-page-link=last]" },
            { "goto": "/demo?numbering=oldest&page=2" },
            { "check": "#rating-5" },
            { "check": "#rating-2" },
            { "click": "#view-form button[type=submit]" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#comments > li:nth-child(3) a.permalink" },
            { "select": "#sort", "value": "oldest" },
            { "click": "#view-form button[type=submit]" },
            { "click": "#pager a[data-page-link=next]" },
        ]),
        false,
    )
    .await;
    let s = &run;
    let mut views = vec![];
    for snapshot in s {
        let step = &snapshot["step"];
        if step.get("check").is_some() || step.get("select").is_some() {
            views.push(view(snapshot["url"].as_str().expect("url")));
        } else {
            views.push(assert_shows_the_api_list(&app, snapshot).await);
        }
    }
    assert_eq!(
        s[0]["pageOf"], "Page 3 of 24",
        "the pager is in the HTML: {:#}",
        s[0]
    );
    assert_eq!(link(&s[0], "previous").map(|v| v.page), Some(2));
    let pages: Vec<i64> = views.iter().map(|v| v.page).collect();
    assert_eq!(pages, [3, 4, 24, 2, 2, 2, 1, 2, 2, 2, 1, 2]);
    assert_eq!(s[4]["url"], s[3]["url"], "a checkbox alone opens nothing");
    assert_eq!(s[5]["checked"], json!([5, 2]));
    assert_eq!(
        (views[6].ratings.as_slice(), views[6].from_oldest),
        (&[2, 5][..], true),
        "the form sends the ratings and keeps the numbering: {}",
        s[6]["url"]
    );
    let linked = s[7]["ids"][2].as_str().expect("a third comment");
    assert_eq!(views[8].comment.as_deref(), Some(linked));
    assert_eq!(s[8]["ids"], s[7]["ids"], "the permalink shows its page");
    assert_eq!(
        s[8]["focused"],
        Value::Null,
        "no script ran (it would focus the comment)"
    );
    assert_eq!(
        s[9]["url"], s[8]["url"],
        "choosing an order alone opens nothing"
    );
    assert_eq!(
        (views[10].order.as_str(), views[10].ratings.as_slice()),
        ("OLDEST", &[2, 5][..]),
        "Apply sends the order with the ratings: {}",
        s[10]["url"]
    );
    assert_eq!(views[11].order, "OLDEST", "the pager keeps the order");
}

#[tokio::test]
async fn every_page_equals_the_apis_answer_for_the_same_url() {
    let app = TestApp::embedded(COMMENTS).await;
    let deep = crate::helpers::newest_ids(&app, 100).await[57].clone();
    let summary = app
        .data(
            "query($sku: String!) { product(sku: $sku) { ratingSummary { total average } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    let summary = &summary["product"]["ratingSummary"];
    for url in [
        "/demo".to_owned(),
        "/demo?page=3".to_owned(),
        "/demo?page=24".to_owned(),
        "/demo?numbering=oldest&page=5&size=7".to_owned(),
        "/demo?ratings=5,2&page=2".to_owned(),
        "/demo?ratings=1&ratings=4&numbering=oldest".to_owned(),
        format!("/demo?comment={deep}"),
        format!("/demo?comment={deep}&numbering=oldest&size=20"),
        "/demo?sort=oldest".to_owned(),
        "/demo?sort=oldest&page=3&ratings=4,5".to_owned(),
        format!("/demo?sort=oldest&comment={deep}"),
    ] {
        let (status, html) = fetch(&app, &url).await;
        assert_eq!(status, 200, "{url}");
        let expected = api_comments(&app, &url).await;
        assert!(!expected.is_empty(), "{url} is a page with comments");
        assert_eq!(shown_comments(&html), expected, "{url}");

        let data = json_ld(&html).expect("JSON-LD");
        let reviews: Vec<Value> = expected
            .iter()
            .map(|c| {
                json!({
                    "@type": "Review",
                    "author": { "@type": "Person", "name": c["author"] },
                    "datePublished": c["createdAt"],
                    "reviewBody": c["body"],
                    "reviewRating": { "@type": "Rating", "ratingValue": c["rating"], "bestRating": 5, "worstRating": 1 },
                })
            })
            .collect();
        assert_eq!(data["review"], json!(reviews), "{url}");
        let average = summary["average"].as_f64().expect("an average");
        assert_eq!(
            data["aggregateRating"]["ratingValue"].as_f64(),
            Some((average * 100.0).round() / 100.0)
        );
        assert_eq!(data["aggregateRating"]["reviewCount"], summary["total"]);
    }
}

#[tokio::test]
async fn the_json_ld_carries_what_a_review_snippet_requires() {
    let app = TestApp::embedded(COMMENTS).await;
    let (_, html) = fetch(&app, "/demo?page=2").await;
    let data = json_ld(&html).expect("JSON-LD");
    assert_eq!(data["@context"], "https://schema.org");
    assert_eq!(data["@type"], "Product");
    assert_eq!(data["name"], DEMO_SKU, "a Product needs a name");
    let rating = &data["aggregateRating"];
    assert_eq!(rating["@type"], "AggregateRating");
    let value = rating["ratingValue"].as_f64().expect("ratingValue");
    assert!((1.0..=5.0).contains(&value), "{rating}");
    assert_eq!(rating["reviewCount"], COMMENTS);
    assert_eq!(rating["ratingCount"], COMMENTS);
    assert_eq!(
        (&rating["bestRating"], &rating["worstRating"]),
        (&json!(5), &json!(1))
    );
    let reviews = data["review"].as_array().expect("reviews");
    assert_eq!(reviews.len(), 10, "the page's comments");
    for review in reviews {
        assert_eq!(review["@type"], "Review");
        assert_eq!(review["author"]["@type"], "Person");
        assert!(
            !review["author"]["name"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
        );
        assert_eq!(review["reviewRating"]["@type"], "Rating");
        let stars = review["reviewRating"]["ratingValue"]
            .as_i64()
            .expect("ratingValue");
        assert!((1..=5).contains(&stars), "{review}");
        let published = review["datePublished"].as_str().expect("datePublished");
        assert!(
            chrono::DateTime::parse_from_rfc3339(published).is_ok(),
            "{published}"
        );
        assert!(!review["reviewBody"].as_str().unwrap_or_default().is_empty());
    }

    // A product without comments has nothing to offer a snippet, and asks not to be indexed.
    let (status, empty) = fetch(&app, "/demo?sku=NO_REVIEWS_YET").await;
    assert_eq!(status, 200);
    assert_eq!(json_ld(&empty), None);
    assert!(empty.contains(r#"<meta name="robots" content="noindex">"#));
    assert!(empty.contains("No comments yet."));
}

#[tokio::test]
async fn canonical_urls_name_pages_whose_comments_stay_put() {
    let app = TestApp::embedded(COMMENTS).await;
    let sku = format!("sku={DEMO_SKU}");
    let (_, first) = fetch(&app, "/demo").await;
    assert_eq!(head_link(&first, "canonical"), Some(format!("/demo?{sku}")));
    assert_eq!(head_link(&first, "prev"), None);
    assert_eq!(
        head_link(&first, "next"),
        Some(format!("/demo?{sku}&page=2"))
    );

    let oldest = format!("/demo?{sku}&page=3&numbering=oldest&ratings=2,5");
    let (_, page) = fetch(
        &app,
        &format!("/demo?numbering=oldest&page=3&ratings=5&ratings=2&{sku}"),
    )
    .await;
    assert_eq!(
        head_link(&page, "canonical"),
        Some(oldest.clone()),
        "the view's one URL"
    );
    assert_eq!(
        head_link(&page, "prev"),
        Some(format!("/demo?{sku}&page=2&numbering=oldest&ratings=2,5"))
    );
    assert_eq!(
        head_link(&page, "next"),
        Some(format!("/demo?{sku}&page=4&numbering=oldest&ratings=2,5"))
    );

    // Newest-first page 3 (comments 21 to 30 of 237, newest first) names the oldest-first page
    // that holds its first comment: the 217th oldest, on page 22.
    let (_, newest) = fetch(&app, "/demo?page=3").await;
    let canonical = head_link(&newest, "canonical").expect("a canonical URL");
    assert_eq!(canonical, format!("/demo?{sku}&page=22&numbering=oldest"));
    let first_comment = shown_comments(&newest)[0]["id"].clone();
    let (_, stable) = fetch(&app, &canonical).await;
    assert!(
        shown_comments(&stable)
            .iter()
            .any(|c| c["id"] == first_comment),
        "the canonical page holds it"
    );

    // New comments shift every newest-first page, but not the oldest-first ones.
    let before = shown_comments(&stable);
    for body in ["one", "two", "three"] {
        app.add_comment(None, DEMO_SKU, body, 5).await;
    }
    let (_, stable_after) = fetch(&app, &canonical).await;
    assert_eq!(
        shown_comments(&stable_after),
        before,
        "{canonical} kept its comments"
    );
    let (_, newest_after) = fetch(&app, "/demo?page=3").await;
    assert_ne!(
        shown_comments(&newest_after)[0]["id"],
        first_comment,
        "page 3 moved"
    );

    // An oldest-first page holds the comments of the oldest-numbered page of the same number.
    let (_, sorted) = fetch(&app, "/demo?sort=oldest&page=22").await;
    assert_eq!(head_link(&sorted, "canonical"), Some(canonical.clone()));
    let mut reversed = shown_comments(&sorted);
    reversed.reverse();
    assert_eq!(
        reversed, before,
        "the same comments, read from the other end"
    );

    // A permalink is canonical to the page it shows.
    let (_, permalink) = fetch(
        &app,
        &format!(
            "/demo?numbering=oldest&comment={}",
            first_comment.as_str().expect("an id")
        ),
    )
    .await;
    assert_eq!(head_link(&permalink, "canonical"), Some(canonical));
}

#[tokio::test]
async fn comment_text_is_escaped_in_the_html_and_in_the_json_ld() {
    let app = TestApp::embedded(0).await;
    app.data(
        "mutation($author: String!, $body: String!) { addComment(input: { sku: \"ESCAPES\", author: $author, body: $body, rating: 2 }) { comment { id } } }",
        json!({ "author": HOSTILE_AUTHOR, "body": HOSTILE_BODY }),
    )
    .await;
    let (status, html) = fetch(&app, "/demo?sku=ESCAPES").await;
    assert_eq!(status, 200);
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<b>bold"), "{html}");
    assert_eq!(
        html.matches("<script").count(),
        2,
        "the page's script and the JSON-LD, nothing else"
    );
    let shown = shown_comments(&html);
    assert_eq!(shown[0]["body"], HOSTILE_BODY);
    assert_eq!(shown[0]["author"], HOSTILE_AUTHOR);
    let data = json_ld(&html).expect("JSON-LD");
    assert_eq!(data["review"][0]["reviewBody"], HOSTILE_BODY);
    assert_eq!(data["review"][0]["author"]["name"], HOSTILE_AUTHOR);

    // What a browser makes of it: text, with the script on or off.
    for javascript in [false, true] {
        let run = browse_with(&app, json!([{ "goto": "/demo?sku=ESCAPES" }]), javascript).await;
        assert_eq!(run[0]["bodies"], json!([HOSTILE_BODY]), "{:#}", run[0]);
    }
}

#[tokio::test]
async fn a_page_costs_its_client_what_its_query_costs_over_graphql() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "237",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "100000",
        "--response-cache-bytes",
        "1000000",
    ])
    .await;
    let remaining = |response: &reqwest::Response| -> i64 {
        let field = response.headers()["ratelimit"].to_str().expect("text");
        let r = field.split(";r=").nth(1).expect("r=").split(';').next();
        r.and_then(|r| r.parse().ok()).expect("points left")
    };
    let get = |url: String| {
        let client = app.client.clone();
        async move { client.get(url).send().await.expect("sent") }
    };
    // The page's query over GET /graphql, with the variables the page sends for page `page`.
    let api_url = |page: i64| {
        let variables = json!({ "sku": DEMO_SKU, "orderBy": "NEWEST", "ratings": null,
                                "numbering": "FROM_START", "first": 10, "offset": (page - 1) * 10 });
        let url = format!("{}/graphql", app.address);
        let params = [("query", QUERY), ("variables", &variables.to_string())];
        reqwest::Url::parse_with_params(&url, params)
            .expect("a URL")
            .to_string()
    };
    let page_url = |page: i64| format!("{}/demo?page={page}", app.address);
    // What each request took from the budget (which refills at 1 point a second, and starts
    // full). A kept answer carries no `extensions.cost`, so this is how its price shows.
    let mut left = 100_000;
    let mut paid = |response: &reqwest::Response| {
        assert_eq!(response.status(), 200);
        let now = remaining(response);
        let took = left - now;
        left = now;
        took
    };
    for page in [1, 2, 4] {
        // The first answer is kept unverified; the page runs the same query again (and keeps
        // it verified), paying what the API's request paid (deeper offsets cost more).
        let api = paid(&get(api_url(page)).await);
        assert!(api > 10, "{api}");
        let drawn = paid(&get(page_url(page)).await);
        assert!(
            (api - 2..=api).contains(&drawn),
            "page {page} paid {drawn}, its query {api}"
        );
    }

    // From then on the page and the API are served the same kept answer: one index read, and
    // the price of the answer's bytes (1 point a KiB begun, as the API sends it: the page is
    // drawn from the plain JSON); and a 304 for a page whose ETag still holds.
    let hit = get(page_url(4)).await;
    let hit_paid = paid(&hit);
    let api_hit = get(api_url(4)).await;
    let api_paid = paid(&api_hit);
    let computed = api_hit.headers()["dynapage-cost"].clone();
    assert_ne!(computed, "items-read=0, store-queries=0, index-calls=1");
    assert_eq!(
        hit.headers()["dynapage-cost"],
        computed,
        "both say what computing the answer read, not whether it was kept"
    );
    let price = api_hit.bytes().await.expect("a body").len().div_ceil(1024) as i64;
    assert!(price >= 2, "{price}");
    // Every request pays at least for its own bytes (10 points a KiB): the API's GET for its
    // URL, the page for its query's text, never more than the URL's.
    let url = reqwest::Url::parse(&api_url(4)).expect("a URL");
    let bytes = url.query().unwrap_or_default().len();
    let floor = dynapage::graphql::bytes_floor(bytes) as i64;
    for took in [hit_paid, api_paid] {
        assert!(
            (price - 1..=price.max(floor)).contains(&took),
            "{took} for {price} ({floor})"
        );
    }
    assert!(
        (price.max(floor) - 1..=price.max(floor)).contains(&api_paid),
        "{api_paid}"
    );
    let etag = hit.headers()["etag"].clone();
    let not_modified = app
        .client
        .get(page_url(4))
        .header("if-none-match", etag.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(not_modified.status(), 304);
    assert_eq!(not_modified.headers()["etag"], etag);
}

#[tokio::test]
async fn a_spent_budget_is_told_in_an_html_page_with_retry_after() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "30",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "1000",
    ])
    .await;
    let mut refused = None;
    for _ in 0..10 {
        let response = app
            .client
            .get(format!("{}/demo", app.address))
            .send()
            .await
            .expect("sent");
        if response.status() == 429 {
            refused = Some(response);
            break;
        }
        assert_eq!(response.status(), 200);
    }
    let refused = refused.expect("the budget runs out within ten pages");
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(
        refused.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    let html = refused.text().await.expect("a page");
    assert!(html.contains("Too many requests"), "{html}");
    assert!(html.contains("data-state=\"error\""));
}
