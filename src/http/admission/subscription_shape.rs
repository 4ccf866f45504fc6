//! What a subscription operation may select, checked on the parsed document before it runs
//! (`check`, for a WebSocket `subscribe`).
//!
//! - **One root field.** The specification's "single root field" rule for subscriptions,
//!   which async-graphql does not enforce: it runs every root field as a subscription of its
//!   own, so one `subscribe` message could open hundreds (identical unaliased fields included,
//!   which async-graphql runs once each), and the per-connection limit counted messages. Here
//!   every field selection at the root counts, fragments followed, so a message is one
//!   subscription.
//! - **Events, not connections.** Nothing below a root field may select a connection
//!   (`comments`, `pageCursors`, `ratingSummary`): every event would run it again, reading
//!   pages per event for every subscriber, with no budget to charge. A client that needs them
//!   queries them over HTTP, where reads are priced.
//!
//! Fragments are followed once each (what a fragment holds does not depend on where it is
//! spread), so a document of many spreads costs its size; unknown and cyclic fragments count as
//! empty: validation refuses them later.

use std::collections::HashMap;

use async_graphql::Positioned;
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, OperationDefinition, OperationType,
    Selection, SelectionSet,
};

/// Fields that read a connection (pages of comments) each time they run.
pub(super) const CONNECTION_FIELDS: [&str; 3] = ["comments", "pageCursors", "ratingSummary"];

/// Why a subscription operation may not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// It selects this many root fields, not one.
    RootFields(usize),
    /// It selects this connection field below its root field.
    Connection(String),
}

/// Checks the subscription operation `operation_name` selects in `document` (others are not
/// this module's business).
pub(super) fn check(
    document: &ExecutableDocument,
    operation_name: Option<&str>,
) -> Result<(), Shape> {
    let Some(operation) = selected(document, operation_name) else {
        return Ok(());
    };
    if operation.ty != OperationType::Subscription {
        return Ok(());
    }
    let mut walk = Walk {
        fragments: &document.fragments,
        root_fields: HashMap::new(),
        connections: HashMap::new(),
    };
    let root = &operation.selection_set.node;
    let fields = walk.root_fields_of(root);
    if fields != 1 {
        return Err(Shape::RootFields(fields));
    }
    match walk.connection_below_root(root) {
        Some(field) => Err(Shape::Connection(field)),
        None => Ok(()),
    }
}

fn selected<'a>(
    document: &'a ExecutableDocument,
    operation_name: Option<&str>,
) -> Option<&'a OperationDefinition> {
    let operation = match (&document.operations, operation_name) {
        (DocumentOperations::Single(op), _) => Some(op),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next(),
        (DocumentOperations::Multiple(_), None) => None,
    };
    operation.map(|op| &op.node)
}

/// One document's walk, each fragment's answers memoized by name (`None` while it is being
/// walked: a cycle counts as empty).
struct Walk<'a> {
    fragments: &'a HashMap<async_graphql::Name, Positioned<FragmentDefinition>>,
    root_fields: HashMap<&'a str, Option<usize>>,
    connections: HashMap<&'a str, Option<Option<String>>>,
}

impl<'a> Walk<'a> {
    /// Field selections in `set` at its own level, through fragments.
    fn root_fields_of(&mut self, set: &'a SelectionSet) -> usize {
        let mut fields = 0usize;
        for item in &set.items {
            fields = fields.saturating_add(match &item.node {
                Selection::Field(_) => 1,
                Selection::InlineFragment(inline) => {
                    self.root_fields_of(&inline.node.selection_set.node)
                }
                Selection::FragmentSpread(spread) => {
                    let name = spread.node.fragment_name.node.as_str();
                    match (self.root_fields.get(name), self.fragments.get(name)) {
                        (Some(known), _) => known.unwrap_or(0),
                        (None, None) => 0,
                        (None, Some(fragment)) => {
                            self.root_fields.insert(name, None);
                            let n = self.root_fields_of(&fragment.node.selection_set.node);
                            self.root_fields.insert(name, Some(n));
                            n
                        }
                    }
                }
            });
        }
        fields
    }

