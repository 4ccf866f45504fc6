//! A page's edges and nodes written straight into the response when their selection is plain.
//!
//! async-graphql resolves every field of every object with a boxed future of its own, joined in
//! a `FuturesUnordered` per object (`resolver_utils::container`): on a page of 20 comments of
//! five fields that machinery, not the fields, was about a third of the request's instructions
//! (callgrind; BENCHMARKS.md, "Where an uncached page's instructions go"). Most pages select
//! only a comment's stored fields, which need no future: [`Edges`] and [`Nodes`] look at their
//! selection once, and when every field in it is one of [`NodeField`]'s (or an edge's `cursor`,
//! `node` and `__typename`), no fragment, no directive and no response key twice, they build the
//! list's value themselves, with the values the resolvers of `types.rs` give. Any other
//! selection (a fragment, `viewerCanUpdate`, `reply`, …) goes to async-graphql as before, so
//! what a client receives is the same either way; a test compares the two paths on the same
//! page (`tests::both_paths_answer_the_same`).
//!
//! This can go if async-graphql learns to resolve fields that need no `await` without a future
//! each.

use std::borrow::Cow;

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{Field, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{
    ContextSelectionSet, Name, OutputType, Positioned, ScalarType, ServerResult, Value,
};

use super::global_id::GlobalId;
use super::scalars::DateTime;
use super::types::{Comment, CommentEdge};

/// A comment's fields that are values of the stored comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeField {
    Typename,
    Id,
    Author,
    Body,
    Rating,
    CreatedAt,
    UpdatedAt,
    VerifiedPurchase,
    HelpfulCount,
}

impl NodeField {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "__typename" => Self::Typename,
            "id" => Self::Id,
            "author" => Self::Author,
            "body" => Self::Body,
            "rating" => Self::Rating,
            "createdAt" => Self::CreatedAt,
            "updatedAt" => Self::UpdatedAt,
            "verifiedPurchase" => Self::VerifiedPurchase,
            "helpfulCount" => Self::HelpfulCount,
            _ => return None,
        })
    }

    /// The value `Comment`'s resolver of the field gives.
    fn value(self, comment: &Comment) -> Value {
        let stored = &comment.0;
        match self {
            Self::Typename => Value::String("Comment".to_owned()),
            Self::Id => Value::String(GlobalId::Comment(stored.id).encode()),
            Self::Author => Value::String(stored.author.clone()),
            Self::Body => Value::String(stored.body.clone()),
            Self::Rating => Value::from(i32::from(stored.rating.get())),
            Self::CreatedAt => DateTime(stored.created_at()).to_value(),
            Self::UpdatedAt => stored
                .updated_at()
                .map_or(Value::Null, |at| DateTime(at).to_value()),
            Self::VerifiedPurchase => Value::Boolean(stored.is_verified()),
            Self::HelpfulCount => {
                Value::from(i32::try_from(stored.helpful_count).unwrap_or(i32::MAX))
            }
        }
    }
}

/// An edge's fields.
#[derive(Clone, Debug)]
enum EdgeField {
    Typename,
    Cursor,
    Node(Vec<(Name, NodeField)>),
}

/// Most response keys a plain selection set may have: the check for a key twice compares each
/// key with those before it, so a set of many aliases (an operator may raise `--max-aliases`)
/// goes to async-graphql instead of costing a square of its size.
const MAX_PLAIN_KEYS: usize = 32;

/// The fields of a plain selection set, each with its response key; none when the set holds
/// anything else (a fragment, a directive, arguments, a key twice, a field `field` refuses, or
/// more than [`MAX_PLAIN_KEYS`] selections).
pub(super) fn plain<T>(
    set: &SelectionSet,
    mut field: impl FnMut(&Positioned<Field>) -> Option<T>,
) -> Option<Vec<(Name, T)>> {
    if set.items.len() > MAX_PLAIN_KEYS {
        return None;
    }
    let mut fields: Vec<(Name, T)> = Vec::with_capacity(set.items.len());
    for selection in &set.items {
        let Selection::Field(selected) = &selection.node else {
            return None;
        };
        if !selected.node.directives.is_empty() || !selected.node.arguments.is_empty() {
            return None;
        }
        let key = selected.node.response_key().node.clone();
        if fields.iter().any(|(k, _)| *k == key) {
            return None;
        }
        fields.push((key, field(selected)?));
    }
    Some(fields)
}

/// A comment's plain selection.
fn node_fields(set: &SelectionSet) -> Option<Vec<(Name, NodeField)>> {
    plain(set, |f| {
        f.node.selection_set.node.items.is_empty().then_some(())?;
        NodeField::named(f.node.name.node.as_str())
    })
}

