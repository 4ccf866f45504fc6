//! The moderation part of the `CommentStore` contract, run against every backend (the embedded
//! store, the durable one on SQLite, DynamoDB Local): a comment is in the partitions (the
//! public lists) only while it is published, a decision is one write at the next version that
//! moves it out or back in every partition at once, a decision that does not apply writes
//! nothing, an author's edit under pre-moderation sends a published comment back to review,
//! nobody votes on a comment the public cannot see, and the shop's reply is a write of its own.

use std::ops::Bound;

use dynapage::domain::{
    Access, Comment, CommentId, CommentPatch, CommentStatus, Moderation, ModerationDecision,
    ModerationReason, Order, Verdict, Voter,
};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, Partition, StoreError};

use crate::support::data::{BASE_MILLIS, dataset, read_all_from, sku};
use crate::support::dynamodb_local::dynamo_store;
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [
        hiding_takes_a_comment_out_of_every_partition_and_publishing_puts_it_back,
        a_pending_comment_is_in_no_partition_until_it_is_published,
        a_decision_that_does_not_apply_writes_nothing,
        an_edit_under_review_sends_a_published_comment_back_to_pending,
        nobody_votes_on_a_comment_that_is_not_published,
        a_scan_sees_every_status_and_finds_every_item_in_its_place,
        a_reply_is_one_write_that_moves_nothing_and_a_change_of_nothing_writes_nothing,
    ],
}

const NOW: u64 = BASE_MILLIS + 50_000;
/// Who moderates in these behaviours (the log records it).
const MODERATOR: &str = "auth0|moderator";

fn verdict(decision: ModerationDecision) -> Verdict {
    Verdict::new(decision, Some(ModerationReason::Spam), Some("see rule 3")).expect("a verdict")
}

/// Every partition of `sku_name`, each read whole, as sets of ids.
async fn partitions<S: CommentStore>(store: &S, sku_name: &str) -> Vec<Vec<CommentId>> {
    let sku = sku(sku_name);
    let mut all = vec![
        Partition::Product(sku.clone()),
        Partition::ProductHelpful(sku.clone()),
    ];
    for rating in dynapage::domain::Rating::ALL {
        all.push(Partition::ProductRating(sku.clone(), rating));
        all.push(Partition::ProductRatingHelpful(sku.clone(), rating));
    }
    let mut out = Vec::new();
    for partition in all {
        let mut ids: Vec<CommentId> =
            read_all_from(store, partition, Order::NewestFirst, Bound::Unbounded, 7)
                .await
                .iter()
                .map(|c| c.id)
                .collect();
        ids.sort();
        out.push(ids);
    }
    out
}

/// What [`partitions`] reads when exactly `comments` are published.
fn expected(comments: &[Comment]) -> Vec<Vec<CommentId>> {
    let ids = |keep: &dyn Fn(&Comment) -> bool| {
        let mut ids: Vec<CommentId> = comments.iter().filter(|c| keep(c)).map(|c| c.id).collect();
        ids.sort();
        ids
    };
    let mut out = vec![ids(&|_| true), ids(&|_| true)];
    for rating in dynapage::domain::Rating::ALL {
        out.push(ids(&|c| c.rating == rating));
        out.push(ids(&|c| c.rating == rating));
    }
    out
}

async fn get<S: CommentStore>(store: &S, id: CommentId) -> Comment {
    store
        .get_many(&[id])
        .await
        .expect("get_many")
        .remove(0)
        .expect("the comment exists")
}

pub async fn hiding_takes_a_comment_out_of_every_partition_and_publishing_puts_it_back<
    S: CommentStore,
