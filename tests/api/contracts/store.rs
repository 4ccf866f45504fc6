//! The `CommentStore` contract: one list of behaviours, written once as generic functions and run
//! against every backend (the embedded store, the embedded store cut to 3 items per response, the
//! durable embedded store on SQLite, and DynamoDB Local) with `contract_suite!`, so the engine can
//! trust any of them alike. DynamoDB-only checks are in `backends::dynamodb_store`.
//!
//! Every dataset has timestamp ties (about three comments per millisecond), because the order
//! invariant (`docs/architecture.md`) is only tested where ties exist.

use std::ops::Bound;

use dynapage::domain::{
    Access, Comment, CommentId, CommentPatch, Order, Position, SortKey, Voter, helpful_group,
};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, KeyQuery, Partition, StoreError};

use crate::support::data::{
    BASE_MILLIS, dataset, has_ties, keys_of, product, rating, read_all, read_all_from, sku,
    sorted_keys,
};
use crate::support::dynamodb_local::dynamo_store;
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        memory_three_items_per_response => async {
            MemoryStore::new().with_max_items_per_response(3)
        },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [
        newest_first_orders_ties_by_id,
        oldest_first_orders_ties_by_id,
        every_bound_admits_exactly_the_keys_on_its_side,
        a_bound_on_a_deleted_comment_still_positions_the_read,
        limit_and_last_evaluated_visit_every_item_exactly_once,
        a_rating_partition_holds_exactly_the_comments_of_that_rating,
        an_update_that_changes_the_rating_moves_the_comment_between_rating_partitions,
        an_update_changes_the_body_and_keeps_the_position,
        concurrent_updates_all_apply_and_leave_one_consistent_comment,
        get_many_answers_in_request_order_with_none_for_missing_ids,
        create_refuses_an_existing_id_and_accepts_its_own_retry,
        create_writes_version_1_and_each_update_the_next,
        update_of_a_missing_comment_is_not_found,
        delete_of_a_missing_comment_is_not_found,
        only_its_author_may_change_a_comment_and_a_refusal_writes_nothing,
        delete_returns_the_old_comment_and_removes_it_from_every_partition,
        put_batch_then_a_four_segment_scan_visits_each_comment_once,
        put_batch_with_a_repeated_id_keeps_the_last_comment,
        an_unknown_partition_reads_empty,
        the_partitions_by_helpful_votes_order_by_count_then_time_and_follow_votes,
    ],
}

// ---------------------------------------------------------------------------------------------
// Data.

async fn stored<S: CommentStore>(store: &S, sku_name: &str, count: usize) -> Vec<Comment> {
    let comments = dataset(sku_name, count);
    store.put_batch(&comments).await.expect("put_batch");
    comments
}

async fn read_keys<S: CommentStore>(
    store: &S,
    partition: Partition,
    order: Order,
    from: Bound<SortKey>,
) -> Vec<SortKey> {
    keys_of(&read_all(store, partition, order, from, 50).await)
}

// ---------------------------------------------------------------------------------------------
// The checks.

pub async fn newest_first_orders_ties_by_id<S: CommentStore>(store: S) {
    let comments = stored(&store, "TIES", 40).await;
    assert!(has_ties(&comments));
    let read = read_all(
        &store,
        product("TIES"),
        Order::NewestFirst,
        Bound::Unbounded,
        100,
    )
    .await;
    assert_eq!(keys_of(&read), sorted_keys(&comments, Order::NewestFirst));
    let mut expected = comments.clone();
    expected.sort_by_key(|c| std::cmp::Reverse(c.sort_key()));
    assert_eq!(read, expected, "whole comments come back unchanged");
}

pub async fn oldest_first_orders_ties_by_id<S: CommentStore>(store: S) {
    let comments = stored(&store, "TIES", 40).await;
    let read = read_keys(
        &store,
        product("TIES"),
        Order::OldestFirst,
        Bound::Unbounded,
    )
    .await;
    assert_eq!(read, sorted_keys(&comments, Order::OldestFirst));
}

