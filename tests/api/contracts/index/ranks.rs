//! Ranks in the list by time (`key_at`): every rank in both orders, after a member, a key tied
//! with one or a key between two, for every rating subset; deep into fifty thousand members, with
//! ratings clustered in time, inside a tie wider than the search window, and for ids whose time
//! part is not their `createdAt`.

use dynapage::domain::{
    ChangeEvent, Listing, Numbering, Order, PageLayout, PageLinks, Rating, RatingSet, SortKey,
};
use dynapage::index::{PageIndex, Start, View, ViewAnchor, ViewRequest};

use super::model::{
    Model, all_rating_subsets, check_flat_ranks, check_random_ranks, dataset, member_rating,
    model_positions, set,
};
use crate::support::data::{self, Rng, key, sku, upserts};

index_contract! {
    key_at_reads_every_rank_in_both_orders_ties_included,
    key_at_counts_only_items_beyond_the_cursor_member_or_not,
    key_at_agrees_with_the_model_for_all_31_rating_subsets,
    a_union_rank_deep_into_fifty_thousand_members_is_exact,
    a_union_rank_is_exact_when_ratings_cluster_in_time,
    a_union_rank_inside_a_tie_wider_than_the_search_window_is_exact,
    ids_whose_time_part_is_not_their_created_at_keep_their_place,
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
