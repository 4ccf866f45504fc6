//! Every object of a response with its keys in the order the operation selected them.
//!
//! # Why this exists
//!
//! async-graphql 7.2.1 resolves an object's fields together and writes each into the object as
//! it finishes (`resolver_utils/container.rs`, `do_resolve_container`, a `FuturesUnordered`): a
//! field that waits for a batch or a read lands after the ones that did not. So
//! `product { ratingSummary { total } sku comments(first: 1) { edges { cursor } } }` answered
//! `{"sku":…,"comments":…,"ratingSummary":…}`. The specification's result map is ordered as the
//! fields were selected (§7.2.2, "Serialized Map Ordering"), and a client comparing responses or
//! reading them by position sees the difference. This pass puts the keys back; it can go when
//! upstream keeps the selection order (`tests/api/graphql/field_order.rs` shows the bytes).
//!
//! # How
//!
//! For each position the operation selects objects at, the response keys in their first
//! selection's order (fragments and inline fragments followed whatever their type condition, as
//! `walk` does: the response key decides), worked out once per position however many list items
//! it holds. An object already in order is left as it is; one that is not is sorted in place.

use async_graphql::Value;
use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{ExecutableDocument, SelectionSet};

use super::walk::each_field;

/// Puts the keys of every object of `data` (executed from `document`, operation
/// `operation_name`) in the operation's selection order.
pub fn in_selection_order(
    document: &ExecutableDocument,
    operation_name: Option<&str>,
    data: &mut Value,
) {
    let Some(operation) = super::operation(document, operation_name) else {
        return;
    };
    let order = Order { document };
    order.apply(&[&operation.selection_set.node], data);
}

struct Order<'a> {
    document: &'a ExecutableDocument,
}

impl<'a> Order<'a> {
    /// Orders `value`, selected by `sets` (the selection sets of every field that selects it).
    fn apply(&self, sets: &[&'a SelectionSet], value: &mut Value) {
        match value {
            Value::List(_) => {
                let keys = self.keys(sets);
                self.apply_to_items(&keys, value);
            }
            Value::Object(_) => {
                let keys = self.keys(sets);
                self.apply_with(&keys, value);
            }
            _ => {}
        }
    }

    /// `value` (a list, perhaps of lists) whose objects `keys` orders.
    fn apply_to_items(&self, keys: &Keys<'a>, value: &mut Value) {
        match value {
            Value::List(items) => {
                for item in items {
                    self.apply_to_items(keys, item);
                }
            }
            Value::Object(_) => self.apply_with(keys, value),
            _ => {}
        }
    }

    /// Orders the object `value` by `keys`, then what each of its fields holds.
    fn apply_with(&self, keys: &Keys<'a>, value: &mut Value) {
        let Value::Object(map) = value else {
            return;
        };
        let rank = |key: &str| {
            keys.iter()
                .position(|(k, _)| *k == key)
                .unwrap_or(usize::MAX)
        };
        let in_order = map.keys().map(|k| rank(k.as_str())).is_sorted();
        if !in_order {
            map.sort_by(|a, _, b, _| rank(a.as_str()).cmp(&rank(b.as_str())));
        }
        for (key, sets) in keys {
            if sets.is_empty() {
                continue;
            }
            if let Some(child) = map.get_mut(*key) {
                self.apply(sets, child);
            }
        }
    }

    /// The response keys `sets` select, in their first selection's order, each with the
    /// selection sets below it (empty for a leaf).
    fn keys(&self, sets: &[&'a SelectionSet]) -> Keys<'a> {
        let mut keys: IndexMap<&'a str, Vec<&'a SelectionSet>> = IndexMap::new();
        for set in sets {
            each_field(self.document, set, "", &mut |field, _| {
                let below = keys.entry(field.response_key().node.as_str()).or_default();
                if !field.selection_set.node.items.is_empty() {
                    below.push(&field.selection_set.node);
                }
            });
        }
        keys.into_iter().collect()
    }
}

/// Response keys in order, with the selection sets below each.
type Keys<'a> = Vec<(&'a str, Vec<&'a SelectionSet>)>;
