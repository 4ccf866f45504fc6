//! Numbered pages (`positions`, `view`): the anchor's rank and its page's bound, and a bound, an
//! anchor and positions answered in one call, like the model.

use dynapage::domain::{
    AnchorRank, Listing, Numbering, Order, PageLayout, PageLinks, Position, RatingSet, SortKey,
};
use dynapage::index::{PageIndex, Positions, Start, View, ViewAnchor, ViewRequest};
use futures::StreamExt;

use super::model::{IN_FLIGHT, Model, dataset, flat, model_positions, set};
use crate::support::data::{Rng, key, sku, upserts};

index_contract! {
    positions_rank_the_anchor_and_bound_its_page,
    a_view_answers_a_bound_an_anchor_and_positions_in_one_call_like_the_model,
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
