//! The argument rules of a connection (`docs/api/errors.md`), turned into a direction-free
//! [`PagePlan`].

use super::PaginationError;
use super::cursor::{CursorAt, CursorCodec, CursorScope};
use crate::domain::{Order, Position};

/// Limits that apply to every connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagingSettings {
    /// Page size when neither `first` nor `last` is given.
    pub default_page_size: usize,
    /// Largest `first` or `last` accepted.
    pub max_page_size: usize,
    /// Offsets up to this are read straight from the store (exact even while the index lags);
    /// larger ones are resolved through the index.
    pub offset_index_threshold: u64,
}

impl Default for PagingSettings {
    fn default() -> Self {
        Self {
            default_page_size: 20,
            max_page_size: 100,
            offset_index_threshold: 100,
        }
    }
}

/// The connection arguments as a client sent them (GraphQL `Int` is 32-bit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionArgs {
    /// How many comments to take from the start of the window.
    pub first: Option<i32>,
    /// The cursor the window starts after (an edge's or a page cursor).
    pub after: Option<String>,
    /// How many comments to take from the end of the window.
    pub last: Option<i32>,
    /// The cursor the window ends before (an edge's or a page cursor).
    pub before: Option<String>,
    /// How many comments to skip at the end the page is read from.
    pub offset: Option<i32>,
}

/// A validated request, expressed in the order the store is read in.
///
/// `first` reads in the list's own order (`forward`: newest first for `NEWEST`) from `after`
/// towards `before`; `last` reads the other way from `before` towards `after`. Writing both as
/// "read in `order` from `start`, stop at `stop`" lets one algorithm serve both and keeps the two
/// directions from drifting apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagePlan {
    /// The direction this page is read in.
    pub order: Order,
    /// The list's own direction (its first edge first): `order` for a `first` page, its
    /// reverse for a `last` page. Pages are served in this direction.
    pub forward: Order,
    /// Reading starts strictly beyond this position.
    pub start: Option<Position>,
    /// The window ends strictly before this position.
    pub stop: Option<Position>,
    /// Items to skip at the start of the window (`offset`, plus a page cursor's offset).
    pub skip: u64,
    /// The skip comes (in part) from a page cursor: it is skipped through the index whatever
    /// its size, like a deep `offset`, since a cursor's offset is hidden from the pricing that
    /// charges offsets read from the store.
    pub skip_through_index: bool,
    /// Items to take after skipping.
    pub take: usize,
    /// `first` and `last` together: of the `take` items, keep only the last this many.
    pub keep_last: Option<usize>,
}

impl PagePlan {
    /// The number of comments the page holds at most: `last` with `first`, else what is taken.
    pub fn page_size(&self) -> u64 {
        self.keep_last.unwrap_or(self.take) as u64
    }

    /// Applies the argument rules (`docs/api/errors.md`) to `args`; cursors are opened within
    /// `scope`.
    pub fn new(
        args: &ConnectionArgs,
        settings: &PagingSettings,
        codec: &CursorCodec,
        scope: &CursorScope,
    ) -> Result<Self, PaginationError> {
        let first = page_size("first", args.first, settings)?;
        let last = page_size("last", args.last, settings)?;
        let skip = offset_skip(args.offset, first.is_some() == last.is_some())?;
        let open = |argument: &'static str, cursor: &Option<String>| {
            cursor
                .as_deref()
                .map(|c| {
                    codec
                        .open(scope, c)
                        .map_err(|_| PaginationError::BadCursor { argument })
                })
                .transpose()
        };
        let after = open("after", &args.after)?;
        let before = open("before", &args.before)?;
        let backward = first.is_none() && last.is_some();
        let order = if backward {
            scope.order.forward().reverse()
        } else {
            scope.order.forward()
        };
        let ((start_arg, start), (stop_arg, stop)) = if backward {
            (("before", before), ("after", after))
        } else {
            (("after", after), ("before", before))
        };
        let (start, cursor_skip) = start_of(start_arg, start, order)?;
        let stop = stop_of(stop_arg, stop)?;
        let plan = Self {
            order,
            forward: scope.order.forward(),
            start,
            stop,
            skip: skip.saturating_add(cursor_skip.unwrap_or(0)),
            skip_through_index: cursor_skip.is_some_and(|s| s > 0),
            take: 0,
            keep_last: None,
        };
        Ok(match (first, last) {
            (None, Some(last)) => Self { take: last, ..plan },
            (first, keep_last) => Self {
                take: first.unwrap_or(settings.default_page_size),
                keep_last,
                ..plan
            },
        })
    }
}

