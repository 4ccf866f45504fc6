//! The storefront demo at `/demo`: one product's comments as a shop's frontend would show them,
//! with a numbered pager whose page lives in the URL, rating filters with counts and a
//! permalink per comment. It is the example frontend teams copy: an HTML template, a style
//! sheet and one script (`playground/demo/`), with no framework and no build step, served from
//! the binary and loading nothing from another origin, which its Content-Security-Policy
//! enforces.
//!
//! **Server-rendered, so crawlers read it.** A page arrives with its comments, pager links and
//! rating form in the HTML (plain `<a href>` links and a GET form: it works without
//! JavaScript), a canonical URL and JSON-LD for search engines (`head`, `json_ld`); the script
//! then enhances it (live comments, dates in the reader's time zone, checkboxes that apply at
//! once). The page is drawn from the answer to its query (`storefront.graphql`, with the
//! variables `view` derives from the URL), asked of the API in-process through
//! `http::InProcessApi`: the same bytes `GET /graphql` would answer, from the same response
//! cache, paid from the same client's budget. A crawler hammering `/demo` spends its budget as
//! if it asked `/graphql` itself, and every view equals the API's answer for the same URL.
//!
//! It stands above the API it calls, as any client would: `cli::serve` hands [`routes`] to
//! `http::router`, which serves them beside its own under the same layers and knows nothing of
//! this module. Nothing here reaches past `InProcessApi` into the server's state.

mod answer;
mod head;
mod html;
mod json_ld;
mod moderate;
mod render;
mod verified;
mod view;

use std::sync::LazyLock;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use self::answer::{Answer, Failure};
use self::render::Rendered;
use self::view::{BadLink, View};
use crate::http::embedded::{self, CSS, File, JS};
use crate::http::{COST_HEADER, InProcessApi, NO_STORE, Peer, RATELIMIT, RATELIMIT_POLICY};

/// The files the page loads, by name under `/demo/`.
const FILES: [File; 2] = [
    (
        "demo.js",
        JS,
        include_bytes!("../../playground/demo/demo.js"),
    ),
    (
        "demo.css",
        CSS,
        include_bytes!("../../playground/demo/demo.css"),
    ),
];

const TEMPLATE: &str = include_str!("../../playground/demo/demo.html");

/// The query every page is drawn from.
const QUERY: &str = include_str!("../../playground/demo/storefront.graphql");

/// Scripts, styles and `fetch` from this server only; no inline script or style at all (the
/// JSON-LD is data, which no policy runs); the rating form submits to this server.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// A hash of the files and the template: part of every page's `ETag`, so a new build's page
/// is never taken for an old one's.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let template: File = ("demo.html", "", TEMPLATE.as_bytes());
    embedded::version(&[FILES[0], FILES[1], template])
});

/// Headers of the API's answer that hold for the page drawn from it too: who may keep it and
/// for how long, the budget it was paid from, what it read.
const KEPT_HEADERS: [HeaderName; 5] = [
    header::CACHE_CONTROL,
    header::RETRY_AFTER,
    RATELIMIT,
    RATELIMIT_POLICY,
    COST_HEADER,
];

/// The storefront's routes, `/demo` and its files, whose pages are drawn from `api`'s answers.
pub fn routes(api: InProcessApi) -> Router {
    Router::new()
        .route("/demo", get(page))
        .route("/demo/moderate", get(moderate::page))
        .route("/demo/{name}", get(file))
        .with_state(api)
}

/// `GET /demo`: the view its query string names (see `view`), drawn from the API's answer.
async fn page(
    State(api): State<InProcessApi>,
    peer: Peer,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let max_size = u32::try_from(api.max_page_size()).unwrap_or(u32::MAX);
    let view = match View::parse(uri.query().unwrap_or_default(), max_size) {
        Ok(view) => view,
        Err(BadLink(message)) => {
            let sku = View::parse(&sku_only(uri.query()), max_size)
                .map_or_else(|_| view::DEFAULT_SKU.to_owned(), |v| v.sku);
            let first = View::first_page(&sku).url();
            let links = [(first, "Go to the first page".to_owned())];
            let title = "This link does not work";
            let page = render::failure(&sku, StatusCode::BAD_REQUEST, title, &message, &links);
            return document(&page, HeaderMap::new());
        }
    };
    let Some(variables) = view.variables() else {
        let title = format!("There is no page {}", view.page);
        let links = [(view.at_page(1).url(), "Go to the first page".to_owned())];
        let detail = "No list of comments is that long.";
        let page = render::failure(&view.sku, StatusCode::NOT_FOUND, &title, detail, &links);
        return document(&page, HeaderMap::new());
    };
    let request = async_graphql::Request::new(QUERY)
        .variables(async_graphql::Variables::from_json(variables));
    let mut forwarded = HeaderMap::new();
    if let Some(etag) = headers.get(header::IF_NONE_MATCH).and_then(api_etags) {
        forwarded.insert(header::IF_NONE_MATCH, etag);
    }
    let answered = api.on_behalf_of(peer, &headers, &forwarded, request).await;
    let (parts, body) = answered.into_parts();
    let mut kept = HeaderMap::new();
    for name in KEPT_HEADERS.iter().chain([api.tag_header()]) {
        if let Some(value) = parts.headers.get(name) {
            kept.insert(name.clone(), value.clone());
        }
    }
    if let Some(etag) = parts.headers.get(header::ETAG).and_then(page_etag) {
        kept.insert(header::ETAG, etag);
    }
    if parts.status == StatusCode::NOT_MODIFIED {
        return (StatusCode::NOT_MODIFIED, kept).into_response();
    }
    let answer: Answer = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
        Err(_) => Answer::default(),
    };
    let product = answer.data.as_ref().and_then(|d| d.product.as_ref());
    let page = match product.and_then(|p| Some((p, p.comments.as_ref()?))) {
        Some((product, comments)) => {
            let statement = answer.data.as_ref();
            let statement = statement.and_then(|d| d.verification_statement.as_deref());
            render::reviews(
                &view,
                product,
                comments,
                !answer.errors.is_empty(),
                statement,
            )
        }
        None => {
            let filtered = !view.ratings.is_empty() || view.verified;
            let failure = Failure::of(&answer.errors, parts.status, filtered);
            render::failed(&view, &failure)
        }
    };
    document(&page, kept)
}

