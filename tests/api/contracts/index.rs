//! The `PageIndex` contract: one list of behaviours, written once as generic functions and run
//! against every backend (the embedded `MemoryIndex`, `RedisIndex` on a real `redis-server`,
//! and on a real six-node Redis Cluster) with `contract_suite!`, each compared with a model:
//! a sorted `Vec` of sort keys. Redis-only checks are in `backends::redis_index`.
//!
//! Every dataset has timestamp ties, because the order invariant (DESIGN §3) is only tested
//! when equal scores must be ordered by id.

use std::collections::HashMap;
use std::time::Duration;

use dynapage::domain::{
    AnchorRank, ChangeEvent, Grouping, IndexEntry, Listing, Numbering, Order, PageLayout,
    PageLinks, Position, Rating, RatingSet, Sku, SortKey,
};
use dynapage::index::memory::MemoryIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::index::{
    Held, PageIndex, Positions, Repair, Stale, Start, View, ViewAnchor, ViewRequest,
};
use dynapage::redis::RedisConfig;
use futures::StreamExt;

use crate::support::data::{self, Rng, key, rating, sku};
use crate::support::redis_cluster::shared_cluster_urls;
use crate::support::redis_server::{shared_url, unique_prefix};

contract_suite! {
    backends: {
        memory_index => async { MemoryIndex::new().with_tombstone_ttl(TOMBSTONE_TTL) },
        redis_index => redis_index(),
        redis_cluster_index => redis_cluster_index(),
    },
    behaviours: [
        count_sums_the_selected_rating_sets,
        rating_counts_are_each_rating_s_count,
        rating_counts_of_many_products_are_each_product_s_in_the_order_asked,
        versions_of_many_products_are_each_product_s_and_move_with_its_changes,
        key_at_reads_every_rank_in_both_orders_ties_included,
        key_at_counts_only_items_beyond_the_cursor_member_or_not,
        key_at_agrees_with_the_model_for_all_31_rating_subsets,
        positions_rank_the_anchor_and_bound_its_page,
        lists_by_rating_rank_like_the_model_for_every_subset_and_position,
        votes_move_comments_in_the_list_by_helpful_votes_and_keep_their_place_by_time,
        the_list_by_helpful_votes_is_right_before_at_and_after_a_first_vote,
        a_view_answers_a_bound_an_anchor_and_positions_in_one_call_like_the_model,
        a_union_rank_deep_into_fifty_thousand_members_is_exact,
        a_union_rank_is_exact_when_ratings_cluster_in_time,
        a_union_rank_inside_a_tie_wider_than_the_search_window_is_exact,
        ids_whose_time_part_is_not_their_created_at_keep_their_place,
        applying_the_same_batch_twice_changes_nothing,
        a_rating_change_moves_the_member_between_rating_sets,
        removing_a_missing_member_is_harmless,
        entries_are_listed_newest_first_with_their_ratings,
        products_lists_only_products_with_members,
        changes_applied_in_any_order_and_any_number_of_times_leave_the_newest_state,
        apply_reports_the_changes_it_refused_and_what_the_index_holds,
        a_tombstone_refuses_older_changes_until_it_expires,
        repairs_are_made_only_where_the_index_still_holds_what_was_read,
        ping_answers_while_the_index_is_up,
    ],
}

/// The tombstone lifetime of the indexes under test: short, so that its end can be watched,
/// and long enough that no other behaviour outlives a tombstone it relies on.
const TOMBSTONE_TTL: Duration = Duration::from_secs(3);

/// A Redis index on the shared single-node server, under a prefix of its own.
async fn redis_index() -> RedisIndex {
    RedisIndex::connect(RedisConfig::new(&shared_url(), &unique_prefix()))
        .await
        .expect("a Redis index from a valid configuration")
        .with_tombstone_ttl(TOMBSTONE_TTL)
}

async fn redis_cluster_index() -> RedisIndex {
    RedisIndex::connect(RedisConfig::new(&shared_cluster_urls(), &unique_prefix()))
        .await
        .expect("a Redis Cluster index from a valid configuration")
        .with_tombstone_ttl(TOMBSTONE_TTL)
}

// --- Behaviours --------------------------------------------------------------------------

async fn count_sums_the_selected_rating_sets<I: PageIndex>(index: I) {
    let mut rng = Rng::new(1);
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

async fn rating_counts_are_each_rating_s_count<I: PageIndex>(index: I) {
    let mut rng = Rng::new(31);
    let data = dataset(&mut rng, &sku("RATED"), 150, 30);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);
    let counts = index
        .rating_counts(&sku("RATED"))
        .await
        .expect("rating_counts");
    let expected: Vec<u64> = (1..=5).map(|r| model.count(set(&[r]))).collect();
    assert_eq!(counts.to_vec(), expected);
    assert_eq!(counts.iter().sum::<u64>(), 150);
    assert_eq!(
        index
            .rating_counts(&sku("NOBODY"))
            .await
            .expect("rating_counts"),
        [0; 5]
    );
}

