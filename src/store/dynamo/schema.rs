//! The table's shape (`docs/operations/table-layout.md`): creating it, checking it at start-up, and
//! deleting it in tests.
//!
//! Table key `id`; GSIs `byProduct` (`sku`, `sortKey`) and `byProductRating` (`skuRating`,
//! `sortKey`) for the lists by time and by rating, and `byProductHelpful` (`sku`,
//! `helpfulRank`) and `byProductRatingHelpful` (`skuRating`, `helpfulRank`) for the list by
//! helpful votes, `byQueue` (`status`, `queueKey`) and `byProductQueue` (`skuStatus`,
//! `queueKey`) for the moderation queues, `byReported` (`reportedQueue`, `reportedKey`) and
//! `byProductReported` (`skuReported`, `reportedKey`) for the `REPORTED` queues, `byReporter`
//! (`reporter`, `reportKey`) for a reader's reports, `byVoter` (`voter`, `id`) for a person's
//! helpful votes (vote items only), `byLog` (`logList`, `logKey`) for the
//! moderation log, `byAuthor` and `byAuthorStatus` for an author's comments,
//! all projecting every attribute so a page needs no second read; a stream with
//! new and old images for the sync worker; on-demand billing so nobody sizes capacity.
//!
//! A table made before the GSIs by helpful votes existed gets them from `--create-tables`
//! (`UpdateTable`, one index at a time, as DynamoDB allows); `dynapage reindex` then writes
//! `helpfulRank` on the comments written before (docs/operations/table-layout.md, "Upgrading").

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, StreamSpecification, StreamViewType, TableDescription, TableStatus,
};

use super::error::{OnConditionFailed, classify, internal, is_missing_table};
use super::item::{
    AUTHOR_KEY, AUTHOR_STATUS, AUTHOR_SUB, HELPFUL_RANK, ID, LOG_KEY, LOG_LIST, QUEUE_KEY,
    REPORT_KEY, REPORTED_KEY, REPORTED_QUEUE, REPORTER, SKU, SKU_RATING, SKU_REPORTED, SKU_STATUS,
    SORT_KEY, STATUS, VERIFIED_SKU, VERIFIED_SKU_RATING,
};
use super::vote_key::VOTER;
use crate::store::StoreError;

pub(super) const BY_PRODUCT: &str = "byProduct";
pub(super) const BY_PRODUCT_RATING: &str = "byProductRating";
pub(super) const BY_PRODUCT_HELPFUL: &str = "byProductHelpful";
pub(super) const BY_PRODUCT_RATING_HELPFUL: &str = "byProductRatingHelpful";
pub(super) const BY_QUEUE: &str = "byQueue";
pub(super) const BY_PRODUCT_QUEUE: &str = "byProductQueue";
pub(super) const BY_LOG: &str = "byLog";
pub(super) const BY_AUTHOR: &str = "byAuthor";
pub(super) const BY_AUTHOR_STATUS: &str = "byAuthorStatus";
pub(super) const BY_REPORTED: &str = "byReported";
pub(super) const BY_PRODUCT_REPORTED: &str = "byProductReported";
pub(super) const BY_REPORTER: &str = "byReporter";
pub(super) const BY_VOTER: &str = "byVoter";
pub(super) const BY_VERIFIED: &str = "byVerified";
pub(super) const BY_VERIFIED_RATING: &str = "byVerifiedRating";
pub(super) const BY_VERIFIED_HELPFUL: &str = "byVerifiedHelpful";
pub(super) const BY_VERIFIED_RATING_HELPFUL: &str = "byVerifiedRatingHelpful";