pub async fn every_bound_admits_exactly_the_keys_on_its_side<S: CommentStore>(store: S) {
    let comments = stored(&store, "BOUNDS", 30).await;
    let ascending = sorted_keys(&comments, Order::OldestFirst);
    let before_all = SortKey::new(BASE_MILLIS - 1, CommentId::from_parts(0, 0)).expect("key");
    let after_all = SortKey::new(BASE_MILLIS + 1_000, CommentId::from_parts(0, 0)).expect("key");
    // First, last, and a key in the middle of a tie (same millis on both sides).
    let middle_of_a_tie = ascending
        .windows(3)
        .find(|w| w[0].millis() == w[2].millis())
        .expect("the dataset has three comments in one millisecond")[1];
    let pivots = [
        ascending[0],
        middle_of_a_tie,
        ascending[ascending.len() - 1],
        before_all,
        after_all,
    ];
    for order in [Order::NewestFirst, Order::OldestFirst] {
        for pivot in pivots {
            for from in [
                Bound::Included(pivot),
                Bound::Excluded(pivot),
                Bound::Unbounded,
            ] {
                let query = KeyQuery {
                    partition: product("BOUNDS"),
                    order,
                    from: from.map(Position::flat),
                    limit: 100,
                };
                let expected: Vec<SortKey> = sorted_keys(&comments, order)
                    .into_iter()
                    .filter(|k| query.admits(&Position::flat(*k)))
                    .collect();
                let read = read_keys(&store, product("BOUNDS"), order, from).await;
                assert_eq!(read, expected, "{order:?} from {from:?}");
            }
        }
    }
}

pub async fn a_bound_on_a_deleted_comment_still_positions_the_read<S: CommentStore>(store: S) {
    let comments = stored(&store, "DELETED", 24).await;
    let gone = comments[10].clone();
    store.delete(gone.id, &Access::Any).await.expect("delete");
    let remaining: Vec<&Comment> = comments.iter().filter(|c| c.id != gone.id).collect();
    for order in [Order::NewestFirst, Order::OldestFirst] {
        for from in [
            Bound::Included(gone.sort_key()),
            Bound::Excluded(gone.sort_key()),
        ] {
            let query = KeyQuery {
                partition: product("DELETED"),
                order,
                from: from.map(Position::flat),
                limit: 100,
            };
            let expected: Vec<SortKey> = sorted_keys(remaining.iter().copied(), order)
                .into_iter()
                .filter(|k| query.admits(&Position::flat(*k)))
                .collect();
            assert!(!expected.is_empty());
            assert_eq!(
                read_keys(&store, product("DELETED"), order, from).await,
                expected,
                "{order:?} {from:?}"
            );
        }
    }
}

pub async fn limit_and_last_evaluated_visit_every_item_exactly_once<S: CommentStore>(store: S) {
    let comments = stored(&store, "PAGES", 50).await;
    for order in [Order::NewestFirst, Order::OldestFirst] {
        for limit in [1, 7, 50, 51] {
            let read = read_all(&store, product("PAGES"), order, Bound::Unbounded, limit).await;
            assert_eq!(
                keys_of(&read),
                sorted_keys(&comments, order),
                "{order:?} limit {limit}"
            );
        }
    }
    // A page cut by the limit says so, and says where it stopped.
    let query = KeyQuery {
        partition: product("PAGES"),
        order: Order::NewestFirst,
        from: Bound::Unbounded,
        limit: 2,
    };
    let page = store.query(&query).await.expect("query");
    assert!(!page.items.is_empty() && page.items.len() <= 2);
    assert_eq!(
        page.last_evaluated,
        page.items.last().map(|c| Position::flat(c.sort_key()))
    );
}