>(
    store: S,
) {
    let comments = dataset("MOD-HIDE", 12);
    store.put_batch(&comments).await.expect("put");
    // One with votes, so its place in the lists by helpful votes is at stake too.
    store
        .mark_helpful(comments[4].id, &Voter::signed_in("ann"), true, NOW)
        .await
        .expect("a vote");
    let voted = get(&store, comments[4].id).await;
    let mut hidden = Vec::new();
    for i in [2, 4, 9] {
        let decided = store
            .moderate(
                comments[i].id,
                &verdict(ModerationDecision::Hide),
                MODERATOR,
                NOW + 1,
            )
            .await
            .expect("hidden");
        hidden.push(decided);
    }
    for comment in &hidden {
        assert_eq!(comment.moderation.status, CommentStatus::Hidden);
        assert_eq!(comment.moderation.reason, Some(ModerationReason::Spam));
        assert_eq!(comment.moderation.note.as_deref(), Some("see rule 3"));
        assert_eq!(comment.moderation.decided_at_ms, Some(NOW + 1));
        assert_eq!(
            get(&store, comment.id).await,
            *comment,
            "stored as answered"
        );
    }
    assert_eq!(
        hidden[1].version,
        voted.version + 1,
        "a decision is the next version"
    );
    assert_eq!(hidden[1].helpful_count, 1, "and keeps the count");
    let public: Vec<Comment> = comments
        .iter()
        .filter(|c| !hidden.iter().any(|h| h.id == c.id))
        .cloned()
        .collect();
    assert_eq!(partitions(&store, "MOD-HIDE").await, expected(&public));

    let back = store
        .moderate(
            hidden[1].id,
            &verdict(ModerationDecision::Publish),
            MODERATOR,
            NOW + 2,
        )
        .await
        .expect("published again");
    assert_eq!(back.moderation.status, CommentStatus::Published);
    assert_eq!(
        (back.version, back.helpful_count),
        (hidden[1].version + 1, 1)
    );
    let mut public = public;
    public.push(back.clone());
    assert_eq!(partitions(&store, "MOD-HIDE").await, expected(&public));
    // In its count's place among the lists by helpful votes: first, the only one voted for.
    let by_helpful = read_all_from(
        &store,
        Partition::ProductHelpful(sku("MOD-HIDE")),
        Order::NewestFirst,
        Bound::Unbounded,
        3,
    )
    .await;
    assert_eq!(by_helpful.first().map(|c| c.id), Some(back.id));
}

pub async fn a_pending_comment_is_in_no_partition_until_it_is_published<S: CommentStore>(store: S) {
    let mut comments = dataset("MOD-PENDING", 5);
    for comment in &mut comments[..2] {
        comment.moderation = Moderation::new(true);
    }
    for comment in &comments {
        store.create(comment).await.expect("created");
    }
    assert_eq!(
        get(&store, comments[0].id).await.moderation.status,
        CommentStatus::Pending
    );
    assert_eq!(
        partitions(&store, "MOD-PENDING").await,
        expected(&comments[2..])
    );
    let published = store
        .moderate(
            comments[0].id,
            &verdict(ModerationDecision::Publish),
            MODERATOR,
            NOW,
        )
        .await
        .expect("published");
    assert_eq!(published.version, 2);
    let rejected = store
        .moderate(
            comments[1].id,
            &verdict(ModerationDecision::Reject),
            MODERATOR,
            NOW,
        )
        .await
        .expect("rejected");
    assert_eq!(rejected.moderation.status, CommentStatus::Rejected);
    let mut public = comments[2..].to_vec();
    public.push(published);
    assert_eq!(partitions(&store, "MOD-PENDING").await, expected(&public));
}

pub async fn a_decision_that_does_not_apply_writes_nothing<S: CommentStore>(store: S) {
    let mut comments = dataset("MOD-REFUSED", 2);
    comments[1].moderation = Moderation::new(true);
    store.put_batch(&comments).await.expect("put");
    let refusals = [
        (
            comments[0].id,
            ModerationDecision::Reject,
            CommentStatus::Published,
        ),
        (
            comments[0].id,
            ModerationDecision::Publish,
            CommentStatus::Published,
        ),
        (
            comments[1].id,
            ModerationDecision::Hide,
            CommentStatus::Pending,
        ),
    ];
    for (id, decision, status) in refusals {
        let refused = store.moderate(id, &verdict(decision), MODERATOR, NOW).await;
        assert!(
            matches!(refused, Err(StoreError::Decision(d)) if d.status == status && d.decision == decision),
            "{decision:?} of a {status:?} comment: {refused:?}"
        );
    }
    assert_eq!(
        get(&store, comments[0].id).await,
        comments[0],
        "nothing written"
    );
    assert_eq!(
        get(&store, comments[1].id).await,
        comments[1],
        "nothing written"
    );
    let missing = CommentId::from_parts(BASE_MILLIS, 7);
    assert!(matches!(
        store.moderate(missing, &verdict(ModerationDecision::Hide), MODERATOR, NOW).await,
        Err(StoreError::NotFound(id)) if id == missing
    ));
}

pub async fn an_edit_under_review_sends_a_published_comment_back_to_pending<S: CommentStore>(
    store: S,
) {
    let comments = dataset("MOD-EDIT", 3);
    store.put_batch(&comments).await.expect("put");
    let reviewed = CommentPatch::new(Some("changed after approval"), None)
        .expect("a patch")
        .reviewed(true);
    let edited = store
        .update(comments[0].id, &reviewed, NOW, &Access::Any)
        .await
        .expect("edited");
    assert_eq!(edited.moderation.status, CommentStatus::Pending);
    assert_eq!(edited.body, "changed after approval");
    assert_eq!(get(&store, comments[0].id).await, edited);
    assert_eq!(
        partitions(&store, "MOD-EDIT").await,
        expected(&comments[1..])
    );

    // A hidden comment edited stays hidden, reviewed or not; a plain edit keeps the status.
    let hidden = store
        .moderate(
            comments[1].id,
            &verdict(ModerationDecision::Hide),
            MODERATOR,
            NOW,
        )
        .await
        .expect("hidden");
    let again = store
        .update(hidden.id, &reviewed, NOW + 1, &Access::Any)
        .await
        .expect("edited");
    assert_eq!(again.moderation.status, CommentStatus::Hidden);
    let plain = CommentPatch::new(None, Some(1)).expect("a patch");
    let kept = store
        .update(comments[2].id, &plain, NOW + 1, &Access::Any)
        .await
        .expect("edited");
    assert_eq!(kept.moderation.status, CommentStatus::Published);
    assert_eq!(partitions(&store, "MOD-EDIT").await, expected(&[kept]));
}

