//! `GET /demo/moderate`: the moderator's page of the storefront demo, the example a shop's
//! admin team copies. A static page and its script (`playground/demo/moderate.*`): everything
//! it shows, it asks of `/graphql` from the browser as the signed-in moderator (a bearer token
//! the moderator pastes, kept in the tab's `sessionStorage`), so the server draws nothing here
//! and no token ever reaches a server-rendered page or a cache.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::html;
use crate::http::NO_STORE;
use crate::http::embedded::{self, File, JS};

/// The page's script, served at `/demo/moderate.js` beside the storefront's files.
pub(super) const SCRIPT: File = (
    "moderate.js",
    JS,
    include_bytes!("../../playground/demo/moderate.js"),
);

const TEMPLATE: &str = include_str!("../../playground/demo/moderate.html");

/// A hash of the page's files (its script, the storefront's style sheet it shares, and the
/// template), for their URLs.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let template: File = ("moderate.html", "", TEMPLATE.as_bytes());
    embedded::version(&[SCRIPT, super::FILES[1], template])
});

/// `GET /demo/moderate`: the page, never cached (it is the same for everyone, but a shared
/// cache has no business keeping an admin page), under the storefront's Content-Security-Policy.
pub(super) async fn page() -> Response {
    let page = html::fill(TEMPLATE, |name| {
        (name == "version").then(|| VERSION.clone())
    });
    let mut response = page.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(super::CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_links_its_files_by_version_and_loads_nothing_from_elsewhere() {
        let html = html::fill(TEMPLATE, |name| {
            (name == "version").then(|| VERSION.clone())
        });
        for name in ["moderate.js", "demo.css"] {
            assert!(
                html.contains(&format!("\"/demo/{name}?v={}\"", *VERSION)),
                "{name}"
            );
        }
        assert!(!html.contains("{{"), "every placeholder filled");
        assert!(!TEMPLATE.contains("://"), "no absolute URL");
    }
}
