//! Limits checked on the parsed document before async-graphql runs it: depth (aliases and
//! selections are counted in `selections`); and what a mutation writes, for the writes budget.
//! The price is limited before the request runs (`graphql::pricing`, `Budget::admit`).
//!
//! Depth is counted here rather than by async-graphql's `limit_depth`, which counts every
//! field alike: the introspection query that GraphiQL, graphql-js and Apollo's tools send
//! nests `ofType` nine times and reaches depth 15, so any useful limit refused it and
//! GraphiQL showed no schema.

use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, OperationType, Selection,
    SelectionSet,
};
use async_graphql::{Name, Positioned};

use crate::graphql::MAX_NESTING;

/// How many writes the operation `operation_name` selects: the distinct response names of a
/// mutation's root fields, fragments followed (`__typename` writes nothing); 0 for a query.
///
/// Every root field of a mutation is one write, so aliases (`a: addComment b: addComment`)
/// cost one each; two selections of one response name are one field, which GraphQL executes
/// once. Unknown and cyclic fragments count as empty: validation rejects them later.
pub(super) fn writes(document: &ExecutableDocument, operation_name: Option<&str>) -> usize {
    let operation = match (&document.operations, operation_name) {
        (DocumentOperations::Single(op), _) => Some(op),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next(),
        (DocumentOperations::Multiple(_), None) => None,
    };
    let Some(operation) = operation.filter(|op| op.node.ty == OperationType::Mutation) else {
        return 0;
    };
    fn collect<'a>(
        set: &'a SelectionSet,
        fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
        seen: &mut HashSet<&'a str>,
        names: &mut HashSet<&'a str>,
    ) {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let name = field.alias.as_ref().unwrap_or(&field.name).node.as_str();
                    if field.name.node.as_str() != "__typename" {
                        names.insert(name);
                    }
                }
                Selection::InlineFragment(fragment) => {
                    collect(&fragment.node.selection_set.node, fragments, seen, names);
                }
                Selection::FragmentSpread(spread) => {
                    let name = spread.node.fragment_name.node.as_str();
                    if let Some(definition) = fragments.get(name)
                        && seen.insert(name)
                    {
                        collect(&definition.node.selection_set.node, fragments, seen, names);
                    }
                }
            }
        }
    }
    let mut names = HashSet::new();
    collect(
        &operation.node.selection_set.node,
        &document.fragments,
        &mut HashSet::new(),
        &mut names,
    );
    names.len()
}

/// How deeply the document's deepest operation nests fields, fragments followed: `{ a { b } }`
/// is 2, as async-graphql counts.
///
/// One exception: inside introspection (`__schema`, `__type`), `ofType` adds no depth. It is a
/// one-to-one step (a list's or non-null's inner type), so a chain of them costs what one
/// field costs, and standard clients' introspection queries nest it nine times. Every other
/// introspection field counts, so fan-outs like `fields { type { fields { … } } }` stay
/// limited. A document whose fragment spreads nest past [`MAX_NESTING`] counts as
/// `usize::MAX`. Unknown and cyclic fragments count as empty: validation rejects them later.
pub(super) fn depth(document: &ExecutableDocument) -> usize {
    let mut walk = DepthWalk {
        fragments: &document.fragments,
        known: HashMap::new(),
        open: HashSet::new(),
    };
    document
        .operations
        .iter()
        .map(|(_, op)| walk.set(&op.node.selection_set.node, false, 0))
        .max()
        .unwrap_or(0)
}

struct DepthWalk<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    /// Depths of fragments already walked, by name and by whether inside introspection (each
    /// fragment is walked once however often it is spread, so spreads cannot blow up).
    known: HashMap<(&'a str, bool), usize>,
    /// Fragments being walked: a spread of one of them is a cycle.
    open: HashSet<&'a str>,
}

impl<'a> DepthWalk<'a> {
    fn set(&mut self, set: &'a SelectionSet, introspection: bool, nesting: usize) -> usize {
        if nesting > MAX_NESTING {
            return usize::MAX;
        }
        let mut deepest = 0;
        for item in &set.items {
            let depth = match &item.node {
                Selection::Field(field) => {
                    let name = field.node.name.node.as_str();
                    let inside = introspection || name == "__schema" || name == "__type";
                    let own = usize::from(!(introspection && name == "ofType"));
                    own.saturating_add(self.set(
                        &field.node.selection_set.node,
                        inside,
                        nesting + 1,
                    ))
                }
                Selection::InlineFragment(fragment) => self.set(
                    &fragment.node.selection_set.node,
                    introspection,
                    nesting + 1,
                ),
                Selection::FragmentSpread(spread) => self.fragment(
                    spread.node.fragment_name.node.as_str(),
                    introspection,
                    nesting,
                ),
            };
            deepest = deepest.max(depth);
        }
        deepest
    }

