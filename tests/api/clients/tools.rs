//! `schema.graphql` through the tools client teams run on it (`tests/clients/`, installed by
//! `npm ci` there, which `scripts/test` does): graphql-js builds and validates it, finds a
//! description on every element and accepts every playground example; relay-compiler accepts a
//! `@refetchable` `@connection` fragment on `Product.comments` and mutations that edit it;
//! graphql-js's standard introspection query, sent to a running server, rebuilds the schema
//! `schema.graphql` describes. Client libraries run in Node against running servers: Apollo
//! Client 3 and urql's Graphcache, configured as the README says, merge pages, keep pages
//! usable under a field error and insert `addComment`'s edge, without logging a warning;
//! graphql-http audits the server against the GraphQL over HTTP specification. GraphQL Code
//! Generator reads a running server's schema (`clients::codegen`).

use std::process::Command;

use crate::helpers::TestApp;
use crate::helpers::node::{clients_dir, node};
use crate::support::redis_server::RedisServer;

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} did not start (is Node.js installed?): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

/// Two servers with the demo data: one whole, one whose index (Redis) has gone away after
/// start-up, so `totalCount` fails with `INDEX_UNAVAILABLE` while pages are still served. The
/// stopped Redis is returned to be dropped with the servers.
async fn healthy_and_index_down() -> (TestApp, TestApp, RedisServer) {
    let healthy = TestApp::embedded(45).await;
    let (index_down, redis) = TestApp::without_its_index(45, &[]).await;
    (healthy, index_down, redis)
}

/// Runs a client-library script (`apollo.mjs`, `urql.mjs`) against both servers.
async fn client_checks(script: &str) -> (bool, String) {
    let (healthy, index_down, _redis) = healthy_and_index_down().await;
    node(
        script,
        &[
            &format!("{}/graphql", healthy.address),
            &format!("{}/graphql", index_down.address),
        ],
    )
    .await
}

#[test]
fn graphql_js_accepts_the_schema_and_the_playground_examples() {
    let output = run(Command::new("node")
        .arg("check-schema.mjs")
        .current_dir(clients_dir()));
    assert!(output.contains("fully described"), "{output}");
}

#[test]
fn relay_compiler_accepts_a_refetchable_connection_on_product_comments() {
    let dir = clients_dir();
    // The artifacts are not committed (.gitignore): start without them, so their presence
    // afterwards proves this run generated them.
    let generated = dir.join("relay/__generated__");
    if generated.exists() {
        std::fs::remove_dir_all(&generated).expect("old artifacts removed");
    }
    let output = run(Command::new(dir.join("node_modules/.bin/relay-compiler"))
        .current_dir(&dir)
        .env("NO_COLOR", "1"));
    assert!(output.contains("Compilation completed"), "{output}");
    for artifact in [
        "ProductComments_product",
        "ProductComments_oldest",
        "ProductCommentsPaginationQuery",
        "ProductCommentsPageQuery",
        "ProductCommentsBackwardQuery",
        "ProductCommentsNodeQuery",
        "ProductCommentsAddMutation",
        "ProductCommentsUpdateMutation",
        "ProductCommentsDeleteMutation",
    ] {
        assert!(
            generated.join(format!("{artifact}.graphql.js")).is_file(),
            "relay-compiler generated {artifact}:\n{output}"
        );
    }
}

/// GraphiQL, Apollo's tools and codegen all start with this query; it nests `ofType` nine
/// times, which a plain depth count refuses.
#[tokio::test]
async fn graphql_js_introspection_of_a_running_server_rebuilds_the_committed_schema() {
    let app = TestApp::embedded(0).await;
    let (success, text) = node("introspect.mjs", &[&format!("{}/graphql", app.address)]).await;
    assert!(success, "{text}");
    assert!(
        text.contains("introspection matches schema.graphql"),
        "{text}"
    );
}

/// `apollo.mjs`: fetchMore pages (both directions, filtered or not, on `Product.comments` and
/// `Query.comments`) merge into the plain walk; `errorPolicy: "all"` keeps a page whose
/// `totalCount` failed; the README's `cache.modify` puts `commentEdge` on top; Apollo logs
/// nothing (a missing field in a result is logged as "Missing field ... while writing result").
#[tokio::test]
async fn apollo_client_merges_pages_keeps_partial_results_and_inserts_new_comments_silently() {
    let (success, output) = client_checks("apollo.mjs").await;
    assert!(
        success && output.contains("apollo: 6 checks passed, 0 failed, 0 warnings"),
        "{output}"
    );
}

/// `urql.mjs`: the same with Graphcache's `relayPagination()`, plus what it does with pages
/// that give neither `first` nor `last`; Graphcache logs nothing (a missing field in a
/// result is logged as "Invalid undefined: The field at ... is `undefined`").
#[tokio::test]
async fn urql_graphcache_merges_pages_keeps_partial_results_and_inserts_new_comments_silently() {
    let (success, output) = client_checks("urql.mjs").await;
    assert!(
        success && output.contains("urql: 6 checks passed, 0 failed, 0 warnings"),
        "{output}"
    );
}

/// `subscriptions.mjs`: the `graphql-ws` client, Apollo Client's `GraphQLWsLink` and urql's
/// `subscriptionExchange`, set up as the README says, each receive ADDED, UPDATED and DELETED
/// within a second of the mutations that made them, and log nothing.
#[tokio::test]
async fn graphql_ws_apollo_and_urql_receive_comment_events() {
    let app = TestApp::embedded(0).await;
    let (success, output) = node("subscriptions.mjs", &[&format!("{}/graphql", app.address)]).await;
    assert!(
        success && output.contains("subscriptions: 3 checks passed, 0 failed, 0 warnings"),
        "{output}"
    );
}

/// `http-audit.mjs`: graphql-http's audits of the GraphQL over HTTP specification. Failed
/// SHOULD and MAY audits are listed in the output; only failed MUST audits fail the test.
#[tokio::test]
async fn the_server_passes_every_must_audit_of_graphql_http() {
    let app = TestApp::embedded(0).await;
    let (success, output) = node("http-audit.mjs", &[&format!("{}/graphql", app.address)]).await;
    assert!(success && output.contains(", 0 MUST failed,"), "{output}");
}
