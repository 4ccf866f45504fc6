//! Every `graphql` fence of the README and the book is valid against the schema, not only
//! those the examples run: a snippet that names a field or an argument the schema no longer
//! has fails here. Each is validated by async-graphql against the schema built without data,
//! asked to run an operation the document does not have, so nothing ever executes.

use async_graphql::Request;
use dynapage::graphql::ApiSchema;

use super::markdown::{Block, blocks, examples_documents};

/// An operation name no document has: validation runs, then execution stops at once.
const NO_OPERATION: &str = "DocsFenceNotRun";

/// What is wrong with `document` against the schema; empty when it is valid.
async fn invalid(schema: &ApiSchema, document: &str) -> Vec<String> {
    let response = schema
        .execute(Request::new(document).operation_name(NO_OPERATION))
        .await;
    let messages: Vec<String> = response.errors.iter().map(|e| e.message.clone()).collect();
    match messages.as_slice() {
        [only] if only.contains(NO_OPERATION) => Vec::new(),
        _ => messages,
    }
}

#[tokio::test]
async fn every_graphql_fence_is_valid_against_the_schema() {
    let standalone = ApiSchema::Standalone(dynapage::graphql::build_schema(None));
    // The Federation chapter's fences are what a gateway sends the subgraph.
    let subgraph = ApiSchema::Subgraph(dynapage::graphql::build_subgraph_schema(None));
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in examples_documents() {
        for block in blocks(&document) {
            let Block::Fence(fence) = block else { continue };
            if fence.lang != "graphql" {
                continue;
            }
            checked += 1;
            let schema = match document.path.ends_with("federation.md") {
                true => &subgraph,
                false => &standalone,
            };
            let found = invalid(schema, &fence.text).await;
            if !found.is_empty() {
                problems.push(format!("{}:{}: {found:?}", document.path, fence.line));
            }
        }
    }
    assert!(checked >= 15, "only {checked} graphql fences");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn a_fence_with_a_field_the_schema_lacks_is_invalid_and_variables_need_no_values() {
    let schema = ApiSchema::Standalone(dynapage::graphql::build_schema(None));
    assert!(
        !invalid(
            &schema,
            r#"{ comments(sku: "X", first: 1) { nodes { stars } } }"#
        )
        .await
        .is_empty()
    );
    assert!(
        !invalid(&schema, r#"{ comments(sku: "X", page: 2) { totalCount } }"#)
            .await
            .is_empty()
    );
    assert!(
        invalid(
            &schema,
            "query P($sku: String!, $n: Int!) { comments(sku: $sku, first: $n) { totalCount } }"
        )
        .await
        .is_empty()
    );
}
