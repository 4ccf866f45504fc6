//! The storefront demo (`/demo`) as a shopper uses it: headless Chromium, driven by
//! playwright-core (`tests/clients/browse-demo.mjs`) and unable to resolve any host but
//! 127.0.0.1, opens a page, clicks "Next", "Last", a rating checkbox and a permalink. Every view
//! it shows is compared with what `/graphql` answers for the same URL, asked here with plain
//! `first`/`last` and `offset` pages (page `p` of `n` is `offset: (p - 1) * n`), so the page's
//! own query (`pageCursors`, `containing`) is checked against the simplest one. Errors must show
//! a message and answer their HTTP status, never a blank page; the page and its files name no
//! other origin. `demo_pages` reads the same pages as search engines do (no JavaScript).
//!
//! Chromium is required, as for the GraphiQL test (`clients::browser`); so is `npm ci` in
//! `tests/clients` (playwright-core). Without either the tests fail, saying what to install.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::browser::{
    OFFLINE_FLAGS, assert_nothing_from_another_origin, attribute_values, chromium, is_local,
    local_files,
};
use crate::helpers::{ADD_COMMENT, AUTHOR, DELETE_COMMENT, DEMO_SKU, EDIT_COMMENT, TestApp};

/// The demo product's comments in these tests: 24 pages of 10, the last one holding 7.
pub(crate) const COMMENTS: u64 = 237;
/// The demo's page size when the URL gives none.
const SIZE: i64 = 10;

/// What a demo URL asks for, by the parameters `demo.js` documents.
#[derive(Debug)]
pub(crate) struct View {
    pub sku: String,
    /// The `CommentOrder` value `sort` names (`sort=oldest` is `OLDEST`).
    pub order: String,
    pub page: i64,
    pub from_oldest: bool,
    /// Ascending, without repeats (`ratings=5&ratings=2`, what the rating form sends, is 2, 5).
    pub ratings: Vec<i64>,
    pub size: i64,
    pub comment: Option<String>,
}

pub(crate) fn view(url: &str) -> View {
    let url = reqwest::Url::parse(&format!("http://demo{url}")).expect("a URL");
    assert_eq!(url.path(), "/demo");
    let mut view = View {
        sku: DEMO_SKU.to_owned(),
        order: "NEWEST".to_owned(),
        page: 1,
        from_oldest: false,
        ratings: vec![],
        size: SIZE,
        comment: None,
    };
    for (key, value) in url.query_pairs() {
        match &*key {
            "sku" => view.sku = value.into_owned(),
            "sort" => view.order = value.to_uppercase(),
            "page" => view.page = value.parse().expect("a page number"),
            "numbering" => view.from_oldest = value == "oldest",
            "ratings" => view.ratings.extend(
                value
                    .split(',')
                    .map(|r| r.parse::<i64>().expect("a rating")),
            ),
            "size" => view.size = value.parse().expect("a size"),
            "comment" => view.comment = Some(value.into_owned()),
            other => panic!("unexpected parameter {other} in {url}"),
        }
    }
    view.ratings.sort_unstable();
    view.ratings.dedup();
    // Other orders number their pages from their start.
    view.from_oldest &= view.order == "NEWEST";
    view
}

/// The ids of the page `view` names, newest first, and how many pages its filter has: what the
/// API answers to the plainest query for them.
async fn expected(app: &TestApp, view: &View) -> (Vec<String>, i64) {
    let (first, last) = if view.from_oldest {
        (None, Some(view.size))
    } else {
        (Some(view.size), None)
    };
    let data = app
        .data(
            "query($sku: String!, $orderBy: CommentOrder, $ratings: [Int!], $first: Int, $last: Int, $offset: Int) {
               comments(sku: $sku, orderBy: $orderBy, ratings: $ratings, first: $first, last: $last, offset: $offset) {
                 totalCount nodes { id }
               }
             }",
            json!({
                "sku": view.sku,
                "orderBy": view.order,
                "ratings": (!view.ratings.is_empty()).then_some(&view.ratings),
                "first": first,
                "last": last,
                "offset": (view.page - 1) * view.size,
            }),
        )
        .await;
    let comments = &data["comments"];
    let total = comments["totalCount"].as_i64().expect("totalCount");
    (ids(&comments["nodes"]), (total + view.size - 1) / view.size)
}

