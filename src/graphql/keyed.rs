//! Paging a list kept in id order in the store (the moderation log, a reader's reports) as a
//! Relay connection: a page is one read of `first` + 1 items, and `hasNextPage`/
//! `hasPreviousPage` are true to the whole list in both directions (a `Limit 1` read past an
//! edge where the page itself does not tell). Items are never removed from such a list, so a
//! cursor's item is always still there to page from.

use std::future::Future;

use crate::domain::{EntryId, Order};
use crate::pagination::{PaginationError, PagingSettings};
use crate::store::StoreError;

/// An item of a keyed list: its place in the list.
pub(super) trait Keyed {
    /// The item's id, which orders the list.
    fn key(&self) -> EntryId;
}

/// A list the store reads in id order.
pub(super) trait KeyedSource: Sync {
    /// What the list holds.
    type Item: Keyed + Send;

    /// Up to `limit` items in `order` strictly beyond `after`, and where the store stopped
    /// early (more *may* follow it).
    fn read(
        &self,
        order: Order,
        after: Option<EntryId>,
        limit: usize,
    ) -> impl Future<Output = Result<(Vec<Self::Item>, Option<EntryId>), StoreError>> + Send;
}

/// How many items a page takes: `first` (then, with `last` too, the last of those), or `last`
/// from the window's bottom.
#[derive(Clone, Copy)]
pub(super) enum Take {
    First(usize, Option<usize>),
    Last(usize),
}

impl Take {
    /// The page `first` and `last` ask for, each checked as a connection's are.
    pub(super) fn of(
        first: Option<i32>,
        last: Option<i32>,
        settings: &PagingSettings,
    ) -> Result<Self, PaginationError> {
        let size = |argument: &'static str, value: Option<i32>| match value {
            None => Ok(None),
            Some(v) if v < 0 => Err(PaginationError::Negative { argument }),
            Some(v) if v as usize > settings.max_page_size => {
                Err(PaginationError::PageSizeExceeded {
                    argument,
                    max: settings.max_page_size,
                })
            }
            Some(v) => Ok(Some(v as usize)),
        };
        Ok(match (size("first", first)?, size("last", last)?) {
            (None, Some(last)) => Take::Last(last),
            (first, last) => Take::First(first.unwrap_or(settings.default_page_size), last),
        })
    }

    /// The most items the page reads: one more than it shows, and two probes.
    pub(super) fn reads(self) -> u64 {
        let n = match self {
            Take::First(n, _) | Take::Last(n) => n,
        };
        n as u64 + 3
    }
}

/// The items between two cursors (newest first: `after` is newer than `before`).
pub(super) struct Window {
    pub after: Option<EntryId>,
    pub before: Option<EntryId>,
}

/// A page and what reading it took.
pub(super) struct PageRead<T> {
    pub items: Vec<T>,
    pub has_next: bool,
    pub has_previous: bool,
    pub read: u64,
}

impl Window {
    /// The page `take` asks for of `source` between the window's cursors.
    pub(super) async fn page<S: KeyedSource>(
        &self,
        source: &S,
        take: Take,
    ) -> Result<PageRead<S::Item>, StoreError> {
        let (order, from, stop, n) = match take {
            Take::First(n, _) => (Order::NewestFirst, self.after, self.before, n),
            Take::Last(n) => (Order::OldestFirst, self.before, self.after, n),
        };
        let mut entries = read(source, order, from, stop, n + 1).await?;
        let mut read = entries.len() as u64;
        let overflow = entries.len() > n;
        entries.truncate(n);
        if order == Order::OldestFirst {
            entries.reverse();
        }
        let mut trimmed = false;
        if let Take::First(_, Some(last)) = take
            && entries.len() > last
        {
            entries.drain(..entries.len() - last);
            trimmed = true;
        }
        let (Some(newest), Some(oldest)) = (entries.first(), entries.last()) else {
            // An empty page: past a cursor's own entry (entries are never deleted), or before
            // the window's entries when it asked for none (`first: 0`, `last: 0`).
            let forward = matches!(take, Take::First(..));
            return Ok(PageRead {
                items: entries,
                has_next: self.before.is_some() || (forward && overflow),
                has_previous: self.after.is_some() || (!forward && overflow),
                read,
            });
        };
        let (newest, oldest) = (newest.key(), oldest.key());
        // Known from the read where it tells; a `Limit 1` read past the edge otherwise.
        let has_next = match take {
            Take::First(..) if overflow && self.before.is_none() => true,
            Take::First(..) if self.before.is_none() => false,
            _ => {
                read += 1;
                exists(source, Order::NewestFirst, oldest).await?
            }
        };
        let has_previous = match take {
            Take::Last(_) if overflow && self.after.is_none() => true,
            Take::Last(_) if self.after.is_none() => false,
            Take::First(..) if self.after.is_none() && !trimmed => false,
            _ => {
                read += 1;
                exists(source, Order::OldestFirst, newest).await?
            }
        };
        Ok(PageRead {
            items: entries,
            has_next,
            has_previous,
            read,
        })
    }
}

/// Up to `limit` entries in `order` strictly beyond `from`, stopping before `stop`, reading on
/// past the store's early stops.
async fn read<S: KeyedSource>(
    source: &S,
    order: Order,
    mut from: Option<EntryId>,
    stop: Option<EntryId>,
    limit: usize,
) -> Result<Vec<S::Item>, StoreError> {
    let mut out = Vec::new();
    loop {
        let (items, last_evaluated) = source.read(order, from, limit - out.len()).await?;
        for entry in items {
            let beyond = stop.is_some_and(|stop| match order {
                Order::NewestFirst => entry.key() <= stop,
                Order::OldestFirst => entry.key() >= stop,
            });
            if beyond {
                return Ok(out);
            }
            out.push(entry);
        }
        match last_evaluated {
            Some(last) if out.len() < limit => from = Some(last),
            _ => return Ok(out),
        }
    }
}

/// Whether any entry lies strictly beyond `from` in `order`.
async fn exists<S: KeyedSource>(
    source: &S,
    order: Order,
    from: EntryId,
) -> Result<bool, StoreError> {
    Ok(!read(source, order, Some(from), None, 1).await?.is_empty())
}
