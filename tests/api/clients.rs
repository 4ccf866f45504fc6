//! `schema.graphql` through the tools client teams run on it (`tests/clients/`, installed by
//! `npm ci` there, which `scripts/test` does): graphql-js builds and validates it, finds a
//! description on every element and accepts every playground example; relay-compiler accepts a
//! `@refetchable` `@connection` fragment on `Product.comments` and mutations that edit it;
//! graphql-js's standard introspection query, sent to a running server, rebuilds the schema
//! `schema.graphql` describes.

use std::path::PathBuf;
use std::process::Command;

use crate::helpers::TestApp;

fn clients_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        dir.join("node_modules/graphql").is_dir()
            && dir.join("node_modules/relay-compiler").is_dir(),
        "the client tools are not installed: run scripts/test, or `npm ci` in tests/clients"
    );
    dir
}

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
    let output = run(Command::new(dir.join("node_modules/.bin/relay-compiler"))
        .current_dir(&dir)
        .env("NO_COLOR", "1"));
    assert!(output.contains("Compilation completed"), "{output}");
    assert!(
        dir.join("relay/__generated__/ProductCommentsPaginationQuery.graphql.js")
            .is_file(),
        "the refetch query was generated"
    );
}

/// GraphiQL, Apollo's tools and codegen all start with this query; it nests `ofType` nine
/// times, which a plain depth count refuses.
#[tokio::test]
async fn graphql_js_introspection_of_a_running_server_rebuilds_the_committed_schema() {
    let app = TestApp::embedded(0).await;
    let output = tokio::process::Command::new("node")
        .arg("introspect.mjs")
        .arg(format!("{}/graphql", app.address))
        .current_dir(clients_dir())
        .output()
        .await
        .expect("node runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("introspection matches schema.graphql"),
        "{text}"
    );
}
