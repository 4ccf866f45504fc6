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
//! A plan of the operation, made once per response: for each position it selects objects at,
//! the response keys in their first selection's order (fragments and inline fragments followed
//! whatever their type condition, as `walk` does: the response key decides). The data is then
//! walked once beside it, however many list items a position holds. An object already in order
//! is left as it is; one that is not is sorted in place. The cost is in BENCHMARKS.md.

use std::sync::{Arc, OnceLock};

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{ExecutableDocument, SelectionSet};
use async_graphql::{Name, Value};

use super::walk::each_field;
use crate::graphql::MAX_NESTING;

/// The key order of a document's operations, worked out on its first response and shared by
/// every copy of its parse (`http::admission::documents` keeps it with the parse, as it keeps
/// the price's plan).
#[derive(Clone, Debug, Default)]
pub struct KeyOrder(Arc<OnceLock<Plans>>);

/// Each operation's name and plan.
type Plans = Vec<(Option<Name>, Plan)>;

impl KeyOrder {
    /// Puts the keys of every object of `data` (executed from `document`, operation
    /// `operation_name`; this order's document) in the operation's selection order.
    pub fn apply(
        &self,
        document: &ExecutableDocument,
        operation_name: Option<&str>,
        data: &mut Value,
    ) {
        let plans = self.0.get_or_init(|| {
            let plans = document.operations.iter().map(|(name, operation)| {
                let set = &operation.node.selection_set.node;
                (name.cloned(), Plan::of(document, &[set], 0))
            });
            plans.collect()
        });
        let plan = match (operation_name, plans.as_slice()) {
            (None, [(_, only)]) => Some(only),
            (None, _) => None,
            (Some(name), plans) => plans
                .iter()
                .find(|(n, _)| n.as_ref().is_some_and(|n| n.as_str() == name))
                .map(|(_, plan)| plan),
        };
        if let Some(plan) = plan {
            plan.apply(data);
        }
    }
}

/// The response keys a position selects, in their first selection's order, each with the plan
/// of what it selects in turn (`None`: a leaf).
#[derive(Debug)]
struct Plan {
    keys: Vec<(Name, Option<Plan>)>,
}

impl Plan {
    /// The plan of the position that `sets` (the selection sets of every field that selects it)
    /// select, `depth` positions below the operation.
    fn of(document: &ExecutableDocument, sets: &[&SelectionSet], depth: usize) -> Self {
        let mut below: IndexMap<&Name, Vec<&SelectionSet>> = IndexMap::new();
        for set in sets {
            each_field(document, set, "", &mut |field, _| {
                let sets = below.entry(&field.response_key().node).or_default();
                if !field.selection_set.node.items.is_empty() {
                    sets.push(&field.selection_set.node);
                }
            });
        }
        // Validation bounds the depth; this bound only keeps a bug from recursing on.
        let keys = below
            .into_iter()
            .map(|(key, sets)| {
                let plan = (!sets.is_empty() && depth < MAX_NESTING)
                    .then(|| Self::of(document, &sets, depth + 1));
                (key.clone(), plan)
            })
            .collect();
        Self { keys }
    }

    /// Where `key` stands in the plan.
    fn rank(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|(k, _)| k.as_str() == key)
    }

    /// Orders `value` (an object, or a list of them, perhaps of lists) by this plan.
    fn apply(&self, value: &mut Value) {
        match value {
            Value::List(items) => items.iter_mut().for_each(|item| self.apply(item)),
            Value::Object(map) => {
                // One pass, no hashing: the plan's keys are walked beside the object's, so an
                // object in order costs a comparison or two a key.
                let mut next = 0;
                let mut in_order = true;
                for (key, child) in map.iter_mut() {
                    let found = self.keys[next..]
                        .iter()
                        .position(|(k, _)| k.as_str() == key.as_str());
                    let at = match found {
                        Some(ahead) => next + ahead,
                        None => {
                            in_order = false;
                            match self.rank(key.as_str()) {
                                Some(at) => at,
                                None => continue,
                            }
                        }
                    };
                    next = if in_order { at + 1 } else { next };
                    if let (_, Some(plan)) = &self.keys[at] {
                        plan.apply(child);
                    }
                }
                if !in_order {
                    let rank = |key: &Name| self.rank(key.as_str()).unwrap_or(usize::MAX);
                    map.sort_by(|a, _, b, _| rank(a).cmp(&rank(b)));
                }
            }
            _ => {}
        }
    }
}