    fn fragment(&mut self, name: &'a str, introspection: bool, nesting: usize) -> usize {
        if let Some(&depth) = self.known.get(&(name, introspection)) {
            return depth;
        }
        let Some(definition) = self.fragments.get(name) else {
            return 0;
        };
        if !self.open.insert(name) {
            return 0;
        }
        let depth = self.set(
            &definition.node.selection_set.node,
            introspection,
            nesting + 1,
        );
        self.open.remove(name);
        self.known.insert((name, introspection), depth);
        depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ExecutableDocument {
        async_graphql::parser::parse_query(text).expect("valid document")
    }

    #[test]
    fn depth_counts_fields_through_fragments_as_async_graphql_does() {
        assert_eq!(depth(&parse("{ a }")), 1);
        assert_eq!(depth(&parse("{ a { b { c } } d }")), 3);
        assert_eq!(
            depth(&parse(
                "query { a { ...F ... on T { x { y } } } } fragment F on T { b { c { d } } }"
            )),
            4
        );
        assert_eq!(
            depth(&parse("query A { a } query B { a { b { c { d } } } }")),
            4,
            "every operation of the document counts"
        );
    }

    #[test]
    fn depth_does_not_count_of_type_inside_introspection_only() {
        let type_ref = "fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } } }";
        let standard = format!(
            "query IntrospectionQuery {{ __schema {{ types {{ fields {{ args {{ type {{ ...TypeRef }} }} }} }} }} }} {type_ref}"
        );
        assert_eq!(
            depth(&parse(&standard)),
            6,
            "__schema types fields args type kind"
        );
        assert_eq!(
            depth(&parse(
                "{ __type(name: \"T\") { fields { type { fields { type { name } } } } } }"
            )),
            6,
            "fan-out inside introspection counts"
        );
        assert_eq!(
            depth(&parse("{ a { ofType { ofType { b } } } }")),
            4,
            "an ofType of the schema's own counts"
        );
    }

    #[test]
    fn cyclic_unknown_and_repeated_fragments_end() {
        assert_eq!(
            depth(&parse(
                "{ ...A } fragment A on Q { a { ...B } } fragment B on Q { b { ...A } }"
            )),
            2
        );
        assert_eq!(depth(&parse("{ a { ...Missing } }")), 1);
        // Each level spreads the next one twice: walked once each, not 2^40 times.
        let mut text = String::from("{ ...F0 }");
        for i in 0..40 {
            text.push_str(&format!(
                " fragment F{i} on Q {{ ...F{n} ...F{n} }}",
                n = i + 1
            ));
        }
        text.push_str(" fragment F40 on Q { z }");
        assert_eq!(depth(&parse(&text)), 1);
        // A chain of spreads deeper than any query needs is too deep.
        let mut chain = String::from("{ ...F0 }");
        for i in 0..100 {
            chain.push_str(&format!(" fragment F{i} on Q {{ ...F{} }}", i + 1));
        }
        chain.push_str(" fragment F100 on Q { z }");
        assert_eq!(depth(&parse(&chain)), usize::MAX);
    }

    #[test]
    fn every_root_field_of_a_mutation_is_a_write_aliases_included() {
        let writes = |text: &str, name: Option<&str>| writes(&parse(text), name);
        assert_eq!(
            writes(
                "mutation { addComment(input: $i) { comment { id } } }",
                None
            ),
            1
        );
        assert_eq!(
            writes(
                "mutation { a: addComment(input: $i) { x } b: addComment(input: $j) { x } __typename }",
                None
            ),
            2
        );
        assert_eq!(
            writes(
                "mutation { ...W ... on Mutation { c: deleteComment(input: $k) { x } } } fragment W on Mutation { a: addComment(input: $i) { x } ...W }",
                None
            ),
            2,
            "fragments are followed once"
        );
        assert_eq!(
            writes(
                "mutation { addComment(input: $i) { x } addComment(input: $i) { y } }",
                None
            ),
            1,
            "one response name is one field"
        );
        assert_eq!(writes("{ product(sku: \"A\") { sku } }", None), 0);
        let two = "query Q { a } mutation M { a: addComment(input: $i) { x } b: addComment(input: $j) { x } }";
        assert_eq!(writes(two, Some("M")), 2);
        assert_eq!(writes(two, Some("Q")), 0);
        assert_eq!(writes(two, None), 0, "an ambiguous document runs nothing");
    }
}
