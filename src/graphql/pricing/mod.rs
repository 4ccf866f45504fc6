//! What a read costs: the complexity of the fields that make the server read the store
//! (`comments` connections, `node`, `nodes`), and the most items one connection may read, which
//! the resolvers reserve against `--max-items-per-request` before they read.
//!
//! The price of a read is the items it may take from the store, so that a response's
//! `extensions.cost.itemsRead` never exceeds its `requestedQueryCost` (a property test in
//! `tests/api/pricing.rs` holds every random document to it). A page of `size` comments reads
//! per partition (the product's, or one per rating in a `ratings:` filter) `size + 1` items, plus
//! the offset when the offset is skipped in the store (offsets up to the index threshold), plus
//! one for a boundary query; `containing:` reads its comment and may read a second page.
//!
//! Batched reads keep their price. `product { ratingSummary }`, a connection's lone
//! `totalCount`, `node` and `nodes` (and the Federation subgraph's `_entities`, each
//! representation priced like a `nodes` id) are read with the request's other lookups (`graphql::batch`:
//! one index call, or one store query, for all of them), and each product and each id is still
//! priced as a read of its own: a batch saves round trips, not reads (every product's counts
//! are still read, every id still takes its read capacity from DynamoDB), and the price is fixed
//! before anything runs, when nobody knows which lookups will share a batch. So a client cannot
//! buy work cheaper by aliasing it; `extensions.cost` shows what the batch really read, which
//! only makes `itemsRead ≤ cost` easier to keep.
//!
//! The price of a document is counted before it runs, by [`Pricing`] (why not by
//! async-graphql's complexity: that module says), with this server's page sizes and offset
//! threshold.

mod document;

pub use document::{Priced, Pricing};

use crate::pagination::PagingSettings;

/// The arguments of a `comments` field that decide what it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionShape {
    /// The `first` argument, if given.
    pub first: Option<i32>,
    /// The `last` argument, if given.
    pub last: Option<i32>,
    /// The `offset` argument, if given.
    pub offset: Option<i32>,
    /// How many ratings the `ratings:` filter names (`None`: no filter).
    pub ratings: Option<usize>,
    /// Whether `containing:` is given.
    pub containing: bool,
    /// Whether `orderBy` groups the list by rating (`HIGHEST_RATED`, `LOWEST_RATED`).
    pub grouped: bool,
}

impl ConnectionShape {
    /// The page size the count assumes: `first`, else `last`, else the default page size;
    /// at least 1 and at most the maximum (a larger one is refused with `PAGE_SIZE_EXCEEDED`
    /// before anything is read).
    fn size(&self, settings: &PagingSettings) -> u64 {
        let size = self
            .first
            .or(self.last)
            .map_or(settings.default_page_size, |n| {
                usize::try_from(n).unwrap_or(0)
            });
        size.clamp(1, settings.max_page_size) as u64
    }

    /// Store partitions read: one per rating of a filter (an invalid filter, e.g. repeated or
    /// empty, is refused before reading, so at most five count), else one.
    fn partitions(&self) -> u64 {
        self.ratings.map_or(1, |n| n.clamp(1, 5) as u64)
    }

    /// The offset skipped in the store: offsets up to the index threshold are read and dropped;
    /// larger ones are one index call.
    fn store_offset(&self, settings: &PagingSettings) -> u64 {
        let offset = self.offset.map_or(0, |o| u64::try_from(o).unwrap_or(0));
        if offset <= settings.offset_index_threshold {
            offset
        } else {
            0
        }
    }

    /// The most items the connection may read from the store under `settings`.
    pub fn max_reads(&self, settings: &PagingSettings) -> u64 {
        let size = self.size(settings);
        let page = self.page_reads(self.store_offset(settings), size);
        if self.containing {
            // The comment itself, and a second page when the index lags around it.
            page.saturating_add(1)
                .saturating_add(self.page_reads(0, size))
        } else {
            page
        }
    }

    /// The most items one page read with `skip` skipped in the store may read. A list by time
    /// reads each partition up to the offset, the page, one more to know whether more exist,
    /// and one for the boundary query ("is there anything before the page"). A list by rating
    /// reads its groups one after another, so the offset, the page and the one more once, plus
    /// at most one item per group (a group past the window's end is asked whether it holds
    /// anything) and one for the boundary query.
    fn page_reads(&self, skip: u64, size: u64) -> u64 {
        let once = skip.saturating_add(size).saturating_add(2);
        if self.grouped {
            once.saturating_add(self.ratings.map_or(5, |n| n.clamp(1, 5) as u64))
        } else {
            self.partitions().saturating_mul(once)
        }
    }
}

/// Complexity of a connection: its page size times the cost of one edge, plus what it may read
/// beyond one item per edge.
///
/// `size × child + 1` is what a plain page of the product's partition has always cost (each
/// edge's selection costs at least 1, and the one extra item is the `+ 1`); an offset read from
/// the store, each partition of a rating filter and `containing:` add the items they may read
/// on top. So an honest page costs what it did, and a store-served offset or a wide filter pays
/// for every item it makes the store read. Nested connections are counted in `child` and
/// multiplied by the page size, as each edge may run them once.
fn connection_complexity(shape: ConnectionShape, child: usize, settings: &PagingSettings) -> usize {
    let size = shape.size(settings);
    let page = size.saturating_mul(child as u64).saturating_add(1);
    // `size + 2` of the reads are already in the page's price when every edge costs at least
    // 2 (an edge selects at least one field below `edges`/`nodes`, and a lone leaf such as
    // `totalCount` reads no page at all): see `every_read_is_priced` for the bound.
    let beyond = shape.max_reads(settings).saturating_sub(size + 2);
    usize::try_from(page.saturating_add(beyond)).unwrap_or(usize::MAX)
}