/// `first` or `last` (named `argument`), checked against the largest page size.
fn page_size(
    argument: &'static str,
    value: Option<i32>,
    settings: &PagingSettings,
) -> Result<Option<usize>, PaginationError> {
    match value {
        None => Ok(None),
        Some(v) if v < 0 => Err(PaginationError::Negative { argument }),
        Some(v) if v as usize > settings.max_page_size => Err(PaginationError::PageSizeExceeded {
            argument,
            max: settings.max_page_size,
        }),
        Some(v) => Ok(Some(v as usize)),
    }
}

/// The items `offset` skips: 0 without one; refused when negative, or when the page is not
/// sized from exactly one end (`sizes_alike`: both or neither of `first` and `last`).
fn offset_skip(offset: Option<i32>, sizes_alike: bool) -> Result<u64, PaginationError> {
    match offset {
        None => Ok(0),
        Some(v) if v < 0 => Err(PaginationError::Negative { argument: "offset" }),
        Some(_) if sizes_alike => Err(PaginationError::OffsetNeedsOneDirection),
        Some(v) => Ok(v as u64),
    }
}

/// The position a page read in `order` starts beyond, or the offset a page cursor starts it
/// at. A page cursor starts a page read from the end its pager counts from; it bounds nothing
/// else.
fn start_of(
    argument: &'static str,
    start: Option<CursorAt>,
    order: Order,
) -> Result<(Option<Position>, Option<u64>), PaginationError> {
    match start {
        None => Ok((None, None)),
        Some(CursorAt::Position(at)) => Ok((Some(at), None)),
        Some(CursorAt::Offset { numbering, offset }) if numbering.order() == order => {
            Ok((None, Some(offset)))
        }
        Some(CursorAt::Offset { .. }) => Err(PaginationError::PageCursorMisplaced { argument }),
    }
}

/// The position the window ends before; a page cursor bounds no window.
fn stop_of(
    argument: &'static str,
    stop: Option<CursorAt>,
) -> Result<Option<Position>, PaginationError> {
    match stop {
        None => Ok(None),
        Some(CursorAt::Position(at)) => Ok(Some(at)),
        Some(CursorAt::Offset { .. }) => Err(PaginationError::PageCursorMisplaced { argument }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CommentOrder, RatingSet, Sku};

    fn plan(args: ConnectionArgs) -> Result<PagePlan, PaginationError> {
        let scope = CursorScope {
            sku: Sku::parse("S").expect("sku"),
            ratings: RatingSet::ALL,
            order: CommentOrder::Newest,
        };
        PagePlan::new(
            &args,
            &PagingSettings::default(),
            &CursorCodec::development(),
            &scope,
        )
    }

    #[test]
    fn defaults_to_the_first_twenty_newest() {
        let p = plan(ConnectionArgs::default()).expect("valid");
        assert_eq!(
            (p.order, p.take, p.skip, p.keep_last),
            (Order::NewestFirst, 20, 0, None)
        );
    }

    #[test]
    fn last_reads_oldest_first_from_before() {
        let p = plan(ConnectionArgs {
            last: Some(5),
            offset: Some(7),
            ..Default::default()
        })
        .expect("valid");
        assert_eq!((p.order, p.take, p.skip), (Order::OldestFirst, 5, 7));
    }

    #[test]
    fn first_and_last_keep_the_tail_of_the_first() {
        let p = plan(ConnectionArgs {
            first: Some(10),
            last: Some(3),
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(
            (p.order, p.take, p.keep_last),
            (Order::NewestFirst, 10, Some(3))
        );
    }

    #[test]
    fn refuses_what_design_section_5_refuses() {
        let cases = [
            (
                ConnectionArgs {
                    first: Some(-1),
                    ..Default::default()
                },
                "`first` must not be negative",
            ),
            (
                ConnectionArgs {
                    last: Some(-1),
                    ..Default::default()
                },
                "`last` must not be negative",
            ),
            (
                ConnectionArgs {
                    first: Some(1),
                    offset: Some(-1),
                    ..Default::default()
                },
                "`offset` must not be negative",
            ),
            (
                ConnectionArgs {
                    first: Some(101),
                    ..Default::default()
                },
                "`first` may be at most 100",
            ),
            (
                ConnectionArgs {
                    offset: Some(1),
                    ..Default::default()
                },
                "`offset` needs exactly one of `first` and `last`",
            ),
            (
                ConnectionArgs {
                    first: Some(1),
                    last: Some(1),
                    offset: Some(1),
                    ..Default::default()
                },
                "`offset` needs exactly one of `first` and `last`",
            ),
            (
                ConnectionArgs {
                    first: Some(1),
                    after: Some("nope".into()),
                    ..Default::default()
                },
                "`after` is not a valid cursor for this connection",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(
                plan(args).map_err(|e| e.to_string()).err().as_deref(),
                Some(message)
            );
        }
    }
}
