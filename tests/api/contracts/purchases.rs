//! Verified purchases, run against every backend (the embedded store, the durable one on
//! SQLite, DynamoDB Local): a verified comment is in its product's verified lists (by time, by
//! rating, by helpful votes) while it is published, and only then; an order verifies one comment
//! per product, ever (a second create with its hash writes nothing, even once the first is
//! deleted, or put back by an import); an edit keeps the verification and moves the comment between the verified lists of
//! its ratings; a verified comment reads back with its hash.

use std::ops::Bound;

use dynapage::domain::{
    Access, Comment, CommentPatch, ErasureMode, ModerationDecision, ModerationReason, Order,
    OrderHash, OrderKey, Rating, Verdict, Voter, verified_list,
};
use dynapage::privacy::{self, Erasure};
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
        a_verified_comment_is_in_its_products_verified_lists_while_published,
        an_order_verifies_one_comment_per_product_ever,
        an_edit_keeps_the_verification_and_moves_it_between_ratings,
        an_erasure_takes_verified_comments_out_and_keeps_the_claims,
    ],
}

const NOW: u64 = BASE_MILLIS + 90_000;

fn hash(order: &str, product: &str) -> OrderHash {
    let key = OrderKey::new(b"a test key of at least thirty-two bytes").expect("key");
    OrderHash::of(&key, order, &sku(product))
}

async fn get<S: CommentStore>(store: &S, comment: &Comment) -> Option<Comment> {
    store
        .get_many(&[comment.id])
        .await
        .expect("get_many")
        .remove(0)
}

/// Every comment of `partition`, oldest first, read three at a time.
async fn ids_in<S: CommentStore>(store: &S, partition: Partition) -> Vec<String> {
    read_all_from(store, partition, Order::OldestFirst, Bound::Unbounded, 3)
        .await
        .iter()
        .map(|c| c.id.to_string())
        .collect()
}

/// `comments` in their (time) order, as ids.
fn ordered(mut comments: Vec<&Comment>) -> Vec<String> {
    comments.sort_by_key(|c| c.sort_key());
    comments.iter().map(|c| c.id.to_string()).collect()
}

async fn a_verified_comment_is_in_its_products_verified_lists_while_published<S: CommentStore>(
    store: S,
) {
    let product = "VERIFIED_LISTS";
    let mut comments = dataset(product, 24);
    for (i, comment) in comments.iter_mut().enumerate() {
        if i % 3 != 0 {
            comment.purchase = Some(hash(&format!("order-{i}"), product));
        }
        store.create(comment).await.expect("create");
    }
    let verified: Vec<&Comment> = comments.iter().filter(|c| c.is_verified()).collect();
    assert_eq!(verified.len(), 16);
    let back = get(&store, verified[0]).await.expect("stored");
    assert_eq!(back.purchase, verified[0].purchase, "the hash reads back");
    assert_eq!(
        get(&store, &comments[0]).await.expect("stored").purchase,
        None
    );

    // A moderator hides one: out of the verified lists (they hold published comments only).
    let hidden = verified[1].clone();
    let verdict = Verdict::new(ModerationDecision::Hide, Some(ModerationReason::Spam), None)
        .expect("a verdict");
    store
        .moderate(hidden.id, &verdict, "mod", NOW)
        .await
        .expect("hide");
    let published: Vec<&Comment> = verified
        .iter()
        .copied()
        .filter(|c| c.id != hidden.id)
        .collect();
    let twin = verified_list(&sku(product));
    assert_eq!(
        ids_in(&store, Partition::Product(twin.clone())).await,
        ordered(published.clone())
    );
    for rating in Rating::ALL {
        let of_rating = published.iter().copied().filter(|c| c.rating == rating);
        assert_eq!(
            ids_in(&store, Partition::ProductRating(twin.clone(), rating)).await,
            ordered(of_rating.collect()),
            "verified, {rating:?}"
        );
    }
    // A vote puts one first in the verified list by helpful votes, as in the product's.
    let voted = published[5];
    store
        .mark_helpful(voted.id, &Voter::signed_in("auth0|fan"), true, NOW)
        .await
        .expect("vote");
    let by_helpful = read_all_from(
        &store,
        Partition::ProductHelpful(twin.clone()),
        Order::NewestFirst,
        Bound::Unbounded,
        4,
    )
    .await;
    assert_eq!(by_helpful.len(), published.len());
    assert_eq!(by_helpful[0].id, voted.id, "the voted comment comes first");
    let of_rating = read_all_from(
        &store,
        Partition::ProductRatingHelpful(twin, voted.rating),
        Order::NewestFirst,
        Bound::Unbounded,
        4,
    )
    .await;
    assert_eq!(of_rating[0].id, voted.id);
    assert!(
        of_rating
            .iter()
            .all(|c| c.is_verified() && c.rating == voted.rating)
    );
    // The product's own list still holds every published comment.
    assert_eq!(
        ids_in(&store, Partition::Product(sku(product))).await.len(),
        comments.len() - 1
    );
}

