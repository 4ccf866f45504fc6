//! Field errors as the GraphQL specification says ("Handling Field Errors" and "Errors and
//! Non-Null Fields", October 2021 edition, §6.4.4): every error whose `path` points into `data`
//! finds a `null` at that path; a null in a non-null position makes the nearest nullable
//! ancestor null (or `data` itself); everything else in `data` stays.
//!
//! # Why this exists
//!
//! async-graphql 7.2.1 resolves an object's fields and, when one fails, records the error and
//! leaves the field's key out (`resolver_utils/container.rs`, `do_resolve_container`); an object
//! whose every field failed becomes `null`, whatever its type says. So a client saw
//! `{"comments": {"__typename": "CommentConnection"}}` without `totalCount`, `{"product": null}`
//! under a non-null `product`, and `"data": null` for a failed nullable `node`. Caching clients
//! (Apollo, urql graphcache, Relay) treat a missing key as a query bug and refetch or warn.
//! This pass repairs the executed response from the operation's own field types, so every field
//! of the schema is covered without anyone remembering it. It can go when upstream completes
//! field errors itself (the `tests/api/field_errors.rs` raw-byte tests say when).
//!
//! # How
//!
//! [`OutputTypes`] holds every output field's type, read once from the schema's SDL. For each
//! error with a path, [`complete`] walks the operation's selection sets (aliases, fragments and
//! inline fragments included) beside the path to learn the type of each position, then writes
//! `null` at the error's position or, while that position is non-null, at its parent's, up to
//! `data`. A key it adds takes its place in the selection order. Only responses with field
//! errors are touched; the cost is measured in BENCHMARKS.md. The type table is `types`, the
//! walk is `walk`; this module places the nulls. [`KeyOrder`] (`order`) repairs the
//! other thing async-graphql gets wrong in a response's shape: the order of an object's keys.

mod order;
mod types;
mod walk;

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, OperationDefinition};
use async_graphql::{PathSegment, Response, Value};

pub use order::KeyOrder;
pub use types::OutputTypes;
use walk::Walker;

/// Completes `response` (executed from `document`, operation `operation_name`) so that every
/// field error is a `null` in `data`, propagated as the specification says. Responses without
/// field errors are left as they are.
pub fn complete(
    types: &OutputTypes,
    document: &ExecutableDocument,
    operation_name: Option<&str>,
    response: &mut Response,
) {
    if response.errors.iter().all(|e| e.path.is_empty()) {
        return;
    }
    let Some(operation) = operation(document, operation_name) else {
        return;
    };
    let paths: Vec<&[PathSegment]> = response
        .errors
        .iter()
        .map(|e| e.path.as_slice())
        .filter(|p| !p.is_empty())
        .collect();
    // First undo what async-graphql made of objects whose every field failed (`null` instead of
    // an object), so the paths below lead somewhere; then place the nulls.
    for path in &paths {
        reopen(&mut response.data, path);
    }
    let walker = Walker {
        types,
        document,
        root_type: types.root(operation.ty),
        root: &operation.selection_set.node,
    };
    for path in &paths {
        let positions = walker.positions(path);
        // Where the error is: its path, or the first position async-graphql left out.
        let reached = reached(&response.data, path);
        let mut at = reached;
        while at > 0 && positions[at - 1].non_null {
            at -= 1;
        }
        if at == 0 {
            response.data = Value::Null;
            return;
        }
        walker.set_null(&mut response.data, &path[..at], &positions[at - 1]);
    }
}

pub(crate) fn operation<'a>(
    document: &'a ExecutableDocument,
    name: Option<&str>,
) -> Option<&'a OperationDefinition> {
    match (&document.operations, name) {
        (DocumentOperations::Single(op), _) => Some(&op.node),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name).map(|op| &op.node),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => {
            ops.values().next().map(|op| &op.node)
        }
        (DocumentOperations::Multiple(_), None) => None,
    }
}

