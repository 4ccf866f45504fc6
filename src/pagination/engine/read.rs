//! Reading the store for the engine: one key query per partition, concurrently, continued
//! over short responses, merged by sort key and cut at the window's end.

use std::ops::Bound;

use futures::future::try_join_all;

use super::{Engine, PageStats};
use crate::domain::{Comment, Order, RatingSet, Sku, SortKey};
use crate::index::PageIndex;
use crate::store::{CommentStore, KeyQuery, Partition, StoreError};

/// Items of one read, in read order, cut at the window's end.
pub(super) struct Read {
    pub(super) items: Vec<Comment>,
    /// An item at or past the window's end was seen: something lies beyond the window.
    pub(super) crossed_stop: bool,
    pub(super) stats: PageStats,
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    /// Whether any item lies at `from` or beyond in `order`: a `Limit 1` read per partition.
    pub(super) async fn exists(
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
    pub(super) async fn read(
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
pub(super) fn partitions(sku: &Sku, ratings: RatingSet) -> Vec<Partition> {
    if ratings.is_all() {
        vec![Partition::Product(sku.clone())]
    } else {
        ratings
            .iter()
            .map(|rating| Partition::ProductRating(sku.clone(), rating))
            .collect()
    }
}
