//! The helpful-vote part of the `CommentStore` contract, run against every backend like
//! `contracts::store` (the embedded store, the durable one on SQLite, DynamoDB Local): one vote
//! per voter and comment, the count and the version moving with it in one write, the
//! own-comment rule, votes that neither move a comment nor undo an edit, and a scan that
//! reports votes without taking them for comments. The racing behaviour is the concurrency
//! test the issue asks of DynamoDB: many voters at once, each voting several times, and an edit
//! among them; the count must equal the distinct voters.

use std::collections::HashMap;
use std::ops::Bound;

use dynapage::domain::{Access, Comment, CommentId, CommentPatch, Order, Voter};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, StoreError};

use crate::support::data::BASE_MILLIS;
use crate::support::data::{dataset, product, read_all};
use crate::support::dynamodb_local::dynamo_store;
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [
        a_vote_counts_once_however_often_it_is_given,
        taking_a_vote_back_uncounts_it_and_without_one_changes_nothing,
        a_vote_moves_only_the_count_and_the_version,
        an_author_may_not_mark_their_own_comment_and_the_refusal_writes_nothing,
        a_vote_for_a_missing_comment_is_not_found,
        an_edit_keeps_the_count_and_a_later_vote_keeps_the_edit,
        racing_voters_count_once_each_and_a_racing_edit_still_applies,
        a_scan_reports_votes_beside_the_comments_and_never_as_comments,
    ],
}

const NOW: u64 = BASE_MILLIS + 50_000;

fn voter(name: &str) -> Voter {
    Voter::signed_in(name)
}

async fn one<S: CommentStore>(store: &S, sku_name: &str) -> Comment {
    let comment = dataset(sku_name, 3).remove(1);
    store
        .put_batch(std::slice::from_ref(&comment))
        .await
        .expect("put");
    comment
}

async fn get<S: CommentStore>(store: &S, id: CommentId) -> Comment {
    store
        .get_many(&[id])
        .await
        .expect("get_many")
        .remove(0)
        .expect("the comment exists")
}

pub async fn a_vote_counts_once_however_often_it_is_given<S: CommentStore>(store: S) {
    let comment = one(&store, "VOTE-ONCE").await;
    let other = one(&store, "VOTE-ONCE-OTHER").await;
    let ann = voter("ann");
    let first = store
        .mark_helpful(comment.id, &ann, true, NOW)
        .await
        .expect("a vote");
    assert!(first.changed);
    assert_eq!(
        (first.comment.helpful_count, first.comment.version),
        (1, comment.version + 1)
    );
    let again = store
        .mark_helpful(comment.id, &ann, true, NOW + 1)
        .await
        .expect("the same vote again");
    assert!(!again.changed, "a second vote writes nothing");
    assert_eq!(
        again.comment, first.comment,
        "and answers the comment as it is"
    );
    let bob = store
        .mark_helpful(comment.id, &voter("bob"), true, NOW + 2)
        .await
        .expect("another voter");
    assert_eq!(
        (bob.comment.helpful_count, bob.comment.version),
        (2, comment.version + 2)
    );
    assert_eq!(get(&store, comment.id).await, bob.comment);
    let missing = CommentId::from_parts(BASE_MILLIS, 1);
    assert_eq!(
        store
            .helpful_votes(ann.id, &[comment.id, other.id, missing, comment.id])
            .await
            .expect("votes"),
        vec![true, false, false, true],
        "one slot per id, in order, repeats included"
    );
    assert_eq!(
        store
            .helpful_votes(voter("carol").id, &[comment.id])
            .await
            .expect("votes"),
        vec![false]
    );
}

