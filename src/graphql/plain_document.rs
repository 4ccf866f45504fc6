//! Whether async-graphql resolves only a handful of a document's fields itself: the documents
//! whose texts, once validated, skip async-graphql's validation walk (`graphql::validated`).
//!
//! Skipping the walk takes an async-graphql extension, and with one async-graphql sends every
//! field it resolves through the extension chain. On a document whose lists are all written
//! by `graphql::plain` and its siblings that is a few fields a request, and the walk it saves
//! is the larger cost; on a page asked through fragments, as Relay asks, async-graphql
//! resolves every field of every comment, and the chain would cost far more than the walk
//! (BENCHMARKS.md, "An uncached page's instructions": `page-fragment`). A document is plain
//! when it has no fragment and every `edges`, `nodes`, `pageCursors` and `pageInfo` in it has
//! a selection those writers take. The answer is the same either way; only the cost differs.

use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};

use super::plain::{plain_edges, plain_nodes};
use super::plain_info::plain_info;
use super::plain_pager::plain_pager;

/// Whether `document` has no fragment and all its lists are written by the plain paths.
pub fn is_plain(document: &ExecutableDocument) -> bool {
    document.fragments.is_empty()
        && document
            .operations
            .iter()
            .all(|(_, operation)| plain_set(&operation.node.selection_set.node))
}

fn plain_set(set: &SelectionSet) -> bool {
    set.items.iter().all(|selection| match &selection.node {
        Selection::Field(field) => {
            let children = &field.node.selection_set.node;
            match field.node.name.node.as_str() {
                "edges" => plain_edges(children),
                "nodes" => plain_nodes(children),
                "pageCursors" => plain_pager(children),
                "pageInfo" => plain_info(children),
                _ => plain_set(children),
            }
        }
        Selection::FragmentSpread(_) | Selection::InlineFragment(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;

    use super::*;

    fn plain(text: &str) -> bool {
        is_plain(&parse_query(text).expect("parses"))
    }

    #[test]
    fn a_page_of_plain_lists_is_plain() {
        assert!(plain(
            "{ comments(sku: \"A\", first: 20) { totalCount edges { cursor node { id body } } \
             pageInfo { hasNextPage endCursor } pageCursors(around: 2) { pageCount around { page cursor } } } }"
        ));
        assert!(plain(
            "query Q { product(sku: \"A\") { comments { nodes { body } } } }"
        ));
    }

    #[test]
    fn fragments_and_lists_async_graphql_resolves_are_not() {
        for text in [
            "{ comments(sku: \"A\") { edges { ...E } } } fragment E on CommentEdge { cursor }",
            "{ comments(sku: \"A\") { edges { node { ... on Comment { body } } } } }",
            "{ comments(sku: \"A\") { edges { node { body viewerCanUpdate } } } }",
            "{ comments(sku: \"A\") { nodes { reply { body } } } }",
            "{ comments(sku: \"A\") { pageInfo { hasNextPage hasNextPage } } }",
            "{ ... on Query { comments(sku: \"A\") { totalCount } } }",
        ] {
            assert!(!plain(text), "{text}");
        }
    }
}
