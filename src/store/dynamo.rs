//! The DynamoDB adapter: [`DynamoStore`] implements [`CommentStore`] over one table and its
//! two GSIs (DESIGN §3).
//!
//! It owns the wire: attribute and index names, `AttributeValue` mapping (`item`), table
//! creation (`schema`), the classification of SDK errors (`error`), the table's stream
//! (`stream`, a [`ChangeSource`](super::change_source::ChangeSource)) and its records as AWS
//! Lambda delivers them (`lambda`) live under this module and nowhere else. It answers exactly
//! like [`MemoryStore`](super::memory::MemoryStore) (one contract test list runs against both), knows nothing of Redis or GraphQL, and never
//! loops over `LastEvaluatedKey` on a query: the pagination engine decides whether to read on.

mod batch;
mod change;
mod client;
mod error;
mod item;
mod lambda;
mod schema;
mod stream;

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, PutRequest, ReturnConsumedCapacity, ReturnValue,
    ReturnValuesOnConditionCheckFailure, WriteRequest,
};
use futures::{StreamExt, TryStreamExt};

use self::batch::{BATCHES_IN_FLIGHT, GET_CHUNK, WRITE_CHUNK, backoff};
use self::error::{OnConditionFailed, classify, internal, is_condition_failure};
use self::item::{
    AUTHOR_SUB, BODY, CREATED_AT, ID, RATING, SKU, SKU_RATING, SORT_KEY, UPDATED_AT, VERSION,
    item_from_comment, key_of, number_value, sku_rating, string_value,
};
use self::schema::{BY_PRODUCT, BY_PRODUCT_RATING};
use super::{CommentStore, KeyQuery, Partition, QueryPage, ScanPage, StoreError};
use crate::domain::{Access, Comment, CommentId, CommentPatch, Order};

pub use self::change::{RecordDecodeError, change_from_record};
pub use self::client::DynamoConfig;
pub use self::item::{ItemAttribute, ItemDecodeError, comment_from_item, sort_key_from_item};
pub use self::lambda::{change_from_lambda_record, lambda_sequence_number};
pub use self::stream::DynamoChangeSource;

/// The capacity units a call reports having consumed (0 when it reports none), for logs.
fn capacity_units(consumed: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>) -> f64 {
    consumed
        .and_then(|c| c.capacity_units())
        .unwrap_or_default()
}

/// Read-check-write rounds an `update` tries before a lost race is reported.
const UPDATE_ATTEMPTS: u32 = 5;
/// Items per scan page, like the embedded store's (DynamoDB may still cut at 1 MB).
const SCAN_PAGE: i32 = 1_000;

/// The comment store backed by a DynamoDB table. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    /// The DynamoDB Streams client, built from the same settings (endpoint, region,
    /// credentials, timeouts) as `client`; `None` for a store made with [`Self::from_client`].
    streams: Option<aws_sdk_dynamodbstreams::Client>,
    table: Arc<str>,
}

impl DynamoStore {
    /// Builds a client for `config`. Makes no call: use [`Self::check_table`] or
    /// [`Self::create_tables`] at start-up to learn whether the table is there.
    ///
    /// Timeouts are explicit so a dead endpoint fails a request in seconds instead of hanging
    /// it: connect 3 s, each attempt 5 s, the whole operation (with the standard mode's 3
    /// attempts and backoff) 15 s.
    pub async fn connect(config: DynamoConfig) -> Result<Self, StoreError> {
        if config.table.is_empty() {
            return Err(internal("the DynamoDB table name is empty"));
        }
        let sdk_config = client::sdk_config(&config).await;
        Ok(Self::from_client(Client::new(&sdk_config), config.table)
            .with_streams_client(aws_sdk_dynamodbstreams::Client::new(&sdk_config)))
    }

