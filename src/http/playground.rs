//! The GraphiQL page at `/`, served entirely from the binary: GraphiQL and React from their
//! pinned npm packages' own prebuilt files (`playground/assets/`, refreshed by
//! `scripts/update-playground-assets`), our page and script, and one tab per example query in
//! `playground/*.graphql`. No request leaves the server, so the page works where CDNs are
//! blocked; a Content-Security-Policy makes the browser enforce that.
//!
//! The page follows the server's `--auth`: under `jwt` the token names a comment's author and
//! an `author` in `addComment`'s input is refused, so the AddComment tab leaves it out and
//! shows where the token goes (its Headers pane); with `off` it is the file as written.

use std::sync::{Arc, LazyLock};

use axum::extract::{Path, State};
use axum::response::Response;

use super::AppState;
use super::embedded::{self, CSS, File, JS};
use crate::auth::Auth;

/// The example queries, in tab order: `(file stem, text)`. The tests execute the same files.
pub(super) const EXAMPLES: [(&str, &str); 10] = [
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
    (
        "comment-events",
        include_str!("../../playground/comment-events.graphql"),
    ),
];

/// The files the page loads, by name under `/playground/`.
const ASSETS: [File; 7] = [
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
        "graphql-ws.min.js",
        JS,
        include_bytes!("../../playground/assets/graphql-ws.min.js"),
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

/// A hash of every asset, put in the page's asset URLs so they can be cached for good.
static VERSION: LazyLock<String> = LazyLock::new(|| embedded::version(&ASSETS));

/// The page of a server with `--auth off`.
static PAGE: LazyLock<String> = LazyLock::new(|| page_text(false));

/// The page of a server with `--auth jwt`.
static PAGE_JWT: LazyLock<String> = LazyLock::new(|| page_text(true));

/// What the AddComment tab leaves out under `--auth jwt`.
const AUTHOR_ARGUMENT: &str = "author: \"Guy-Manuel\", ";

/// The AddComment tab's headers under `--auth jwt`: where the token goes.
const TOKEN_HEADERS: &str =
    "{\n  \"Authorization\": \"Bearer <your token; dynapage token prints one for a local key>\"\n}";

fn page_text(jwt: bool) -> String {
    TEMPLATE
        .replace("{{version}}", &VERSION)
        .replace("{{tabs}}", &tabs_json(jwt))
}

/// GraphiQL's `defaultTabs`: `[{ "query": … }]` (and the AddComment tab's `headers` under
/// `jwt`), made safe to sit inside a `<script>` element.
fn tabs_json(jwt: bool) -> String {
    let tabs: Vec<serde_json::Value> = EXAMPLES
        .iter()
        .map(|&(name, query)| match name {
            "add-comment" if jwt => serde_json::json!({
                "query": query.replacen(AUTHOR_ARGUMENT, "", 1),
                "headers": TOKEN_HEADERS,
            }),
            _ => serde_json::json!({ "query": query }),
        })
        .collect();
    serde_json::Value::from(tabs)
        .to_string()
        .replace('<', "\\u003c")
}

/// `GET /`: the page, for this server's `--auth`.
pub(super) async fn page(State(app): State<Arc<AppState>>) -> Response {
    let page = match app.api.auth {
        Auth::Off => &PAGE,
        Auth::Jwt(_) => &PAGE_JWT,
    };
    embedded::page(page.as_str(), CONTENT_SECURITY_POLICY)
}

/// `GET /playground/{name}`: an embedded file.
pub(super) async fn asset(Path(name): Path<String>) -> Response {
    embedded::file(&ASSETS, &name)
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
        let tabs = tabs_of(page);
        assert_eq!(tabs.as_array().map(Vec::len), Some(EXAMPLES.len()));
        assert_eq!(tabs[0]["query"], EXAMPLES[0].1);
    }

    fn tabs_of(page: &str) -> serde_json::Value {
        let start = page.find("type=\"application/json\">").expect("tabs") + 24;
        let end = start + page[start..].find("</script>").expect("end of tabs");
        serde_json::from_str(&page[start..end]).expect("JSON")
    }

    #[test]
    fn under_jwt_only_the_add_comment_tab_differs_it_drops_author_and_asks_for_the_token() {
        let (open, jwt) = (tabs_of(PAGE.as_str()), tabs_of(PAGE_JWT.as_str()));
        let add = EXAMPLES.iter().position(|(name, _)| *name == "add-comment");
        let add = add.expect("an AddComment tab");
        for (i, (name, query)) in EXAMPLES.iter().enumerate() {
            assert_eq!(open[i], serde_json::json!({ "query": query }), "{name}");
            if i != add {
                assert_eq!(jwt[i], open[i], "{name}");
            }
        }
        let source = EXAMPLES[add].1;
        assert_eq!(
            source.matches(AUTHOR_ARGUMENT).count(),
            1,
            "the file has it once"
        );
        let without = jwt[add]["query"].as_str().expect("a query");
        assert_eq!(without, source.replacen(AUTHOR_ARGUMENT, "", 1));
        assert!(!without.contains("author: "), "{without}");
        let headers: serde_json::Value =
            serde_json::from_str(jwt[add]["headers"].as_str().expect("headers")).expect("JSON");
        assert!(
            headers["Authorization"]
                .as_str()
                .is_some_and(|h| h.starts_with("Bearer "))
        );
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