/// `ratingSummaries`' read: every product's counts in the order asked, repeats and products
/// without comments included (on a Cluster the products' sets live in different slots).
async fn rating_counts_of_many_products_are_each_product_s_in_the_order_asked<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(37);
    let products: Vec<_> = (0..12).map(|i| sku(&format!("SHELF_{i}"))).collect();
    let mut expected = Vec::new();
    for (i, product) in products.iter().enumerate() {
        let data = dataset(&mut rng, product, 5 + 7 * i, 10);
        index.apply(&upserts(&data)).await.expect("apply");
        let model = Model::of(&data);
        expected.push(
            (1..=5)
                .map(|r| model.count(set(&[r])))
                .collect::<Vec<u64>>(),
        );
    }
    let mut asked = products.clone();
    asked.reverse();
    asked.push(sku("NOBODY"));
    asked.push(products[3].clone());
    let counts = index
        .rating_counts_many(&asked)
        .await
        .expect("rating_counts_many");
    assert_eq!(counts.len(), asked.len());
    for (product, counts) in asked.iter().zip(&counts) {
        let want = match products.iter().position(|p| p == product) {
            Some(i) => expected[i].clone(),
            None => vec![0; 5],
        };
        assert_eq!(counts.to_vec(), want, "{product:?}");
        let one = index.rating_counts(product).await.expect("rating_counts");
        assert_eq!(&one, counts, "the same as one product's counts");
    }
    assert!(
        index
            .rating_counts_many(&[])
            .await
            .expect("none")
            .is_empty()
    );
}

/// The response cache's read: every product's version in the order asked (on a Cluster the
/// products' keys live in different slots), 0 for a product never changed, the same epoch on
/// every read, and a change to one product moves its version only.
async fn versions_of_many_products_are_each_product_s_and_move_with_its_changes<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(41);
    let products: Vec<_> = (0..12).map(|i| sku(&format!("SHELF_{i}"))).collect();
    for product in &products {
        let data = dataset(&mut rng, product, 3, 10);
        index.apply(&upserts(&data)).await.expect("apply");
    }
    let mut asked = products.clone();
    asked.push(sku("NOBODY"));
    let before = index.product_versions(&asked).await.expect("versions");
    assert_eq!(before.len(), asked.len());
    assert_eq!(before[12].number, 0, "a product never changed");
    for (product, version) in asked.iter().zip(&before) {
        let one = index.product_versions(std::slice::from_ref(product)).await;
        assert_eq!(
            one.expect("a version"),
            vec![*version],
            "{product:?}: epoch and number"
        );
    }
    let data = dataset(&mut rng, &products[5], 1, 10);
    index.apply(&upserts(&data)).await.expect("apply");
    let after = index.product_versions(&asked).await.expect("versions");
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(
            a != b,
            i == 5,
            "only the changed product's version moves: {i}"
        );
    }
    assert!(index.product_versions(&[]).await.expect("none").is_empty());
}

async fn key_at_reads_every_rank_in_both_orders_ties_included<I: PageIndex>(index: I) {
    let mut rng = Rng::new(2);
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
            check_flat_ranks(&index, &model, &product, ratings, order, None).await;
        }
    }
    let none = index
        .key_at(
            &sku("NOBODY"),
            Listing::flat(RatingSet::ALL),
            Order::NewestFirst,
            None,
            0,
        )
        .await;
    assert_eq!(
        none.expect("key_at"),
        None,
        "an unknown product has no rank 0"
    );
}

async fn key_at_counts_only_items_beyond_the_cursor_member_or_not<I: PageIndex>(index: I) {
    let mut rng = Rng::new(3);
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
                check_flat_ranks(&index, &model, &product, ratings, order, Some(after)).await;
            }
        }
    }
}

async fn key_at_agrees_with_the_model_for_all_31_rating_subsets<I: PageIndex>(index: I) {
    for case in 0..4 {
        let mut rng = Rng::new(100 + case);
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
                    check_flat_ranks(&index, &model, &product, ratings, order, *after).await;
                }
            }
        }
    }
}

