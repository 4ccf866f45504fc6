//! `__schema { description }`: the schema has none, by introspection as in `schema.graphql`.
//!
//! Why this exists: async-graphql 7.2.1 answers `__schema { description }` with a fixed sentence
//! about `__Schema` itself ("A GraphQL Schema defines the capabilities of a GraphQL server…",
//! `model/schema.rs`), the same for every schema, and offers no way to set a description. So a
//! client that printed the served schema with graphql-js's `schemaDescription` option got a
//! description that `schema.graphql` does not have. [`blank`] answers `null` instead, as the
//! specification's `__Schema.description: String` allows, by rewriting the executed response at
//! our boundary: a per-field hook (an async-graphql extension) would route every field of every
//! response through the extension chain (`graphql::pricing::document` says what that cost).
//! Only `__schema` fields at the root are looked at: a few fields a request, none deeper.
//!
//! Why no description of our own: a description on the `schema` definition (added in the
//! October 2021 specification) is refused by the SDL parsers Rust code generators use:
//! graphql_client 0.16 (graphql-parser 0.4.1) and async-graphql-parser 7.2.1 both stop at it
//! (`Unexpected schema`), and client teams generate typed code from `schema.graphql`
//! (`tests/api/codegen.rs`). When they accept one, answer it here and print it in
//! `graphql::sdl`; until then this answer can only go together with upstream's sentence.

use async_graphql::parser::types::{ExecutableDocument, Field, Selection, SelectionSet};
use async_graphql::{Name, Response, Value};

use super::MAX_NESTING;
use super::field_errors::operation;

/// Writes `null` for every `__Schema.description` in `response`'s data, under any alias, for
/// `document`'s operation `operation_name` as executed.
pub fn blank(document: &ExecutableDocument, operation_name: Option<&str>, response: &mut Response) {
    let Some(operation) = operation(document, operation_name) else {
        return;
    };
    let Value::Object(root) = &mut response.data else {
        return;
    };
    each_field(document, &operation.selection_set.node, 0, &mut |schema| {
        if schema.name.node != "__schema" {
            return;
        }
        let Some(Value::Object(answer)) = root.get_mut(response_key(schema)) else {
            return;
        };
        each_field(document, &schema.selection_set.node, 0, &mut |field| {
            if field.name.node == "description"
                && let Some(value) = answer.get_mut(response_key(field))
            {
                *value = Value::Null;
            }
        });
    });
}

/// Calls `visit` with every field `set` selects, through its fragments.
fn each_field<'a>(
    document: &'a ExecutableDocument,
    set: &'a SelectionSet,
    spreads: usize,
    visit: &mut impl FnMut(&'a Field),
) {
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => visit(&field.node),
            Selection::InlineFragment(inline) => {
                each_field(document, &inline.node.selection_set.node, spreads, visit);
            }
            Selection::FragmentSpread(spread) => {
                let fragment = document.fragments.get(&spread.node.fragment_name.node);
                if let Some(fragment) = fragment.filter(|_| spreads < MAX_NESTING) {
                    each_field(
                        document,
                        &fragment.node.selection_set.node,
                        spreads + 1,
                        visit,
                    );
                }
            }
        }
    }
}

/// The key a field answers under: its alias, else its name.
fn response_key(field: &Field) -> &Name {
    field
        .alias
        .as_ref()
        .map_or(&field.name.node, |alias| &alias.node)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(query: &str) -> serde_json::Value {
        let schema = crate::graphql::build_schema(None);
        let mut response = schema.execute(query).await;
        assert!(response.errors.is_empty(), "{:?}", response.errors);
        let document = async_graphql::parser::parse_query(query).expect("parses");
        blank(&document, None, &mut response);
        response.data.into_json().expect("JSON data")
    }

    #[tokio::test]
    async fn introspection_answers_no_description_under_any_alias_or_fragment() {
        let data = answer(
            "{ __schema { description } s: __schema { d: description queryType { name } } \
             ...F ... on Query { i: __schema { description } } } \
             fragment F on Query { f: __schema { ... { description } } }",
        )
        .await;
        let expected = serde_json::json!({
            "__schema": {"description": null},
            "s": {"d": null, "queryType": {"name": "Query"}},
            "f": {"description": null},
            "i": {"description": null},
        });
        assert_eq!(data, expected);
    }

    #[tokio::test]
    async fn other_descriptions_are_left_as_they_are() {
        let data = answer(r#"{ __type(name: "Query") { description } }"#).await;
        assert!(data["__type"]["description"].is_string(), "{data}");
    }
}
