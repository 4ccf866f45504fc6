//! What a document selects once its fragments are expanded: its fields and its aliases,
//! counted the way execution and validation meet them, for `--max-selections` and
//! `--max-aliases` (`check`).
//!
//! Counted per expansion: a fragment of 10 aliased fields spread 10 times selects 100 of them,
//! since each spread executes them again (issue 22: aliases and fragments let one request read
//! 91,800 items). Each fragment is walked once and its count reused at every spread, so a
//! document of fragments that spread the next one twice, 40 deep, is counted in 40 steps (and
//! refused: it selects 2^40 fields). Fragments no operation reaches still cost validation
//! their own fields, so they count once. Unknown and cyclic spreads count as empty: validation
//! rejects them later.

use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{
    ExecutableDocument, FragmentDefinition, Selection, SelectionSet,
};
use async_graphql::{Name, Positioned};

/// What a document selects, fragments expanded (saturating: a count past `usize::MAX` is
/// `usize::MAX`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Selected {
    /// Fields, `__typename` included.
    pub fields: usize,
    /// Fields selected under an alias.
    pub aliases: usize,
}

impl Selected {
    fn add(self, other: Self) -> Self {
        Self {
            fields: self.fields.saturating_add(other.fields),
            aliases: self.aliases.saturating_add(other.aliases),
        }
    }
}

/// The fields and aliases `document` selects: every operation's, expanded, plus each fragment
/// no operation spreads, once.
pub(super) fn selected(document: &ExecutableDocument) -> Selected {
    let mut walk = Walk {
        fragments: &document.fragments,
        known: HashMap::new(),
        open: HashSet::new(),
    };
    let mut total = Selected::default();
    for (_, operation) in document.operations.iter() {
        total = total.add(walk.set(&operation.node.selection_set.node));
    }
    let reached: HashSet<&str> = walk.known.keys().copied().collect();
    for name in document.fragments.keys() {
        if !reached.contains(name.as_str()) {
            let unused = walk.fragment(name.as_str());
            // Their aliases never execute; their fields are validated.
            total.fields = total.fields.saturating_add(unused.fields);
        }
    }
    total
}

struct Walk<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    /// Each fragment's expanded count, once walked.
    known: HashMap<&'a str, Selected>,
    /// Fragments being walked: a spread of one of them is a cycle.
    open: HashSet<&'a str>,
}

impl<'a> Walk<'a> {
    fn set(&mut self, set: &'a SelectionSet) -> Selected {
        let mut total = Selected::default();
        for item in &set.items {
            let counted = match &item.node {
                Selection::Field(field) => Selected {
                    fields: 1,
                    aliases: usize::from(field.node.alias.is_some()),
                }
                .add(self.set(&field.node.selection_set.node)),
                Selection::InlineFragment(fragment) => self.set(&fragment.node.selection_set.node),
                Selection::FragmentSpread(spread) => {
                    self.fragment(spread.node.fragment_name.node.as_str())
                }
            };
            total = total.add(counted);
        }
        total
    }

    fn fragment(&mut self, name: &'a str) -> Selected {
        if let Some(&known) = self.known.get(name) {
            return known;
        }
        let Some(definition) = self.fragments.get(name) else {
            return Selected::default();
        };
        if !self.open.insert(name) {
            return Selected::default();
        }
        let counted = self.set(&definition.node.selection_set.node);
        self.open.remove(name);
        self.known.insert(name, counted);
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selected_in(text: &str) -> Selected {
        selected(&async_graphql::parser::parse_query(text).expect("a valid document"))
    }

    #[test]
    fn counts_aliases_in_operations_and_fragments() {
        let counted = selected_in(
            "query { a: product(sku: \"A\") { sku } b: product(sku: \"B\") { ...F } c: node(id: \"x\") { ... on Product { d: sku } } }
             fragment F on Product { e: sku f: id }",
        );
        assert_eq!(
            counted,
            Selected {
                fields: 7,
                aliases: 6
            }
        );
        assert_eq!(
            selected_in("{ product(sku: \"A\") { sku } }"),
            Selected {
                fields: 2,
                aliases: 0
            }
        );
    }

    #[test]
    fn a_fragment_counts_at_every_spread() {
        let mut text = String::from("{ x {");
        for _ in 0..10 {
            text.push_str(" ...F");
        }
        text.push_str(" } } fragment F on T { ");
        for i in 0..10 {
            text.push_str(&format!("a{i}: y "));
        }
        text.push('}');
        // The spreads repeat one fragment: 10 × 10 aliased fields, plus `x`.
        assert_eq!(
            selected_in(&text),
            Selected {
                fields: 101,
                aliases: 100
            }
        );
    }

    #[test]
    fn doubling_fragments_saturate_instead_of_walking_forever() {
        let mut text = String::from("{ ...F0 }");
        for i in 0..70 {
            text.push_str(&format!(
                " fragment F{i} on Q {{ ...F{n} ...F{n} }}",
                n = i + 1
            ));
        }
        text.push_str(" fragment F70 on Q { z: y }");
        assert_eq!(
            selected_in(&text),
            Selected {
                fields: usize::MAX,
                aliases: usize::MAX
            }
        );
    }

    #[test]
    fn cyclic_unknown_and_unused_fragments_end_and_unused_fields_count_once() {
        let cyclic = "{ ...A } fragment A on Q { a { ...B } } fragment B on Q { b { ...A } }";
        assert_eq!(selected_in(cyclic).fields, 2);
        assert_eq!(selected_in("{ a { ...Missing } }").fields, 1);
        let unused = "{ a } fragment U on Q { b: x c: x d: x }";
        assert_eq!(
            selected_in(unused),
            Selected {
                fields: 4,
                aliases: 0
            }
        );
    }
}
