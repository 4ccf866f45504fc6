//! `seed --hidden-percent`: the seeded hidden comments are in the table, in no public list and
//! in no count, and `reindex` and `verify` agree; an item whose GSI keys disagree with its
//! status is reported by `verify` and put right by `reindex` (DynamoDB Local and Redis).

use dynapage::store::CommentStore;
use serde_json::Value;

use crate::helpers::process::exit_code;
use crate::support::backends::Backends;

#[tokio::test]
async fn seeded_hidden_comments_are_stored_but_in_no_list_and_verify_is_clean() {
    let backends = Backends::new().await;
    let sku = "SEEDED_HIDDEN";
    let seeded = backends
        .run(
            "seed",
            &["--sku", sku, "--count", "300", "--hidden-percent", "10"],
        )
        .await;
    assert_eq!(exit_code(&seeded), Some(0), "{seeded:?}");
    for command in ["reindex", "verify"] {
        let ran = backends.run(command, &["--sku", sku]).await;
        assert_eq!(exit_code(&ran), Some(0), "{command}: {ran:?}");
    }
    let app = backends.serve(&[]).await;
    assert_eq!(
        app.total(sku, Value::Null).await,
        270,
        "ten of every hundred hidden"
    );
    app.stop().await.expect("clean stop");
}

/// An item whose GSI keys disagree with its status (written by another tool: a hidden comment
/// with a `sortKey` and no queue keys) would show in public pages and miss its queue: `verify`
/// reports it, and `reindex` puts it back in its places (out of the public GSIs, into its
/// queues'), after which `verify` is clean.
#[tokio::test]
async fn an_item_in_the_wrong_gsis_is_reported_by_verify_and_put_right_by_reindex() {
    use dynapage::domain::{CommentStatus, Order, Queue, QueueList};
    use dynapage::store::{KeyQuery, Partition};

    let backends = Backends::new().await;
    let mut comments = crate::support::data::dataset("MISPLACED", 3);
    comments[1].moderation.status = CommentStatus::Hidden;
    backends.store.put_batch(&comments).await.expect("put");
    let hidden = &comments[1];
    let key = hidden.sort_key().to_string();
    another_tools_write(
        &backends,
        hidden,
        "SET sortKey = :key REMOVE queueKey, skuStatus",
        Some(key),
    )
    .await;
    let read = |partition: Partition| {
        let store = &backends.store;
        async move {
            let query = KeyQuery {
                partition,
                order: Order::NewestFirst,
                from: std::ops::Bound::Unbounded,
                limit: 10,
            };
            let page = store.query(&query).await.expect("query");
            page.items.iter().map(|c| c.id).collect::<Vec<_>>()
        }
    };
    let product = || Partition::Product(hidden.sku.clone());
    let queue = || Partition::Queue(QueueList::new(Queue::Hidden, Some(hidden.sku.clone())));
    assert!(read(product()).await.contains(&hidden.id), "misplaced");
    assert!(read(queue()).await.is_empty());

    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&reindexed), Some(0), "{reindexed:?}");
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{verified:?}");
    assert!(
        !read(product()).await.contains(&hidden.id),
        "out of the public GSI"
    );
    assert_eq!(read(queue()).await, vec![hidden.id], "in its queue");
}

/// An item written before the authors' lists (an `authorSub`, no `authorKey` or
/// `authorStatus`) is in no author's GSI: `verify` reports it, and `reindex` writes its keys, so
/// the author's lists in the table and in the index hold it.
#[tokio::test]
async fn reindex_puts_an_item_from_before_the_authors_lists_in_them() {
    use dynapage::domain::{AuthorList, Order};
    use dynapage::store::{KeyQuery, Partition};

    let backends = Backends::new().await;
    let mut comments = crate::support::data::dataset("AUTHORED-OLD", 3);
    for comment in &mut comments {
        comment.author_sub = Some("auth0|old".to_owned());
    }
    backends.store.put_batch(&comments).await.expect("put");
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&reindexed), Some(0), "{reindexed:?}");
    let old = &comments[1];
    another_tools_write(&backends, old, "REMOVE authorKey, authorStatus", None).await;
    let read = |status| {
        let store = &backends.store;
        async move {
            let query = KeyQuery {
                partition: Partition::Author(AuthorList::new("auth0|old", status)),
                order: Order::NewestFirst,
                from: std::ops::Bound::Unbounded,
                limit: 10,
            };
            let page = store.query(&query).await.expect("query");
            page.items.iter().map(|c| c.id).collect::<Vec<_>>()
        }
    };
    assert!(
        !read(None).await.contains(&old.id),
        "not in the author's GSI"
    );
    let drifted = backends.run("verify", &[]).await;
    assert_ne!(exit_code(&drifted), Some(0), "{drifted:?}");
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&reindexed), Some(0), "{reindexed:?}");
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{verified:?}");
    let mut ids: Vec<_> = comments.iter().map(|c| c.id).collect();
    ids.sort_by(|a, b| b.cmp(a));
    assert_eq!(read(None).await, ids, "all three, newest first");
    let published = Some(dynapage::domain::CommentStatus::Published);
    assert_eq!(read(published).await, ids);
}

/// `verify` alone reports an item in the wrong GSIs.
#[tokio::test]
async fn verify_reports_an_item_in_the_wrong_gsis() {
    use dynapage::domain::CommentStatus;

    let backends = Backends::new().await;
    let mut comments = crate::support::data::dataset("MISPLACED-V", 2);
    comments[0].moderation.status = CommentStatus::Pending;
    backends.store.put_batch(&comments).await.expect("put");
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&reindexed), Some(0), "{reindexed:?}");
    let clean = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&clean), Some(0), "{clean:?}");
    another_tools_write(&backends, &comments[0], "REMOVE queueKey", None).await;
    let drifted = backends.run("verify", &[]).await;
    assert_ne!(exit_code(&drifted), Some(0), "{drifted:?}");
}

/// An `UpdateItem` of `comment`'s item behind the store's back (another tool's write), with
/// `:key` bound to `key` when given.
async fn another_tools_write(
    backends: &Backends,
    comment: &dynapage::domain::Comment,
    expression: &str,
    key: Option<String>,
) {
    use aws_sdk_dynamodb::types::AttributeValue;

    let client = crate::support::dynamodb_local::sdk_client(
        &crate::support::dynamodb_local::endpoint().await,
    );
    let mut update = client
        .update_item()
        .table_name(backends.store.table())
        .key("id", AttributeValue::S(comment.id.to_string()))
        .update_expression(expression);
    if let Some(key) = key {
        update = update.expression_attribute_values(":key", AttributeValue::S(key));
    }
    update.send().await.expect("another tool's write");
}