/// Every GSI: its name, partition key and sort key (a number for `helpfulRank`).
const INDEXES: [(&str, &str, &str); 17] = [
    (BY_PRODUCT, SKU, SORT_KEY),
    (BY_PRODUCT_RATING, SKU_RATING, SORT_KEY),
    (BY_PRODUCT_HELPFUL, SKU, HELPFUL_RANK),
    (BY_PRODUCT_RATING_HELPFUL, SKU_RATING, HELPFUL_RANK),
    (BY_QUEUE, STATUS, QUEUE_KEY),
    (BY_PRODUCT_QUEUE, SKU_STATUS, QUEUE_KEY),
    (BY_LOG, LOG_LIST, LOG_KEY),
    (BY_AUTHOR, AUTHOR_SUB, AUTHOR_KEY),
    (BY_AUTHOR_STATUS, AUTHOR_STATUS, AUTHOR_KEY),
    (BY_REPORTED, REPORTED_QUEUE, REPORTED_KEY),
    (BY_PRODUCT_REPORTED, SKU_REPORTED, REPORTED_KEY),
    (BY_REPORTER, REPORTER, REPORT_KEY),
    (BY_VOTER, VOTER, ID),
    (BY_VERIFIED, VERIFIED_SKU, SORT_KEY),
    (BY_VERIFIED_RATING, VERIFIED_SKU_RATING, SORT_KEY),
    (BY_VERIFIED_HELPFUL, VERIFIED_SKU, HELPFUL_RANK),
    (
        BY_VERIFIED_RATING_HELPFUL,
        VERIFIED_SKU_RATING,
        HELPFUL_RANK,
    ),
];

/// How long `create_tables` waits for the table and its indexes to become ACTIVE. Real
/// DynamoDB usually needs seconds for a new, empty table; DynamoDB Local is immediate.
const ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

fn build_error(err: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(err.into())
}

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(build_error)
}

/// The attribute's definition: `helpfulRank` is a number, every other key a string.
fn attribute(name: &str) -> Result<AttributeDefinition, StoreError> {
    let kind = if name == HELPFUL_RANK {
        ScalarAttributeType::N
    } else {
        ScalarAttributeType::S
    };
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(build_error)
}

/// A GSI's key schema: its partition key, then its sort key.
fn index_keys(partition_key: &str, sort_key: &str) -> Result<Vec<KeySchemaElement>, StoreError> {
    Ok(vec![
        key(partition_key, KeyType::Hash)?,
        key(sort_key, KeyType::Range)?,
    ])
}

/// Every GSI projects every attribute: a page is one query, with no second read.
fn every_attribute() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

fn index(
    name: &str,
    partition_key: &str,
    sort_key: &str,
) -> Result<GlobalSecondaryIndex, StoreError> {
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .set_key_schema(Some(index_keys(partition_key, sort_key)?))
        .projection(every_attribute())
        .build()
        .map_err(build_error)
}

/// The table's description, or `None` when it does not exist.
async fn describe(client: &Client, table: &str) -> Result<Option<TableDescription>, StoreError> {
    match client.describe_table().table_name(table).send().await {
        Ok(output) => Ok(output.table),
        Err(err) if is_missing_table(&err) => Ok(None),
        Err(err) => Err(classify(table, err, OnConditionFailed::Unexpected)),
    }
}

/// The GSIs of [`INDEXES`] the table lacks.
fn missing_indexes(
    description: &TableDescription,
) -> Vec<(&'static str, &'static str, &'static str)> {
    INDEXES
        .into_iter()
        .filter(|(wanted, _, _)| {
            !description
                .global_secondary_indexes()
                .iter()
                .any(|index| index.index_name() == Some(*wanted))
        })
        .collect()
}

/// Fails unless the table exists with every GSI, so a half-made table is reported at start-up
/// rather than as a query error on the first request.
pub(super) async fn check_table(client: &Client, table: &str) -> Result<(), StoreError> {
    let description = describe(client, table)
        .await?
        .ok_or_else(|| StoreError::MissingTable {
            table: table.to_owned(),
        })?;
    if let Some((wanted, _, _)) = missing_indexes(&description).first() {
        return Err(internal(format!(
            "table `{table}` has no global secondary index `{wanted}` (start once with \
             -- create-tables to add it, then run `dynapage reindex`;
             -- docs/operations/table-layout.md, \
             \"Upgrading\")"
        )));
    }
    Ok(())
}

