//! The lists grouped by rating (`HIGHEST_RATED`, `LOWEST_RATED`) and by helpful votes
//! (`MOST_HELPFUL`): every rank and view like the model's, and votes that move a comment in the
//! list by votes and nowhere else, before, at and after a product's first vote.

use dynapage::domain::{
    ChangeEvent, Grouping, Listing, Numbering, Order, PageLayout, PageLinks, Position, RatingSet,
    SortKey,
};
use dynapage::index::{PageIndex, Start, View, ViewAnchor, ViewRequest};

use super::model::{
    Model, all_rating_subsets, check_every_rank, dataset, model_positions, other_rating, set,
    voted_dataset,
};
use crate::support::data::{Rng, key, sku, upserts};

index_contract! {
    lists_by_rating_rank_like_the_model_for_every_subset_and_position,
    votes_move_comments_in_the_list_by_helpful_votes_and_keep_their_place_by_time,
    the_list_by_helpful_votes_is_right_before_at_and_after_a_first_vote,
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
