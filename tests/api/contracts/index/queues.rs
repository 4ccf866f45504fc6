//! The moderation queues in the index (`QueueList`): the index the server runs (`AnyIndex`)
//! applies a change of a comment's status to its product's list and to the queues it leaves
//! and enters, each under the comment's version, so changes applied late or twice, in any
//! order, leave every list as the newest change says.

use dynapage::domain::{ChangeEvent, CommentStatus, IndexEntry, QueueList, RatingSet, Sku};
use dynapage::index::{AnyIndex, PageIndex};

use crate::contracts::index::{memory_index, redis_cluster_index, redis_index};
use crate::support::data::{key, rating, sku};

contract_suite! {
    backends: {
        any_memory_index => async { AnyIndex::Memory(memory_index().await) },
        any_redis_index => async { AnyIndex::Redis(redis_index().await) },
        any_redis_cluster_index => async { AnyIndex::Redis(redis_cluster_index().await) },
    },
    behaviours: [decisions_move_a_comment_between_queues_in_any_order],
}

/// The comment `random` of `product` at `version` in `status`.
fn at(product: &Sku, random: u128, version: u64, status: CommentStatus) -> IndexEntry {
    IndexEntry {
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(7_000, random),
        rating: rating(4),
        version,
        helpful: 0,
        published: status == CommentStatus::Published,
        status,
    }
}

/// What each list holds of `product`: its public list, then its pending, hidden and rejected
/// queues, each as the product's and the shop's counts.
async fn holdings<I: PageIndex>(index: &I, product: &Sku) -> Vec<(u64, u64)> {
    let mut out = vec![(
        index.count(product, RatingSet::ALL).await.expect("count"),
        0,
    )];
    for status in [
        CommentStatus::Pending,
        CommentStatus::Hidden,
        CommentStatus::Rejected,
    ] {
        let [shop, own] =
            <[QueueList; 2]>::try_from(QueueList::of(status, false, product)).expect("two queues");
        let count = |queue: QueueList| async move {
            index
                .count(&queue.index_name(), RatingSet::ALL)
                .await
                .expect("count")
        };
        out.push((count(own).await, count(shop).await));
    }
    out
}

async fn decisions_move_a_comment_between_queues_in_any_order<I: PageIndex>(index: I) {
    let product = sku("QUEUED");
    let (pending, published, hidden) = (
        CommentStatus::Pending,
        CommentStatus::Published,
        CommentStatus::Hidden,
    );
    let change = |old: Option<IndexEntry>, new: IndexEntry| ChangeEvent::Upsert { old, new };
    // Written pending, published, hidden, then deleted.
    let written = change(None, at(&product, 1, 1, pending));
    let approved = change(
        Some(at(&product, 1, 1, pending)),
        at(&product, 1, 2, published),
    );
    let taken_down = change(
        Some(at(&product, 1, 2, published)),
        at(&product, 1, 3, hidden),
    );
    let deleted = ChangeEvent::removal(at(&product, 1, 3, hidden));

    // The newest first, then the older ones late: the comment stays hidden.
    for event in [&taken_down, &written, &approved] {
        index
            .apply(std::slice::from_ref(event))
            .await
            .expect("apply");
    }
    let hidden_only = vec![(0, 0), (0, 0), (1, 1), (0, 0)];
    assert_eq!(holdings(&index, &product).await, hidden_only);
    let name = QueueList::of(hidden, false, &product)[0].index_name();
    let held = index.entries(&name).await.expect("entries");
    assert_eq!(held.len(), 1);
    assert_eq!((held[0].version, held[0].status), (3, hidden));

    // Replayed in order, twice: the same.
    let in_order = [written.clone(), approved.clone(), taken_down.clone()];
    index.apply(&in_order).await.expect("apply");
    index.apply(&in_order).await.expect("apply");
    assert_eq!(holdings(&index, &product).await, hidden_only);

    // Deleted: out of every list, and no older change brings it back.
    index.apply(&[deleted]).await.expect("apply");
    index.apply(&in_order).await.expect("apply");
    assert_eq!(holdings(&index, &product).await, vec![(0, 0); 4]);

    // Another comment, published then pending again in order: one list at a time.
    let second = change(None, at(&product, 2, 1, published));
    index.apply(&[second]).await.expect("apply");
    assert_eq!(
        holdings(&index, &product).await,
        vec![(1, 0), (0, 0), (0, 0), (0, 0)]
    );
    let back = change(
        Some(at(&product, 2, 1, published)),
        at(&product, 2, 2, pending),
    );
    index.apply(&[back]).await.expect("apply");
    assert_eq!(
        holdings(&index, &product).await,
        vec![(0, 0), (1, 1), (0, 0), (0, 0)]
    );
}