/// An edge's plain selection.
fn edge_fields(set: &SelectionSet) -> Option<Vec<(Name, EdgeField)>> {
    plain(set, |f| match f.node.name.node.as_str() {
        "__typename" => Some(EdgeField::Typename),
        "cursor" => Some(EdgeField::Cursor),
        "node" => node_fields(&f.node.selection_set.node).map(EdgeField::Node),
        _ => None,
    })
}

fn node_value(fields: &[(Name, NodeField)], comment: &Comment) -> Value {
    let mut object = IndexMap::with_capacity(fields.len());
    for (key, field) in fields {
        object.insert(key.clone(), field.value(comment));
    }
    Value::Object(object)
}

fn edge_value(fields: &[(Name, EdgeField)], edge: &CommentEdge) -> Value {
    let mut object = IndexMap::with_capacity(fields.len());
    for (key, field) in fields {
        let value = match field {
            EdgeField::Typename => Value::String("CommentEdge".to_owned()),
            EdgeField::Cursor => Value::String(edge.cursor.clone()),
            EdgeField::Node(fields) => node_value(fields, &edge.node),
        };
        object.insert(key.clone(), value);
    }
    Value::Object(object)
}

/// A connection's `edges`: `[CommentEdge!]!` in the schema.
#[derive(Debug)]
pub(super) struct Edges(pub Vec<CommentEdge>);

/// A connection's `nodes`: `[Comment!]!` in the schema.
#[derive(Debug)]
pub(super) struct Nodes(pub Vec<Comment>);

impl OutputType for Edges {
    fn type_name() -> Cow<'static, str> {
        <Vec<CommentEdge>>::type_name()
    }

    fn qualified_type_name() -> String {
        <Vec<CommentEdge>>::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        <Vec<CommentEdge>>::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        match edge_fields(&ctx.item.node) {
            Some(fields) => Ok(Value::List(
                self.0.iter().map(|e| edge_value(&fields, e)).collect(),
            )),
            None => OutputType::resolve(&self.0, ctx, field).await,
        }
    }
}

impl OutputType for Nodes {
    fn type_name() -> Cow<'static, str> {
        <Vec<Comment>>::type_name()
    }

    fn qualified_type_name() -> String {
        <Vec<Comment>>::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        <Vec<Comment>>::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        match node_fields(&ctx.item.node) {
            Some(fields) => Ok(Value::List(
                self.0.iter().map(|c| node_value(&fields, c)).collect(),
            )),
            None => OutputType::resolve(&self.0, ctx, field).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::DocumentOperations;

    use super::*;

    /// The plan of the `edges` selection of `{ edges { … } }`.
    fn plan(edges: &str) -> Option<Vec<(Name, EdgeField)>> {
        let document = parse_query(format!(
            "{{ edges {{ {edges} }} }} fragment F on CommentEdge {{ cursor }}"
        ))
        .expect("a document");
        let DocumentOperations::Single(operation) = document.operations else {
            panic!("one operation");
        };
        let Selection::Field(field) = &operation.node.selection_set.node.items[0].node else {
            panic!("a field");
        };
        edge_fields(&field.node.selection_set.node)
    }

    #[test]
    fn a_plain_selection_is_planned_with_its_response_keys() {
        let fields = plan("c: cursor node { id when: createdAt } __typename").expect("plain");
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c", "node", "__typename"]);
        let EdgeField::Node(node) = &fields[1].1 else {
            panic!("node");
        };
        assert_eq!(node[1], (Name::new("when"), NodeField::CreatedAt));
    }

    #[test]
    fn a_set_of_many_aliases_goes_to_async_graphql() {
        let aliases = |n: usize| (0..n).map(|i| format!("a{i}: body")).collect::<Vec<_>>();
        let at_limit = format!("node {{ {} }}", aliases(MAX_PLAIN_KEYS).join(" "));
        assert!(plan(&at_limit).is_some());
        let over = format!("node {{ {} }}", aliases(MAX_PLAIN_KEYS + 1).join(" "));
        assert!(plan(&over).is_none());
    }

    #[test]
    fn anything_else_goes_to_async_graphql() {
        for edges in [
            "...F",
            "... on CommentEdge { cursor }",
            "cursor @deprecated",
            "cursor cursor",
            "node { body body }",
            "node { viewerCanUpdate }",
            "node { reply { body } }",
            "node { ... on Comment { body } }",
            "node { id: body id }",
            "node { createdAt(format: 1) }",
            "total",
        ] {
            assert!(plan(edges).is_none(), "{edges}");
        }
    }
}