pub(crate) fn ids(nodes: &Value) -> Vec<String> {
    nodes
        .as_array()
        .expect("a list")
        .iter()
        .map(|node| node["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Runs `steps` in a fresh headless Chromium against `app` and returns a snapshot of the page
/// after each (see `browse-demo.mjs`); fails the test if the script fails, if the page threw,
/// or if the browser asked anything of another origin.
async fn browse(app: &TestApp, steps: Value) -> Vec<Value> {
    browse_with(app, steps, true).await
}

/// [`browse`], with JavaScript on or off (`javascript`).
pub(crate) async fn browse_with(app: &TestApp, steps: Value, javascript: bool) -> Vec<Value> {
    drive(
        app,
        "browse-demo.mjs",
        json!({ "steps": steps, "javaScript": javascript }),
    )
    .await
}

/// Runs a Node script of `tests/clients` that drives headless Chromium against `app` (with
/// `config` and the browser, its offline flags and the server's address) and prints
/// `{ snapshots, requests, pageErrors }`; fails the test if the script fails, if the page
/// threw, or if the browser asked anything of another origin. Returns the snapshots.
pub(crate) async fn drive(app: &TestApp, script: &str, mut config: Value) -> Vec<Value> {
    let mut args = vec!["--disable-gpu"];
    args.extend(OFFLINE_FLAGS);
    config["chromium"] = json!(chromium());
    config["args"] = json!(args);
    config["base"] = json!(app.address);
    let (success, output) = crate::helpers::node::node(script, &[&config.to_string()]).await;
    assert!(success, "{script} failed:\n{output}");
    let result: Value = serde_json::from_str(output.trim())
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}):\n{output}"));
    assert_eq!(result["pageErrors"], json!([]), "the page threw");
    for request in result["requests"].as_array().expect("requests") {
        let request = request.as_str().expect("a URL");
        assert!(
            request.starts_with(&format!("{}/", app.address)),
            "the browser asked another origin: {request}"
        );
    }
    result["snapshots"].as_array().expect("snapshots").clone()
}

/// Checks that a drawn view shows what the API answers for its URL: the same comments in the
/// same order, the current page marked in the pager, "Page X of Y", and the permalinked comment
/// (if any) highlighted and focused. Returns the view.
async fn assert_shows_the_api_page(app: &TestApp, snapshot: &Value) -> View {
    let view = assert_shows_the_api_list(app, snapshot).await;
    if let Some(comment) = &view.comment {
        assert_eq!(
            snapshot["focused"],
            json!(comment),
            "the linked comment has focus"
        );
    }
    view
}

/// [`assert_shows_the_api_page`] but for focus, which is the script's.
pub(crate) async fn assert_shows_the_api_list(app: &TestApp, snapshot: &Value) -> View {
    let view = view(snapshot["url"].as_str().expect("url"));
    assert_eq!(snapshot["state"], "ready", "{snapshot:#}");
    let (ids, pages) = expected(app, &view).await;
    assert!(!ids.is_empty(), "{view:?} is a page with comments");
    assert_eq!(snapshot["ids"], json!(ids), "the comments of {view:?}");
    if pages > 1 {
        assert_eq!(
            snapshot["pageOf"],
            json!(format!("Page {} of {pages}", view.page)),
            "{view:?}"
        );
        assert_eq!(snapshot["currentPage"], json!(view.page.to_string()));
    } else {
        assert_eq!(snapshot["pageOf"], Value::Null, "one page: no pager");
    }
    let checked: Vec<i64> = serde_json::from_value(snapshot["checked"].clone()).expect("numbers");
    let mut ratings = view.ratings.clone();
    ratings.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(checked, ratings, "the checked ratings of {view:?}");
    let highlighted = view.comment.iter().cloned().collect::<Vec<_>>();
    assert_eq!(snapshot["highlighted"], json!(highlighted), "{view:?}");
    view
}

/// The URL of a pager link in a snapshot, as `view` parses it.
pub(crate) fn link(snapshot: &Value, kind: &str) -> Option<View> {
    snapshot["links"][kind].as_str().map(view)
}

#[tokio::test]
async fn the_demo_pages_filters_and_permalinks_like_the_api() {
    let app = TestApp::embedded(COMMENTS).await;
    // A comment deep in the list, whose permalink must open page 6.
    let deep = crate::helpers::newest_ids(&app, 100).await[57].clone();

    let run = browse(
        &app,
        json!([
            { "goto": "/demo?page=3" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#pager a[data-page-link=last]" },
            { "click": "#rating-5" },
            { "click": "#rating-2" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#comments > li:nth-child(3) a.permalink" },
            { "click": "#rating-5" },
            { "goto": format!("/demo?comment={deep}") },
        ]),
    )
    .await;
    let s = &run;
    let mut views = vec![];
    for snapshot in s {
        views.push(assert_shows_the_api_page(&app, snapshot).await);
    }

    assert_eq!(s[0]["url"], "/demo?page=3", "no sku: the demo product");
    assert!(
        s[0]["title"]
            .as_str()
            .unwrap_or_default()
            .contains(DEMO_SKU),
        "{}",
        s[0]["title"]
    );
    assert_eq!(views[0].page, 3);
    assert_eq!(link(&s[0], "previous").map(|v| v.page), Some(2), "previous");
    assert_eq!(views[1].page, 4, "Next opens page 4");
    assert_eq!(views[2].page, 24, "Last opens page 24");
    assert_eq!(s[2]["ids"].as_array().map(Vec::len), Some(7));
    assert!(link(&s[2], "next").is_none(), "no next page after the last");

    assert_eq!(
        (views[3].ratings.as_slice(), views[3].page),
        (&[5][..], 1),
        "checking 5 stars opens page 1 of the 5-star comments"
    );
    assert_eq!(views[4].ratings, [2, 5], "and 2 stars adds them");
    assert_eq!(
        (views[5].page, views[5].ratings.as_slice()),
        (2, &[2, 5][..])
    );

    let linked = s[5]["ids"][2].as_str().expect("a third comment").to_owned();
    assert_eq!(views[6].comment.as_deref(), Some(linked.as_str()));
    assert_eq!(
        (views[6].page, views[6].ratings.as_slice()),
        (2, &[2, 5][..]),
        "the permalink opens the page that holds it, and says which in the URL"
    );
    assert_eq!(s[6]["ids"], s[5]["ids"]);

    assert_eq!(
        (
            views[7].ratings.as_slice(),
            views[7].page,
            &views[7].comment
        ),
        (&[2][..], 1, &None),
        "unchecking 5 stars leaves the 2-star comments, from page 1"
    );

    assert_eq!(views[8].comment.as_deref(), Some(deep.as_str()));
    assert_eq!(
        views[8].page, 6,
        "comment 58 of the newest-first list is on page 6"
    );

    // The rating checkboxes count what ratingSummary counts.
    let summary = app
        .data(
            "query($sku: String!) { product(sku: $sku) { ratingSummary { counts { rating count } } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    let counts: Vec<Value> = summary["product"]["ratingSummary"]["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|c| {
            json!([
                c["rating"],
                c["count"].as_i64().expect("a count").to_string()
            ])
        })
        .collect();
    let shown: Vec<Value> = s[0]["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|c| {
            let digits: String = c[1]
                .as_str()
                .unwrap_or_default()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            json!([c[0], digits])
        })
        .collect();
    assert_eq!(shown, counts);
    assert!(
        counts.iter().filter(|c| c[1] != "0").count() >= 3,
        "the demo data has several ratings: {counts:?}"
    );
}

#[tokio::test]
async fn the_demo_numbers_pages_from_the_oldest_when_asked() {
    let app = TestApp::embedded(COMMENTS).await;
    let run = browse(
        &app,
        json!([
            { "goto": "/demo?numbering=oldest&page=3" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#pager a[data-page-link=last]" },
            { "click": "#pager a[data-page-link=first]" },
            { "goto": "/demo?numbering=oldest&page=5&size=7" },
            { "click": "#comments > li:nth-child(4) a.permalink" },
            { "click": "#numbering a[data-numbering=newest]" },
        ]),
    )
    .await;
    let s = &run;
    let mut views = vec![];
    for snapshot in s {
        views.push(assert_shows_the_api_page(&app, snapshot).await);
    }
    assert!(views[..6].iter().all(|v| v.from_oldest), "{views:?}");
    let pages: Vec<i64> = views.iter().map(|v| v.page).collect();
    assert_eq!(pages, [3, 4, 24, 1, 5, 5, 1]);
    assert_eq!(
        s[2]["ids"].as_array().map(Vec::len),
        Some(7),
        "the last page holds the 7 newest comments"
    );
    assert_eq!(s[3]["ids"].as_array().map(Vec::len), Some(10));
    assert_eq!(
        views[5].comment.as_deref(),
        s[4]["ids"][3].as_str(),
        "the permalink keeps the numbering and size, and opens their page"
    );
    assert_eq!(views[5].size, 7);
    assert!(!views[6].from_oldest);
}

#[tokio::test]
async fn the_demo_sorts_with_its_selector() {
    let app = TestApp::embedded(COMMENTS).await;
    let run = browse(
        &app,
        json!([
            { "goto": "/demo?ratings=4,5&page=3&numbering=oldest" },
            { "select": "#sort", "value": "oldest" },
            { "click": "#pager a[data-page-link=next]" },
            { "click": "#rating-5" },
            { "click": "#comments > li:nth-child(2) a.permalink" },
            { "select": "#sort", "value": "newest" },
        ]),
    )
    .await;
    let s = &run;
    let mut views = vec![];
    for snapshot in s {
        views.push(assert_shows_the_api_page(&app, snapshot).await);
    }
    let seen: Vec<(&str, i64, &[i64])> = views
        .iter()
        .map(|v| (v.order.as_str(), v.page, v.ratings.as_slice()))
        .collect();
    assert_eq!(
        seen,
        [
            ("NEWEST", 3, &[4, 5][..]),
            ("OLDEST", 1, &[4, 5][..]),
            ("OLDEST", 2, &[4, 5][..]),
            ("OLDEST", 1, &[4][..]),
            ("OLDEST", 1, &[4][..]),
            ("NEWEST", 1, &[4][..]),
        ]
    );
    assert!(
        !views[1].from_oldest,
        "another order numbers its pages from its start"
    );
    assert_eq!(
        s[4]["ids"], s[3]["ids"],
        "a permalink in an order opens its page in that order"
    );
    assert_eq!(
        s[1]["status"]
            .as_str()
            .map(|t| t.ends_with("oldest first.")),
        Some(true),
        "{}",
        s[1]["status"]
    );
}

#[tokio::test]
async fn the_demo_says_what_went_wrong_with_its_http_status_instead_of_a_blank_page() {
    let app = TestApp::embedded(COMMENTS).await;
    let deleted = app.deleted_comment_id().await;
    let cases = [
        ("/demo?page=999".to_owned(), 404, "There is no page 999"),
        (
            "/demo?page=999999999&size=100".to_owned(),
            404,
            "There is no page 999999999",
        ),
        ("/demo?page=0".to_owned(), 400, "is not a page number"),
        ("/demo?page=two".to_owned(), 400, "is not a page number"),
        ("/demo?ratings=6".to_owned(), 400, "is not a rating"),
        ("/demo?size=1000".to_owned(), 400, "is not a page size"),
        (
            "/demo?numbering=sideways".to_owned(),
            400,
            "is not a numbering",
        ),
        ("/demo?sort=sideways".to_owned(), 400, "is not an order"),
        (
            "/demo?sku=no%20spaces".to_owned(),
            400,
            "This link does not work",
        ),
        (
            format!("/demo?comment={deleted}"),
            404,
            "This comment is not here",
        ),
        (
            format!("/demo?comment={deleted}&ratings=5"),
            404,
            "Look for it among all ratings",
        ),
        (
            "/demo?comment=not-an-id".to_owned(),
            400,
            "This link does not work",
        ),
    ];
    for (url, status, _) in &cases {
        let response = app
            .client
            .get(format!("{}{url}", app.address))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status().as_u16(), *status, "{url}");
        let content_type = response.headers()["content-type"].to_str().ok();
        assert_eq!(content_type, Some("text/html; charset=utf-8"), "{url}");
        let html = response.text().await.expect("a page");
        assert!(
            html.contains(r#"<meta name="robots" content="noindex">"#),
            "{url}"
        );
        assert!(!html.contains("rel=\"canonical\""), "{url}");
    }
    let steps: Vec<Value> = cases
        .iter()
        .map(|(url, _, _)| json!({ "goto": url }))
        .collect();
    let run = browse(&app, Value::from(steps)).await;
    assert_eq!(run.len(), cases.len());
    for (snapshot, (_, _, text)) in run.iter().zip(&cases) {
        assert_eq!(snapshot["state"], "error", "{snapshot:#}");
        assert_eq!(snapshot["ids"], json!([]));
        let error = snapshot["error"].as_str().unwrap_or_default();
        assert!(error.contains(text), "{text:?} in {snapshot:#}");
    }
}

#[tokio::test]
async fn the_demo_and_its_files_load_nothing_from_another_origin() {
    let app = TestApp::embedded(30).await;
    let response = app
        .client
        .get(format!("{}/demo", app.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let policy = response
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
    ] {
        assert!(policy.contains(directive), "{directive} in {policy:?}");
    }
    assert!(
        !policy.contains("unsafe"),
        "no inline script or style: {policy:?}"
    );
    let html = response.text().await.expect("the page");
    // The one absolute URL is JSON-LD's vocabulary, a name that nothing loads.
    let context = r#""@context":"https://schema.org""#;
    assert_eq!(html.matches(context).count(), 1, "{html}");
    let html = html.replace(context, "");

    let mut references = attribute_values(&html, "src");
    references.extend(attribute_values(&html, "href"));
    let files: HashSet<&str> = references
        .iter()
        .filter_map(|r| r.strip_prefix("/demo/"))
        .filter_map(|r| r.split('?').next())
        .collect();
    assert_eq!(
        files,
        HashSet::from(["demo.js", "demo.css"]),
        "{references:?}"
    );
    let demo_files: Vec<&str> = references
        .iter()
        .copied()
        .filter(|r| {
            assert!(r.starts_with('/') && is_local(r), "{r}");
            r.starts_with("/demo/")
        })
        .collect();
    for reference in &demo_files {
        assert!(reference.contains("?v="), "{reference} is versioned");
    }
    let mut texts = vec![("/demo".to_owned(), html.clone())];
    texts.extend(local_files(&app, &demo_files).await);
    assert_nothing_from_another_origin(&texts);
    for (name, text) in &texts {
        assert!(!text.contains("://"), "{name} names an origin");
        assert!(!text.contains("@import"), "{name} imports a file");
    }
}

#[tokio::test]
async fn the_demo_counts_new_comments_and_shows_edits_and_deletions_in_place() {
    let app = TestApp::embedded(0).await;
    let mut ids = Vec::new();
    for body in ["first", "second", "third"] {
        ids.push(app.add_comment(None, "LIVE_DEMO", body, 4).await);
        // `createdAt` has millisecond precision and ties are ordered by id, not by arrival:
        // comments written in separate milliseconds are newest first in the order written.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let arriving =
        json!({ "sku": "LIVE_DEMO", "author": AUTHOR, "body": "arrived live", "rating": 4 });
    let edited = json!({ "id": ids[1], "body": "edited while shown" });
    let selector = |id: &str, attribute: &str| format!("li[data-comment-id=\"{id}\"][{attribute}]");
    let run = browse(
        &app,
        json!([
            { "goto": "/demo?sku=LIVE_DEMO" },
            { "waitFor": "main[data-live=\"connected\"]" },
            { "post": { "query": ADD_COMMENT, "variables": arriving }, "waitFor": "#live:not([hidden])" },
            { "post": { "query": EDIT_COMMENT, "variables": edited }, "waitFor": selector(&ids[1], "data-updated") },
            { "post": { "query": DELETE_COMMENT, "variables": { "id": ids[0] } }, "waitFor": selector(&ids[0], "data-deleted") },
        ]),
    )
    .await;
    let opened = &run[1];
    let newest_first: Vec<&String> = ids.iter().rev().collect();
    assert_eq!(opened["ids"], json!(newest_first), "{opened:#}");
    assert_eq!(
        opened["live"],
        Value::Null,
        "no banner before anything arrives"
    );

    let arrived = &run[2];
    assert_eq!(
        arrived["ids"], opened["ids"],
        "the page being read is not reshuffled"
    );
    let banner = arrived["live"].as_str().unwrap_or_default();
    assert!(banner.starts_with("1 new comment"), "{banner}");

    let edited = &run[3];
    assert_eq!(
        edited["bodies"],
        json!(["third", "edited while shown", "first"])
    );

    let deleted = &run[4];
    assert_eq!(deleted["deleted"], json!([ids[0]]));
    assert_eq!(
        deleted["bodies"][2], "This comment was deleted.",
        "{deleted:#}"
    );
}
