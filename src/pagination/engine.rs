//! The connection algorithm (DESIGN §4).
//!
//! A page is read in the plan's order from its start cursor, at most `skip + take + 1` items per
//! partition, stopping at the window's end. The one extra item answers "is there more beyond
//! the page" without a count; reading past the window's end by one item answers the same
//! question for windows, so the only extra store read is the boundary query on the near side
//! ("is there anything before the page"), run concurrently with the main read and only when a
//! client selected the flag and nothing else already answers it.
//!
//! Large offsets ask the index for the sort key at rank `offset - 1` beyond the cursor and read
//! the page from the store after it: the cost of page 5,000 is the cost of page 1 plus one index
//! call. A rating filter reads each rating partition concurrently and merges them by sort key;
//! since sort keys are unique across partitions, one key is enough to resume every partition.

use std::ops::Bound;

use futures::future::{OptionFuture, try_join_all};

use super::PaginationError;
use super::args::{PagePlan, PagingSettings};
use crate::domain::{Comment, Order, RatingSet, Sku, SortKey};
use crate::index::PageIndex;
use crate::store::{CommentStore, KeyQuery, Partition, StoreError};

/// Which parts of the connection the client selected; the rest is not computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    pub edges: bool,
    pub has_next_page: bool,
    pub has_previous_page: bool,
}

impl Want {
    pub const ALL: Want = Want {
        edges: true,
        has_next_page: true,
        has_previous_page: true,
    };
}

/// What a page cost, for logs, metrics and the `cost` response extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    pub items_read: u64,
    pub store_queries: u64,
    pub index_calls: u64,
}

impl std::ops::AddAssign for PageStats {
    fn add_assign(&mut self, other: Self) {
        self.items_read += other.items_read;
        self.store_queries += other.store_queries;
        self.index_calls += other.index_calls;
    }
}

/// One page of a connection, newest first. Flags are `None` when not requested.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<Comment>,
    pub has_next_page: Option<bool>,
    pub has_previous_page: Option<bool>,
    pub stats: PageStats,
}

/// The pagination engine over a store and an index.
#[derive(Clone, Debug)]
pub struct Engine<S, I> {
    store: S,
    index: I,
    settings: PagingSettings,
}

