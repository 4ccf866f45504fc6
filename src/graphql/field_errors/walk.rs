//! The walk of an operation's selection sets beside an error's path: which type each position
//! of the path has (aliases, fragments and inline fragments included), and writing `null` at a
//! position with the key in the operation's selection order.

use async_graphql::parser::types::{
    BaseType, ExecutableDocument, Field, Selection, SelectionSet, Type,
};
use async_graphql::{Name, PathSegment, Value};

use super::OutputTypes;

/// What the walk learned about one position of a path.
pub(super) struct Position<'a> {
    /// Whether the schema forbids `null` here (a field it does not know counts as nullable).
    pub(super) non_null: bool,
    /// For a field: the selection sets of its parent, and the parent's type.
    parent: Option<(Vec<&'a SelectionSet>, &'a str)>,
}

pub(super) struct Walker<'a> {
    pub(super) types: &'a OutputTypes,
    pub(super) document: &'a ExecutableDocument,
    pub(super) root_type: &'a str,
    pub(super) root: &'a SelectionSet,
}

impl<'a> Walker<'a> {
    /// The position reached by each prefix of `path` (one entry per segment).
    pub(super) fn positions(&self, path: &[PathSegment]) -> Vec<Position<'a>> {
        let mut out = Vec::with_capacity(path.len());
        // The type of the current position (`None`: the root, or unknown once `known` is
        // false) and the selection sets that select below it.
        let mut current: Option<&'a Type> = None;
        let mut sets: Vec<&'a SelectionSet> = vec![self.root];
        let mut known = true;
        for segment in path {
            let position = match segment {
                PathSegment::Index(_) => match current.map(|t| &t.base) {
                    Some(BaseType::List(item)) if known => {
                        current = Some(item);
                        Position {
                            non_null: !item.nullable,
                            parent: None,
                        }
                    }
                    _ => {
                        known = false;
                        Position {
                            non_null: false,
                            parent: None,
                        }
                    }
                },
                PathSegment::Field(key) => {
                    let parent_sets = std::mem::take(&mut sets);
                    let parent_type = match current.map(|t| &t.base) {
                        _ if !known => None,
                        None => Some(self.root_type),
                        Some(BaseType::Named(name)) => Some(name.as_str()),
                        Some(BaseType::List(_)) => None,
                    };
                    let mut found: Option<&'a Type> = None;
                    if let Some(parent_type) = parent_type {
                        for set in &parent_sets {
                            self.collect(set, parent_type, &mut |field, on| {
                                if field.response_key().node.as_str() != key.as_str() {
                                    return;
                                }
                                let name = field.name.node.as_str();
                                let ty = self
                                    .types
                                    .field(on, name)
                                    .or_else(|| self.types.field(parent_type, name));
                                if let Some(ty) = ty {
                                    found.get_or_insert(ty);
                                    sets.push(&field.selection_set.node);
                                }
                            });
                        }
                    }
                    known = known && found.is_some();
                    current = found;
                    Position {
                        non_null: found.is_some_and(|ty| !ty.nullable),
                        parent: parent_type.map(|t| (parent_sets, t)),
                    }
                }
            };
            out.push(position);
        }
        out
    }

    /// [`each_field`] of `set` on `on`.
    fn collect(
        &self,
        set: &'a SelectionSet,
        on: &'a str,
        visit: &mut dyn FnMut(&'a Field, &'a str),
    ) {
        each_field(self.document, set, on, visit);
    }

    /// Writes `null` at `path` (`position` is its last position). Nothing is left to do when an
    /// earlier error already nulled an ancestor.
    pub(super) fn set_null(&self, data: &mut Value, path: &[PathSegment], position: &Position<'a>) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut value = data;
        for segment in parents {
            let child = match (value, segment) {
                (Value::Object(map), PathSegment::Field(key)) => map.get_mut(key.as_str()),
                (Value::List(items), PathSegment::Index(index)) => items.get_mut(*index),
                _ => None,
            };
            match child {
                Some(child) => value = child,
                None => return,
            }
        }
        match (value, last) {
            (Value::Object(map), PathSegment::Field(key)) => {
                if let Some(existing) = map.get_mut(key.as_str()) {
                    *existing = Value::Null;
                    return;
                }
                // The key takes its place in the order the operation selected the fields.
                let index = match &position.parent {
                    Some((sets, on)) => {
                        let before = self.keys_before(sets, on, key);
                        map.keys().filter(|k| before.contains(&k.as_str())).count()
                    }
                    None => map.len(),
                };
                map.shift_insert(index, Name::new(key), Value::Null);
            }
            (Value::List(items), PathSegment::Index(index)) => {
                if let Some(item) = items.get_mut(*index) {
                    *item = Value::Null;
                }
            }
            _ => {}
        }
    }

    /// The response keys `sets` select before `key`, in the operation's order.
    fn keys_before(&self, sets: &[&'a SelectionSet], on: &'a str, key: &str) -> Vec<&'a str> {
        let mut keys = Vec::new();
        for set in sets {
            self.collect(set, on, &mut |field, _| {
                keys.push(field.response_key().node.as_str());
            });
        }
        let end = keys.iter().position(|k| *k == key).unwrap_or(keys.len());
        keys.truncate(end);
        keys
    }
}

/// Calls `visit` with each field `set` (of `document`, selected on the type `on`) selects,
/// following fragment spreads and inline fragments whatever their type condition (the response
/// key decides), and the type it is selected on, in the operation's order.
pub(super) fn each_field<'a>(
    document: &'a ExecutableDocument,
    set: &'a SelectionSet,
    on: &'a str,
    visit: &mut dyn FnMut(&'a Field, &'a str),
) {
    each_field_within(document, set, on, visit, 0);
}

fn each_field_within<'a>(
    document: &'a ExecutableDocument,
    set: &'a SelectionSet,
    on: &'a str,
    visit: &mut dyn FnMut(&'a Field, &'a str),
    depth: usize,
) {
    // Validation refuses fragment cycles; the bound only keeps a bug from looping.
    if depth > 64 {
        return;
    }
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => visit(&field.node, on),
            Selection::FragmentSpread(spread) => {
                let name = &spread.node.fragment_name.node;
                if let Some(fragment) = document.fragments.get(name) {
                    let fragment = &fragment.node;
                    let on = fragment.type_condition.node.on.node.as_str();
                    each_field_within(document, &fragment.selection_set.node, on, visit, depth + 1);
                }
            }
            Selection::InlineFragment(inline) => {
                let inline = &inline.node;
                let on = inline
                    .type_condition
                    .as_ref()
                    .map_or(on, |c| c.node.on.node.as_str());
                each_field_within(document, &inline.selection_set.node, on, visit, depth + 1);
            }
        }
    }
}