/// Lists by rating (`orderBy: HIGHEST_RATED`, `LOWEST_RATED`): each rating's members one group
/// after another. Every rank from every kind of position (a member; a key tied with one, in its
/// group and in others; positions before and beyond everything) in both directions, and views
/// with anchors and page bounds, for all 31 rating subsets, equal the model's.
async fn lists_by_rating_rank_like_the_model_for_every_subset_and_position<I: PageIndex>(index: I) {
    let mut rng = Rng::new(47);
    let product = sku("BY-RATING");
    let data = voted_dataset(&mut rng, &product, 60, 9);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);
    for grouping in [
        Grouping::HighestFirst,
        Grouping::LowestFirst,
        Grouping::MostHelpful,
    ] {
        let member = data[rng.below(60) as usize].clone();
        let at = |group: u32, key: SortKey| Some(Position { group, key });
        let own = grouping.group_of(member.rating, member.helpful);
        let tied = key(member.key.millis(), rng.next());
        let other = grouping.group_of(other_rating(member.rating), member.helpful + 1);
        let afters = [
            None,
            at(own, member.key),
            at(own, tied),
            at(other, member.key),
            at(1, key(1, 0)),
            at(5, key(SortKey::MAX_MILLIS, u128::MAX)),
            at(0, key(1, 0)),
        ];
        for ratings in all_rating_subsets() {
            let listing = Listing { ratings, grouping };
            for order in [Order::NewestFirst, Order::OldestFirst] {
                for after in afters {
                    check_every_rank(&index, &model, &product, listing, order, after).await;
                }
            }
            for anchor in afters {
                for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
                    let layout = PageLayout {
                        size: 7,
                        numbering,
                        links: PageLinks::Current,
                    };
                    let request = ViewRequest {
                        start: Start {
                            order: Order::NewestFirst,
                            after: anchor,
                        },
                        bound: Some(3),
                        anchor: anchor.map_or(ViewAnchor::Rank(4), ViewAnchor::Key),
                        layout,
                    };
                    let view = index.view(&product, listing, request).await.expect("view");
                    let anchor =
                        anchor.or_else(|| model.key_at(listing, Order::NewestFirst, None, 4));
                    let expected = View {
                        bound: model.key_at(listing, Order::NewestFirst, request.start.after, 3),
                        anchor,
                        positions: model_positions(&model, listing, anchor, layout),
                    };
                    assert_eq!(view, expected, "{listing:?} {request:?}");
                }
            }
        }
    }
}

/// Votes arriving (counts up, down, back to 0, a rating change of a voted comment, a deletion
/// of one) move comments in the list by helpful votes and nowhere else: every rank of every
/// list (by time, by rating, by helpful votes) of every rating subset equals the model's, and
/// `entries` reports the counts.
async fn votes_move_comments_in_the_list_by_helpful_votes_and_keep_their_place_by_time<
    I: PageIndex,
>(
    index: I,
) {
    let mut rng = Rng::new(53);
    let product = sku("VOTES-MOVE");
    let mut data = voted_dataset(&mut rng, &product, 48, 6);
    index.apply(&upserts(&data)).await.expect("apply");
    let mut changes = Vec::new();
    for (i, entry) in data.iter_mut().enumerate() {
        let helpful = match i % 4 {
            0 => entry.helpful + 1,
            1 => entry.helpful.saturating_sub(1),
            2 => 0,
            _ => continue,
        };
        let old = entry.clone();
        entry.helpful = helpful;
        entry.version += 1;
        if i % 8 == 2 {
            entry.rating = other_rating(entry.rating);
        }
        changes.push(ChangeEvent::Upsert {
            old: Some(old),
            new: entry.clone(),
        });
    }
    let gone = data.remove(5);
    changes.push(ChangeEvent::removal(gone));
    assert_eq!(index.apply(&changes).await.expect("apply"), []);
    let model = Model::of(&data);
    assert_eq!(
        index.entries(&product).await.expect("entries"),
        model.entries(&product)
    );
    for grouping in [
        Grouping::Flat,
        Grouping::HighestFirst,
        Grouping::MostHelpful,
    ] {
        for ratings in all_rating_subsets() {
            let listing = Listing { ratings, grouping };
            assert_eq!(
                index.count(&product, ratings).await.expect("count"),
                model.count(ratings)
            );
            for order in [Order::NewestFirst, Order::OldestFirst] {
                check_every_rank(&index, &model, &product, listing, order, None).await;
            }
        }
    }
}

/// A product without votes, its first vote, a second, and both taken back: the list by helpful
/// votes is right at every step (the memory index reads it from the list by time until a
/// first vote, then from a treap of positions made then and kept).
async fn the_list_by_helpful_votes_is_right_before_at_and_after_a_first_vote<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(59);
    let product = sku("FIRST-VOTE");
    let mut data = dataset(&mut rng, &product, 40, 8);
    assert!(data.iter().all(|entry| entry.helpful == 0));
    index.apply(&upserts(&data)).await.expect("apply");
    for (step, counts) in [[0, 0], [2, 0], [2, 1], [0, 1], [0, 0]]
        .into_iter()
        .enumerate()
    {
        let mut changes = Vec::new();
        for (i, count) in [17, 30].into_iter().zip(counts) {
            if step > 0 && data[i].helpful != count {
                let old = data[i].clone();
                data[i].helpful = count;
                data[i].version += 1;
                changes.push(ChangeEvent::Upsert {
                    old: Some(old),
                    new: data[i].clone(),
                });
            }
        }
        assert_eq!(index.apply(&changes).await.expect("apply"), []);
        let model = Model::of(&data);
        let voted = set(&[i64::from(data[17].rating.get())]);
        for ratings in [RatingSet::ALL, voted] {
            let listing = Listing {
                ratings,
                grouping: Grouping::MostHelpful,
            };
            let member = Position {
                group: u32::try_from(data[17].helpful).expect("a small count"),
                key: data[17].key,
            };
            let between = Position {
                group: 1,
                key: data[30].key,
            };
            for order in [Order::NewestFirst, Order::OldestFirst] {
                for after in [None, Some(member), Some(between)] {
                    check_every_rank(&index, &model, &product, listing, order, after).await;
                }
            }
        }
    }
}