/// Adds the GSIs an existing table lacks (one `UpdateTable` each, waiting for each to become
/// ACTIVE, as DynamoDB creates one index at a time).
async fn add_missing_indexes(client: &Client, table: &str) -> Result<(), StoreError> {
    let Some(description) = describe(client, table).await? else {
        return Ok(());
    };
    for (name, partition_key, sort_key) in missing_indexes(&description) {
        let created = client
            .update_table()
            .table_name(table)
            .attribute_definitions(attribute(partition_key)?)
            .attribute_definitions(attribute(sort_key)?)
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder()
                    .create(
                        CreateGlobalSecondaryIndexAction::builder()
                            .index_name(name)
                            .set_key_schema(Some(index_keys(partition_key, sort_key)?))
                            .projection(every_attribute())
                            .build()
                            .map_err(build_error)?,
                    )
                    .build(),
            )
            .send()
            .await;
        match created {
            Ok(_) => tracing::info!(table, index = name, "dynamodb index added"),
            // Another process is adding it: wait for it like for our own.
            Err(err) if err.code() == Some("ResourceInUseException") => {}
            Err(err) if err.message().is_some_and(|m| m.contains("already exists")) => {}
            Err(err) => return Err(classify(table, err, OnConditionFailed::Unexpected)),
        }
        wait_until_active(client, table).await?;
    }
    Ok(())
}

/// Creates the table, its GSIs and its stream if the table is missing, then waits until all
/// are ACTIVE. Safe to run from several processes at once.
pub(super) async fn create_tables(client: &Client, table: &str) -> Result<(), StoreError> {
    if describe(client, table).await?.is_none() {
        // Every key attribute once: the table's, then each GSI's.
        let mut keys = vec![ID];
        for (_, partition_key, sort_key) in INDEXES {
            for name in [partition_key, sort_key] {
                if !keys.contains(&name) {
                    keys.push(name);
                }
            }
        }
        let definitions = keys
            .into_iter()
            .map(attribute)
            .collect::<Result<Vec<_>, _>>()?;
        let created = client
            .create_table()
            .table_name(table)
            .set_attribute_definitions(Some(definitions))
            .key_schema(key(ID, KeyType::Hash)?)
            .set_global_secondary_indexes(Some(
                INDEXES
                    .iter()
                    .map(|(name, pk, sk)| index(name, pk, sk))
                    .collect::<Result<Vec<_>, _>>()?,
            ))
            .billing_mode(BillingMode::PayPerRequest)
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build()
                    .map_err(build_error)?,
            )
            .send()
            .await;
        match created {
            Ok(_) => tracing::info!(table, "dynamodb table created"),
            // Another process created it between our describe and create: fine.
            Err(err) if err.code() == Some("ResourceInUseException") => {}
            Err(err) => return Err(classify(table, err, OnConditionFailed::Unexpected)),
        }
    }
    wait_until_active(client, table).await?;
    add_missing_indexes(client, table).await?;
    check_table(client, table).await
}

async fn wait_until_active(client: &Client, table: &str) -> Result<(), StoreError> {
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        if let Some(description) = describe(client, table).await? {
            let table_active = description.table_status() == Some(&TableStatus::Active);
            let indexes_active = description
                .global_secondary_indexes()
                .iter()
                .all(|index| index.index_status() == Some(&IndexStatus::Active));
            if table_active && indexes_active {
                return Ok(());
            }
        }
        if started.elapsed() > ACTIVE_TIMEOUT {
            return Err(StoreError::Unavailable(
                format!("table `{table}` did not become ACTIVE within {ACTIVE_TIMEOUT:?}").into(),
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// Deletes the table if it exists (tests and teardown only).
pub(super) async fn delete_table(client: &Client, table: &str) -> Result<(), StoreError> {
    match client.delete_table().table_name(table).send().await {
        Ok(_) => Ok(()),
        Err(err) if is_missing_table(&err) => Ok(()),
        Err(err) => Err(classify(table, err, OnConditionFailed::Unexpected)),
    }
}

/// The ARN of the table's current stream, for the sync worker.
pub(super) async fn stream_arn(client: &Client, table: &str) -> Result<Option<String>, StoreError> {
    let description = describe(client, table)
        .await?
        .ok_or_else(|| StoreError::MissingTable {
            table: table.to_owned(),
        })?;
    Ok(description.latest_stream_arn().map(str::to_owned))
}
