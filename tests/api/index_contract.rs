//! The `PageIndex` contract: one list of behaviours, written once as generic functions and run
//! against every backend (the embedded `MemoryIndex` and `RedisIndex` on a real
//! `redis-server`), each compared with a model: a sorted `Vec` of sort keys.
//!
//! Every dataset has timestamp ties, because the order invariant (DESIGN §3) is only tested
//! when equal scores must be ordered by id.

use std::collections::BTreeSet;

use dynapage::domain::{
    ChangeEvent, CommentId, IndexEntry, Order, Rating, RatingSet, Sku, SortKey,
};
use dynapage::index::PageIndex;
use dynapage::index::memory::MemoryIndex;
use dynapage::index::redis::{RedisConfig, RedisIndex};
use futures::future::join_all;

use crate::support::redis_server::{RedisServer, shared_cluster_url, shared_url, unique_prefix};

/// Declares each listed behaviour as a test per backend: `memory_index::<name>`,
/// `redis_index::<name>` (one node) and `redis_cluster_index::<name>` (the Cluster client,
/// against a one-node cluster).
macro_rules! contract_tests {
    ($($name:ident),+ $(,)?) => {
        mod memory_index {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::memory_index()).await;
                }
            )+
        }
        mod redis_index {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::redis_index().await).await;
                }
            )+
        }
        mod redis_cluster_index {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::redis_cluster_index().await).await;
                }
            )+
        }
    };
}

contract_tests!(
    count_sums_the_selected_rating_sets,
    key_at_reads_every_rank_in_both_orders_ties_included,
    key_at_counts_only_items_beyond_the_cursor_member_or_not,
    key_at_agrees_with_the_model_for_all_31_rating_subsets,
    a_union_rank_deep_into_fifty_thousand_members_is_exact,
    applying_the_same_batch_twice_changes_nothing,
    a_rating_change_moves_the_member_between_rating_sets,
    removing_a_missing_member_is_harmless,
    entries_are_listed_newest_first_with_their_ratings,
    products_lists_only_products_with_members,
    commit_swaps_staged_sets_in_and_leaves_other_products_alone,
    ping_answers_while_the_index_is_up,
);

fn memory_index() -> MemoryIndex {
    MemoryIndex::new()
}

async fn redis_index() -> RedisIndex {
    RedisIndex::connect(RedisConfig::new(&shared_url(), &unique_prefix()))
        .await
        .expect("a Redis index from a valid configuration")
}

async fn redis_cluster_index() -> RedisIndex {
    let config = RedisConfig::new(&shared_cluster_url(), &unique_prefix()).with_cluster(true);
    RedisIndex::connect(config)
        .await
        .expect("a Redis Cluster index from a valid configuration")
}

// --- Behaviours --------------------------------------------------------------------------

async fn count_sums_the_selected_rating_sets<I: PageIndex>(index: I) {
    let mut rng = Rng(1);
    let data = dataset(&mut rng, &sku("COUNTED"), 200, 40);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    for ratings in all_rating_subsets() {
        let count = index.count(&sku("COUNTED"), ratings).await.expect("count");
        assert_eq!(count, model.count(ratings), "ratings {ratings:?}");
    }
    let unknown = index
        .count(&sku("NOBODY"), RatingSet::ALL)
        .await
        .expect("count");
    assert_eq!(unknown, 0, "a product without comments counts zero");
}

async fn key_at_reads_every_rank_in_both_orders_ties_included<I: PageIndex>(index: I) {
    let mut rng = Rng(2);
    let product = sku("RANKED");
    let data = dataset(&mut rng, &product, 120, 25);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    for ratings in [
        RatingSet::ALL,
        set(&[3]),
        set(&[1, 5]),
        set(&[2, 3, 4]),
        set(&[1, 2, 3, 4]),
    ] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            check_every_rank(&index, &model, &product, ratings, order, None).await;
        }
    }
    let none = index
        .key_at(&sku("NOBODY"), RatingSet::ALL, Order::NewestFirst, None, 0)
        .await;
    assert_eq!(
        none.expect("key_at"),
        None,
        "an unknown product has no rank 0"
    );
}

