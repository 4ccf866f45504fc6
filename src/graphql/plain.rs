//! A page's edges and nodes written straight into the response when their selection is plain.
//!
//! async-graphql resolves every field of every object with a boxed future of its own, joined in
//! a `FuturesUnordered` per object (`resolver_utils::container`): on a page of 20 comments of
//! five fields that machinery, not the fields, was about a third of the request's instructions
//! (callgrind; BENCHMARKS.md, "An uncached page's instructions"). Most pages select
//! only a comment's stored fields, which need no future: [`Edges`] and [`Nodes`] look at their
//! selection once, and when every field in it is one of [`NodeField`]'s (or an edge's `cursor`,
//! `node` and `__typename`), no fragment, no directive and no response key twice, they write the
//! list's JSON themselves (`graphql::raw_json`, for a request the HTTP layer runs), with the
//! values the resolvers of `types.rs` give. Any other selection (a fragment, `viewerCanUpdate`,
//! `reply`, …), and any request that `raw_json` does not write, goes to async-graphql as
//! before, so what a client receives is the same either way; a test compares the two paths on
//! the same page (`tests/api/graphql/plain_pages.rs`).
//!
//! This can go if async-graphql learns to resolve fields that need no `await` without a future
//! each.

use std::borrow::Cow;
use std::sync::Arc;

use async_graphql::parser::types::{Field, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, Name, OutputType, Positioned, ServerResult, Value};

use super::global_id::GlobalId;
use super::raw_json::{self, Writer};
use super::scalars::Rfc3339;
use super::types::{Comment, CommentEdge};
use crate::domain;

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

    /// Writes the value `Comment`'s resolver of the field gives.
    fn write(self, json: &mut Writer, stored: &domain::Comment) {
        match self {
            Self::Typename => json.raw("\"Comment\""),
            Self::Id => json.plain_string(&GlobalId::comment_text(stored.id)),
            Self::Author => json.string(&stored.author),
            Self::Body => json.string(&stored.body),
            Self::Rating => json.int(i64::from(stored.rating.get())),
            Self::CreatedAt => instant(json, stored.created_at_ms),
            Self::UpdatedAt => match stored.updated_at_ms {
                Some(ms) => instant(json, ms),
                None => json.raw("null"),
            },
            Self::VerifiedPurchase => json.boolean(stored.is_verified()),
            Self::HelpfulCount => json.int(i64::from(
                i32::try_from(stored.helpful_count).unwrap_or(i32::MAX),
            )),
        };
    }
}

/// A stored instant's `DateTime` value, as `DateTime`'s `to_value` gives it.
fn instant(json: &mut Writer, ms: u64) -> &mut Writer {
    match Rfc3339::of_millis(ms) {
        Rfc3339::Short(text) => json.plain_string(text.as_bytes()),
        Rfc3339::Long(text) => json.string(&text),
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

/// `Some` for a field without a sub-selection (a leaf).
pub(super) fn leaf(field: &Positioned<Field>) -> Option<()> {
    field.node.selection_set.node.items.is_empty().then_some(())
}

/// A comment's plain selection.
fn node_fields(set: &SelectionSet) -> Option<Vec<(Name, NodeField)>> {
    plain(set, |f| {
        leaf(f)?;
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

/// Whether `edges` with the selection `set` is written by [`Edges`] (for a comment connection).
pub(super) fn plain_edges(set: &SelectionSet) -> bool {
    edge_fields(set).is_some()
}

/// Whether `nodes` with the selection `set` is written by [`Nodes`].
pub(super) fn plain_nodes(set: &SelectionSet) -> bool {
    node_fields(set).is_some()
}

fn write_node(json: &mut Writer, fields: &[(Name, NodeField)], comment: &domain::Comment) {
    json.object(fields, |json, field| field.write(json, comment));
}

fn write_edge(
    json: &mut Writer,
    fields: &[(Name, EdgeField)],
    (cursor, comment): (&String, &domain::Comment),
) {
    json.object(fields, |json, field| match field {
        EdgeField::Typename => {
            json.raw("\"CommentEdge\"");
        }
        EdgeField::Cursor => {
            // A cursor is base64url (`pagination::cursor`).
            json.plain_string(cursor.as_bytes());
        }
        EdgeField::Node(fields) => write_node(json, fields, comment),
    });
}

/// About how many bytes of JSON a comment takes (a short review), to size the text once.
const COMMENT_JSON_BYTES: usize = 384;

/// A connection's `edges`: `[CommentEdge!]!` in the schema. The page's comments are shared
/// with the connection, not copied: only async-graphql's path makes `CommentEdge`s of them.
#[derive(Debug)]
pub(super) struct Edges {
    pub comments: Arc<[domain::Comment]>,
    /// Each comment's cursor.
    pub cursors: Vec<String>,
}

/// A connection's `nodes`: `[Comment!]!` in the schema.
#[derive(Debug)]
pub(super) struct Nodes(pub Arc<[domain::Comment]>);

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
        let edges = self.cursors.iter().zip(self.comments.iter());
        match edge_fields(&ctx.item.node).filter(|_| raw_json::allowed(ctx)) {
            Some(fields) => {
                let mut json = Writer::new(self.comments.len() * (COMMENT_JSON_BYTES + 256));
                json.list(edges, |json, edge| write_edge(json, &fields, edge));
                Ok(json.finish())
            }
            None => {
                let edges: Vec<CommentEdge> = edges
                    .map(|(cursor, comment)| CommentEdge {
                        cursor: cursor.clone(),
                        node: Comment(comment.clone()),
                    })
                    .collect();
                OutputType::resolve(&edges, ctx, field).await
            }
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
        match node_fields(&ctx.item.node).filter(|_| raw_json::allowed(ctx)) {
            Some(fields) => {
                let mut json = Writer::new(self.0.len() * COMMENT_JSON_BYTES);
                json.list(self.0.iter(), |json, comment| {
                    write_node(json, &fields, comment)
                });
                Ok(json.finish())
            }
            None => {
                let nodes: Vec<Comment> = self.0.iter().cloned().map(Comment).collect();
                OutputType::resolve(&nodes, ctx, field).await
            }
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