    /// Wraps an already configured client (without a streams client: add one with
    /// [`Self::with_streams_client`] if the sync worker is to read the table's stream).
    pub fn from_client(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            streams: None,
            table: Arc::from(table.into()),
        }
    }

    /// Uses `streams` to read the table's stream.
    pub fn with_streams_client(mut self, streams: aws_sdk_dynamodbstreams::Client) -> Self {
        self.streams = Some(streams);
        self
    }

    /// The DynamoDB Streams client for this table's stream (same endpoint, region and
    /// credentials as the table's client), for the sync worker.
    pub fn streams_client(&self) -> Option<&aws_sdk_dynamodbstreams::Client> {
        self.streams.as_ref()
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table, both GSIs and the stream if the table is missing, and waits until
    /// they are ACTIVE (`--create-tables`). Idempotent.
    pub async fn create_tables(&self) -> Result<(), StoreError> {
        schema::create_tables(&self.client, &self.table).await
    }

    /// [`StoreError::MissingTable`] when the table does not exist; an internal error when it
    /// lacks a GSI. For start-up, before serving.
    pub async fn check_table(&self) -> Result<(), StoreError> {
        schema::check_table(&self.client, &self.table).await
    }

    /// Deletes the table if it exists (tests and teardown).
    pub async fn delete_table(&self) -> Result<(), StoreError> {
        schema::delete_table(&self.client, &self.table).await
    }

    /// The ARN of the table's latest stream, which the sync worker reads.
    pub async fn stream_arn(&self) -> Result<Option<String>, StoreError> {
        schema::stream_arn(&self.client, &self.table).await
    }

    fn classify<E>(
        &self,
        err: aws_sdk_dynamodb::error::SdkError<E>,
        on_condition_failed: OnConditionFailed,
    ) -> StoreError
    where
        E: aws_sdk_dynamodb::error::ProvideErrorMetadata
            + std::error::Error
            + Send
            + Sync
            + 'static,
    {
        classify(&self.table, err, on_condition_failed)
    }

    /// A strongly consistent read of one comment.
    async fn get(&self, id: CommentId) -> Result<Option<Comment>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(self.table.as_ref())
            .set_key(Some(key_of(id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::Unexpected))?;
        output.item.as_ref().map(decode).transpose()
    }

    /// Writes `new` over `old` only if the stored item is still `old` (optimistic concurrency:
    /// `skuRating` must be recomputed from the new rating, which an `UpdateExpression` cannot
    /// concatenate, so the item is read, changed here and put back under a condition).
    /// `Ok(false)` means another writer got there first.
    ///
    /// The condition is the version read (an item without one, written before versions, is at
    /// version 1), and also the content, so that a writer of an older release, which leaves the
    /// version alone, cannot slip in between either.
    async fn replace_if_unchanged(&self, old: &Comment, new: &Comment) -> Result<bool, StoreError> {
        let mut condition = "attribute_exists(#id) AND #rating = :oldRating AND #body = :oldBody \
                             AND #createdAt = :oldCreatedAt"
            .to_owned();
        condition.push_str(if old.version == 1 {
            " AND (attribute_not_exists(#version) OR #version = :oldVersion)"
        } else {
            " AND #version = :oldVersion"
        });
        let mut request = self
            .client
            .put_item()
            .table_name(self.table.as_ref())
            .set_item(Some(item_from_comment(new)))
            .expression_attribute_names("#id", ID)
            .expression_attribute_names("#rating", RATING)
            .expression_attribute_names("#body", BODY)
            .expression_attribute_names("#createdAt", CREATED_AT)
            .expression_attribute_names("#updatedAt", UPDATED_AT)
            .expression_attribute_names("#version", VERSION)
            .expression_attribute_values(":oldVersion", number_value(old.version))
            .expression_attribute_values(":oldRating", number_value(old.rating.get()))
            .expression_attribute_values(":oldBody", string_value(old.body.as_str()))
            .expression_attribute_values(":oldCreatedAt", number_value(old.created_at_ms));
        match old.updated_at_ms {
            Some(updated) => {
                condition.push_str(" AND #updatedAt = :oldUpdatedAt");
                request =
                    request.expression_attribute_values(":oldUpdatedAt", number_value(updated));
            }
            None => condition.push_str(" AND attribute_not_exists(#updatedAt)"),
        }
        match request.condition_expression(condition).send().await {
            Ok(_) => Ok(true),
            Err(err) if is_condition_failure(&err) => Ok(false),
            Err(err) => Err(self.classify(err, OnConditionFailed::NotFound(old.id))),
        }
    }
}

fn decode(item: &HashMap<String, AttributeValue>) -> Result<Comment, StoreError> {
    comment_from_item(item).map_err(|err| StoreError::Internal(err.into()))
}

/// The index, partition key attribute and value a partition is read from.
fn partition_key(partition: &Partition) -> (&'static str, &'static str, String) {
    match partition {
        Partition::Product(sku) => (BY_PRODUCT, SKU, sku.as_str().to_owned()),
        Partition::ProductRating(sku, rating) => {
            (BY_PRODUCT_RATING, SKU_RATING, sku_rating(sku, *rating))
        }
    }
}

