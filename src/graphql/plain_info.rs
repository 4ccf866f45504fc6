//! A comment connection's `pageInfo` written straight into the response when its selection is
//! plain, by the rules and for the reason of `graphql::plain`: its four fields were four boxed
//! futures and an object of async-graphql's on every page (callgrind; BENCHMARKS.md, "An
//! uncached page's instructions"). Any other selection goes to async-graphql;
//! `tests/api/graphql/plain_pages.rs` compares the two.
//!
//! This can go with `graphql::plain`.

use std::borrow::Cow;

use async_graphql::parser::types::{Field, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, Name, OutputType, Positioned, ServerResult, Value};

use super::plain::{leaf, plain};
use super::raw_json::{self, Writer};
use super::types::PageInfo;

/// A `PageInfo`'s fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InfoField {
    Typename,
    HasNextPage,
    HasPreviousPage,
    StartCursor,
    EndCursor,
}

/// A `PageInfo`'s plain selection.
fn info_fields(set: &SelectionSet) -> Option<Vec<(Name, InfoField)>> {
    plain(set, |f| {
        leaf(f)?;
        Some(match f.node.name.node.as_str() {
            "__typename" => InfoField::Typename,
            "hasNextPage" => InfoField::HasNextPage,
            "hasPreviousPage" => InfoField::HasPreviousPage,
            "startCursor" => InfoField::StartCursor,
            "endCursor" => InfoField::EndCursor,
            _ => return None,
        })
    })
}

/// Whether `pageInfo` with the selection `set` is written by [`PlainPageInfo`].
pub(super) fn plain_info(set: &SelectionSet) -> bool {
    info_fields(set).is_some()
}

/// A cursor or `null`; a cursor is base64url (`pagination::cursor`).
fn cursor(json: &mut Writer, cursor: Option<&String>) {
    match cursor {
        Some(cursor) => json.plain_string(cursor.as_bytes()),
        None => json.raw("null"),
    };
}

/// A comment connection's `pageInfo`: `PageInfo!` in the schema.
#[derive(Debug)]
pub(super) struct PlainPageInfo(pub PageInfo);

impl OutputType for PlainPageInfo {
    fn type_name() -> Cow<'static, str> {
        PageInfo::type_name()
    }

    fn qualified_type_name() -> String {
        PageInfo::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        PageInfo::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        let Some(fields) = info_fields(&ctx.item.node).filter(|_| raw_json::allowed(ctx)) else {
            return OutputType::resolve(&self.0, ctx, field).await;
        };
        let info = &self.0;
        let mut json = Writer::new(160);
        json.object(&fields, |json, field| match field {
            InfoField::Typename => {
                json.raw("\"PageInfo\"");
            }
            InfoField::HasNextPage => {
                json.boolean(info.has_next_page);
            }
            InfoField::HasPreviousPage => {
                json.boolean(info.has_previous_page);
            }
            InfoField::StartCursor => cursor(json, info.start_cursor.as_ref()),
            InfoField::EndCursor => cursor(json, info.end_cursor.as_ref()),
        });
        Ok(json.finish())
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::DocumentOperations;

    use super::*;

    fn plan(info: &str) -> Option<Vec<(Name, InfoField)>> {
        let document = parse_query(format!("{{ c {{ pageInfo {{ {info} }} }} }}")).expect("parses");
        let DocumentOperations::Single(operation) = &document.operations else {
            panic!("one operation");
        };
        let async_graphql::parser::types::Selection::Field(c) =
            &operation.node.selection_set.node.items[0].node
        else {
            panic!("a field");
        };
        let async_graphql::parser::types::Selection::Field(info) =
            &c.node.selection_set.node.items[0].node
        else {
            panic!("a field");
        };
        info_fields(&info.node.selection_set.node)
    }

    #[test]
    fn a_plain_selection_is_planned_with_its_response_keys() {
        let fields = plan("__typename hasNextPage end: endCursor startCursor hasPreviousPage")
            .expect("plain");
        let planned: Vec<(&str, InfoField)> =
            fields.iter().map(|(k, f)| (k.as_str(), *f)).collect();
        assert_eq!(
            planned,
            [
                ("__typename", InfoField::Typename),
                ("hasNextPage", InfoField::HasNextPage),
                ("end", InfoField::EndCursor),
                ("startCursor", InfoField::StartCursor),
                ("hasPreviousPage", InfoField::HasPreviousPage),
            ]
        );
    }

    #[test]
    fn anything_else_goes_to_async_graphql() {
        for info in [
            "...F",
            "... on PageInfo { hasNextPage }",
            "hasNextPage @include(if: true)",
            "hasNextPage hasNextPage",
            "unknownField",
        ] {
            assert!(plan(info).is_none(), "{info}");
        }
    }
}
