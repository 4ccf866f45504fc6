//! `__schema { description }`: the schema has none, by introspection as in `schema.graphql`.
//!
//! Why this exists: async-graphql 7.2.1 answers `__schema { description }` with a fixed sentence
//! about `__Schema` itself ("A GraphQL Schema defines the capabilities of a GraphQL server…",
//! `model/schema.rs`), the same for every schema, and offers no way to set a description. So a
//! client that printed the served schema with graphql-js's `schemaDescription` option got a
//! description that `schema.graphql` does not have. [`answer`] (called on the `resolve` hook of
//! `graphql::hooks`) answers `null` instead, as the specification's
//! `__Schema.description: String` allows.
//!
//! Why no description of our own: a description on the `schema` definition (added in the
//! October 2021 specification) is refused by the SDL parsers Rust code generators use:
//! graphql_client 0.16 (graphql-parser 0.4.1) and async-graphql-parser 7.2.1 both stop at it
//! (`Unexpected schema`), and client teams generate typed code from `schema.graphql`
//! (`tests/api/codegen.rs`). When they accept one, answer it here and print it in
//! `graphql::sdl`; until then this answer can only go together with upstream's sentence.

use async_graphql::Value;
use async_graphql::extensions::ResolveInfo;

/// What `__Schema.description` answers instead of async-graphql's sentence; `None` for every
/// other field, which resolves as usual.
pub(super) fn answer(info: &ResolveInfo<'_>) -> Option<Value> {
    (info.is_for_introspection && info.parent_type == "__Schema" && info.name == "description")
        .then_some(Value::Null)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn introspection_answers_no_description_under_any_alias() {
        let schema = crate::graphql::build_schema(None, crate::graphql::QueryLimits::default());
        let response = schema
            .execute("{ __schema { description } s: __schema { d: description } }")
            .await;
        assert!(response.errors.is_empty(), "{:?}", response.errors);
        let data = response.data.into_json().expect("JSON data");
        assert_eq!(
            data,
            serde_json::json!({"__schema": {"description": null}, "s": {"d": null}})
        );
    }
}
