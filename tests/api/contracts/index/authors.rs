//! Authors' lists in the index (`AuthorList`): the index the server runs (`AnyIndex`) applies
//! a change of a comment with an author to its product's list, its queues, and the author's
//! list (in its status's slot), each under the comment's version, so changes applied late or
//! twice, in any order, leave every list as the newest change says; another author's list
//! never moves.

use dynapage::domain::{AuthorList, ChangeEvent, CommentStatus, IndexEntry, RatingSet, Sku};
use dynapage::index::{AnyIndex, PageIndex};

use crate::contracts::index::{memory_index, redis_cluster_index, redis_index};
use crate::support::data::{key, rating, sku};

contract_suite! {
    backends: {
        any_memory_index => async { AnyIndex::Memory(memory_index().await) },
        any_redis_index => async { AnyIndex::Redis(redis_index().await) },
        any_redis_cluster_index => async { AnyIndex::Redis(redis_cluster_index().await) },
    },
    behaviours: [an_authors_lists_follow_every_status_in_any_order],
}

/// The comment `random` of `product` by `author` at `version` in `status`.
fn at(
    product: &Sku,
    author: &str,
    random: u128,
    version: u64,
    status: CommentStatus,
) -> IndexEntry {
    IndexEntry {
        verified: false,
        sku: product.clone(),
        key: key(9_000, random),
        rating: rating(3),
        version,
        helpful: 0,
        published: status == CommentStatus::Published,
        status,
        author: Some(author.to_owned()),
        reported: false,
    }
}

/// What `author`'s list holds: all of it, then pending, published, hidden, rejected (each
/// status in its slot of the one list, `AuthorList::slot`).
async fn holdings<I: PageIndex>(index: &I, author: &str) -> Vec<u64> {
    let mut lists = vec![AuthorList::new(author, None)];
    lists.extend(CommentStatus::ALL.map(|status| AuthorList::new(author, Some(status))));
    let mut out = Vec::new();
    for list in lists {
        out.push(
            index
                .count(&list.index_name(), list.slots())
                .await
                .expect("count"),
        );
    }
    out
}

async fn an_authors_lists_follow_every_status_in_any_order<I: PageIndex>(index: I) {
    let product = sku("AUTHORED");
    let (pending, published, hidden) = (
        CommentStatus::Pending,
        CommentStatus::Published,
        CommentStatus::Hidden,
    );
    let alice = "auth0|alice{1}";
    let change = |old: Option<IndexEntry>, new: IndexEntry| ChangeEvent::Upsert { old, new };
    let written = change(None, at(&product, alice, 1, 1, pending));
    let approved = change(
        Some(at(&product, alice, 1, 1, pending)),
        at(&product, alice, 1, 2, published),
    );
    let taken_down = change(
        Some(at(&product, alice, 1, 2, published)),
        at(&product, alice, 1, 3, hidden),
    );
    let deleted = ChangeEvent::removal(at(&product, alice, 1, 3, hidden));
    // Bob's comment, published: in his lists only.
    index
        .apply(&[change(None, at(&product, "bob", 2, 1, published))])
        .await
        .expect("apply");
    let bobs = vec![1, 0, 1, 0, 0];

    // The newest first, then the older ones late: the comment stays hidden.
    for event in [&taken_down, &written, &approved] {
        index
            .apply(std::slice::from_ref(event))
            .await
            .expect("apply");
    }
    let hidden_only = vec![1, 0, 0, 1, 0];
    assert_eq!(holdings(&index, alice).await, hidden_only);
    let name = AuthorList::new(alice, None).index_name();
    let held = index.entries(&name).await.expect("entries");
    assert_eq!(held.len(), 1, "one list, one membership");
    assert_eq!(
        (held[0].version, held[0].rating),
        (3, AuthorList::slot(hidden))
    );

    // Replayed in order, twice: the same.
    let in_order = [written.clone(), approved.clone(), taken_down.clone()];
    index.apply(&in_order).await.expect("apply");
    index.apply(&in_order).await.expect("apply");
    assert_eq!(holdings(&index, alice).await, hidden_only);

    // Deleted: out of every list, and no older change brings it back.
    index.apply(&[deleted]).await.expect("apply");
    index.apply(&in_order).await.expect("apply");
    assert_eq!(holdings(&index, alice).await, vec![0; 5]);
    assert_eq!(holdings(&index, "bob").await, bobs);
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
}