pub async fn taking_a_vote_back_uncounts_it_and_without_one_changes_nothing<S: CommentStore>(
    store: S,
) {
    let comment = one(&store, "VOTE-BACK").await;
    let ann = voter("ann");
    let nothing = store
        .mark_helpful(comment.id, &ann, false, NOW)
        .await
        .expect("taking back no vote");
    assert!(!nothing.changed);
    assert_eq!(nothing.comment, comment, "no vote, nothing written");
    store
        .mark_helpful(comment.id, &ann, true, NOW)
        .await
        .expect("a vote");
    let back = store
        .mark_helpful(comment.id, &ann, false, NOW + 1)
        .await
        .expect("taken back");
    assert!(back.changed);
    assert_eq!(
        (back.comment.helpful_count, back.comment.version),
        (0, comment.version + 2)
    );
    assert_eq!(
        store
            .helpful_votes(ann.id, &[comment.id])
            .await
            .expect("votes"),
        vec![false]
    );
    let twice = store
        .mark_helpful(comment.id, &ann, false, NOW + 2)
        .await
        .expect("taken back again");
    assert!(!twice.changed);
    assert_eq!(twice.comment.version, comment.version + 2);
    let again = store
        .mark_helpful(comment.id, &ann, true, NOW + 3)
        .await
        .expect("voted again");
    assert_eq!(
        again.comment.helpful_count, 1,
        "a vote taken back may be given again"
    );
}

pub async fn a_vote_moves_only_the_count_and_the_version<S: CommentStore>(store: S) {
    let comments = dataset("VOTE-PLACE", 12);
    store.put_batch(&comments).await.expect("put_batch");
    let target = &comments[5];
    let voted = store
        .mark_helpful(target.id, &voter("ann"), true, NOW)
        .await
        .expect("a vote")
        .comment;
    assert_eq!(
        voted,
        Comment {
            helpful_count: 1,
            version: target.version + 1,
            ..target.clone()
        },
        "a vote is no edit: body, rating and updatedAt stay"
    );
    let read = read_all(
        &store,
        product("VOTE-PLACE"),
        Order::NewestFirst,
        Bound::Unbounded,
        5,
    )
    .await;
    let mut expected = comments.clone();
    expected.sort_by_key(|c| std::cmp::Reverse(c.sort_key()));
    let place = expected
        .iter()
        .position(|c| c.id == target.id)
        .expect("in the data");
    expected[place] = voted;
    assert_eq!(read, expected, "the same place, with the count");
}

pub async fn an_author_may_not_mark_their_own_comment_and_the_refusal_writes_nothing<
    S: CommentStore,
>(
    store: S,
) {
    let comment = Comment {
        author_sub: Some("auth0|ann".to_owned()),
        ..dataset("VOTE-OWN", 3).remove(0)
    };
    store.create(&comment).await.expect("create");
    let ann = voter("auth0|ann");
    assert!(matches!(
        store.mark_helpful(comment.id, &ann, true, NOW).await,
        Err(StoreError::OwnComment(id)) if id == comment.id
    ));
    assert_eq!(get(&store, comment.id).await.version, 1, "nothing written");
    assert_eq!(
        store
            .helpful_votes(ann.id, &[comment.id])
            .await
            .expect("votes"),
        vec![false]
    );
    let unchanged = store
        .mark_helpful(comment.id, &ann, false, NOW)
        .await
        .expect("withdrawing nothing is no vote");
    assert!(!unchanged.changed);
    let others = [voter("auth0|bob"), Voter::anonymous("ip:192.0.2.7")];
    for other in &others {
        store
            .mark_helpful(comment.id, other, true, NOW)
            .await
            .expect("anyone else may");
    }
    assert_eq!(get(&store, comment.id).await.helpful_count, 2);
}

pub async fn a_vote_for_a_missing_comment_is_not_found<S: CommentStore>(store: S) {
    let comment = one(&store, "VOTE-GONE").await;
    let missing = CommentId::from_parts(BASE_MILLIS, 7);
    for helpful in [true, false] {
        assert!(matches!(
            store.mark_helpful(missing, &voter("ann"), helpful, NOW).await,
            Err(StoreError::NotFound(id)) if id == missing
        ));
    }
    store
        .mark_helpful(comment.id, &voter("ann"), true, NOW)
        .await
        .expect("a vote");
    store
        .delete(comment.id, &Access::Any)
        .await
        .expect("deleted");
    for helpful in [true, false] {
        assert!(matches!(
            store
                .mark_helpful(comment.id, &voter("ann"), helpful, NOW)
                .await,
            Err(StoreError::NotFound(_))
        ));
    }
    assert_eq!(
        store.get_many(&[comment.id]).await.expect("get_many"),
        vec![None],
        "a vote never brings a comment back"
    );
}