async fn key_at_counts_only_items_beyond_the_cursor_member_or_not<I: PageIndex>(index: I) {
    let mut rng = Rng(3);
    let product = sku("CURSORED");
    // A gap in the timestamps, so a cursor can fall strictly between two scores.
    let gap = 1_700_000_000_005;
    let mut data = dataset(&mut rng, &product, 80, 12);
    data.retain(|e| e.key.millis() != gap);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    let member = data[17].key;
    let tied = key(member.millis(), rng.next());
    let between = key(gap, rng.next());
    let before_all = key(1, 0);
    let beyond_all = key(SortKey::MAX_MILLIS, u128::MAX);
    assert!(model.keys.iter().all(|(k, _)| *k != tied && *k != between));

    for after in [member, tied, between, before_all, beyond_all] {
        for ratings in [
            RatingSet::ALL,
            set(&[member_rating(&data, 17)]),
            set(&[2, 4]),
            set(&[1, 3, 5]),
        ] {
            for order in [Order::NewestFirst, Order::OldestFirst] {
                check_every_rank(&index, &model, &product, ratings, order, Some(after)).await;
            }
        }
    }
}

async fn key_at_agrees_with_the_model_for_all_31_rating_subsets<I: PageIndex>(index: I) {
    for case in 0..4 {
        let mut rng = Rng(100 + case);
        let product = sku(&format!("SUBSETS-{case}"));
        let (size, spread) = (24 + rng.below(20) as usize, 6 + rng.below(6));
        let data = dataset(&mut rng, &product, size, spread);
        index.apply(&upserts(&data)).await.expect("apply");
        let model = Model::of(&data);

        let mut afters = vec![None];
        for _ in 0..3 {
            afters.push(Some(data[rng.below(data.len() as u64) as usize].key));
        }
        let tie_score = data[rng.below(data.len() as u64) as usize].key.millis();
        afters.push(Some(key(tie_score, rng.next())));
        afters.push(Some(key(tie_score, 0)));
        afters.push(Some(key(tie_score, u128::MAX)));

        for ratings in all_rating_subsets() {
            for order in [Order::NewestFirst, Order::OldestFirst] {
                for after in &afters {
                    check_every_rank(&index, &model, &product, ratings, order, *after).await;
                }
            }
        }
    }
}

async fn a_union_rank_deep_into_fifty_thousand_members_is_exact<I: PageIndex>(index: I) {
    let mut rng = Rng(4);
    let product = sku("DEEP");
    let data = dataset(&mut rng, &product, 50_000, 20_000);
    for batch in upserts(&data).chunks(5_000) {
        index.apply(batch).await.expect("apply");
    }
    let model = Model::of(&data);

    for ratings in [
        RatingSet::ALL,
        set(&[3]),
        set(&[1, 2]),
        set(&[2, 4, 5]),
        set(&[1, 3, 4, 5]),
    ] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            let list = model.list(ratings, order);
            let len = list.len() as u64;
            let mut probes: Vec<(Option<SortKey>, u64)> =
                vec![(None, 0), (None, len - 1), (None, len)];
            for _ in 0..15 {
                probes.push((None, rng.below(len)));
                let after = list[rng.below(len) as usize];
                probes.push((Some(after), rng.below(len / 2)));
                let cursor = data[rng.below(data.len() as u64) as usize].key;
                probes.push((Some(key(cursor.millis(), rng.next())), rng.below(len / 2)));
            }
            let answers = join_all(
                probes
                    .iter()
                    .map(|&(after, rank)| index.key_at(&product, ratings, order, after, rank)),
            )
            .await;
            for ((after, rank), answer) in probes.iter().zip(answers) {
                let expected = model.key_at(ratings, order, *after, *rank);
                assert_eq!(
                    answer.expect("key_at"),
                    expected,
                    "{ratings:?} {order:?} after {after:?} rank {rank}"
                );
            }
        }
    }
}

async fn applying_the_same_batch_twice_changes_nothing<I: PageIndex>(index: I) {
    let mut rng = Rng(5);
    let product = sku("REPLAYED");
    let data = dataset(&mut rng, &product, 60, 10);
    let mut batch = upserts(&data);
    batch.push(ChangeEvent::Remove {
        old: data[3].clone(),
    });
    let moved = IndexEntry {
        rating: other_rating(data[4].rating),
        ..data[4].clone()
    };
    batch.push(ChangeEvent::Upsert {
        old: Some(data[4].clone()),
        new: moved,
    });

    index.apply(&batch).await.expect("first apply");
    let once = snapshot(&index, &product).await;
    index.apply(&batch).await.expect("second apply");
    assert_eq!(
        snapshot(&index, &product).await,
        once,
        "a replay leaves the same index"
    );

    let mut model = Model::of(&data);
    model.keys.retain(|(k, _)| *k != data[3].key);
    model.set_rating(data[4].key, other_rating(data[4].rating));
    assert_eq!(once.0, model.entries(&product));
}

