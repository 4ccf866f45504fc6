//! The DynamoDB adapter beyond the shared `CommentStore` contract (`contracts::store`): what only
//! a real DynamoDB does (the 1 MB cut, table creation, a missing table, an unreachable
//! endpoint), on DynamoDB Local.

use std::ops::Bound;

use dynapage::domain::{Access, Comment, CommentId, Order};
use dynapage::store::dynamo::{DynamoConfig, DynamoStore};
use dynapage::store::{CommentStore, KeyQuery, StoreError};

use crate::support::data::{dataset, keys_of, product, read_all, sorted_keys};
use crate::support::dynamodb_local::{dynamo_store, endpoint};

/// DynamoDB stops a query at 1 MB whatever the `Limit`; the adapter must report that as a
/// short page with `last_evaluated`, never as the end of the partition.
#[tokio::test]
async fn a_query_is_cut_at_one_megabyte_and_the_rest_follows_from_last_evaluated() {
    let store = dynamo_store().await;
    let body = "x".repeat(2_000);
    let comments: Vec<Comment> = dataset("HEAVY", 600)
        .into_iter()
        .map(|c| Comment {
            body: body.clone(),
            ..c
        })
        .collect();
    store.put_batch(&comments).await.expect("put_batch");
    let query = KeyQuery {
        partition: product("HEAVY"),
        order: Order::NewestFirst,
        from: Bound::Unbounded,
        limit: 700,
    };
    let first = store.query(&query).await.expect("query");
    assert!(
        first.items.len() < comments.len(),
        "the first page is cut short ({} items)",
        first.items.len()
    );
    assert!(first.last_evaluated.is_some(), "and says where it stopped");
    let all = read_all(
        &store,
        product("HEAVY"),
        Order::NewestFirst,
        Bound::Unbounded,
        700,
    )
    .await;
    assert_eq!(keys_of(&all), sorted_keys(&comments, Order::NewestFirst));
}

#[tokio::test]
async fn create_tables_is_idempotent_and_enables_the_stream() {
    let store = dynamo_store().await;
    store
        .create_tables()
        .await
        .expect("creating an existing table is a no-op");
    store.check_table().await.expect("the table has both GSIs");
    store.ping().await.expect("ping");
    let arn = store.stream_arn().await.expect("describe");
    assert!(
        arn.is_some_and(|arn| arn.contains(store.table())),
        "the table has a stream"
    );
}

#[tokio::test]
async fn a_missing_table_is_reported_at_start_up_and_on_every_call() {
    let table = format!("missing_{}", CommentId::new(0));
    let config = DynamoConfig {
        endpoint: Some(endpoint().await),
        table: table.clone(),
        region: None,
    };
    let store = DynamoStore::connect(config).await.expect("client");
    let is_missing = |result: Result<(), StoreError>| matches!(result, Err(StoreError::MissingTable { table: t }) if t == table);
    assert!(is_missing(store.check_table().await));
    assert!(is_missing(store.ping().await));
    let query = KeyQuery {
        partition: product("ANY"),
        order: Order::NewestFirst,
        from: Bound::Unbounded,
        limit: 5,
    };
    assert!(is_missing(store.query(&query).await.map(|_| ())));
    store
        .delete_table()
        .await
        .expect("deleting a missing table is a no-op");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_reported_as_unavailable() {
    // Port 0 refuses every connection. A free port found earlier does not: beside the parallel
    // suite another test's server can take it between two calls (a CI run once saw it).
    let config = DynamoConfig {
        endpoint: Some("http://127.0.0.1:0".to_owned()),
        table: "comments".to_owned(),
        region: None,
    };
    let store = DynamoStore::connect(config).await.expect("client");
    let ping = store.ping().await;
    assert!(matches!(ping, Err(StoreError::Unavailable(_))), "{ping:?}");
    let read = store.get_many(&[CommentId::new(0)]).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
}

/// Items written before versions existed have no `version` attribute: they read as version 1,
/// and the first edit makes them version 2 under the same optimistic check.
#[tokio::test]
async fn an_item_without_a_version_reads_as_version_1_and_its_edit_writes_version_2() {
    use aws_sdk_dynamodb::types::AttributeValue::{N, S};
    use dynapage::domain::CommentPatch;

    let store = dynamo_store().await;
    let comment = dataset("LEGACY", 1).remove(0);
    let item = std::collections::HashMap::from([
        ("id".to_owned(), S(comment.id.to_string())),
        ("sku".to_owned(), S(comment.sku.to_string())),
        ("sortKey".to_owned(), S(comment.sort_key().to_string())),
        (
            "skuRating".to_owned(),
            S(format!("{}#{}", comment.sku, comment.rating.get())),
        ),
        ("author".to_owned(), S(comment.author.clone())),
        ("body".to_owned(), S(comment.body.clone())),
        ("rating".to_owned(), N(comment.rating.get().to_string())),
        ("createdAt".to_owned(), N(comment.created_at_ms.to_string())),
    ]);
    crate::support::dynamodb_local::sdk_client(&endpoint().await)
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .expect("a raw put");

    assert_eq!(
        store.get_many(&[comment.id]).await.expect("get_many"),
        vec![Some(comment.clone())]
    );
    let patch = CommentPatch::new(Some("edited"), None).expect("patch");
    let edited = store
        .update(comment.id, &patch, 1, &Access::Any)
        .await
        .expect("update");
    assert_eq!(edited.version, 2);
    assert_eq!(
        store.get_many(&[comment.id]).await.expect("get_many"),
        vec![Some(edited)]
    );
}