async fn an_order_verifies_one_comment_per_product_ever<S: CommentStore>(store: S) {
    let product = "ONE_PER_ORDER";
    let mut comments = dataset(product, 4);
    let order = hash("order-7", product);
    comments[0].purchase = Some(order.clone());
    store.create(&comments[0]).await.expect("the first");
    store
        .create(&comments[0])
        .await
        .expect("the very same create again is a retry that succeeds");
    comments[1].purchase = Some(order.clone());
    assert!(matches!(
        store.create(&comments[1]).await,
        Err(StoreError::PurchaseUsed)
    ));
    assert_eq!(get(&store, &comments[1]).await, None, "nothing written");
    // Another product, or another order, verifies.
    comments[2].purchase = Some(hash("order-8", product));
    store.create(&comments[2]).await.expect("another order");
    // Deleting the first does not free its order.
    store
        .delete(comments[0].id, &Access::Any)
        .await
        .expect("delete");
    comments[3].purchase = Some(order);
    assert!(matches!(
        store.create(&comments[3]).await,
        Err(StoreError::PurchaseUsed)
    ));
    assert_eq!(get(&store, &comments[3]).await, None);
    // A verified comment put back in bulk (`import`) brings its claim with it.
    let mut imported = dataset("ONE_PER_ORDER_IMPORTED", 2);
    imported[0].purchase = Some(hash("order-9", product));
    imported[1].purchase = Some(hash("order-9", product));
    store.put_batch(&imported[..1]).await.expect("put_batch");
    assert!(matches!(
        store.create(&imported[1]).await,
        Err(StoreError::PurchaseUsed)
    ));
    let twin = verified_list(&sku(product));
    assert_eq!(
        ids_in(&store, Partition::Product(twin)).await,
        vec![comments[2].id.to_string()]
    );
}

async fn an_edit_keeps_the_verification_and_moves_it_between_ratings<S: CommentStore>(store: S) {
    let product = "EDITED_VERIFIED";
    let mut comment = dataset(product, 1).remove(0);
    comment.rating = Rating::new(4).expect("rating");
    comment.purchase = Some(hash("order-1", product));
    store.create(&comment).await.expect("create");
    let patch = CommentPatch::new(Some("better than I thought"), Some(2)).expect("patch");
    let edited = store
        .update(comment.id, &patch, NOW, &Access::Any)
        .await
        .expect("edit");
    assert_eq!(
        edited.purchase, comment.purchase,
        "an edit keeps it verified"
    );
    let twin = verified_list(&sku(product));
    let at =
        |rating: i64| Partition::ProductRating(twin.clone(), Rating::new(rating).expect("rating"));
    assert!(
        ids_in(&store, at(4)).await.is_empty(),
        "out of its old rating"
    );
    assert_eq!(ids_in(&store, at(2)).await, vec![comment.id.to_string()]);
    assert_eq!(
        get(&store, &comment).await.expect("stored").purchase,
        comment.purchase
    );
}

async fn an_erasure_takes_verified_comments_out_and_keeps_the_claims<S: CommentStore>(store: S) {
    let product = "ERASED_VERIFIED";
    let mut comments = dataset(product, 3);
    for (i, comment) in comments.iter_mut().enumerate() {
        comment.author_sub = Some(if i < 2 { "auth0|eve" } else { "auth0|bob" }.to_owned());
        comment.purchase = Some(hash(&format!("order-{i}"), product));
        store.create(comment).await.expect("create");
    }
    let twin = Partition::Product(verified_list(&sku(product)));
    // Anonymized, her comments stay verified purchases, in the verified list.
    let erase = |mode| Erasure {
        sub: "auth0|eve".into(),
        mode,
        dry_run: false,
    };
    privacy::erase(&store, &erase(ErasureMode::Anonymize), |_| {})
        .await
        .expect("anonymize");
    assert_eq!(ids_in(&store, twin.clone()).await.len(), 3);
    let kept = get(&store, &comments[0]).await.expect("kept");
    assert_eq!(
        (kept.author_sub, kept.purchase),
        (None, comments[0].purchase.clone())
    );
    // Deleted (bob's, the one still his), it leaves the verified list; its order verifies no
    // other comment.
    let erasure = Erasure {
        sub: "auth0|bob".into(),
        mode: ErasureMode::Delete,
        dry_run: false,
    };
    privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("delete");
    assert_eq!(
        ids_in(&store, twin).await,
        ordered(vec![&comments[0], &comments[1]])
    );
    let mut again = dataset("ERASED_VERIFIED_AGAIN", 1).remove(0);
    again.sku = sku(product);
    again.purchase = comments[2].purchase.clone();
    assert!(matches!(
        store.create(&again).await,
        Err(StoreError::PurchaseUsed)
    ));
}
