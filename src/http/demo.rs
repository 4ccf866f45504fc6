//! The storefront demo at `/demo`: one product's comments as a shop's frontend would show them,
//! with a numbered pager whose page lives in the URL, rating filters with counts and a
//! permalink per comment. It is the example frontend teams copy, so it is plain HTML, CSS and
//! one script (`playground/demo/`), with no framework and no build step; the script asks
//! `/graphql` for everything it shows. Like GraphiQL (`playground`), it is served from the
//! binary and loads nothing from another origin, which its Content-Security-Policy enforces.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::response::Response;

use super::embedded::{self, CSS, File, JS};

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

/// Scripts, styles and `fetch` from this server only; no inline script or style at all.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

static VERSION: LazyLock<String> = LazyLock::new(|| embedded::version(&FILES));

static PAGE: LazyLock<String> = LazyLock::new(|| TEMPLATE.replace("{{version}}", &VERSION));

/// `GET /demo`: the page; what it shows comes from its query string (see `demo.js`).
pub async fn page() -> Response {
    embedded::page(PAGE.as_str(), CONTENT_SECURITY_POLICY)
}

/// `GET /demo/{name}`: the page's script and style sheet.
pub async fn file(Path(name): Path<String>) -> Response {
    embedded::file(&FILES, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_links_its_files_by_version_and_nothing_else() {
        let page = PAGE.as_str();
        assert!(!page.contains("{{"), "every placeholder filled");
        for (name, _, _) in FILES {
            assert!(
                page.contains(&format!("\"/demo/{name}?v={}\"", *VERSION)),
                "{name}"
            );
        }
        assert!(!page.contains("://"), "no absolute URL");
    }
}