pub async fn nobody_votes_on_a_comment_that_is_not_published<S: CommentStore>(store: S) {
    let comments = dataset("MOD-VOTE", 2);
    store.put_batch(&comments).await.expect("put");
    let hidden = store
        .moderate(
            comments[0].id,
            &verdict(ModerationDecision::Hide),
            MODERATOR,
            NOW,
        )
        .await
        .expect("hidden");
    for helpful in [true, false] {
        let refused = store
            .mark_helpful(hidden.id, &Voter::signed_in("ann"), helpful, NOW + 1)
            .await;
        assert!(
            matches!(refused, Err(StoreError::NotFound(id)) if id == hidden.id),
            "{refused:?}"
        );
    }
    assert_eq!(get(&store, hidden.id).await, hidden, "nothing written");
}

pub async fn a_scan_sees_every_status_and_finds_every_item_in_its_place<S: CommentStore>(store: S) {
    let comments = dataset("MOD-SCAN", 4);
    store.put_batch(&comments).await.expect("put");
    let hidden = store
        .moderate(
            comments[0].id,
            &verdict(ModerationDecision::Hide),
            MODERATOR,
            NOW,
        )
        .await
        .expect("hidden");
    let mut seen = Vec::new();
    let mut resume = None;
    loop {
        let page = store.scan(0, 1, resume).await.expect("scan");
        assert!(page.unranked.is_empty(), "misplaced: {:?}", page.unranked);
        seen.extend(page.items);
        resume = page.resume;
        if resume.is_none() {
            break;
        }
    }
    let found = seen
        .iter()
        .find(|c| c.id == hidden.id)
        .expect("the hidden comment is scanned");
    assert_eq!(*found, hidden);
    assert_eq!(seen.iter().filter(|c| c.sku == hidden.sku).count(), 4);
}

pub async fn a_reply_is_one_write_that_moves_nothing_and_a_change_of_nothing_writes_nothing<
    S: CommentStore,
>(
    store: S,
) {
    let comments = dataset("MOD-REPLY", 3);
    store.put_batch(&comments).await.expect("put");
    let target = &comments[1];
    let unchanged = store
        .reply(target.id, None, MODERATOR, NOW)
        .await
        .expect("no reply to remove");
    assert_eq!(unchanged, *target, "nothing written");
    let answered = store
        .reply(
            target.id,
            Some("Thank you, we fixed the sizing chart."),
            MODERATOR,
            NOW,
        )
        .await
        .expect("answered");
    let reply = answered.reply.clone().expect("a reply");
    assert_eq!(
        (reply.created_at_ms, reply.updated_at_ms, answered.version),
        (NOW, None, target.version + 1)
    );
    assert_eq!(
        answered.updated_at_ms, target.updated_at_ms,
        "a reply is not an edit"
    );
    assert_eq!(get(&store, target.id).await, answered, "stored as answered");
    let again = store
        .reply(
            target.id,
            Some("Thank you, we fixed the sizing chart."),
            MODERATOR,
            NOW + 1,
        )
        .await
        .expect("the same reply");
    assert_eq!(again, answered, "the same text again writes nothing");
    let replaced = store
        .reply(target.id, Some("Fixed in March."), MODERATOR, NOW + 2)
        .await
        .expect("replaced");
    let reply = replaced.reply.clone().expect("a reply");
    assert_eq!(
        (reply.created_at_ms, reply.updated_at_ms),
        (NOW, Some(NOW + 2))
    );
    let removed = store
        .reply(target.id, None, MODERATOR, NOW + 3)
        .await
        .expect("removed");
    assert_eq!(
        (removed.reply.clone(), removed.version),
        (None, target.version + 3)
    );
    assert_eq!(get(&store, target.id).await, removed);
    assert_eq!(partitions(&store, "MOD-REPLY").await, expected(&comments));
    let missing = CommentId::from_parts(BASE_MILLIS, 9);
    assert!(matches!(
        store.reply(missing, Some("hello"), MODERATOR, NOW).await,
        Err(StoreError::NotFound(id)) if id == missing
    ));
}
