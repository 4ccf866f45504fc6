//! Applying changes (`docs/architecture.md`, a write): replays, rating changes and removals of what
//! is not there are harmless; changes in any order and any number of times leave the newest state;
//! refusals are reported with what the index holds; tombstones expire; repairs are made only where
//! the index still holds what was read.

use std::time::Duration;

use dynapage::domain::{ChangeEvent, IndexEntry, Rating, RatingSet};
use dynapage::index::{Held, PageIndex, Repair, Stale};

use super::TOMBSTONE_TTL;
use super::model::{Model, dataset, other_rating, set, snapshot};
use crate::support::data::{Rng, key, rating, sku, upserts};

index_contract! {
    applying_the_same_batch_twice_changes_nothing,
    a_rating_change_moves_the_member_between_rating_sets,
    removing_a_missing_member_is_harmless,
    changes_applied_in_any_order_and_any_number_of_times_leave_the_newest_state,
    apply_reports_the_changes_it_refused_and_what_the_index_holds,
    a_tombstone_refuses_older_changes_until_it_expires,
    repairs_are_made_only_where_the_index_still_holds_what_was_read,
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
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(1_000, 7),
        rating: rating(2),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
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
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(2_000, 1),
        rating: rating(4),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
    };
    let ghost = IndexEntry {
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(2_000, 2),
        rating: rating(4),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
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

/// The property of versions (`docs/architecture.md`, a write): random histories of comments
/// (created, edited a few times, some deleted), their changes applied in random order, in random
/// batches, many of them twice or three times; the index must end as each comment's newest change
/// says. A seeded loop of cases rather than proptest, because the behaviour runs on the backend's
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
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(3_000, 1),
        rating: rating(2),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
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
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(4_000, 1),
        rating: rating(3),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
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
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(5_000, n),
        rating: rating(rating_value),
        version,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
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