    /// The first connection field selected anywhere below the fields of `set` (not by them).
    fn connection_below_root(&mut self, set: &'a SelectionSet) -> Option<String> {
        set.items.iter().find_map(|item| match &item.node {
            Selection::Field(field) => self.connection_in(&field.node.selection_set.node),
            Selection::InlineFragment(inline) => {
                self.connection_below_root(&inline.node.selection_set.node)
            }
            Selection::FragmentSpread(spread) => {
                let fragment = self
                    .fragments
                    .get(spread.node.fragment_name.node.as_str())?;
                self.connection_below_root(&fragment.node.selection_set.node)
            }
        })
    }

    /// The first connection field selected in `set` or below it.
    fn connection_in(&mut self, set: &'a SelectionSet) -> Option<String> {
        set.items.iter().find_map(|item| match &item.node {
            Selection::Field(field) => {
                let name = field.node.name.node.as_str();
                if CONNECTION_FIELDS.contains(&name) {
                    return Some(name.to_owned());
                }
                self.connection_in(&field.node.selection_set.node)
            }
            Selection::InlineFragment(inline) => {
                self.connection_in(&inline.node.selection_set.node)
            }
            Selection::FragmentSpread(spread) => {
                let name = spread.node.fragment_name.node.as_str();
                if let Some(known) = self.connections.get(name) {
                    return known.clone().flatten();
                }
                let fragment = self.fragments.get(name)?;
                self.connections.insert(name, None);
                let found = self.connection_in(&fragment.node.selection_set.node);
                self.connections.insert(name, Some(found.clone()));
                found
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Result<(), Shape> {
        let document = async_graphql::parser::parse_query(text).expect("parses");
        check(&document, None)
    }

    #[test]
    fn a_subscription_selects_exactly_one_root_field_fragments_and_duplicates_counted() {
        assert_eq!(shape("subscription { a { kind } }"), Ok(()));
        assert_eq!(
            shape("subscription { a { kind } a { kind } }"),
            Err(Shape::RootFields(2))
        );
        assert_eq!(shape("subscription { a x: a }"), Err(Shape::RootFields(2)));
        assert_eq!(
            shape("subscription { ...F ... on S { a } } fragment F on S { a a }"),
            Err(Shape::RootFields(3))
        );
        assert_eq!(shape("subscription { ...F } fragment F on S { a }"), Ok(()));
        assert_eq!(
            shape("subscription { ...F } fragment F on S { ...F }"),
            Err(Shape::RootFields(0)),
            "a cycle counts as empty"
        );
        assert_eq!(shape("query { a b c }"), Ok(()), "not a subscription");
    }

    #[test]
    fn no_connection_field_anywhere_below_the_root_field_fragments_followed() {
        assert_eq!(
            shape("subscription { e { edge { node { product { comments(first: 1) { x } } } } } }"),
            Err(Shape::Connection("comments".into()))
        );
        let hidden = "subscription { e { ...A } } fragment A on E { edge { ...B } } \
                      fragment B on Edge { node { ... on Comment { product { ...C } } } } \
                      fragment C on Product { ratingSummary { x } }";
        assert_eq!(
            shape(hidden),
            Err(Shape::Connection("ratingSummary".into()))
        );
        assert_eq!(
            shape("subscription { e { edge { node { product { sku id } body } } } }"),
            Ok(())
        );
        // Many spreads of one fragment are walked once.
        let mut wide = String::from("subscription { e { ");
        for _ in 0..2_000 {
            wide.push_str("...W ");
        }
        wide.push_str("} } fragment W on E { kind edge { node { id } } }");
        assert_eq!(shape(&wide), Ok(()));
    }
}