async fn positions_rank_the_anchor_and_bound_its_page<I: PageIndex>(index: I) {
    let mut rng = Rng::new(41);
    let product = sku("PAGED");
    let data = dataset(&mut rng, &product, 97, 20);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    let member = data[rng.below(97) as usize].key;
    let anchors = [
        None,
        Some(member),
        Some(key(member.millis(), rng.next())),
        Some(model.keys[0].0),
        Some(model.keys[96].0),
        Some(key(1, 0)),
        Some(key(SortKey::MAX_MILLIS, u128::MAX)),
    ];
    let mut asks = Vec::new();
    for ratings in [RatingSet::ALL, set(&[4]), set(&[1, 5]), set(&[2, 3, 4, 5])] {
        for anchor in anchors {
            for size in [1, 7, 10, 97, 200] {
                for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
                    for links in [PageLinks::None, PageLinks::Current] {
                        let layout = PageLayout {
                            size,
                            numbering,
                            links,
                        };
                        asks.push((ratings, anchor, layout));
                    }
                }
            }
        }
    }
    let answers: Vec<_> = futures::stream::iter(asks.iter().map(|&(ratings, anchor, layout)| {
        index.positions(&product, Listing::flat(ratings), flat(anchor), layout)
    }))
    .buffered(IN_FLIGHT)
    .collect()
    .await;
    for ((ratings, anchor, layout), answer) in asks.iter().zip(answers) {
        assert_eq!(
            answer.expect("positions"),
            model_positions(&model, Listing::flat(*ratings), flat(*anchor), *layout),
            "{ratings:?} anchor {anchor:?} {layout:?}"
        );
    }

    let empty = PageLayout {
        size: 10,
        numbering: Numbering::FromOldest,
        links: PageLinks::Current,
    };
    let nobody = index
        .positions(
            &sku("NOBODY"),
            Listing::flat(RatingSet::ALL),
            flat(Some(member)),
            empty,
        )
        .await
        .expect("positions");
    assert_eq!(
        nobody,
        Positions {
            total: 0,
            anchor: Some(AnchorRank { newer: 0, older: 0 }),
            page_bound: None,
        },
        "a product without comments has one empty page and no bounds"
    );
}

async fn a_view_answers_a_bound_an_anchor_and_positions_in_one_call_like_the_model<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(43);
    let product = sku("VIEWED");
    let data = dataset(&mut rng, &product, 3_000, 400);
    for batch in upserts(&data).chunks(1_000) {
        index.apply(batch).await.expect("apply");
    }
    let model = Model::of(&data);
    let member = data[rng.below(3_000) as usize].key;
    let mut asks = Vec::new();
    for ratings in [RatingSet::ALL, set(&[3]), set(&[1, 5]), set(&[1, 4, 5])] {
        let total = model.count(ratings);
        for order in [Order::NewestFirst, Order::OldestFirst] {
            for after in [None, Some(member), Some(key(member.millis(), rng.next()))] {
                let mut ranks = vec![0, 1, 99, 100, total - 1, total, total + 5];
                ranks.extend((0..4).map(|_| rng.below(total)));
                for rank in ranks {
                    for size in [20, 7, 1, 100] {
                        for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
                            let layout = PageLayout {
                                size,
                                numbering,
                                links: PageLinks::Current,
                            };
                            let start = Start {
                                order,
                                after: flat(after),
                            };
                            let (bound, anchor) = match rng.below(4) {
                                0 => (Some(rank), ViewAnchor::Rank(rank + 1)),
                                1 => (None, ViewAnchor::Rank(rank)),
                                2 => (rank.checked_sub(1), ViewAnchor::Key(Position::flat(member))),
                                _ => (Some(rank), ViewAnchor::None),
                            };
                            let request = ViewRequest {
                                start,
                                bound,
                                anchor,
                                layout,
                            };
                            asks.push((ratings, request));
                        }
                    }
                }
            }
        }
    }
    let answers: Vec<_> = futures::stream::iter(
        asks.iter()
            .map(|&(ratings, request)| index.view(&product, Listing::flat(ratings), request)),
    )
    .buffered(IN_FLIGHT)
    .collect()
    .await;
    for ((ratings, request), answer) in asks.iter().zip(answers) {
        let Start { order, after } = request.start;
        let anchor = match request.anchor {
            ViewAnchor::None => None,
            ViewAnchor::Key(key) => Some(key),
            ViewAnchor::Rank(rank) => model.key_at(Listing::flat(*ratings), order, after, rank),
        };
        let expected = View {
            bound: request
                .bound
                .and_then(|rank| model.key_at(Listing::flat(*ratings), order, after, rank)),
            anchor,
            positions: model_positions(&model, Listing::flat(*ratings), anchor, request.layout),
        };
        assert_eq!(answer.expect("view"), expected, "{ratings:?} {request:?}");
    }
}