async fn a_rating_change_moves_the_member_between_rating_sets<I: PageIndex>(index: I) {
    let product = sku("EDITED");
    let before = IndexEntry {
        sku: product.clone(),
        key: key(1_000, 7),
        rating: rating(2),
    };
    let after = IndexEntry {
        rating: rating(5),
        ..before.clone()
    };
    index
        .apply(&upserts(std::slice::from_ref(&before)))
        .await
        .expect("apply");
    index
        .apply(&[ChangeEvent::Upsert {
            old: Some(before.clone()),
            new: after.clone(),
        }])
        .await
        .expect("apply edit");

    assert_eq!(index.count(&product, set(&[2])).await.expect("count"), 0);
    assert_eq!(index.count(&product, set(&[5])).await.expect("count"), 1);
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
    assert_eq!(
        index.entries(&product).await.expect("entries"),
        vec![after.clone()]
    );

    // A replayed edit whose old image is missing still leaves one rating set holding it.
    let back = IndexEntry {
        rating: rating(1),
        ..before
    };
    index
        .apply(&[ChangeEvent::Upsert {
            old: None,
            new: back.clone(),
        }])
        .await
        .expect("apply");
    assert_eq!(
        index
            .count(&product, set(&[2, 3, 4, 5]))
            .await
            .expect("count"),
        0
    );
    assert_eq!(index.entries(&product).await.expect("entries"), vec![back]);
}

async fn removing_a_missing_member_is_harmless<I: PageIndex>(index: I) {
    let product = sku("REMOVED");
    let kept = IndexEntry {
        sku: product.clone(),
        key: key(2_000, 1),
        rating: rating(4),
    };
    let ghost = IndexEntry {
        sku: product.clone(),
        key: key(2_000, 2),
        rating: rating(4),
    };
    let elsewhere = IndexEntry {
        sku: sku("NEVER-SEEN"),
        ..ghost.clone()
    };
    index
        .apply(&upserts(std::slice::from_ref(&kept)))
        .await
        .expect("apply");
    index
        .apply(&[
            ChangeEvent::Remove { old: ghost },
            ChangeEvent::Remove { old: elsewhere },
        ])
        .await
        .expect("removing what is not there succeeds");

    assert_eq!(index.entries(&product).await.expect("entries"), vec![kept]);
    assert_eq!(index.products().await.expect("products"), vec![product]);
}

async fn entries_are_listed_newest_first_with_their_ratings<I: PageIndex>(index: I) {
    let mut rng = Rng(6);
    let product = sku("LISTED");
    let data = dataset(&mut rng, &product, 300, 30);
    index.apply(&upserts(&data)).await.expect("apply");

    let entries = index.entries(&product).await.expect("entries");
    assert_eq!(entries, Model::of(&data).entries(&product));
    assert!(
        entries.windows(2).all(|w| w[0].key > w[1].key),
        "strictly newest first"
    );
    assert_eq!(
        index.entries(&sku("NOBODY")).await.expect("entries"),
        vec![]
    );
}

async fn products_lists_only_products_with_members<I: PageIndex>(index: I) {
    let mut rng = Rng(7);
    let names = ["B-2", "A.1", "C_3"];
    let mut all = Vec::new();
    for name in names {
        let data = dataset(&mut rng, &sku(name), 5, 3);
        index.apply(&upserts(&data)).await.expect("apply");
        all.push(data);
    }
    let removals: Vec<ChangeEvent> = all[2]
        .iter()
        .map(|e| ChangeEvent::Remove { old: e.clone() })
        .collect();
    index.apply(&removals).await.expect("apply");
    index.stage("unfinished-run", &all[2]).await.expect("stage");

    assert_eq!(
        index.products().await.expect("products"),
        vec![sku("A.1"), sku("B-2")]
    );
}