/// Complexity of `nodes(ids:)`: each id is one item read (its comment; a product reads none)
/// and answers the selection once, which may read more (`viewerFoundHelpful` reads the
/// viewer's vote, one item, and costs 1); read in a batch with other fields' or not (above).
///
/// The read is priced apart from the selection: priced together (`ids × child`), a selection
/// of `... on Comment { viewerFoundHelpful }` alone cost 1 an id and read 2 (the comment and the
/// vote), so 100 ids cost 101 and read 200 (issue 42, item 10).
fn nodes_complexity(ids: usize, child: usize) -> usize {
    ids.saturating_mul(child.saturating_add(1))
        .saturating_add(1)
}

/// Complexity of `ratingSummaries(skus:)`: each SKU is priced like one item read (its counts
/// come from the index, in one call for all of them: above) and answers the selection once.
fn summaries_complexity(skus: usize, child: usize) -> usize {
    skus.saturating_mul(child.max(1)).saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The price under the default settings.
    fn at_defaults(shape: ConnectionShape, child: usize) -> usize {
        connection_complexity(shape, child, &PagingSettings::default())
    }

    fn shape(first: Option<i32>, offset: Option<i32>, ratings: Option<usize>) -> ConnectionShape {
        ConnectionShape {
            first,
            offset,
            ratings,
            ..ConnectionShape::default()
        }
    }

    #[test]
    fn an_honest_page_costs_its_size_times_its_edge() {
        assert_eq!(at_defaults(shape(Some(10), None, None), 3), 31);
        let last = ConnectionShape {
            last: Some(0),
            ..ConnectionShape::default()
        };
        assert_eq!(at_defaults(last, 3), 4);
        assert_eq!(at_defaults(shape(None, None, None), 1), 21);
        assert_eq!(at_defaults(shape(Some(1000), None, None), 1), 101);
        assert_eq!(
            at_defaults(shape(Some(10), Some(5_000), None), 3),
            31,
            "an offset the index answers reads no more than page 1"
        );
    }

    #[test]
    fn offsets_read_from_the_store_and_rating_filters_pay_for_every_item() {
        // Issue 22, item 5: 1 comment at offset 100 over 4 ratings reads 4 × 102 items.
        let attack = shape(Some(1), Some(100), Some(4));
        assert_eq!(attack.max_reads(&PagingSettings::default()), 412);
        assert_eq!(at_defaults(attack, 2), 2 + 1 + 412 - 3);
        assert_eq!(at_defaults(shape(Some(10), Some(50), None), 3), 31 + 50);
        assert_eq!(
            at_defaults(shape(Some(10), None, Some(5)), 3),
            31 + 4 * 12,
            "four more partitions of 12"
        );
        let repeated = shape(Some(10), None, Some(500));
        assert_eq!(
            repeated.partitions(),
            5,
            "an invalid filter is refused unread"
        );
    }

    #[test]
    fn containing_pays_for_its_comment_and_a_second_page() {
        let containing = ConnectionShape {
            first: Some(10),
            containing: true,
            ..ConnectionShape::default()
        };
        assert_eq!(
            containing.max_reads(&PagingSettings::default()),
            12 + 1 + 12
        );
        assert_eq!(at_defaults(containing, 3), 31 + 13);
    }

    #[test]
    fn the_servers_settings_price_the_page() {
        let settings = PagingSettings {
            default_page_size: 5,
            max_page_size: 500,
            offset_index_threshold: 1_000,
        };
        let deep = shape(Some(400), Some(900), None);
        assert_eq!(connection_complexity(deep, 1, &settings), 400 + 1 + 900);
        assert_eq!(at_defaults(deep, 1), 101);
    }

    #[test]
    fn nodes_cost_a_read_and_their_selection_per_id() {
        assert_eq!(nodes_complexity(30, 3), 121);
        assert_eq!(
            nodes_complexity(100, 1),
            201,
            "a comment and its vote an id"
        );
        assert_eq!(nodes_complexity(0, 3), 1);
        assert_eq!(summaries_complexity(30, 3), 91);
        assert_eq!(summaries_complexity(2, 0), 3);
    }

    /// The bound the complexity keeps: a connection reads at most its price, whatever its
    /// selection costs per edge (from 2, the least a selection that reads a page can cost).
    #[test]
    fn every_read_is_priced() {
        let settings = PagingSettings::default();
        for first in [None, Some(0), Some(1), Some(20), Some(100)] {
            for offset in [None, Some(0), Some(1), Some(100), Some(101)] {
                for ratings in [None, Some(1), Some(3), Some(5)] {
                    for (containing, grouped) in
                        [(false, false), (true, false), (false, true), (true, true)]
                    {
                        let shape = ConnectionShape {
                            first,
                            offset,
                            ratings,
                            containing,
                            grouped,
                            ..ConnectionShape::default()
                        };
                        for child in 2..5 {
                            let reads = shape.max_reads(&settings) as usize;
                            assert!(
                                reads <= connection_complexity(shape, child, &settings),
                                "{shape:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