async fn a_union_rank_deep_into_fifty_thousand_members_is_exact<I: PageIndex>(index: I) {
    let mut rng = Rng::new(4);
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
            let listing = Listing::flat(ratings);
            check_random_ranks(&index, &model, &mut rng, &product, listing, order).await;
        }
    }
}

/// A union search that guesses from one rating set must not be misled when ratings are not
/// spread alike over time: here old comments are mostly one-star and new ones five-star.
async fn a_union_rank_is_exact_when_ratings_cluster_in_time<I: PageIndex>(index: I) {
    let mut rng = Rng::new(10);
    let product = sku("CLUSTERED");
    let spread = 1_000_000;
    let mut data = dataset(&mut rng, &product, 4_000, spread);
    for entry in &mut data {
        let age = (entry.key.millis() - data::BASE_MILLIS) * 5 / spread;
        if rng.below(10) > 0 {
            entry.rating = Rating::ALL[age as usize];
        }
    }
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    for ratings in [RatingSet::ALL, set(&[1, 5]), set(&[2, 3, 4]), set(&[1, 4])] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            let listing = Listing::flat(ratings);
            check_random_ranks(&index, &model, &mut rng, &product, listing, order).await;
        }
    }
    // A page's bound and the member beside it are found by one search and a pick below it, each
    // set read for its share: here the sets' shares near a page differ from their shares of
    // the whole list, so some run out and must be read further.
    for ratings in [RatingSet::ALL, set(&[1, 5]), set(&[2, 3, 4])] {
        for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
            let layout = PageLayout {
                size: 20,
                numbering,
                links: PageLinks::Current,
            };
            for rank in (0..model.count(ratings)).step_by(293) {
                let anchor = model.key_at(Listing::flat(ratings), Order::NewestFirst, None, rank);
                let request = ViewRequest {
                    start: Start {
                        order: Order::NewestFirst,
                        after: None,
                    },
                    bound: None,
                    anchor: ViewAnchor::Rank(rank),
                    layout,
                };
                let expected = View {
                    bound: None,
                    anchor,
                    positions: model_positions(&model, Listing::flat(ratings), anchor, layout),
                };
                let view = index
                    .view(&product, Listing::flat(ratings), request)
                    .await
                    .expect("view");
                assert_eq!(view, expected, "{ratings:?} {numbering:?} rank {rank}");
            }
        }
    }
}

/// A union search reads a few dozen members at a time; a single millisecond holding far more
/// than that must still be ranked member by member.
async fn a_union_rank_inside_a_tie_wider_than_the_search_window_is_exact<I: PageIndex>(index: I) {
    let mut rng = Rng::new(11);
    let product = sku("WIDE-TIE");
    let data = dataset(&mut rng, &product, 500, 3);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);
    let inside_the_tie = data[rng.below(data.len() as u64) as usize].key;

    for ratings in [RatingSet::ALL, set(&[2, 4]), set(&[1, 3, 5])] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            for after in [None, Some(inside_the_tie)] {
                check_flat_ranks(&index, &model, &product, ratings, order, after).await;
            }
        }
    }
    // A bound and the member beside it are found by one search and a pick from it: from inside
    // the tie too.
    let layout = PageLayout {
        size: 5,
        numbering: Numbering::FromNewest,
        links: PageLinks::Current,
    };
    let start = Start {
        order: Order::NewestFirst,
        after: None,
    };
    for ratings in [RatingSet::ALL, set(&[2, 4])] {
        for rank in (0..model.count(ratings)).step_by(37) {
            let request = ViewRequest {
                start,
                bound: rank.checked_sub(1),
                anchor: ViewAnchor::Rank(rank),
                layout,
            };
            let anchor = model.key_at(Listing::flat(ratings), Order::NewestFirst, None, rank);
            let expected = View {
                bound: rank.checked_sub(1).and_then(|r| {
                    model.key_at(Listing::flat(ratings), Order::NewestFirst, None, r)
                }),
                anchor,
                positions: model_positions(&model, Listing::flat(ratings), anchor, layout),
            };
            let view = index
                .view(&product, Listing::flat(ratings), request)
                .await
                .expect("view");
            assert_eq!(view, expected, "{ratings:?} rank {rank}");
        }
    }
}