/// `sku=…` of a query string alone, to name the product of a link whose other parameters are
/// bad.
fn sku_only(query: Option<&str>) -> String {
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(query.unwrap_or_default()).unwrap_or_default();
    let sku: Vec<(String, String)> = params.into_iter().filter(|(k, _)| k == "sku").collect();
    serde_urlencoded::to_string(sku).unwrap_or_default()
}

/// The page's `ETag` for the API answer's: the answer's, tied to this build's template.
fn page_etag(api: &HeaderValue) -> Option<HeaderValue> {
    let inner = api.to_str().ok()?.trim_matches('"');
    HeaderValue::from_str(&format!("\"{inner}-{}\"", *VERSION)).ok()
}

/// The API's `ETag`s among a page's `If-None-Match`: those of pages this build drew.
fn api_etags(page: &HeaderValue) -> Option<HeaderValue> {
    let suffix = format!("-{}", *VERSION);
    let etags: Vec<String> = page
        .to_str()
        .ok()?
        .split(',')
        .filter_map(|tag| {
            let tag = tag.trim();
            let tag = tag.strip_prefix("W/").unwrap_or(tag).trim_matches('"');
            tag.strip_suffix(&suffix)
                .map(|inner| format!("\"{inner}\""))
        })
        .collect();
    HeaderValue::from_str(&etags.join(", "))
        .ok()
        .filter(|_| !etags.is_empty())
}

/// The HTML page of `page`, with `headers` (what the API's answer said of caching and cost).
fn document(page: &Rendered, headers: HeaderMap) -> Response {
    let html = html::fill(TEMPLATE, |name| {
        Some(match name {
            "version" => VERSION.clone(),
            "title" => html::esc(&page.title).to_string(),
            "head" => page.head.clone(),
            "main" => page.main.clone(),
            "product" => page.product.clone(),
            "summary" => page.summary.clone(),
            "filters" => page.filters.clone(),
            "status" => html::esc(&page.status_line).to_string(),
            "error" => page.error.clone(),
            "comments" => page.comments.clone(),
            "pager" => page.pager.clone(),
            _ => return None,
        })
    });
    let mut response = (page.status, headers, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static(NO_STORE));
    response
}

/// `GET /demo/{name}`: the pages' scripts and style sheet.
async fn file(Path(name): Path<String>) -> Response {
    embedded::file(&[FILES[0], FILES[1], moderate::SCRIPT], &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_links_its_files_by_version_and_fills_every_placeholder() {
        let page = render::failure("A", StatusCode::BAD_REQUEST, "t", "d", &[]);
        let response = document(&page, HeaderMap::new());
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let html = html::fill(TEMPLATE, |name| {
            (name == "version").then(|| VERSION.clone())
        });
        for (name, _, _) in FILES {
            assert!(
                html.contains(&format!("\"/demo/{name}?v={}\"", *VERSION)),
                "{name}"
            );
        }
        let filled = html::fill(TEMPLATE, |_| Some(String::new()));
        assert!(!filled.contains("{{"), "every placeholder filled");
        assert!(!TEMPLATE.contains("://"), "no absolute URL");
    }

    #[test]
    fn a_pages_etag_stands_for_the_api_answers_of_this_build_only() {
        let api = HeaderValue::from_static("\"abc123\"");
        let page = page_etag(&api).expect("an ETag");
        assert_eq!(
            page.to_str().ok(),
            Some(format!("\"abc123-{}\"", *VERSION).as_str())
        );
        assert_eq!(api_etags(&page), Some(api.clone()));
        let weak_and_other = HeaderValue::from_str(&format!(
            "\"x-old\", W/{}",
            page.to_str().unwrap_or_default()
        ))
        .expect("a header");
        assert_eq!(api_etags(&weak_and_other), Some(api));
        assert_eq!(api_etags(&HeaderValue::from_static("*")), None);
        assert_eq!(api_etags(&HeaderValue::from_static("\"abc123-0ld\"")), None);
    }
}
