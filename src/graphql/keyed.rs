//! Paging a list kept in id order in the store (the moderation log, a reader's reports) as a
//! Relay connection: a page is one read of `first` + 1 items, and `hasNextPage`/
//! `hasPreviousPage` are true to the whole list in both directions (a `Limit 1` read past an
//! edge where the page itself does not tell). Items are never removed from such a list, so a
//! cursor's item is always still there to page from.

use std::future::Future;

use async_graphql::Context;

use super::error::ApiError;
use super::types::PageInfo;
use crate::domain::{EntryId, Order};
use crate::pagination::{CursorCodec, PaginationError, PagingSettings};
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
enum Take {
    First(usize, Option<usize>),
    Last(usize),
}

impl Take {
    /// The page `first` and `last` ask for, each checked as a connection's are.
    fn of(
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
    fn reads(self) -> u64 {
        let n = match self {
            Take::First(n, _) | Take::Last(n) => n,
        };
        n as u64 + 3
    }
}

/// The items between two cursors (newest first: `after` is newer than `before`).
struct Window {
    after: Option<EntryId>,
    before: Option<EntryId>,
}

/// A page and what reading it took.
struct PageRead<T> {
    items: Vec<T>,
    has_next: bool,
    has_previous: bool,
    read: u64,
}

impl Window {
    /// The page `take` asks for of `source` between the window's cursors.
    async fn page<S: KeyedSource>(
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

/// A resolved page of a keyed list: each item with its sealed cursor, where the page sits, and
/// the list's count when the request asked for it.
pub(super) struct KeyedConnection<T> {
    pub total_count: Option<i64>,
    pub edges: Vec<(String, T)>,
    pub page_info: PageInfo,
}

/// The connection arguments of a keyed list, and what its cursors are sealed for (`aad`: the
/// list they belong to, so a cursor of one list is `BAD_CURSOR` in another).
pub(super) struct KeyedArgs {
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
    pub aad: Vec<u8>,
}

/// Resolves a page of `source` as a Relay connection: the arguments checked as a connection's
/// are, the reads priced against the request's items cap, the cursors sealed (`CursorCodec`,
/// so a client can only hand back an item the server named; the empty pages' `pageInfo`
/// counts on it), and `count` read only when `totalCount` is selected.
pub(super) async fn resolve<S, C>(
    ctx: &Context<'_>,
    source: &S,
    args: KeyedArgs,
    count: impl FnOnce() -> C,
) -> async_graphql::Result<KeyedConnection<S::Item>>
where
    S: KeyedSource,
    C: Future<Output = Result<u64, StoreError>>,
{
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let state = super::state(ctx)?;
    let codec = &state.codec;
    let take =
        Take::of(args.first, args.last, state.engine.settings()).map_err(|e| fail(e.into()))?;
    let opened = |argument, text: &Option<String>| {
        text.as_deref()
            .map(|text| open(codec, &args.aad, argument, text))
            .transpose()
    };
    let window = Window {
        after: opened("after", &args.after).map_err(fail)?,
        before: opened("before", &args.before).map_err(fail)?,
    };
    let reserved = super::reserve_items(meta, state, take.reads())?;
    let page = window.page(source, take).await;
    if let Some(meta) = meta {
        meta.settle_items(reserved, page.as_ref().map_or(0, |p| p.read));
    }
    let page = page.map_err(|e| fail(e.into()))?;
    let total_count = if ctx.look_ahead().field("totalCount").exists() {
        let counted = count().await.map_err(|e| fail(e.into()))?;
        Some(i64::try_from(counted).unwrap_or(i64::MAX))
    } else {
        None
    };
    let edges: Vec<(String, S::Item)> = page
        .items
        .into_iter()
        .map(|item| (codec.seal_bytes(&args.aad, &item.key().to_bytes()), item))
        .collect();
    Ok(KeyedConnection {
        total_count,
        page_info: PageInfo {
            has_next_page: page.has_next,
            has_previous_page: page.has_previous,
            start_cursor: edges.first().map(|(cursor, _)| cursor.clone()),
            end_cursor: edges.last().map(|(cursor, _)| cursor.clone()),
        },
        edges,
    })
}

/// The item a sealed cursor names, refused as `BAD_CURSOR` when it was not sealed for `aad`.
fn open(
    codec: &CursorCodec,
    aad: &[u8],
    argument: &'static str,
    text: &str,
) -> Result<EntryId, ApiError> {
    let bad = || ApiError::from(PaginationError::BadCursor { argument });
    let plain = codec.open_bytes(aad, text).map_err(|_| bad())?;
    let bytes: [u8; 16] = plain.try_into().map_err(|_| bad())?;
    Ok(EntryId::from_bytes(bytes))
}