async fn commit_swaps_staged_sets_in_and_leaves_other_products_alone<I: PageIndex>(index: I) {
    let mut rng = Rng(8);
    let (rebuilt, emptied, untouched) = (sku("REBUILT"), sku("EMPTIED"), sku("UNTOUCHED"));
    let mut live = Vec::new();
    for product in [&rebuilt, &emptied, &untouched] {
        live.extend(dataset(&mut rng, product, 40, 8));
    }
    index.apply(&upserts(&live)).await.expect("apply");
    let untouched_before = snapshot(&index, &untouched).await;

    // The rebuild finds a different set of comments for REBUILT and none for EMPTIED; it also
    // stages UNTOUCHED, which is then not committed.
    let fresh = dataset(&mut rng, &rebuilt, 30, 5);
    index.stage("run-1", &fresh[..10]).await.expect("stage");
    index.stage("run-1", &fresh[10..]).await.expect("stage");
    index
        .stage("run-1", &dataset(&mut rng, &untouched, 3, 2))
        .await
        .expect("stage");
    assert_eq!(
        snapshot(&index, &rebuilt).await.0,
        Model::of_product(&live, &rebuilt).entries(&rebuilt),
        "staging changes nothing live"
    );

    index
        .commit("run-1", &[rebuilt.clone(), emptied.clone()])
        .await
        .expect("commit");

    assert_eq!(
        snapshot(&index, &rebuilt).await.0,
        Model::of(&fresh).entries(&rebuilt)
    );
    let model = Model::of(&fresh);
    for ratings in all_rating_subsets() {
        assert_eq!(
            index.count(&rebuilt, ratings).await.expect("count"),
            model.count(ratings)
        );
    }
    assert_eq!(snapshot(&index, &emptied).await, (vec![], 0));
    assert_eq!(snapshot(&index, &untouched).await, untouched_before);
    assert_eq!(
        index.products().await.expect("products"),
        vec![rebuilt, untouched]
    );
}

async fn ping_answers_while_the_index_is_up<I: PageIndex>(index: I) {
    index.ping().await.expect("ping");
}

// --- Redis only: an outage is reported fast, and the index recovers by itself ---------------

#[tokio::test]
async fn a_redis_outage_is_reported_unavailable_within_seconds_and_heals_on_return() {
    use dynapage::index::IndexError;
    use std::time::{Duration, Instant};

    let mut server = RedisServer::start();
    let index = RedisIndex::connect(RedisConfig::new(&server.url(), &unique_prefix()))
        .await
        .expect("connect");
    let product = sku("OUTAGE");
    let entry = IndexEntry {
        sku: product.clone(),
        key: key(5_000, 1),
        rating: rating(3),
    };
    index
        .apply(&upserts(std::slice::from_ref(&entry)))
        .await
        .expect("apply");

    server.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let result = index.count(&product, RatingSet::ALL).await;
        assert!(
            matches!(result, Err(IndexError::Unavailable(_))),
            "got {result:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match index.ping().await {
            Ok(()) => break,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the index did not recover: {e:?}"),
        }
    }
    index
        .apply(&upserts(std::slice::from_ref(&entry)))
        .await
        .expect("apply after recovery");
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
}

#[tokio::test]
async fn a_redis_that_is_down_at_start_does_not_prevent_construction() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.stop();
    let index = RedisIndex::connect(RedisConfig::new(&url, &unique_prefix()))
        .await
        .expect("construction does not need Redis");
    assert!(index.ping().await.is_err());
    server.restart();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while index.ping().await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the index did not recover"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

// --- The model and the data --------------------------------------------------------------

/// The oracle: every `(sort key, rating)` of one product, ascending.
struct Model {
    keys: Vec<(SortKey, Rating)>,
}

impl Model {
    fn of(entries: &[IndexEntry]) -> Self {
        let mut keys: Vec<(SortKey, Rating)> = entries.iter().map(|e| (e.key, e.rating)).collect();
        keys.sort();
        Self { keys }
    }

    /// The model of one product among entries of several.
    fn of_product(entries: &[IndexEntry], sku: &Sku) -> Self {
        let mine: Vec<IndexEntry> = entries.iter().filter(|e| e.sku == *sku).cloned().collect();
        Self::of(&mine)
    }

    fn set_rating(&mut self, key: SortKey, rating: Rating) {
        for (k, r) in &mut self.keys {
            if *k == key {
                *r = rating;
            }
        }
    }