/// Items of one read, in read order, cut at the window's end.
struct Read {
    items: Vec<Comment>,
    /// An item at or past the window's end was seen: something lies beyond the window.
    crossed_stop: bool,
    stats: PageStats,
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    pub fn new(store: S, index: I, settings: PagingSettings) -> Self {
        Self {
            store,
            index,
            settings,
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn index(&self) -> &I {
        &self.index
    }

    pub fn settings(&self) -> &PagingSettings {
        &self.settings
    }

    /// The number of `sku`'s comments with a rating in `ratings`, from the index.
    pub async fn total_count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, PaginationError> {
        Ok(self.index.count(sku, ratings).await?)
    }

    /// Serves one page of `sku`'s comments with a rating in `ratings`.
    pub async fn page(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        plan: &PagePlan,
        want: Want,
    ) -> Result<Page, PaginationError> {
        if !(want.edges || want.has_next_page || want.has_previous_page) {
            return Ok(Page::default());
        }
        let partitions = partitions(sku, ratings);
        let order = plan.order;
        // In read order: "beyond" is past the page's last item, "before" ahead of its first.
        let (want_beyond, want_before) = match order {
            Order::NewestFirst => (want.has_next_page, want.has_previous_page),
            Order::OldestFirst => (want.has_previous_page, want.has_next_page),
        };
        let mut stats = PageStats::default();
        let crossed = matches!((plan.start, plan.stop), (Some(start), Some(stop)) if !order.precedes(&start, &stop));
        let mut plan = if crossed {
            // An empty window (e.g. `before` at or above `after`): an empty page where reading starts.
            PagePlan {
                stop: None,
                skip: 0,
                take: 0,
                keep_last: None,
                ..plan.clone()
            }
        } else {
            plan.clone()
        };

        let mut skipped_by_index = false;
        if plan.skip > self.settings.offset_index_threshold {
            stats.index_calls += 1;
            let found = self
                .index
                .key_at(sku, ratings, order, plan.start, plan.skip - 1)
                .await?;
            match found {
                Some(key) if plan.stop.is_none_or(|stop| order.precedes(&key, &stop)) => {
                    plan.start = Some(key);
                    plan.skip = 0;
                    skipped_by_index = true;
                }
                _ => {
                    return self
                        .empty_past_window(&partitions, &plan, want_beyond, want_before, stats)
                        .await;
                }
            }
        }

        // Ask the near-side question now, concurrently, when only a store read can answer it.
        let boundary_now =
            want_before && !skipped_by_index && plan.skip == 0 && plan.keep_last.is_none();
        let boundary = plan
            .start
            .filter(|_| boundary_now)
            .map(|start| self.exists(&partitions, order.reverse(), Bound::Included(start)));
        let limit = usize::try_from(plan.skip)
            .unwrap_or(usize::MAX)
            .saturating_add(plan.take)
            .saturating_add(1);
        let from = plan.start.map_or(Bound::Unbounded, Bound::Excluded);
        let (read, boundary) = futures::join!(
            self.read(&partitions, order, from, plan.stop, limit),
            OptionFuture::from(boundary)
        );
        let read = read?;
        stats += read.stats;

        let skipped = read
            .items
            .len()
            .min(usize::try_from(plan.skip).unwrap_or(usize::MAX));
        let beyond = read.items.len() > skipped + plan.take || read.crossed_stop;
        let mut items: Vec<Comment> = read
            .items
            .into_iter()
            .skip(skipped)
            .take(plan.take)
            .collect();
        let dropped = plan
            .keep_last
            .map_or(0, |keep| items.len().saturating_sub(keep));
        items.drain(..dropped);

        let before = if skipped_by_index || skipped > 0 || dropped > 0 {
            Some(true)
        } else if !want_before {
            None
        } else if let Some(start) = plan.start {
            match boundary {
                Some(Ok((exists, cost))) => {
                    stats += cost;
                    Some(exists)
                }
                Some(Err(e)) => return Err(e.into()),
                None => {
                    let (exists, cost) = self
                        .exists(&partitions, order.reverse(), Bound::Included(start))
                        .await?;
                    stats += cost;
                    Some(exists)
                }
            }
        } else {
            Some(false)
        };
        let beyond = want_beyond.then_some(beyond);

        if order == Order::OldestFirst {
            items.reverse();
        }
        let (has_next_page, has_previous_page) = match order {
            Order::NewestFirst => (beyond, before.filter(|_| want_before)),
            Order::OldestFirst => (before.filter(|_| want_before), beyond),
        };
        Ok(Page {
            items: if want.edges { items } else { Vec::new() },
            has_next_page,
            has_previous_page,
            stats,
        })
    }

    /// The page when the offset reaches past the window's end: empty, positioned at the end.
    async fn empty_past_window(
        &self,
        partitions: &[Partition],
        plan: &PagePlan,
        want_beyond: bool,
        want_before: bool,
        mut stats: PageStats,
    ) -> Result<Page, PaginationError> {
        let before = OptionFuture::from(want_before.then(|| {
            let from = plan.stop.map_or(Bound::Unbounded, Bound::Excluded);
            self.exists(partitions, plan.order.reverse(), from)
        }));
        let beyond = OptionFuture::from(
            plan.stop
                .filter(|_| want_beyond)
                .map(|stop| self.exists(partitions, plan.order, Bound::Included(stop))),
        );
        let (before, beyond) = futures::join!(before, beyond);
        let mut flag = |answer: Option<Result<(bool, PageStats), StoreError>>,
                        wanted: bool|
         -> Result<Option<bool>, StoreError> {
            match answer {
                Some(result) => {
                    let (exists, cost) = result?;
                    stats += cost;
                    Ok(Some(exists))
                }
                None => Ok(wanted.then_some(false)),
            }
        };
        let before = flag(before, want_before)?;
        let beyond = flag(beyond, want_beyond)?;
        let (has_next_page, has_previous_page) = match plan.order {
            Order::NewestFirst => (beyond, before),
            Order::OldestFirst => (before, beyond),
        };
        Ok(Page {
            items: Vec::new(),
            has_next_page,
            has_previous_page,
            stats,
        })
    }

    /// Whether any item lies at `from` or beyond in `order`: a `Limit 1` read per partition.
    async fn exists(
        &self,
        partitions: &[Partition],
        order: Order,
        from: Bound<SortKey>,
    ) -> Result<(bool, PageStats), StoreError> {
        let read = self.read(partitions, order, from, None, 1).await?;
        Ok((!read.items.is_empty(), read.stats))
    }

    /// Reads up to `limit` items in `order` from `from`, merged across `partitions` and cut at
    /// `stop`. Each partition is read concurrently and independently until it has `limit` items,
    /// reaches `stop`, or ends; short responses (DynamoDB's 1 MB cut) are continued.
    async fn read(
        &self,
        partitions: &[Partition],
        order: Order,
        from: Bound<SortKey>,
        stop: Option<SortKey>,
        limit: usize,
    ) -> Result<Read, StoreError> {
        let reads = try_join_all(
            partitions
                .iter()
                .map(|p| self.read_partition(p.clone(), order, from, stop, limit)),
        )
        .await?;
        let mut stats = PageStats::default();
        let mut crossed_stop = false;
        let mut items = Vec::new();
        for read in reads {
            stats += read.stats;
            crossed_stop |= read.crossed_stop;
            items.extend(read.items);
        }
        if partitions.len() > 1 {
            items.sort_unstable_by(|a, b| {
                let (a, b) = (a.sort_key(), b.sort_key());
                if order == Order::NewestFirst {
                    b.cmp(&a)
                } else {
                    a.cmp(&b)
                }
            });
            // Each partition read up to `limit`; beyond the merged `limit` the caller needs no more
            // than the fact that more exist, which `items.len() == limit` already says.
            items.truncate(limit);
        }
        Ok(Read {
            items,
            crossed_stop,
            stats,
        })
    }

    async fn read_partition(
        &self,
        partition: Partition,
        order: Order,
        mut from: Bound<SortKey>,
        stop: Option<SortKey>,
        limit: usize,
    ) -> Result<Read, StoreError> {
        let mut stats = PageStats::default();
        let mut items = Vec::new();
        let mut query = KeyQuery {
            partition,
            order,
            from,
            limit: 0,
        };
        while items.len() < limit {
            query.from = from;
            query.limit = limit - items.len();
            let page = self.store.query(&query).await?;
            stats.store_queries += 1;
            stats.items_read += page.items.len() as u64;
            for item in page.items {
                if stop.is_some_and(|stop| !order.precedes(&item.sort_key(), &stop)) {
                    return Ok(Read {
                        items,
                        crossed_stop: true,
                        stats,
                    });
                }
                items.push(item);
            }
            match page.last_evaluated {
                // Guard against a store that reports a position without moving forward.
                Some(last) if Bound::Excluded(last) != from => from = Bound::Excluded(last),
                _ => break,
            }
        }
        Ok(Read {
            items,
            crossed_stop: false,
            stats,
        })
    }
}

/// The store partitions that hold `sku`'s comments with a rating in `ratings`: the product's
/// own partition when unfiltered, one partition per rating otherwise.
fn partitions(sku: &Sku, ratings: RatingSet) -> Vec<Partition> {
    if ratings.is_all() {
        vec![Partition::Product(sku.clone())]
    } else {
        ratings
            .iter()
            .map(|rating| Partition::ProductRating(sku.clone(), rating))
            .collect()
    }
}