/// Turns the `null` that stands where `path` still has to go through an object back into an
/// (empty) object: async-graphql answers `null` for an object none of whose fields resolved,
/// and an error below a position proves it was an object. Only the failed field's parent can be
/// such a `null` (its own parent then holds a key, so it is not empty).
fn reopen(data: &mut Value, path: &[PathSegment]) {
    let mut value = data;
    for (i, segment) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        value = match (value, segment) {
            (value @ Value::Null, PathSegment::Field(_)) => {
                *value = Value::Object(IndexMap::new());
                return;
            }
            (Value::Object(map), PathSegment::Field(key)) if !last => {
                match map.get_mut(key.as_str()) {
                    Some(child) => child,
                    None => return,
                }
            }
            (Value::List(items), PathSegment::Index(index)) if !last => {
                match items.get_mut(*index) {
                    Some(child) => child,
                    None => return,
                }
            }
            _ => return,
        };
    }
}

/// How many segments of `path` lead to a value in `data`, plus one for the first that does not
/// (the position where the error shows), at most the whole path.
fn reached(data: &Value, path: &[PathSegment]) -> usize {
    let mut value = data;
    for (i, segment) in path.iter().enumerate() {
        let child = match (value, segment) {
            (Value::Object(map), PathSegment::Field(key)) => map.get(key.as_str()),
            (Value::List(items), PathSegment::Index(index)) => items.get(*index),
            _ => None,
        };
        match child {
            Some(child) if i + 1 < path.len() => value = child,
            _ => return i + 1,
        }
    }
    path.len()
}

#[cfg(test)]
mod tests {
    use async_graphql::{PathSegment, Response, ServerError, Value};

    use super::{OutputTypes, complete};

    const SDL: &str = r#"
        interface Node { id: ID! }
        type Query {
          conn: Conn!
          product(sku: String!): Product!
          node(id: ID!): Node
          nodes(ids: [ID!]!): [Node]!
        }
        type Mutation { add: Payload! }
        type Product implements Node { id: ID! conn(after: String): Conn! name: String }
        type Conn { total: Int edges: [Edge!]! }
        type Edge { cursor: String! node: Item! }
        type Item implements Node { id: ID! body: String! note: String }
        type Payload { item: Item! note: String }
        schema { query: Query mutation: Mutation }
    "#;

    fn field(name: &str) -> PathSegment {
        PathSegment::Field(name.into())
    }

    /// The raw JSON of `data` after completing a response whose errors have `paths`.
    fn completed(query: &str, data: serde_json::Value, paths: &[Vec<PathSegment>]) -> String {
        let types = OutputTypes::from_sdl(SDL).expect("the test SDL parses");
        let document = async_graphql::parser::parse_query(query).expect("the query parses");
        let mut response = Response::new(Value::from_json(data).expect("JSON is a value"));
        for path in paths {
            let mut error = ServerError::new("failed", None);
            error.path = path.clone();
            response.errors.push(error);
        }
        complete(&types, &document, None, &mut response);
        serde_json::to_string(&response.data).expect("values serialize")
    }

    #[test]
    fn a_failed_nullable_field_is_a_null_key_in_selection_order() {
        let data = serde_json::json!({"conn": {"__typename": "Conn", "edges": []}});
        let out = completed(
            "{ conn { __typename total edges { cursor } } }",
            data,
            &[vec![field("conn"), field("total")]],
        );
        assert_eq!(
            out,
            r#"{"conn":{"__typename":"Conn","total":null,"edges":[]}}"#
        );
    }