    fn count(&self, ratings: RatingSet) -> u64 {
        self.keys
            .iter()
            .filter(|(_, r)| ratings.contains(*r))
            .count() as u64
    }

    /// The list read in `order`, restricted to `ratings`.
    fn list(&self, ratings: RatingSet, order: Order) -> Vec<SortKey> {
        let mut list: Vec<SortKey> = self
            .keys
            .iter()
            .filter(|(_, r)| ratings.contains(*r))
            .map(|(k, _)| *k)
            .collect();
        if order == Order::NewestFirst {
            list.reverse();
        }
        list
    }

    fn key_at(
        &self,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Option<SortKey> {
        self.list(ratings, order)
            .into_iter()
            .filter(|k| after.is_none_or(|a| order.precedes(&a, k)))
            .nth(usize::try_from(rank).ok()?)
    }

    fn entries(&self, sku: &Sku) -> Vec<IndexEntry> {
        self.keys
            .iter()
            .rev()
            .map(|(key, rating)| IndexEntry {
                sku: sku.clone(),
                key: *key,
                rating: *rating,
            })
            .collect()
    }
}

/// Asks for every rank from 0 to two past the end (concurrently) and compares with the model.
async fn check_every_rank<I: PageIndex>(
    index: &I,
    model: &Model,
    product: &Sku,
    ratings: RatingSet,
    order: Order,
    after: Option<SortKey>,
) {
    let ranks: Vec<u64> = (0..model.count(ratings) + 2).chain([u64::MAX]).collect();
    let answers = join_all(
        ranks
            .iter()
            .map(|&rank| index.key_at(product, ratings, order, after, rank)),
    )
    .await;
    for (rank, answer) in ranks.iter().zip(answers) {
        let expected = model.key_at(ratings, order, after, *rank);
        assert_eq!(
            answer.expect("key_at"),
            expected,
            "{ratings:?} {order:?} after {after:?} rank {rank}"
        );
    }
}

/// What an index holds for a product: its entries and its total count.
async fn snapshot<I: PageIndex>(index: &I, product: &Sku) -> (Vec<IndexEntry>, u64) {
    let entries = index.entries(product).await.expect("entries");
    let count = index.count(product, RatingSet::ALL).await.expect("count");
    (entries, count)
}

/// `n` comments of `product` spread over `spread` distinct milliseconds (so many tie), with
/// random ratings and distinct ids.
fn dataset(rng: &mut Rng, product: &Sku, n: usize, spread: u64) -> Vec<IndexEntry> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let sort_key = key(1_700_000_000_000 + rng.below(spread), rng.next());
        if seen.insert(sort_key.id()) {
            let rating = Rating::ALL[rng.below(5) as usize];
            out.push(IndexEntry {
                sku: product.clone(),
                key: sort_key,
                rating,
            });
        }
    }
    out
}

fn upserts(entries: &[IndexEntry]) -> Vec<ChangeEvent> {
    entries
        .iter()
        .map(|e| ChangeEvent::Upsert {
            old: None,
            new: e.clone(),
        })
        .collect()
}

fn all_rating_subsets() -> impl Iterator<Item = RatingSet> {
    (1u8..32).map(|bits| {
        RatingSet::from_ratings(
            Rating::ALL
                .into_iter()
                .filter(move |r| bits & (1 << r.index()) != 0),
        )
    })
}

fn member_rating(data: &[IndexEntry], i: usize) -> i64 {
    i64::from(data[i].rating.get())
}

fn other_rating(r: Rating) -> Rating {
    Rating::ALL[(r.index() + 2) % 5]
}

fn key(millis: u64, random: u128) -> SortKey {
    SortKey::new(millis, CommentId::from_parts(millis, random)).expect("millis in range")
}

fn sku(s: &str) -> Sku {
    Sku::parse(s).expect("valid sku")
}

fn rating(r: i64) -> Rating {
    Rating::new(r).expect("valid rating")
}

fn set(ratings: &[i64]) -> RatingSet {
    RatingSet::parse(ratings).expect("valid rating set")
}

/// A seeded SplitMix64: reproducible datasets without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u128 {
        u128::from(self.step()) << 64 | u128::from(self.step())
    }

    fn below(&mut self, n: u64) -> u64 {
        self.step() % n.max(1)
    }

    fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }
}