/// The key condition operator of `KeyQuery::from` (see [`KeyQuery::admits`]).
fn bound_operator(query: &KeyQuery) -> Option<(&'static str, String)> {
    let (op, key) = match (&query.from, query.order) {
        (Bound::Unbounded, _) => return None,
        (Bound::Excluded(k), Order::NewestFirst) => ("<", k),
        (Bound::Included(k), Order::NewestFirst) => ("<=", k),
        (Bound::Excluded(k), Order::OldestFirst) => (">", k),
        (Bound::Included(k), Order::OldestFirst) => (">=", k),
    };
    Some((op, key.to_string()))
}

impl CommentStore for DynamoStore {
    /// One `Query` on the partition's GSI. The bound is a key condition (never a filter), so
    /// `Limit` counts exactly the items that come back and a cursor on a deleted comment still
    /// positions the read.
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        if query.limit == 0 {
            // DynamoDB refuses `Limit 0`; the embedded store answers an empty page.
            return Ok(QueryPage::default());
        }
        let (index, partition_attribute, partition_value) = partition_key(&query.partition);
        let mut condition = "#pk = :pk".to_owned();
        let mut request = self
            .client
            .query()
            .table_name(self.table.as_ref())
            .index_name(index)
            .expression_attribute_names("#pk", partition_attribute)
            .expression_attribute_values(":pk", string_value(partition_value.as_str()))
            .scan_index_forward(query.order == Order::OldestFirst)
            .limit(i32::try_from(query.limit).unwrap_or(i32::MAX))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some((op, key)) = bound_operator(query) {
            condition.push_str(&format!(" AND #sk {op} :sk"));
            request = request
                .expression_attribute_names("#sk", SORT_KEY)
                .expression_attribute_values(":sk", string_value(key));
        }
        let output = request
            .key_condition_expression(condition)
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::Unexpected))?;
        let items = output
            .items()
            .iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        let last_evaluated = output
            .last_evaluated_key()
            .map(sort_key_from_item)
            .transpose()
            .map_err(|err| StoreError::Internal(err.into()))?;
        let consumed_rcu = capacity_units(output.consumed_capacity());
        tracing::debug!(
            table = %self.table,
            index,
            partition = %partition_value,
            items = items.len(),
            more = last_evaluated.is_some(),
            consumed_rcu,
            "dynamodb query"
        );
        metrics::counter!("dynapage_store_items_read_total", "operation" => "query")
            .increment(items.len() as u64);
        Ok(QueryPage {
            items,
            last_evaluated,
        })
    }

    /// BatchGetItem in chunks of 100 distinct ids (BatchGetItem refuses duplicates), read
    /// consistently so a comment is visible right after its write, as in the embedded store.
    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let chunks: Vec<Vec<CommentId>> = distinct.chunks(GET_CHUNK).map(<[_]>::to_vec).collect();
        let found: Vec<Vec<Comment>> = futures::stream::iter(chunks)
            .map(|chunk| batch::get_chunk(self.client.clone(), self.table.clone(), chunk))
            .buffer_unordered(BATCHES_IN_FLIGHT)
            .try_collect()
            .await?;
        let by_id: HashMap<CommentId, Comment> = found
            .into_iter()
            .flatten()
            .map(|comment| (comment.id, comment))
            .collect();
        metrics::counter!("dynapage_store_items_read_total", "operation" => "get_many")
            .increment(by_id.len() as u64);
        Ok(ids.iter().map(|id| by_id.get(id).cloned()).collect())
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        let comment = Comment {
            version: 1,
            ..comment.clone()
        };
        self.client
            .put_item()
            .table_name(self.table.as_ref())
            .set_item(Some(item_from_comment(&comment)))
            .condition_expression("attribute_not_exists(#id)")
            .expression_attribute_names("#id", ID)
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::AlreadyExists(comment.id)))?;
        Ok(())
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        for attempt in 0..UPDATE_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            let old = self.get(id).await?.ok_or(StoreError::NotFound(id))?;
            // A comment's `authorSub` never changes, and the write below is conditional on the
            // version read, so checking the item read is checking the item written.
            if !access.allows(&old) {
                return Err(StoreError::Forbidden(id));
            }
            let new = patch.apply(&old, now_ms);
            if self.replace_if_unchanged(&old, &new).await? {
                return Ok(new);
            }
            tracing::debug!(table = %self.table, comment_id = %id, attempt, "dynamodb update lost a race, retrying");
        }
        Err(StoreError::Unavailable(
            format!("comment {id} kept changing during {UPDATE_ATTEMPTS} update attempts").into(),
        ))
    }

    /// One conditional `DeleteItem`. For an author, the condition also names their `sub`; when
    /// it fails, the item DynamoDB returns with the failure tells someone else's comment
    /// (`Forbidden`) from a missing one (`NotFound`), without a second read.
    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        let mut request = self
            .client
            .delete_item()
            .table_name(self.table.as_ref())
            .set_key(Some(key_of(id)))
            .expression_attribute_names("#id", ID)
            .return_values(ReturnValue::AllOld);
        request = match access {
            Access::Any => request.condition_expression("attribute_exists(#id)"),
            Access::Author(sub) => request
                .condition_expression("attribute_exists(#id) AND #authorSub = :sub")
                .expression_attribute_names("#authorSub", AUTHOR_SUB)
                .expression_attribute_values(":sub", string_value(sub.as_str()))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                ),
        };
        let output = request.send().await.map_err(|err| {
            let someone_elses = matches!(
                err.as_service_error(),
                Some(DeleteItemError::ConditionalCheckFailedException(failed)) if failed.item.is_some()
            );
            if someone_elses {
                StoreError::Forbidden(id)
            } else {
                self.classify(err, OnConditionFailed::NotFound(id))
            }
        })?;
        let old = output
            .attributes
            .ok_or_else(|| internal("DeleteItem with ALL_OLD returned no attributes"))?;
        decode(&old)
    }

    /// BatchWriteItem in chunks of 25, eight in flight. BatchWriteItem refuses two writes of
    /// one key in a request, so a repeated id keeps only its last comment, which is also what
    /// writing them one after another would leave.
    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        let mut seen = std::collections::HashSet::new();
        let mut latest: Vec<&Comment> = comments
            .iter()
            .rev()
            .filter(|c| seen.insert(c.id))
            .collect();
        latest.reverse();
        let chunks = latest
            .chunks(WRITE_CHUNK)
            .map(|chunk| {
                chunk
                    .iter()
                    .map(|comment| {
                        let put = PutRequest::builder()
                            .set_item(Some(item_from_comment(comment)))
                            .build()
                            .map_err(|err| StoreError::Internal(err.into()))?;
                        Ok(WriteRequest::builder().put_request(put).build())
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        futures::stream::iter(chunks)
            .map(|chunk| batch::write_chunk(self.client.clone(), self.table.clone(), chunk))
            .buffer_unordered(BATCHES_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        tracing::debug!(table = %self.table, items = latest.len(), "dynamodb batch written");
        Ok(())
    }

    /// One page of a parallel scan segment. The table key is only `id`, so the resume token is
    /// the last evaluated id.
    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        let start = resume
            .map(|token| token.parse::<CommentId>().map(key_of))
            .transpose()
            .map_err(|err| StoreError::Internal(err.into()))?;
        let to_i32 = |n: u32| i32::try_from(n).map_err(|err| StoreError::Internal(err.into()));
        let output = self
            .client
            .scan()
            .table_name(self.table.as_ref())
            .segment(to_i32(segment)?)
            .total_segments(to_i32(total_segments.max(1))?)
            .limit(SCAN_PAGE)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::Unexpected))?;
        let items = output
            .items()
            .iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        let consumed_rcu = capacity_units(output.consumed_capacity());
        tracing::debug!(
            table = %self.table,
            segment,
            items = items.len(),
            consumed_rcu,
            "dynamodb scan"
        );
        metrics::counter!("dynapage_store_items_read_total", "operation" => "scan")
            .increment(items.len() as u64);
        let resume = output
            .last_evaluated_key()
            .map(|key| match key.get(ID).map(AttributeValue::as_s) {
                Some(Ok(id)) => Ok(id.clone()),
                _ => Err(internal("scan LastEvaluatedKey has no string `id`")),
            })
            .transpose()?;
        Ok(ScanPage { items, resume })
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.client
            .describe_table()
            .table_name(self.table.as_ref())
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::Unexpected))?;
        Ok(())
    }
}
