//! The authors' part of the `CommentStore` contract, run against every backend (the embedded
//! store, the durable one on SQLite, DynamoDB Local): a comment with an author is in the
//! author's whole partition and in the one of its status, whatever the status, and follows
//! every write (a decision, an edit back to review, a vote, a deletion); a comment without an
//! author is in no author's partition, and another author's never moves.

use std::ops::Bound;

use dynapage::domain::{
    Access, AuthorList, Comment, CommentId, CommentPatch, CommentStatus, ModerationDecision,
    ModerationReason, Order, Verdict, Voter,
};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, Partition};

use crate::support::data::{BASE_MILLIS, dataset, read_all_from};
use crate::support::dynamodb_local::dynamo_store;
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [an_authors_partitions_follow_every_write],
}

const NOW: u64 = BASE_MILLIS + 90_000;
const ALICE: &str = "auth0|alice{1}";

/// The ids in `sub`'s partition of `status` (every status with `None`), newest first.
async fn held<S: CommentStore>(
    store: &S,
    sub: &str,
    status: Option<CommentStatus>,
) -> Vec<CommentId> {
    let partition = Partition::Author(AuthorList::new(sub, status));
    read_all_from(store, partition, Order::NewestFirst, Bound::Unbounded, 2)
        .await
        .iter()
        .map(|c| c.id)
        .collect()
}

/// The ids of `comments`, newest first.
fn newest_first<'a>(comments: impl IntoIterator<Item = &'a Comment>) -> Vec<CommentId> {
    let mut ids: Vec<(u64, CommentId)> = comments
        .into_iter()
        .map(|c| (c.created_at_ms, c.id))
        .collect();
    ids.sort_by(|a, b| b.cmp(a));
    ids.into_iter().map(|(_, id)| id).collect()
}

pub async fn an_authors_partitions_follow_every_write<S: CommentStore>(store: S) {
    let mut comments = dataset("AUTHORED", 8);
    for (i, comment) in comments.iter_mut().enumerate() {
        comment.author_sub = match i % 4 {
            3 => None,
            2 => Some("auth0|bob".to_owned()),
            _ => Some(ALICE.to_owned()),
        };
    }
    store.put_batch(&comments).await.expect("put");
    let alices: Vec<&Comment> = comments
        .iter()
        .filter(|c| c.author_sub.as_deref() == Some(ALICE))
        .collect();
    let bobs = newest_first(
        comments
            .iter()
            .filter(|c| c.author_sub.as_deref() == Some("auth0|bob")),
    );
    let all = newest_first(alices.iter().copied());
    assert_eq!(all.len(), 4);
    assert_eq!(held(&store, ALICE, None).await, all);
    assert_eq!(
        held(&store, ALICE, Some(CommentStatus::Published)).await,
        all
    );
    assert_eq!(held(&store, "auth0|bob", None).await, bobs);

    // A decision, an edit back to review, a vote and a deletion.
    let verdict = Verdict::new(ModerationDecision::Hide, Some(ModerationReason::Spam), None)
        .expect("a verdict");
    let hidden = store
        .moderate(alices[0].id, &verdict, "auth0|moderator", NOW)
        .await
        .expect("hidden");
    let review = CommentPatch::new(Some("changed"), None)
        .expect("a patch")
        .reviewed(true);
    let pending = store
        .update(alices[1].id, &review, NOW, &Access::Any)
        .await
        .expect("edited");
    assert_eq!(pending.moderation.status, CommentStatus::Pending);
    store
        .mark_helpful(alices[2].id, &Voter::signed_in("ann"), true, NOW)
        .await
        .expect("a vote");
    store
        .delete(alices[3].id, &Access::Any)
        .await
        .expect("deleted");

    let kept = newest_first([alices[0], alices[1], alices[2]]);
    assert_eq!(held(&store, ALICE, None).await, kept);
    assert_eq!(
        held(&store, ALICE, Some(CommentStatus::Hidden)).await,
        vec![hidden.id]
    );
    assert_eq!(
        held(&store, ALICE, Some(CommentStatus::Pending)).await,
        vec![pending.id]
    );
    assert_eq!(
        held(&store, ALICE, Some(CommentStatus::Published)).await,
        vec![alices[2].id]
    );
    assert!(
        held(&store, ALICE, Some(CommentStatus::Rejected))
            .await
            .is_empty()
    );
    assert_eq!(
        held(&store, "auth0|bob", None).await,
        bobs,
        "bob's never move"
    );
    let read = read_all_from(
        &store,
        Partition::Author(AuthorList::new(ALICE, None)),
        Order::NewestFirst,
        Bound::Unbounded,
        10,
    )
    .await;
    let voted = read.iter().find(|c| c.id == alices[2].id).expect("voted");
    assert_eq!(voted.helpful_count, 1, "read as it is now");
}