/// Ids made by other tools need not carry their `createdAt` as their time part; such comments
/// still sort by `(createdAt, id)` among the others of their millisecond, and list back intact.
async fn ids_whose_time_part_is_not_their_created_at_keep_their_place<I: PageIndex>(index: I) {
    let mut rng = Rng::new(12);
    let product = sku("FOREIGN-IDS");
    let mut data = dataset(&mut rng, &product, 60, 6);
    for (i, entry) in data.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
        let millis = entry.key.millis();
        let id_millis = if i % 2 == 0 {
            millis - 1 - i as u64
        } else {
            millis + 1 + i as u64
        };
        let id = dynapage::domain::CommentId::from_parts(id_millis, rng.next());
        entry.key = SortKey::new(millis, id).expect("millis in range");
    }
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    assert_eq!(
        index.entries(&product).await.expect("entries"),
        model.entries(&product)
    );
    for ratings in [RatingSet::ALL, set(&[2]), set(&[1, 3, 5])] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            for after in [None, Some(data[0].key), Some(data[1].key)] {
                check_flat_ranks(&index, &model, &product, ratings, order, after).await;
            }
        }
    }
    let gone: Vec<ChangeEvent> = data
        .iter()
        .step_by(3)
        .map(|old| ChangeEvent::removal(old.clone()))
        .collect();
    index.apply(&gone).await.expect("apply");
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        40,
        "they are removed by their sort key"
    );
}