pub async fn an_edit_keeps_the_count_and_a_later_vote_keeps_the_edit<S: CommentStore>(store: S) {
    let comment = one(&store, "VOTE-EDIT").await;
    store
        .mark_helpful(comment.id, &voter("ann"), true, NOW)
        .await
        .expect("a vote");
    let patch = CommentPatch::new(Some("edited"), Some(1)).expect("patch");
    let edited = store
        .update(comment.id, &patch, NOW + 1, &Access::Any)
        .await
        .expect("an edit");
    assert_eq!(
        (edited.helpful_count, edited.version, edited.body.as_str()),
        (1, comment.version + 2, "edited")
    );
    let voted = store
        .mark_helpful(comment.id, &voter("bob"), true, NOW + 2)
        .await
        .expect("a vote after the edit")
        .comment;
    assert_eq!(
        voted,
        Comment {
            helpful_count: 2,
            version: edited.version + 1,
            ..edited
        }
    );
}

/// Twelve voters, each voting three times at once and one taking theirs back, with an edit
/// racing them: every call succeeds, and the count is the voters who stayed.
pub async fn racing_voters_count_once_each_and_a_racing_edit_still_applies<S: CommentStore>(
    store: S,
) {
    let comment = one(&store, "VOTE-RACE").await;
    let voters: Vec<Voter> = (0..12).map(|i| voter(&format!("voter-{i}"))).collect();
    let votes = voters.iter().flat_map(|v| [v, v, v]).map(|v| {
        let store = &store;
        async move { store.mark_helpful(comment.id, v, true, NOW).await }
    });
    let patch = CommentPatch::new(Some("edited while voted on"), None).expect("patch");
    let edit = store.update(comment.id, &patch, NOW, &Access::Any);
    let (votes, edited) = tokio::join!(futures::future::join_all(votes), edit);
    let edited = edited.expect("the edit is never failed by a vote");
    let changed = votes
        .into_iter()
        .map(|vote| vote.expect("every vote succeeds").changed)
        .filter(|changed| *changed)
        .count();
    assert_eq!(changed, 12, "each voter's vote was written once");
    store
        .mark_helpful(comment.id, &voters[0], false, NOW)
        .await
        .expect("taken back");
    let last = get(&store, comment.id).await;
    assert_eq!(last.helpful_count, 11);
    assert_eq!(last.body, "edited while voted on");
    assert_eq!(
        last.version,
        comment.version + 12 + 1 + 1,
        "each write its own version: 12 votes, the edit, the withdrawal"
    );
    assert!(edited.version > comment.version);
    let ids = vec![comment.id; voters.len()];
    let mut found = Vec::new();
    for v in &voters {
        found.push(store.helpful_votes(v.id, &ids[..1]).await.expect("votes")[0]);
    }
    assert_eq!(found.iter().filter(|v| **v).count(), 11);
}

pub async fn a_scan_reports_votes_beside_the_comments_and_never_as_comments<S: CommentStore>(
    store: S,
) {
    let comments = dataset("VOTE-SCAN", 30);
    store.put_batch(&comments).await.expect("put_batch");
    let mut expected: HashMap<CommentId, u64> = HashMap::new();
    for (i, comment) in comments.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        for v in 0..=(i % 4) {
            store
                .mark_helpful(comment.id, &voter(&format!("v{v}")), true, NOW)
                .await
                .expect("a vote");
        }
        expected.insert(comment.id, (i % 4) as u64 + 1);
    }
    let mut scanned = Vec::new();
    let mut votes: HashMap<CommentId, u64> = HashMap::new();
    for segment in 0..4 {
        let mut resume = None;
        loop {
            let page = store.scan(segment, 4, resume).await.expect("scan");
            scanned.extend(page.items);
            for (id, count) in page.votes {
                *votes.entry(id).or_default() += count;
            }
            match page.resume {
                Some(token) => resume = Some(token),
                None => break,
            }
        }
    }
    scanned.sort_by_key(|c| c.id);
    let mut ids: Vec<CommentId> = comments.iter().map(|c| c.id).collect();
    ids.sort();
    assert_eq!(
        scanned.iter().map(|c| c.id).collect::<Vec<_>>(),
        ids,
        "every comment once, and nothing else"
    );
    assert_eq!(votes, expected, "every vote once, under its comment");
    for comment in &scanned {
        assert_eq!(
            comment.helpful_count,
            expected.get(&comment.id).copied().unwrap_or(0)
        );
    }
}
