//! Limits that async-graphql does not enforce itself: aliases per document. Depth and
//! complexity are limited by the schema (see `graphql::QueryLimits`).

use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};

/// How many aliased fields a document declares, in its operations and fragments.
///
/// Aliases let one request ask for the same expensive field many times under different names;
/// counting declarations (not expansions) is enough, since fragment spreads are already bounded
/// by the complexity limit.
pub fn count_aliases(document: &ExecutableDocument) -> usize {
    fn walk(set: &SelectionSet) -> usize {
        set.items
            .iter()
            .map(|item| match &item.node {
                Selection::Field(field) => {
                    usize::from(field.node.alias.is_some()) + walk(&field.node.selection_set.node)
                }
                Selection::InlineFragment(fragment) => walk(&fragment.node.selection_set.node),
                Selection::FragmentSpread(_) => 0,
            })
            .sum()
    }
    let operations: usize = document
        .operations
        .iter()
        .map(|(_, op)| walk(&op.node.selection_set.node))
        .sum();
    let fragments: usize = document
        .fragments
        .values()
        .map(|f| walk(&f.node.selection_set.node))
        .sum();
    operations + fragments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_aliases_in_operations_and_fragments() {
        let doc = async_graphql::parser::parse_query(
            "query { a: product(sku: \"A\") { sku } b: product(sku: \"B\") { ...F } c: node(id: \"x\") { ... on Product { d: sku } } }
             fragment F on Product { e: sku f: id }",
        )
        .expect("valid document");
        assert_eq!(count_aliases(&doc), 6);
        assert_eq!(
            count_aliases(
                &async_graphql::parser::parse_query("{ product(sku: \"A\") { sku } }")
                    .expect("valid")
            ),
            0
        );
    }
}
