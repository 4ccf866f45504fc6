//! Reading the store for the engine: one key query per partition, continued over short
//! responses, cut at the window's end. A list by time reads its partitions concurrently and
//! merges them by sort key, and so does the list by helpful votes (its partitions are sorted by
//! count, then time, and merged by position); a list by rating reads its groups' partitions one
//! after another, in the list's order, and only as far as the read needs (a page that does not
//! cross a rating is one query, as in a list by time).

use std::ops::Bound;

use futures::future::try_join_all;

use super::{Engine, PageStats};
use crate::domain::{Comment, Grouping, Listing, Order, Position, Sku};
use crate::index::PageIndex;
use crate::store::{CommentStore, KeyQuery, Partition, StoreError};

/// Items of one read, in read order, cut at the window's end.
pub(super) struct Read {
    pub(super) items: Vec<Comment>,
    /// An item at or past the window's end was seen: something lies beyond the window.
    pub(super) crossed_stop: bool,
    pub(super) stats: PageStats,
}

/// The store partitions of one list, each with the group its comments take in the list.
#[derive(Clone, Debug)]
pub(super) struct Partitions {
    listing: Listing,
    /// In descending group order (one group, 0, for a list by time or by helpful votes,
    /// whose partitions are merged).
    parts: Vec<(u32, Partition)>,
}

impl Partitions {
    /// The store partitions that hold `listing`'s comments of `sku`: the product's own
    /// partition for all ratings (by time, or by helpful votes), else one partition per rating
    /// (for an author's list, per status in its slots: `Partition::by_rating`).
    pub(super) fn of(sku: &Sku, listing: Listing) -> Self {
        let sku = sku.clone();
        let helpful = listing.grouping == Grouping::MostHelpful;
        let parts = match (listing.ratings.is_all(), listing.grouping) {
            (true, Grouping::Flat) => vec![(0, Partition::by_time(&sku))],
            (true, Grouping::MostHelpful) => vec![(0, Partition::ProductHelpful(sku))],
            _ => listing
                .ratings_by_group()
                .into_iter()
                .rev()
                .filter_map(|(group, rating)| match helpful {
                    true => Some((0, Partition::ProductRatingHelpful(sku.clone(), rating))),
                    false => Some((group, Partition::by_rating(&sku, rating)?)),
                })
                .collect(),
        };
        Self { listing, parts }
    }

    /// The position of `comment` in the list.
    fn position_of(&self, comment: &Comment) -> Position {
        self.listing.position_of(comment)
    }
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    /// Whether any item lies at `from` or beyond in `order`: a `Limit 1` read per partition
    /// (per partition until one answers, in a list by rating).
    pub(super) async fn exists(
        &self,
        partitions: &Partitions,
        order: Order,
        from: Bound<Position>,
    ) -> Result<(bool, PageStats), StoreError> {
        let read = self.read(partitions, order, from, None, 1).await?;
        Ok((!read.items.is_empty(), read.stats))
    }

    /// Reads up to `limit` items in `order` from `from`, across `partitions`, cut at `stop`.
    pub(super) async fn read(
        &self,
        partitions: &Partitions,
        order: Order,
        from: Bound<Position>,
        stop: Option<Position>,
        limit: usize,
    ) -> Result<Read, StoreError> {
        if !partitions.listing.grouping.by_rating() {
            self.read_merged(partitions, order, from, stop, limit).await
        } else {
            self.read_in_turn(partitions, order, from, stop, limit)
                .await
        }
    }

    /// A list by time or by helpful votes: each partition read concurrently and independently
    /// until it has `limit` items, reaches `stop`, or ends; the reads merged by position (a
    /// position in the list is one in each of its partitions).
    async fn read_merged(
        &self,
        partitions: &Partitions,
        order: Order,
        from: Bound<Position>,
        stop: Option<Position>,
        limit: usize,
    ) -> Result<Read, StoreError> {
        let reads = try_join_all(partitions.parts.iter().map(|(_, partition)| {
            self.read_partition(partitions, partition.clone(), order, from, stop, limit)
        }))
        .await?;
        let mut stats = PageStats::default();
        let mut crossed_stop = false;
        let mut items = Vec::new();
        for read in reads {
            stats += read.stats;
            crossed_stop |= read.crossed_stop;
            items.extend(read.items);
        }
        if partitions.parts.len() > 1 {
            items.sort_unstable_by(|a, b| {
                let (a, b) = (partitions.position_of(a), partitions.position_of(b));
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

    /// A list by rating: its groups' partitions read one after another in `order`, each from
    /// where `from` falls in it (or from its start, for a group wholly beyond `from`), until
    /// `limit` items are read or `stop` is crossed. A group wholly beyond `stop` is only asked
    /// whether it holds anything (`Limit 1`), which is all "beyond the window" needs.
    async fn read_in_turn(
        &self,
        partitions: &Partitions,
        order: Order,
        from: Bound<Position>,
        stop: Option<Position>,
        limit: usize,
    ) -> Result<Read, StoreError> {
        let mut parts: Vec<&(u32, Partition)> = partitions.parts.iter().collect();
        if order == Order::OldestFirst {
            parts.reverse();
        }
        let mut out = Read {
            items: Vec::new(),
            crossed_stop: false,
            stats: PageStats::default(),
        };
        for (group, partition) in parts {
            if out.items.len() >= limit || out.crossed_stop {
                break;
            }
            // A partition by rating is by time: its positions are flat.
            let (start_group, from_key) = match from {
                Bound::Unbounded => (None, Bound::Unbounded),
                Bound::Excluded(p) => (Some(p.group), Bound::Excluded(Position::flat(p.key))),
                Bound::Included(p) => (Some(p.group), Bound::Included(Position::flat(p.key))),
            };
            let from_key = match start_group {
                // A group read wholly before `from`: nothing of it lies beyond.
                Some(g) if order.precedes(group, &g) => continue,
                Some(g) if g == *group => from_key,
                _ => Bound::Unbounded,
            };
            let past_stop = stop.is_some_and(|s| order.precedes(&s.group, group));
            let wanted = if past_stop {
                1
            } else {
                limit - out.items.len()
            };
            let read = self
                .read_partition(partitions, partition.clone(), order, from_key, stop, wanted)
                .await?;
            out.stats += read.stats;
            out.crossed_stop |= read.crossed_stop;
            out.items.extend(read.items);
        }
        Ok(out)
    }

    /// One partition read in `order` from `from` (a position in the partition) until it has
    /// `limit` items, reaches `stop` (a position in the list), or ends.
    async fn read_partition(
        &self,
        partitions: &Partitions,
        partition: Partition,
        order: Order,
        mut from: Bound<Position>,
        stop: Option<Position>,
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
                let position = partitions.position_of(&item);
                if stop.is_some_and(|stop| !order.precedes(&position, &stop)) {
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