pub async fn a_rating_partition_holds_exactly_the_comments_of_that_rating<S: CommentStore>(
    store: S,
) {
    let comments = stored(&store, "RATED", 60).await;
    stored(&store, "OTHER", 10).await;
    for value in 1..=5 {
        let of_rating: Vec<&Comment> = comments
            .iter()
            .filter(|c| c.rating.get() == value)
            .collect();
        assert!(!of_rating.is_empty(), "the dataset has every rating");
        let partition = Partition::ProductRating(sku("RATED"), rating(i64::from(value)));
        for order in [Order::NewestFirst, Order::OldestFirst] {
            let read = read_keys(&store, partition.clone(), order, Bound::Unbounded).await;
            assert_eq!(
                read,
                sorted_keys(of_rating.iter().copied(), order),
                "rating {value} {order:?}"
            );
        }
    }
}

pub async fn an_update_that_changes_the_rating_moves_the_comment_between_rating_partitions<
    S: CommentStore,
>(
    store: S,
) {
    let comments = stored(&store, "MOVE", 20).await;
    let target = comments[7].clone();
    let new_rating = if target.rating.get() == 5 {
        rating(1)
    } else {
        rating(i64::from(target.rating.get()) + 1)
    };
    let patch = CommentPatch::new(None, Some(i64::from(new_rating.get()))).expect("patch");
    let updated = store
        .update(target.id, &patch, BASE_MILLIS + 5_000, &Access::Any)
        .await
        .expect("update");
    assert_eq!(updated.rating, new_rating);

    let old_partition = Partition::ProductRating(sku("MOVE"), target.rating);
    let new_partition = Partition::ProductRating(sku("MOVE"), new_rating);
    let in_old = read_all(
        &store,
        old_partition,
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    let in_new = read_all(
        &store,
        new_partition,
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    assert!(
        !in_old.iter().any(|c| c.id == target.id),
        "left its old rating partition"
    );
    assert_eq!(
        in_new
            .iter()
            .filter(|c| c.id == target.id)
            .collect::<Vec<_>>(),
        vec![&updated]
    );
    let all = read_all(
        &store,
        product("MOVE"),
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    assert_eq!(
        all.len(),
        comments.len(),
        "still once in the product partition"
    );
}

pub async fn an_update_changes_the_body_and_keeps_the_position<S: CommentStore>(store: S) {
    let comments = stored(&store, "EDIT", 12).await;
    let target = comments[4].clone();
    let patch = CommentPatch::new(Some("edited body"), None).expect("patch");
    let first = store
        .update(target.id, &patch, BASE_MILLIS + 9_000, &Access::Any)
        .await
        .expect("update");
    assert_eq!(
        first,
        Comment {
            body: "edited body".to_owned(),
            updated_at_ms: Some(BASE_MILLIS + 9_000),
            version: 2,
            ..target.clone()
        }
    );
    // A second edit of an already edited comment (the stored `updatedAt` is now set).
    let patch = CommentPatch::new(Some("edited again"), Some(2)).expect("patch");
    let second = store
        .update(target.id, &patch, BASE_MILLIS + 9_500, &Access::Any)
        .await
        .expect("second update");
    assert_eq!(
        (
            second.body.as_str(),
            second.rating,
            second.updated_at_ms,
            second.version
        ),
        ("edited again", rating(2), Some(BASE_MILLIS + 9_500), 3)
    );
    assert_eq!(second.sort_key(), target.sort_key());
    assert_eq!(
        store.get_many(&[target.id]).await.expect("get_many"),
        vec![Some(second.clone())]
    );
    let read = read_all(
        &store,
        product("EDIT"),
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    assert_eq!(keys_of(&read), sorted_keys(&comments, Order::NewestFirst));
    assert!(read.contains(&second));
}

/// Racing edits of one comment: every call succeeds (a lost race is retried, not reported),
/// and the stored comment is one of the answers, in the rating partition of its rating only.
pub async fn concurrent_updates_all_apply_and_leave_one_consistent_comment<S: CommentStore>(
    store: S,
) {
    let comments = stored(&store, "RACE", 6).await;
    let target = comments[2].clone();
    let edits = (1..=4).map(|value| {
        let patch = CommentPatch::new(Some(&format!("edit {value}")), Some(value)).expect("patch");
        let store = &store;
        async move {
            store
                .update(
                    target.id,
                    &patch,
                    BASE_MILLIS + 10_000 + value as u64,
                    &Access::Any,
                )
                .await
        }
    });
    let answers: Vec<Comment> = futures::future::join_all(edits)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every racing update succeeds");
    let [Some(last)] =
        <[Option<Comment>; 1]>::try_from(store.get_many(&[target.id]).await.expect("get_many"))
            .expect("one slot")
    else {
        panic!("the comment still exists");
    };
    assert!(
        answers.contains(&last),
        "the stored comment is one of the answers"
    );
    let mut versions: Vec<u64> = answers.iter().map(|c| c.version).collect();
    versions.sort_unstable();
    assert_eq!(
        versions,
        vec![2, 3, 4, 5],
        "each edit wrote its own version, none over another"
    );
    assert_eq!(last.version, 5);
    for value in 1..=5 {
        let partition = Partition::ProductRating(sku("RACE"), rating(value));
        let holds = read_all(&store, partition, Order::NewestFirst, Bound::Unbounded, 10)
            .await
            .iter()
            .any(|c| c.id == target.id);
        assert_eq!(
            holds,
            last.rating.get() == value as u8,
            "rating partition {value}"
        );
    }
}

pub async fn get_many_answers_in_request_order_with_none_for_missing_ids<S: CommentStore>(
    store: S,
) {
    // More than one BatchGetItem chunk (100 keys), asked in an order of their own.
    let comments = stored(&store, "MANY", 130).await;
    let missing = CommentId::from_parts(BASE_MILLIS, 7);
    let mut ids: Vec<CommentId> = comments.iter().rev().map(|c| c.id).collect();
    ids.insert(3, missing);
    ids.push(comments[0].id); // asked twice
    let answer = store.get_many(&ids).await.expect("get_many");
    assert_eq!(answer.len(), ids.len());
    for (id, slot) in ids.iter().zip(&answer) {
        match comments.iter().find(|c| c.id == *id) {
            Some(comment) => assert_eq!(slot.as_ref(), Some(comment)),
            None => assert_eq!(slot, &None),
        }
    }
    assert_eq!(
        store.get_many(&[]).await.expect("empty get_many"),
        Vec::<Option<Comment>>::new()
    );
}

pub async fn create_refuses_an_existing_id_and_accepts_its_own_retry<S: CommentStore>(store: S) {
    let original = dataset("CREATE", 1).remove(0);
    store.create(&original).await.expect("first create");
    let impostor = Comment {
        body: "overwrite attempt".to_owned(),
        ..original.clone()
    };
    match store.create(&impostor).await {
        Err(StoreError::AlreadyExists(id)) => assert_eq!(id, original.id),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    // The same comment again is a retry whose first attempt was written: accepted, no change.
    store
        .create(&original)
        .await
        .expect("creating the same comment again is accepted");
    assert_eq!(
        store.get_many(&[original.id]).await.expect("get_many"),
        vec![Some(original.clone())]
    );
    let read = read_all(
        &store,
        product("CREATE"),
        Order::NewestFirst,
        Bound::Unbounded,
        10,
    )
    .await;
    assert_eq!(read, vec![original]);
}

pub async fn create_writes_version_1_and_each_update_the_next<S: CommentStore>(store: S) {
    let claimed = Comment {
        version: 7,
        ..dataset("VERSIONS", 1).remove(0)
    };
    store.create(&claimed).await.expect("create");
    let created = Comment {
        version: 1,
        ..claimed.clone()
    };
    assert_eq!(
        store.get_many(&[claimed.id]).await.expect("get_many"),
        vec![Some(created.clone())],
        "a new comment is at version 1, whatever the caller says"
    );
    let mut expected = created;
    for (n, value) in (2..=4).zip([3, 4, 5]) {
        let patch = CommentPatch::new(None, Some(value)).expect("patch");
        let updated = store
            .update(claimed.id, &patch, BASE_MILLIS + n, &Access::Any)
            .await
            .expect("update");
        expected = Comment {
            rating: rating(value),
            updated_at_ms: Some(BASE_MILLIS + n),
            version: n,
            ..expected
        };
        assert_eq!(updated, expected);
    }
    let deleted = store
        .delete(claimed.id, &Access::Any)
        .await
        .expect("delete");
    assert_eq!(
        deleted.version, 4,
        "a deletion returns the version it deleted"
    );
}

pub async fn update_of_a_missing_comment_is_not_found<S: CommentStore>(store: S) {
    stored(&store, "MISSING", 3).await;
    let id = CommentId::from_parts(BASE_MILLIS, 99);
    let patch = CommentPatch::new(Some("x"), None).expect("patch");
    match store.update(id, &patch, BASE_MILLIS, &Access::Any).await {
        Err(StoreError::NotFound(missing)) => assert_eq!(missing, id),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(
        store.get_many(&[id]).await.expect("get_many"),
        vec![None],
        "nothing was written"
    );
}

pub async fn delete_of_a_missing_comment_is_not_found<S: CommentStore>(store: S) {
    let id = CommentId::from_parts(BASE_MILLIS, 98);
    match store.delete(id, &Access::Any).await {
        Err(StoreError::NotFound(missing)) => assert_eq!(missing, id),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

pub async fn only_its_author_may_change_a_comment_and_a_refusal_writes_nothing<S: CommentStore>(
    store: S,
) {
    let mut comments = dataset("OWNED", 3);
    comments[0].author_sub = Some("alice".into());
    comments[1].author_sub = Some("bob".into());
    // comments[2] has no author sub: written with --auth off.
    store.put_batch(&comments).await.expect("put_batch");
    let ids: Vec<CommentId> = comments.iter().map(|c| c.id).collect();
    let alice = Access::Author("alice".into());
    let patch = CommentPatch::new(Some("edited"), None).expect("patch");
    for target in [&comments[1], &comments[2]] {
        assert!(
            matches!(
                store.update(target.id, &patch, BASE_MILLIS + 1, &alice).await,
                Err(StoreError::Forbidden(id)) if id == target.id
            ),
            "alice may not edit {:?}'s comment",
            target.author_sub
        );
        assert!(
            matches!(store.delete(target.id, &alice).await, Err(StoreError::Forbidden(id)) if id == target.id),
            "alice may not delete {:?}'s comment",
            target.author_sub
        );
    }
    assert_eq!(
        store.get_many(&ids).await.expect("get_many"),
        comments.iter().cloned().map(Some).collect::<Vec<_>>(),
        "the refusals wrote nothing"
    );
    let missing = CommentId::from_parts(BASE_MILLIS, 97);
    assert!(
        matches!(store.delete(missing, &alice).await, Err(StoreError::NotFound(id)) if id == missing),
        "a missing comment is not found, not forbidden"
    );
    let edited = store
        .update(ids[0], &patch, BASE_MILLIS + 2, &alice)
        .await
        .expect("alice edits her own comment");
    assert_eq!(
        (edited.body.as_str(), edited.author_sub.as_deref()),
        ("edited", Some("alice"))
    );
    assert_eq!(
        store
            .delete(ids[0], &alice)
            .await
            .expect("alice deletes it")
            .id,
        ids[0]
    );
    // A moderator's access covers the others.
    store
        .update(ids[1], &patch, BASE_MILLIS + 3, &Access::Any)
        .await
        .expect("a moderator edits bob's comment");
    store
        .delete(ids[2], &Access::Any)
        .await
        .expect("a moderator deletes an unowned comment");
}

pub async fn delete_returns_the_old_comment_and_removes_it_from_every_partition<S: CommentStore>(
    store: S,
) {
    let comments = stored(&store, "DELETE", 9).await;
    let target = comments[5].clone();
    assert_eq!(
        store.delete(target.id, &Access::Any).await.expect("delete"),
        target
    );
    assert_eq!(
        store.get_many(&[target.id]).await.expect("get_many"),
        vec![None]
    );
    let all = read_all(
        &store,
        product("DELETE"),
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    assert_eq!(all.len(), 8);
    assert!(!all.iter().any(|c| c.id == target.id));
    let rated = Partition::ProductRating(sku("DELETE"), target.rating);
    assert!(
        !read_all(&store, rated, Order::OldestFirst, Bound::Unbounded, 50)
            .await
            .iter()
            .any(|c| c.id == target.id)
    );
    assert!(
        matches!(
            store.delete(target.id, &Access::Any).await,
            Err(StoreError::NotFound(_))
        ),
        "a second delete finds nothing"
    );
}

pub async fn put_batch_then_a_four_segment_scan_visits_each_comment_once<S: CommentStore>(
    store: S,
) {
    let mut comments = stored(&store, "SCAN_A", 200).await;
    comments.extend(stored(&store, "SCAN_B", 110).await);
    let mut seen: Vec<Comment> = Vec::new();
    for segment in 0..4 {
        let mut resume = None;
        for _ in 0..1_000 {
            let page = store.scan(segment, 4, resume).await.expect("scan");
            seen.extend(page.items);
            resume = page.resume;
            if resume.is_none() {
                break;
            }
        }
        assert!(resume.is_none(), "segment {segment} ended");
    }
    assert_eq!(seen.len(), comments.len(), "each comment once");
    seen.sort_by_key(|c| c.id);
    comments.sort_by_key(|c| c.id);
    assert_eq!(seen, comments);
}

pub async fn put_batch_with_a_repeated_id_keeps_the_last_comment<S: CommentStore>(store: S) {
    let first = dataset("REPEAT", 1).remove(0);
    let second = Comment {
        body: "second version".to_owned(),
        rating: rating(5),
        ..first.clone()
    };
    store
        .put_batch(&[first.clone(), second.clone()])
        .await
        .expect("put_batch");
    assert_eq!(
        store.get_many(&[first.id]).await.expect("get_many"),
        vec![Some(second.clone())]
    );
    let read = read_all(
        &store,
        product("REPEAT"),
        Order::NewestFirst,
        Bound::Unbounded,
        10,
    )
    .await;
    assert_eq!(read, vec![second]);
}

pub async fn an_unknown_partition_reads_empty<S: CommentStore>(store: S) {
    stored(&store, "KNOWN", 5).await;
    for partition in [
        product("UNKNOWN"),
        Partition::ProductRating(sku("UNKNOWN"), rating(3)),
    ] {
        for order in [Order::NewestFirst, Order::OldestFirst] {
            let query = KeyQuery {
                partition: partition.clone(),
                order,
                from: Bound::Unbounded,
                limit: 10,
            };
            let page = store.query(&query).await.expect("query");
            assert!(
                page.items.is_empty() && page.last_evaluated.is_none(),
                "{partition:?} {order:?}"
            );
        }
    }
}

/// Votes (several voters on one comment, a vote taken back) move comments in the partitions by
/// helpful votes: each reads by count, then time, in both orders, cut by any limit and resumed
/// from its last evaluated position (or from a position between counts), per product and per
/// rating; the partitions by time are unchanged.
pub async fn the_partitions_by_helpful_votes_order_by_count_then_time_and_follow_votes<
    S: CommentStore,
>(
    store: S,
) {
    let name = "HELPFUL-ORDER";
    let comments = stored(&store, name, 30).await;
    let position = |c: &Comment| Position {
        group: helpful_group(c.helpful_count),
        key: c.sort_key(),
    };
    let sku = sku(name);
    // Before any vote, the partitions by helpful votes list the comments by time (the
    // embedded store answers them from its partitions by time until a first vote).
    for (partition, only) in [
        (Partition::ProductHelpful(sku.clone()), None),
        (
            Partition::ProductRatingHelpful(sku.clone(), rating(5)),
            Some(rating(5)),
        ),
    ] {
        let mut by_time: Vec<Position> = comments
            .iter()
            .filter(|c| only.is_none_or(|r| c.rating == r))
            .map(|c| Position::flat(c.sort_key()))
            .collect();
        by_time.sort();
        by_time.reverse();
        let read = read_all_from(
            &store,
            partition.clone(),
            Order::NewestFirst,
            Bound::Unbounded,
            4,
        )
        .await;
        let got: Vec<Position> = read.iter().map(position).collect();
        assert_eq!(got, by_time, "{partition:?} before any vote");
    }
    let voters: Vec<Voter> = (0..3)
        .map(|i| Voter::signed_in(&format!("voter-{i}")))
        .collect();
    for (i, comment) in comments.iter().enumerate() {
        for voter in voters.iter().take(i % 4) {
            store
                .mark_helpful(comment.id, voter, true, BASE_MILLIS)
                .await
                .expect("vote");
        }
        if i % 8 == 3 {
            store
                .mark_helpful(comment.id, &voters[0], false, BASE_MILLIS)
                .await
                .expect("take back");
        }
    }
    let now = store
        .get_many(&comments.iter().map(|c| c.id).collect::<Vec<_>>())
        .await
        .expect("get_many");
    let now: Vec<Comment> = now.into_iter().map(|c| c.expect("present")).collect();
    assert!(now.iter().any(|c| c.helpful_count == 3));
    assert!(now.iter().any(|c| c.helpful_count == 0));
    let mut partitions = vec![(Partition::ProductHelpful(sku.clone()), None)];
    for r in [rating(2), rating(5)] {
        partitions.push((Partition::ProductRatingHelpful(sku.clone(), r), Some(r)));
    }
    for (partition, only) in partitions {
        let mut expected: Vec<Position> = now
            .iter()
            .filter(|c| only.is_none_or(|r| c.rating == r))
            .map(position)
            .collect();
        expected.sort();
        for order in [Order::OldestFirst, Order::NewestFirst] {
            if order == Order::NewestFirst {
                expected.reverse();
            }
            for limit in [1, 4, 50] {
                let read =
                    read_all_from(&store, partition.clone(), order, Bound::Unbounded, limit).await;
                let got: Vec<Position> = read.iter().map(position).collect();
                assert_eq!(got, expected, "{partition:?} {order:?} limit {limit}");
            }
            // From a position between counts: exactly the items beyond it.
            let between = Position {
                group: 1,
                key: SortKey::new(BASE_MILLIS + 5, CommentId::from_parts(BASE_MILLIS + 5, 0))
                    .expect("a key"),
            };
            let query = KeyQuery {
                partition: partition.clone(),
                order,
                from: Bound::Excluded(between),
                limit: 50,
            };
            let beyond: Vec<Position> = expected
                .iter()
                .copied()
                .filter(|p| query.admits(p))
                .collect();
            let read = read_all_from(
                &store,
                partition.clone(),
                order,
                Bound::Excluded(between),
                3,
            )
            .await;
            assert_eq!(read.iter().map(position).collect::<Vec<_>>(), beyond);
        }
    }
    // The list by time is the same comments in time order, votes or not.
    let read = read_all(
        &store,
        product(name),
        Order::NewestFirst,
        Bound::Unbounded,
        50,
    )
    .await;
    assert_eq!(keys_of(&read), sorted_keys(&comments, Order::NewestFirst));
}