async fn applying_the_same_batch_twice_changes_nothing<I: PageIndex>(index: I) {
    let mut rng = Rng::new(5);
    let product = sku("REPLAYED");
    let data = dataset(&mut rng, &product, 60, 10);
    let mut batch = upserts(&data);
    batch.push(ChangeEvent::removal(data[3].clone()));
    let moved = IndexEntry {
        rating: other_rating(data[4].rating),
        version: 2,
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
    model.set(data[4].key, other_rating(data[4].rating), 2);
    assert_eq!(once.0, model.entries(&product));
}

async fn a_rating_change_moves_the_member_between_rating_sets<I: PageIndex>(index: I) {
    let product = sku("EDITED");
    let before = IndexEntry {
        sku: product.clone(),
        key: key(1_000, 7),
        rating: rating(2),
        version: 1,
        helpful: 0,
    };
    let after = IndexEntry {
        rating: rating(5),
        version: 2,
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

    // A later edit whose old image is missing still leaves one rating set holding it.
    let back = IndexEntry {
        rating: rating(1),
        version: 3,
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
        version: 1,
        helpful: 0,
    };
    let ghost = IndexEntry {
        sku: product.clone(),
        key: key(2_000, 2),
        rating: rating(4),
        version: 1,
        helpful: 0,
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
        .apply(&[ChangeEvent::removal(ghost), ChangeEvent::removal(elsewhere)])
        .await
        .expect("removing what is not there succeeds");

    assert_eq!(index.entries(&product).await.expect("entries"), vec![kept]);
    assert_eq!(index.products().await.expect("products"), vec![product]);
}

async fn entries_are_listed_newest_first_with_their_ratings<I: PageIndex>(index: I) {
    let mut rng = Rng::new(6);
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
    let mut rng = Rng::new(7);
    let names = ["B-2", "A.1", "C_3"];
    let mut all = Vec::new();
    for name in names {
        let data = dataset(&mut rng, &sku(name), 5, 3);
        index.apply(&upserts(&data)).await.expect("apply");
        all.push(data);
    }
    let removals: Vec<ChangeEvent> = all[2]
        .iter()
        .map(|e| ChangeEvent::removal(e.clone()))
        .collect();
    index.apply(&removals).await.expect("apply");

    assert_eq!(
        index.products().await.expect("products"),
        vec![sku("A.1"), sku("B-2")]
    );
}

/// The property of versions (DESIGN §6): random histories of comments (created, edited a few
/// times, some deleted), their changes applied in random order, in random batches, many of
/// them twice or three times; the index must end as each comment's newest change says. A
/// seeded loop of cases rather than proptest, because the behaviour runs on the backend's
/// async runtime; the case number is in the failure message.
async fn changes_applied_in_any_order_and_any_number_of_times_leave_the_newest_state<
    I: PageIndex,
>(
    index: I,
) {
    for case in 0..24 {
        let mut rng = Rng::new(1_000 + case);
        let product = sku(&format!("HISTORY-{case}"));
        let size = 1 + rng.below(40) as usize;
        let created = dataset(&mut rng, &product, size, 8);
        let mut changes = Vec::new();
        let mut newest: Vec<Option<IndexEntry>> = Vec::new();
        for first in created {
            let mut entry = first.clone();
            changes.push(ChangeEvent::Upsert {
                old: None,
                new: entry.clone(),
            });
            for _ in 0..rng.below(4) {
                let next = IndexEntry {
                    rating: Rating::ALL[rng.below(5) as usize],
                    version: entry.version + 1,
                    ..entry.clone()
                };
                changes.push(ChangeEvent::Upsert {
                    old: Some(entry),
                    new: next.clone(),
                });
                entry = next;
            }
            if rng.below(3) == 0 {
                changes.push(ChangeEvent::removal(entry));
                newest.push(None);
            } else {
                newest.push(Some(entry));
            }
        }
        // Duplicates, then a shuffle: any order at all, including deletions first.
        let mut delivered = changes.clone();
        for change in &changes {
            for _ in 0..rng.below(3) {
                delivered.push(change.clone());
            }
        }
        for i in (1..delivered.len()).rev() {
            delivered.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut rest = &delivered[..];
        while !rest.is_empty() {
            let (batch, later) = rest.split_at((1 + rng.below(12) as usize).min(rest.len()));
            index.apply(batch).await.expect("apply");
            rest = later;
        }

        let expected: Vec<IndexEntry> = newest.into_iter().flatten().collect();
        let model = Model::of(&expected);
        assert_eq!(
            index.entries(&product).await.expect("entries"),
            model.entries(&product),
            "case {case}: {} changes delivered as {}",
            changes.len(),
            delivered.len()
        );
        for ratings in [RatingSet::ALL, set(&[1, 2]), set(&[5])] {
            assert_eq!(
                index.count(&product, ratings).await.expect("count"),
                model.count(ratings),
                "case {case} {ratings:?}"
            );
        }
        // Every change once more, in order: still the newest state.
        index.apply(&changes).await.expect("apply");
        assert_eq!(
            index.entries(&product).await.expect("entries"),
            model.entries(&product),
            "case {case}, replayed"
        );
    }
}

async fn apply_reports_the_changes_it_refused_and_what_the_index_holds<I: PageIndex>(index: I) {
    let product = sku("REFUSALS");
    let v1 = IndexEntry {
        sku: product.clone(),
        key: key(3_000, 1),
        rating: rating(2),
        version: 1,
        helpful: 0,
    };
    let v2 = IndexEntry {
        rating: rating(4),
        version: 2,
        ..v1.clone()
    };
    let other = IndexEntry {
        key: key(3_000, 2),
        ..v1.clone()
    };
    let upsert = |e: &IndexEntry| ChangeEvent::Upsert {
        old: None,
        new: e.clone(),
    };
    let refused = index
        .apply(&[
            upsert(&v2),
            upsert(&v1),
            upsert(&v2),
            ChangeEvent::removal(other.clone()),
            upsert(&other),
            ChangeEvent::removal(v1.clone()),
        ])
        .await
        .expect("apply");
    assert_eq!(
        refused,
        vec![
            Stale {
                event: 1,
                held: Held::Live { version: 2 }
            },
            Stale {
                event: 4,
                held: Held::Deleted { version: 2 }
            },
            Stale {
                event: 5,
                held: Held::Live { version: 2 }
            },
        ],
        "an older edit, a creation after its deletion and a deletion of an older version"
    );
    assert_eq!(
        index.entries(&product).await.expect("entries"),
        vec![v2.clone()]
    );
    assert_eq!(
        index.apply(&[upsert(&v2)]).await.expect("apply"),
        vec![],
        "a replay of the state held is applied, not refused"
    );
}

async fn a_tombstone_refuses_older_changes_until_it_expires<I: PageIndex>(index: I) {
    let product = sku("TOMBSTONED");
    let comment = IndexEntry {
        sku: product.clone(),
        key: key(4_000, 1),
        rating: rating(3),
        version: 1,
        helpful: 0,
    };
    let creation = ChangeEvent::Upsert {
        old: None,
        new: comment.clone(),
    };
    index
        .apply(&[creation.clone(), ChangeEvent::removal(comment.clone())])
        .await
        .expect("apply");
    assert_eq!(
        index
            .apply(std::slice::from_ref(&creation))
            .await
            .expect("apply")
            .len(),
        1,
        "a replayed creation is refused while the tombstone lives"
    );
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        0
    );

    tokio::time::sleep(TOMBSTONE_TTL + Duration::from_millis(500)).await;
    assert_eq!(
        index
            .apply(std::slice::from_ref(&creation))
            .await
            .expect("apply"),
        vec![],
        "after the tombstone's lifetime the index holds nothing of the comment"
    );
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
}

async fn repairs_are_made_only_where_the_index_still_holds_what_was_read<I: PageIndex>(index: I) {
    let product = sku("REPAIRED");
    let entry = |n: u128, rating_value: i64, version: u64| IndexEntry {
        sku: product.clone(),
        key: key(5_000, n),
        rating: rating(rating_value),
        version,
        helpful: 0,
    };
    let (ahead, deleted, moved_on) = (entry(1, 5, 4), entry(2, 1, 1), entry(3, 2, 2));
    index
        .apply(&[
            ChangeEvent::Upsert {
                old: None,
                new: ahead.clone(),
            },
            ChangeEvent::removal(deleted.clone()),
            ChangeEvent::Upsert {
                old: None,
                new: moved_on.clone(),
            },
        ])
        .await
        .expect("apply");

    // The table says: `ahead` is at version 2 with rating 1 (the index is ahead of it),
    // `deleted` exists at version 1, and `moved_on` is gone, but the index has moved on since
    // that was read.
    let repairs = vec![
        Repair {
            sku: product.clone(),
            key: ahead.key,
            expected: Held::Live { version: 4 },
            state: Some(entry(1, 1, 2)),
        },
        Repair {
            sku: product.clone(),
            key: deleted.key,
            expected: Held::Deleted { version: 2 },
            state: Some(deleted.clone()),
        },
        Repair {
            sku: product.clone(),
            key: moved_on.key,
            expected: Held::Live { version: 1 },
            state: None,
        },
    ];
    let missed = index.repair(&repairs).await.expect("repair");
    assert_eq!(missed, vec![repairs[2].clone()]);
    let mut expected = vec![entry(1, 1, 2), deleted.clone(), moved_on.clone()];
    expected.sort_by_key(|e| std::cmp::Reverse(e.key));
    assert_eq!(index.entries(&product).await.expect("entries"), expected);

    // A repair to nothing also forgets the tombstone; versions then start afresh.
    let forget = Repair {
        sku: product.clone(),
        key: moved_on.key,
        expected: Held::Live { version: 2 },
        state: None,
    };
    assert_eq!(index.repair(&[forget]).await.expect("repair"), vec![]);
    assert_eq!(
        index
            .apply(&[ChangeEvent::Upsert {
                old: None,
                new: entry(3, 2, 1),
            }])
            .await
            .expect("apply"),
        vec![]
    );
}

async fn ping_answers_while_the_index_is_up<I: PageIndex>(index: I) {
    index.ping().await.expect("ping");
}

// --- The model and the data --------------------------------------------------------------

/// The oracle: every `(sort key, rating)` of one product, ascending.
struct Model {
    keys: Vec<(SortKey, Rating)>,
    /// Versions other than 1.
    versions: HashMap<SortKey, u64>,
    /// Helpful counts other than 0.
    helpful: HashMap<SortKey, u64>,
}

impl Model {
    fn of(entries: &[IndexEntry]) -> Self {
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

    fn helpful_of(&self, key: &SortKey) -> u64 {
        self.helpful.get(key).copied().unwrap_or(0)
    }

    fn set(&mut self, key: SortKey, rating: Rating, version: u64) {
        for (k, r) in &mut self.keys {
            if *k == key {
                *r = rating;
            }
        }
        self.versions.insert(key, version);
    }

    fn count(&self, ratings: RatingSet) -> u64 {
        self.keys
            .iter()
            .filter(|(_, r)| ratings.contains(*r))
            .count() as u64
    }

    /// The list `listing` makes, read in `order`.
    fn list(&self, listing: Listing, order: Order) -> Vec<Position> {
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

    fn key_at(
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

    fn entries(&self, sku: &Sku) -> Vec<IndexEntry> {
        self.keys
            .iter()
            .rev()
            .map(|(key, rating)| IndexEntry {
                sku: sku.clone(),
                key: *key,
                rating: *rating,
                version: self.versions.get(key).copied().unwrap_or(1),
                helpful: self.helpful_of(key),
            })
            .collect()
    }
}

/// A sort key as a position in a list by time.
fn flat(key: Option<SortKey>) -> Option<Position> {
    key.map(Position::flat)
}

/// How many `key_at` calls the checks keep in flight: enough to be quick, few enough that a
/// loaded machine answers each within the index's response timeout.
const IN_FLIGHT: usize = 16;

/// Asks for every rank from 0 to two past the end (concurrently) and compares with the model.
async fn check_every_rank<I: PageIndex>(
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
async fn check_flat_ranks<I: PageIndex>(
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
fn model_positions(
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
async fn check_random_ranks<I: PageIndex>(
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
async fn snapshot<I: PageIndex>(index: &I, product: &Sku) -> (Vec<IndexEntry>, u64) {
    let entries = index.entries(product).await.expect("entries");
    let count = index.count(product, RatingSet::ALL).await.expect("count");
    (entries, count)
}

/// `n` entries of `product` spread over `spread` distinct milliseconds (so many tie), with
/// random ratings and distinct ids: the shared generator's comments, as the index sees them.
fn dataset(rng: &mut Rng, product: &Sku, n: usize, spread: u64) -> Vec<IndexEntry> {
    data::comments(rng, product, n, spread)
        .iter()
        .map(IndexEntry::from)
        .collect()
}

/// [`dataset`] where about half the comments have helpful votes, few counts so that ties on a
/// count are common (and some counts past one byte).
fn voted_dataset(rng: &mut Rng, product: &Sku, n: usize, spread: u64) -> Vec<IndexEntry> {
    let mut entries = dataset(rng, product, n, spread);
    for entry in &mut entries {
        entry.helpful = [0, 0, 0, 1, 1, 2, 3, 300][rng.below(8) as usize];
        if entry.helpful > 0 {
            entry.version = 1 + entry.helpful;
        }
    }
    entries
}

pub fn upserts(entries: &[IndexEntry]) -> Vec<ChangeEvent> {
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

fn set(ratings: &[i64]) -> RatingSet {
    RatingSet::parse(ratings).expect("valid rating set")
}
