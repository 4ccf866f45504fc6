//! The model the index behaviours are compared with (a sorted `Vec` of sort keys with their
//! ratings, versions and helpful counts), the checks that ask an index for ranks and compare,
//! and the datasets, full of timestamp ties.

use std::collections::HashMap;

use dynapage::domain::{
    AnchorRank, IndexEntry, Listing, Order, PageLayout, Position, Rating, RatingSet, Sku, SortKey,
};
use dynapage::index::{PageIndex, Positions};
use futures::StreamExt;

use crate::support::data::{self, Rng, key};

/// The oracle: every `(sort key, rating)` of one product, ascending.
pub(super) struct Model {
    pub(super) keys: Vec<(SortKey, Rating)>,
    /// Versions other than 1.
    pub(super) versions: HashMap<SortKey, u64>,
    /// Helpful counts other than 0.
    pub(super) helpful: HashMap<SortKey, u64>,
}

impl Model {
    pub(super) fn of(entries: &[IndexEntry]) -> Self {
        let mut keys: Vec<(SortKey, Rating)> = entries.iter().map(|e| (e.key, e.rating)).collect();
        keys.sort();
        let versions = entries
            .iter()
            .filter(|e| e.version != 1)
            .map(|e| (e.key, e.version))
            .collect();
        let helpful = entries
            .iter()
            .filter(|e| e.helpful != 0)
            .map(|e| (e.key, e.helpful))
            .collect();
        Self {
            keys,
            versions,
            helpful,
        }
    }

    pub(super) fn helpful_of(&self, key: &SortKey) -> u64 {
        self.helpful.get(key).copied().unwrap_or(0)
    }

    pub(super) fn set(&mut self, key: SortKey, rating: Rating, version: u64) {
        for (k, r) in &mut self.keys {
            if *k == key {
                *r = rating;
            }
        }
        self.versions.insert(key, version);
    }

    pub(super) fn count(&self, ratings: RatingSet) -> u64 {
        self.keys
            .iter()
            .filter(|(_, r)| ratings.contains(*r))
            .count() as u64
    }

    /// The list `listing` makes, read in `order`.
    pub(super) fn list(&self, listing: Listing, order: Order) -> Vec<Position> {
        let mut list: Vec<Position> = self
            .keys
            .iter()
            .filter(|(_, r)| listing.ratings.contains(*r))
            .map(|(k, r)| listing.position(*r, self.helpful_of(k), *k))
            .collect();
        list.sort_unstable();
        if order == Order::NewestFirst {
            list.reverse();
        }
        list
    }

