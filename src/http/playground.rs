//! The GraphiQL page at `/`, served entirely from the binary: GraphiQL and React from their
//! pinned npm packages' own prebuilt files (`playground/assets/`, refreshed by
//! `scripts/update-playground-assets`), our page and script, and one tab per example query in
//! `playground/*.graphql`. No request leaves the server, so the page works where CDNs are
//! blocked; a Content-Security-Policy makes the browser enforce that.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The example queries, in tab order: `(file stem, text)`. The tests execute the same files.
pub const EXAMPLES: [(&str, &str); 9] = [
    (
        "first-page",
        include_str!("../../playground/first-page.graphql"),
    ),
    (
        "next-page",
        include_str!("../../playground/next-page.graphql"),
    ),
    (
        "previous-page",
        include_str!("../../playground/previous-page.graphql"),
    ),
    (
        "page-jump",
        include_str!("../../playground/page-jump.graphql"),
    ),
    (
        "ratings-filter",
        include_str!("../../playground/ratings-filter.graphql"),
    ),
    (
        "total-count",
        include_str!("../../playground/total-count.graphql"),
    ),
    (
        "page-cursors",
        include_str!("../../playground/page-cursors.graphql"),
    ),
    (
        "containing",
        include_str!("../../playground/containing.graphql"),
    ),
    (
        "add-comment",
        include_str!("../../playground/add-comment.graphql"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The files the page loads, by name under `/playground/`: `(name, content type, bytes)`.
const ASSETS: [(&str, &str, &[u8]); 6] = [
    (
        "graphiql.min.js",
        JS,
        include_bytes!("../../playground/assets/graphiql.min.js"),
    ),
    (
        "graphiql.min.css",
        CSS,
        include_bytes!("../../playground/assets/graphiql.min.css"),
    ),
    (
        "react.production.min.js",
        JS,
        include_bytes!("../../playground/assets/react.production.min.js"),
    ),
    (
        "react-dom.production.min.js",
        JS,
        include_bytes!("../../playground/assets/react-dom.production.min.js"),
    ),
    (
        "playground.js",
        JS,
        include_bytes!("../../playground/playground.js"),
    ),
    (
        "playground.css",
        CSS,
        include_bytes!("../../playground/playground.css"),
    ),
];

const TEMPLATE: &str = include_str!("../../playground/index.html");

/// Only this server may be reached: scripts, styles and `fetch` from our origin; inline styles
/// (React sets `style` attributes) and `data:` fonts and images (inlined in GraphiQL's CSS).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; font-src 'self' data:; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// A hash of every asset, put in the page's asset URLs so they can be cached for good: a new
/// build with other files gets other URLs.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut hash = Sha256::new();
    for (name, _, bytes) in ASSETS {
        hash.update(name.as_bytes());
        hash.update(bytes);
    }
    hash.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
});

static PAGE: LazyLock<String> = LazyLock::new(|| {
    TEMPLATE
        .replace("{{version}}", &VERSION)
        .replace("{{tabs}}", &tabs_json())
});

/// GraphiQL's `defaultTabs`: `[{ "query": … }]`, made safe to sit inside a `<script>` element.
fn tabs_json() -> String {
    let tabs: Vec<serde_json::Value> = EXAMPLES
        .iter()
        .map(|(_, query)| serde_json::json!({ "query": query }))
        .collect();
    serde_json::Value::from(tabs)
        .to_string()
        .replace('<', "\\u003c")
}

/// `GET /`: the page. Not cached, so a new version's asset URLs are picked up at once.
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        ],
        PAGE.as_str(),
    )
        .into_response()
}

/// `GET /playground/{name}`: an embedded file, cacheable for good (its URL carries the version).
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            *bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_a_tab_per_example_and_links_only_to_versioned_local_files() {
        let page = PAGE.as_str();
        assert!(!page.contains("{{"), "every placeholder filled");
        for (name, _, _) in ASSETS
            .iter()
            .filter(|(n, _, _)| !n.starts_with("playground."))
        {
            assert!(
                page.contains(&format!("/playground/{name}?v={}", *VERSION)),
                "{name}"
            );
        }
        let start = page.find("type=\"application/json\">").expect("tabs") + 24;
        let end = start + page[start..].find("</script>").expect("end of tabs");
        let tabs: serde_json::Value = serde_json::from_str(&page[start..end]).expect("JSON");
        assert_eq!(tabs.as_array().map(Vec::len), Some(EXAMPLES.len()));
        assert_eq!(tabs[0]["query"], EXAMPLES[0].1);
    }

    #[test]
    fn every_example_file_has_a_tab() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/playground");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("playground/")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".graphql").map(str::to_owned)
            })
            .collect();
        files.sort();
        let mut tabs: Vec<&str> = EXAMPLES.iter().map(|(name, _)| *name).collect();
        tabs.sort_unstable();
        assert_eq!(
            files, tabs,
            "add new playground/*.graphql files to EXAMPLES"
        );
    }
}
