//! The reference answer: the Relay specification's slicing done on a sorted `Vec`, with flags that
//! are truthful against the whole list (`docs/api/connections.md`). Tests compare the engine
//! against it on random data; it is public only so that the integration tests can use it against
//! real backends.

use crate::domain::SortKey;

/// Arguments with cursors already opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OracleArgs<P = SortKey> {
    /// How many items to take from the window's top.
    pub first: Option<usize>,
    /// The position the window starts after.
    pub after: Option<P>,
    /// How many items to take from the window's bottom.
    pub last: Option<usize>,
    /// The position the window ends before.
    pub before: Option<P>,
    /// Items to skip at the window's top (its bottom for `last` alone); 0 for none.
    pub offset: usize,
}

/// The page the engine must serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OraclePage<P = SortKey> {
    /// The page's positions, in the list's own order.
    pub keys: Vec<P>,
    /// Whether the list holds anything before the page.
    pub has_previous_page: bool,
    /// Whether the list holds anything after the page.
    pub has_next_page: bool,
}

/// Slices `newest_first` (the whole filtered list, newest first) as the specification says.
pub fn slice(newest_first: &[SortKey], args: &OracleArgs, default_first: usize) -> OraclePage {
    slice_in(newest_first, true, args, default_first)
}

/// Slices `list` (the whole filtered list in its own order: descending positions when
/// `descending`, else ascending) as the specification says.
///
/// The window is the list after `after` and before `before` (a missing cursor's comment still
/// marks its place). `first` (default `default_first` when neither size is given) takes from the
/// window's top after skipping `offset`; `last` alone takes from its bottom after skipping
/// `offset`; `first` and `last` together keep the last `last` of the first `first`. An empty page
/// sits where reading stopped, so its flags still say whether anything lies on either side.
pub fn slice_in<P: Ord + Copy>(
    list: &[P],
    descending: bool,
    args: &OracleArgs<P>,
    default_first: usize,
) -> OraclePage<P> {
    let len = list.len();
    let precedes = |a: &P, b: &P| if descending { a > b } else { a < b };
    // Positions: lo is the first index after `after`; hi is one past the last before `before`.
    let lo = args
        .after
        .map_or(0, |a| list.iter().filter(|k| !precedes(&a, k)).count());
    let hi = args
        .before
        .map_or(len, |b| list.iter().filter(|k| precedes(k, &b)).count());
    let (start, end) = match (args.first, args.last) {
        (None, Some(last)) => {
            if hi < lo {
                (hi, hi)
            } else {
                let end = hi - args.offset.min(hi - lo);
                (end.saturating_sub(last).max(lo), end)
            }
        }
        (first, last) => {
            let hi = hi.max(lo);
            let start = lo + args.offset.min(hi - lo);
            let end = (start + first.unwrap_or(default_first)).min(hi);
            (
                last.map_or(start, |last| end.saturating_sub(last).max(start)),
                end,
            )
        }
    };
    OraclePage {
        keys: list[start..end].to_vec(),
        has_previous_page: start > 0,
        has_next_page: end < len,
    }
}
