//! `schema.graphql` through the tools client teams run on it (`tests/clients/`, installed by
//! `npm ci` there, which `scripts/test` does): graphql-js builds and validates it, finds a
//! description on every element and accepts every playground example; relay-compiler accepts a
//! `@refetchable` `@connection` fragment on `Product.comments` and mutations that edit it.

use std::path::PathBuf;
use std::process::Command;

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
