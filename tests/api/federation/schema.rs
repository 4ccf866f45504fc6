//! The subgraph's SDL: committed, served as `_service { sdl }`, and apart from the stand-alone
//! schema, which stays exactly as it was.

use serde_json::json;

use crate::helpers::TestApp;
use crate::helpers::process::{dynapage_command, stdout};
use crate::helpers::repo::repo_file;

#[tokio::test]
async fn the_committed_subgraph_sdl_is_what_export_schema_prints_and_the_server_serves() {
    let committed = repo_file("schema.subgraph.graphql");
    let output = dynapage_command("export-schema")
        .arg("--federation")
        .output()
        .await
        .expect("export-schema runs");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        stdout(&output),
        committed,
        "schema.subgraph.graphql is stale: regenerate it with \
         `dynapage export-schema --federation --output schema.subgraph.graphql --force`"
    );
    let app = TestApp::spawn(&["--federation", "--demo-comments", "0"]).await;
    let served = app.data("{ _service { sdl } }", json!({})).await;
    assert_eq!(served["_service"]["sdl"], committed);
    for (name, key) in [("Product", "sku"), ("Comment", "id")] {
        let definition = format!("type {name} implements Node @key(fields: \"{key}\") {{");
        assert!(committed.contains(&definition), "{definition}");
    }
    assert!(committed.contains("extend schema @link("));
}

#[tokio::test]
async fn the_stand_alone_server_has_no_federation_fields() {
    let app = TestApp::embedded(0).await;
    for query in [
        "{ _service { sdl } }",
        "{ _entities(representations: []) { __typename } }",
    ] {
        let response = app.graphql(query, json!({})).await;
        let codes = crate::helpers::error_codes(&response);
        assert_eq!(
            codes,
            ["GRAPHQL_VALIDATION_FAILED"],
            "{query}: {response:#}"
        );
    }
    let committed = repo_file("schema.graphql");
    for name in ["_entities", "_service", "_Any", "@key", "@link"] {
        assert!(!committed.contains(name), "schema.graphql names {name}");
    }
}