    #[test]
    fn an_object_whose_only_field_failed_is_an_object_again() {
        let data = serde_json::json!({"conn": null});
        let out = completed(
            "{ conn { total } }",
            data,
            &[vec![field("conn"), field("total")]],
        );
        assert_eq!(out, r#"{"conn":{"total":null}}"#);
    }

    #[test]
    fn a_failed_non_null_field_nulls_its_nearest_nullable_ancestor_or_data() {
        let data = serde_json::json!({"product": null});
        let query = r#"{ product(sku: "x") { conn(after: "bad") { total } } }"#;
        let out = completed(query, data, &[vec![field("product"), field("conn")]]);
        assert_eq!(out, "null");

        let data = serde_json::json!({"node": {"note": "kept until its sibling fails"}});
        let query = r#"{ node(id: "x") { ... on Item { body note } } }"#;
        let out = completed(query, data, &[vec![field("node"), field("body")]]);
        assert_eq!(out, r#"{"node":null}"#);
    }

    #[test]
    fn a_failed_nullable_root_field_leaves_data_an_object() {
        let out = completed(
            r#"{ node(id: "garbage") { id } }"#,
            serde_json::Value::Null,
            &[vec![field("node")]],
        );
        assert_eq!(out, r#"{"node":null}"#);
    }

    #[test]
    fn aliases_keep_their_keys_and_their_order() {
        let data = serde_json::json!({"b": {"id": "y"}});
        let query = r#"{ a: node(id: "x") { id } b: node(id: "y") { id } }"#;
        let out = completed(query, data, &[vec![field("a")]]);
        assert_eq!(out, r#"{"a":null,"b":{"id":"y"}}"#);

        let data = serde_json::json!({"c": {"edges": []}});
        let query = "{ c: conn { n: total edges { cursor } } }";
        let out = completed(query, data, &[vec![field("c"), field("n")]]);
        assert_eq!(out, r#"{"c":{"n":null,"edges":[]}}"#);
    }

    #[test]
    fn fields_selected_through_fragments_are_found() {
        let data = serde_json::json!({"conn": {"edges": []}});
        let query = "{ conn { ...Page } } fragment Page on Conn { total edges { cursor } }";
        let out = completed(query, data, &[vec![field("conn"), field("total")]]);
        assert_eq!(out, r#"{"conn":{"total":null,"edges":[]}}"#);

        let data = serde_json::json!({"conn": {"total": 3}});
        let query = "{ conn { total ...Page } } fragment Page on Conn { edges { cursor } }";
        let out = completed(query, data, &[vec![field("conn"), field("edges")]]);
        assert_eq!(out, "null", "edges is non-null, and so is conn");
    }

    #[test]
    fn a_non_null_list_item_propagates_through_the_list() {
        let data = serde_json::json!({"conn": {"total": 2, "edges": [{"node": {"body": "a"}}, {"node": null}]}});
        let query = "{ conn { total edges { node { body } } } }";
        let path = vec![
            field("conn"),
            field("edges"),
            PathSegment::Index(1),
            field("node"),
            field("body"),
        ];
        assert_eq!(completed(query, data, &[path]), "null");
    }

    #[test]
    fn a_nullable_list_item_is_nulled_alone() {
        let data = serde_json::json!({"nodes": [{"id": "a"}, null]});
        let query = r#"{ nodes(ids: ["a", "b"]) { id } }"#;
        let path = vec![field("nodes"), PathSegment::Index(1), field("id")];
        assert_eq!(
            completed(query, data, &[path]),
            r#"{"nodes":[{"id":"a"},null]}"#
        );
    }

    #[test]
    fn mutations_are_completed_from_the_mutation_type() {
        let data = serde_json::json!({"add": {"note": "n"}});
        let query = "mutation { add { item { id } note } }";
        let out = completed(query, data, &[vec![field("add"), field("item")]]);
        assert_eq!(out, "null", "item is non-null, and so is add");

        let data = serde_json::json!({"add": {"item": {"id": "1"}}});
        let out = completed(query, data, &[vec![field("add"), field("note")]]);
        assert_eq!(out, r#"{"add":{"item":{"id":"1"},"note":null}}"#);
    }

    #[test]
    fn several_errors_settle_on_one_consistent_answer() {
        // (`json!` sorts keys: the aliases keep the input in selection order.)
        let data = serde_json::json!({"a": {"edges": []}, "b": null});
        let query = r#"{ a: conn { total edges { cursor } } b: node(id: "b") { id } }"#;
        let paths = [
            vec![field("a"), field("total")],
            vec![field("b"), field("id")],
        ];
        assert_eq!(
            completed(query, data, &paths),
            r#"{"a":{"total":null,"edges":[]},"b":null}"#
        );
    }

    #[test]
    fn a_field_the_schema_does_not_describe_counts_as_nullable() {
        let data = serde_json::json!({"conn": {"total": 1}});
        let query = "{ conn { total } __schema { description } }";
        let out = completed(query, data, &[vec![field("__schema")]]);
        assert_eq!(out, r#"{"conn":{"total":1},"__schema":null}"#);
    }

    #[test]
    fn a_response_without_field_errors_is_left_alone() {
        let data = serde_json::json!({"conn": null});
        assert_eq!(
            completed("{ conn { total } }", data, &[]),
            r#"{"conn":null}"#
        );
    }
}