    pub(super) fn key_at(
        &self,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> Option<Position> {
        self.list(listing, order)
            .into_iter()
            .filter(|k| after.is_none_or(|a| order.precedes(&a, k)))
            .nth(usize::try_from(rank).ok()?)
    }

    pub(super) fn entries(&self, sku: &Sku) -> Vec<IndexEntry> {
        self.keys
            .iter()
            .rev()
            .map(|(key, rating)| IndexEntry {
                verified: false,
                author: None,
                reported: false,
                sku: sku.clone(),
                key: *key,
                rating: *rating,
                version: self.versions.get(key).copied().unwrap_or(1),
                helpful: self.helpful_of(key),
                published: true,
                status: dynapage::domain::CommentStatus::Published,
            })
            .collect()
    }
}

/// A sort key as a position in a list by time.
pub(super) fn flat(key: Option<SortKey>) -> Option<Position> {
    key.map(Position::flat)
}

/// How many `key_at` calls the checks keep in flight: enough to be quick, few enough that a
/// loaded machine answers each within the index's response timeout.
pub(super) const IN_FLIGHT: usize = 16;

/// Asks for every rank from 0 to two past the end (concurrently) and compares with the model.
pub(super) async fn check_every_rank<I: PageIndex>(
    index: &I,
    model: &Model,
    product: &Sku,
    listing: Listing,
    order: Order,
    after: Option<Position>,
) {
    let ranks: Vec<u64> = (0..model.count(listing.ratings) + 2)
        .chain([u64::MAX])
        .collect();
    let answers: Vec<_> = futures::stream::iter(
        ranks
            .iter()
            .map(|&rank| index.key_at(product, listing, order, after, rank)),
    )
    .buffered(IN_FLIGHT)
    .collect()
    .await;
    for (rank, answer) in ranks.iter().zip(answers) {
        let expected = model.key_at(listing, order, after, *rank);
        assert_eq!(
            answer.expect("key_at"),
            expected,
            "{listing:?} {order:?} after {after:?} rank {rank}"
        );
    }
}

/// [`check_every_rank`] of the list by time of `ratings`, after a sort key.
pub(super) async fn check_flat_ranks<I: PageIndex>(
    index: &I,
    model: &Model,
    product: &Sku,
    ratings: RatingSet,
    order: Order,
    after: Option<SortKey>,
) {
    let listing = Listing::flat(ratings);
    check_every_rank(index, model, product, listing, order, flat(after)).await;
}

/// What `positions` should answer, from the model: the anchor's rank by counting, and its
/// page's bound by reading the list at the bound's rank.
pub(super) fn model_positions(
    model: &Model,
    listing: Listing,
    anchor: Option<Position>,
    layout: PageLayout,
) -> Positions {
    let newest_first = model.list(listing, Order::NewestFirst);
    let total = newest_first.len() as u64;
    let anchor = anchor.map(|a| AnchorRank {
        newer: newest_first.iter().filter(|k| **k > a).count() as u64,
        older: newest_first.iter().filter(|k| **k < a).count() as u64,
    });
    let list = model.list(listing, layout.numbering.order());
    let page_bound = layout.page_to_bound(total, anchor).map(|page| {
        let rank = layout
            .bound_rank(page)
            .expect("a page to bound is past page 1");
        list[rank as usize]
    });
    Positions {
        total,
        anchor,
        page_bound,
    }
}

/// Asks for the first, last and one-past-the-end ranks and for random ones, without a cursor,
/// after a listed member and after a key that is not a member (concurrently), and compares
/// with the model.
pub(super) async fn check_random_ranks<I: PageIndex>(
    index: &I,
    model: &Model,
    rng: &mut Rng,
    product: &Sku,
    listing: Listing,
    order: Order,
) {
    let list = model.list(listing, order);
    let len = list.len() as u64;
    let mut probes: Vec<(Option<Position>, u64)> = vec![(None, 0), (None, len - 1), (None, len)];
    for _ in 0..15 {
        probes.push((None, rng.below(len)));
        let after = list[rng.below(len) as usize];
        probes.push((Some(after), rng.below(len / 2)));
        let near = model.keys[rng.below(model.keys.len() as u64) as usize].0;
        let beside = Position {
            key: key(near.millis(), rng.next()),
            ..after
        };
        probes.push((Some(beside), rng.below(len / 2)));
    }
    let answers: Vec<_> = futures::stream::iter(
        probes
            .iter()
            .map(|&(after, rank)| index.key_at(product, listing, order, after, rank)),
    )
    .buffered(IN_FLIGHT)
    .collect()
    .await;
    for ((after, rank), answer) in probes.iter().zip(answers) {
        let expected = model.key_at(listing, order, *after, *rank);
        assert_eq!(
            answer.expect("key_at"),
            expected,
            "{listing:?} {order:?} after {after:?} rank {rank}"
        );
    }
}

/// What an index holds for a product: its entries and its total count.
pub(super) async fn snapshot<I: PageIndex>(index: &I, product: &Sku) -> (Vec<IndexEntry>, u64) {
    let entries = index.entries(product).await.expect("entries");
    let count = index.count(product, RatingSet::ALL).await.expect("count");
    (entries, count)
}

/// `n` entries of `product` spread over `spread` distinct milliseconds (so many tie), with
/// random ratings and distinct ids: the shared generator's comments, as the index sees them.
pub(super) fn dataset(rng: &mut Rng, product: &Sku, n: usize, spread: u64) -> Vec<IndexEntry> {
    data::comments(rng, product, n, spread)
        .iter()
        .map(IndexEntry::from)
        .collect()
}

/// [`dataset`] where about half the comments have helpful votes, few counts so that ties on a
/// count are common (and some counts past one byte).
pub(super) fn voted_dataset(
    rng: &mut Rng,
    product: &Sku,
    n: usize,
    spread: u64,
) -> Vec<IndexEntry> {
    let mut entries = dataset(rng, product, n, spread);
    for entry in &mut entries {
        entry.helpful = [0, 0, 0, 1, 1, 2, 3, 300][rng.below(8) as usize];
        if entry.helpful > 0 {
            entry.version = 1 + entry.helpful;
        }
    }
    entries
}

pub(super) fn all_rating_subsets() -> impl Iterator<Item = RatingSet> {
    (1u8..32).map(|bits| {
        RatingSet::from_ratings(
            Rating::ALL
                .into_iter()
                .filter(move |r| bits & (1 << r.index()) != 0),
        )
    })
}

pub(super) fn member_rating(data: &[IndexEntry], i: usize) -> i64 {
    i64::from(data[i].rating.get())
}

pub(super) fn other_rating(r: Rating) -> Rating {
    Rating::ALL[(r.index() + 2) % 5]
}

pub(super) fn set(ratings: &[i64]) -> RatingSet {
    RatingSet::parse(ratings).expect("valid rating set")
}
