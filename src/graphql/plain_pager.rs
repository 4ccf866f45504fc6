//! A pager's `pageCursors` written straight into the response when its selection is plain, by
//! the rules and for the reason of `graphql::plain` (async-graphql's future per field of every
//! object): on a pager page the `pageCursors` objects were most of the 172,000 instructions it
//! costs over a plain page (callgrind; BENCHMARKS.md, "An uncached page's instructions"). Its
//! JSON is written as `graphql::plain`'s is (`graphql::raw_json`). Any other selection goes to
//! async-graphql; `tests/api/graphql/plain_pages.rs` compares the two.
//!
//! This can go with `graphql::plain`.

use std::borrow::Cow;

use async_graphql::parser::types::{Field, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, Name, OutputType, Positioned, ServerResult, Value};

use super::page_cursors::{PageCursor, PageCursors};
use super::plain::{leaf, plain};
use super::raw_json::{self, Writer};

/// A `PageCursor`'s fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageField {
    Typename,
    Page,
    Cursor,
    Offset,
    IsCurrent,
}

/// Which of the pager's pages a field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    First,
    Last,
    Previous,
    Next,
}

/// A `PageCursors`' fields.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PagerField {
    Typename,
    PageCount,
    Page(Which, Vec<(Name, PageField)>),
    Around(Vec<(Name, PageField)>),
}

/// A page's plain selection (none for an empty one, which validation never lets through).
fn page_fields(set: &SelectionSet) -> Option<Vec<(Name, PageField)>> {
    if set.items.is_empty() {
        return None;
    }
    plain(set, |f| {
        leaf(f)?;
        Some(match f.node.name.node.as_str() {
            "__typename" => PageField::Typename,
            "page" => PageField::Page,
            "cursor" => PageField::Cursor,
            "offset" => PageField::Offset,
            "isCurrent" => PageField::IsCurrent,
            _ => return None,
        })
    })
}

fn pager_fields(set: &SelectionSet) -> Option<Vec<(Name, PagerField)>> {
    plain(set, |f| {
        let page =
            |which| page_fields(&f.node.selection_set.node).map(|p| PagerField::Page(which, p));
        match f.node.name.node.as_str() {
            "__typename" => leaf(f).map(|()| PagerField::Typename),
            "pageCount" => leaf(f).map(|()| PagerField::PageCount),
            "first" => page(Which::First),
            "last" => page(Which::Last),
            "previous" => page(Which::Previous),
            "next" => page(Which::Next),
            "around" => page_fields(&f.node.selection_set.node).map(PagerField::Around),
            _ => None,
        }
    })
}

/// Whether `pageCursors` with the selection `set` is written by [`Pager`].
pub(super) fn plain_pager(set: &SelectionSet) -> bool {
    pager_fields(set).is_some()
}

fn write_page(json: &mut Writer, fields: &[(Name, PageField)], page: &PageCursor) {
    json.object(fields, |json, field| {
        match field {
            PageField::Typename => json.raw("\"PageCursor\""),
            PageField::Page => json.int(i64::from(page.page)),
            PageField::Cursor => match &page.cursor {
                Some(cursor) => json.plain_string(cursor.as_bytes()),
                None => json.raw("null"),
            },
            PageField::Offset => json.int(i64::from(page.offset)),
            PageField::IsCurrent => json.boolean(page.is_current),
        };
    });
}

fn write_pager(json: &mut Writer, fields: &[(Name, PagerField)], pager: &PageCursors) {
    json.object(fields, |json, field| match field {
        PagerField::Typename => {
            json.raw("\"PageCursors\"");
        }
        PagerField::PageCount => {
            json.int(i64::from(pager.page_count));
        }
        PagerField::Page(which, fields) => {
            let page = match which {
                Which::First => Some(&pager.first),
                Which::Last => Some(&pager.last),
                Which::Previous => pager.previous.as_ref(),
                Which::Next => pager.next.as_ref(),
            };
            match page {
                Some(page) => write_page(json, fields, page),
                None => {
                    json.raw("null");
                }
            }
        }
        PagerField::Around(fields) => {
            json.list(&pager.around, |json, page| write_page(json, fields, page));
        }
    });
}

/// A connection's `pageCursors`: `PageCursors` in the schema.
#[derive(Debug)]
pub(super) struct Pager(pub PageCursors);

impl OutputType for Pager {
    fn type_name() -> Cow<'static, str> {
        PageCursors::type_name()
    }

    fn qualified_type_name() -> String {
        PageCursors::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        PageCursors::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        match pager_fields(&ctx.item.node).filter(|_| raw_json::allowed(ctx)) {
            Some(fields) => {
                let mut json = Writer::new(1024);
                write_pager(&mut json, &fields, &self.0);
                Ok(json.finish())
            }
            None => OutputType::resolve(&self.0, ctx, field).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, Selection};

    use super::*;

    /// The plan of the `pageCursors` selection of `{ pageCursors { … } }`.
    fn plan(pager: &str) -> Option<Vec<(Name, PagerField)>> {
        let document = parse_query(format!(
            "{{ pageCursors {{ {pager} }} }} fragment F on PageCursor {{ page }}"
        ))
        .expect("a document");
        let DocumentOperations::Single(operation) = document.operations else {
            panic!("one operation");
        };
        let Selection::Field(field) = &operation.node.selection_set.node.items[0].node else {
            panic!("a field");
        };
        pager_fields(&field.node.selection_set.node)
    }

    #[test]
    fn a_plain_selection_is_planned_with_its_response_keys() {
        let fields =
            plan("n: pageCount next { page c: cursor } around { isCurrent }").expect("plain");
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["n", "next", "around"]);
        assert_eq!(
            fields[1].1,
            PagerField::Page(
                Which::Next,
                vec![
                    (Name::new("page"), PageField::Page),
                    (Name::new("c"), PageField::Cursor)
                ]
            )
        );
    }

    #[test]
    fn anything_else_goes_to_async_graphql() {
        for pager in [
            "first { ...F }",
            "... on PageCursors { pageCount }",
            "pageCount @include(if: true)",
            "pageCount pageCount",
            "first { page page }",
            "first { page { x } }",
            "pageCount { x }",
            "around",
            "unknown",
        ] {
            assert!(plan(pager).is_none(), "{pager}");
        }
    }
}
