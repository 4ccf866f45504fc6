//! Withdrawals (`ChangeEvent::withdraws`): an upsert of a comment that is not published (pending,
//! hidden, rejected) takes it out of every public set like a deletion at its version, so a late
//! older change never puts a hidden comment back, and publishing it again (a newer version)
//! puts it back with its rating and helpful count.

use dynapage::domain::{ChangeEvent, IndexEntry, RatingSet};
use dynapage::index::{Held, PageIndex, Stale};

use crate::support::data::{key, rating, sku};

index_contract! {
    a_withdrawal_takes_a_comment_out_and_no_older_change_puts_it_back,
    a_comment_withdrawn_before_the_index_saw_it_stays_out,
}

fn upsert(entry: &IndexEntry) -> ChangeEvent {
    ChangeEvent::Upsert {
        old: None,
        new: entry.clone(),
    }
}

async fn a_withdrawal_takes_a_comment_out_and_no_older_change_puts_it_back<I: PageIndex>(index: I) {
    let product = sku("WITHDRAWN");
    let neighbour = IndexEntry {
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(5_000, 9),
        rating: rating(3),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
    };
    let v1 = IndexEntry {
        key: key(5_000, 1),
        rating: rating(5),
        ..neighbour.clone()
    };
    let v2 = IndexEntry {
        version: 2,
        helpful: 1,
        ..v1.clone()
    };
    let hidden = IndexEntry {
        version: 3,
        published: false,
        status: dynapage::domain::CommentStatus::Hidden,
        ..v2.clone()
    };
    index
        .apply(&[
            upsert(&neighbour),
            upsert(&v1),
            upsert(&v2),
            upsert(&hidden),
        ])
        .await
        .expect("apply");
    assert_eq!(
        index.entries(&product).await.expect("entries"),
        vec![neighbour.clone()]
    );
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
    assert_eq!(
        index.rating_counts(&product).await.expect("counts"),
        [0, 0, 1, 0, 0],
        "out of its rating's count"
    );
    let refused = index
        .apply(&[upsert(&v2), upsert(&v1), upsert(&hidden)])
        .await
        .expect("apply");
    let held = Held::Deleted { version: 3 };
    assert_eq!(
        refused,
        (0..3)
            .map(|event| Stale { event, held })
            .collect::<Vec<_>>(),
        "older changes and the withdrawal's replay are refused"
    );
    assert_eq!(
        index.entries(&product).await.expect("entries"),
        vec![neighbour.clone()]
    );

    let published = IndexEntry {
        version: 4,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
        ..hidden.clone()
    };
    assert_eq!(
        index.apply(&[upsert(&published)]).await.expect("apply"),
        vec![]
    );
    let mut entries = index.entries(&product).await.expect("entries");
    entries.sort_by_key(|e| e.key);
    assert_eq!(entries, vec![published, neighbour], "back, with its count");
    assert_eq!(
        index.rating_counts(&product).await.expect("counts"),
        [0, 0, 1, 0, 1]
    );
}

async fn a_comment_withdrawn_before_the_index_saw_it_stays_out<I: PageIndex>(index: I) {
    let product = sku("NEVER-SHOWN");
    let pending = IndexEntry {
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(6_000, 1),
        rating: rating(1),
        version: 2,
        helpful: 0,
        published: false,
        status: dynapage::domain::CommentStatus::Pending,
    };
    let first = IndexEntry {
        version: 1,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
        ..pending.clone()
    };
    assert_eq!(
        index.apply(&[upsert(&pending)]).await.expect("apply"),
        vec![]
    );
    assert_eq!(
        index.apply(&[upsert(&first)]).await.expect("apply"),
        vec![Stale {
            event: 0,
            held: Held::Deleted { version: 2 }
        }]
    );
    assert_eq!(index.entries(&product).await.expect("entries"), vec![]);
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        0
    );
}
