//! The table's DynamoDB stream as a [`ChangeSource`]: the one place that calls the DynamoDB
//! Streams API (`DescribeStream`, `GetShardIterator`, `GetRecords`) and classifies its errors.
//!
//! It answers in domain types: records become change events through [`change_from_record`],
//! and the SDK's errors become [`SourceError`]s, so the consumer (`crate::sync::stream`) decides
//! what an expired iterator or trimmed records mean without knowing the SDK. Nothing here knows
//! shard lineage, checkpoints or the index.

use std::sync::OnceLock;

use aws_sdk_dynamodbstreams::Client;
use aws_sdk_dynamodbstreams::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};

use super::DynamoStore;
use super::change::change_from_record;
use super::error::THROTTLING;
use crate::domain::ChangeEvent;
use crate::store::StoreError;
use crate::store::change_source::{Batch, ChangeSource, ShardInfo, SourceError, StartAt};
use crate::telemetry::metric;

/// Records asked for per `GetRecords` (the API's maximum).
const RECORDS_PER_CALL: i32 = 1_000;

const EXPIRED_ITERATOR: &str = "ExpiredIteratorException";
const TRIMMED_DATA: &str = "TrimmedDataAccessException";
const NOT_FOUND: &str = "ResourceNotFoundException";

/// The stream of a [`DynamoStore`]'s table.
#[derive(Debug)]
pub struct DynamoChangeSource {
    client: Client,
    store: DynamoStore,
    /// The stream's ARN, found by [`ChangeSource::open`].
    arn: OnceLock<String>,
}

impl DynamoChangeSource {
    /// The stream of `store`'s table; `None` when the store has no streams client.
    pub fn new(store: &DynamoStore) -> Option<Self> {
        Some(Self {
            client: store.streams_client()?.clone(),
            store: store.clone(),
            arn: OnceLock::new(),
        })
    }

    fn arn(&self) -> Result<&str, SourceError> {
        self.arn
            .get()
            .map(String::as_str)
            .ok_or_else(|| SourceError::Failed("the stream was not opened".into()))
    }
}

impl ChangeSource for DynamoChangeSource {
    fn name(&self) -> &str {
        self.store.table()
    }

    async fn open(&self) -> Result<String, SourceError> {
        match self.store.stream_arn().await {
            Ok(Some(arn)) => Ok(self.arn.get_or_init(|| arn).clone()),
            Ok(None) => Err(SourceError::NoStream),
            Err(StoreError::Unavailable(error)) => Err(SourceError::Unavailable(error)),
            Err(error) => Err(SourceError::Failed(error.into())),
        }
    }

    /// `DescribeStream`, paginated.
    async fn shards(&self) -> Result<Vec<ShardInfo>, SourceError> {
        let arn = self.arn()?;
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let output = self
                .client
                .describe_stream()
                .stream_arn(arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(|err| match classify(err) {
                    // The stream itself is gone (the table was deleted or its stream disabled).
                    SourceError::ShardGone => SourceError::NoStream,
                    other => other,
                })?;
            let Some(description) = output.stream_description() else {
                break;
            };
            for shard in description.shards() {
                let Some(id) = shard.shard_id() else { continue };
                shards.push(ShardInfo {
                    id: id.to_owned(),
                    parent: shard.parent_shard_id().map(str::to_owned),
                    closed: shard
                        .sequence_number_range()
                        .and_then(|range| range.ending_sequence_number())
                        .is_some(),
                });
            }
            match description.last_evaluated_shard_id() {
                Some(last) => start = Some(last.to_owned()),
                None => break,
            }
        }
        Ok(shards)
    }

    async fn iterator(&self, shard: &str, at: &StartAt) -> Result<String, SourceError> {
        let request = self
            .client
            .get_shard_iterator()
            .stream_arn(self.arn()?)
            .shard_id(shard);
        let request = match at {
            StartAt::TrimHorizon => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
            StartAt::After(sequence) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(sequence),
        };
        let output = request.send().await.map_err(classify)?;
        output
            .shard_iterator()
            .map(str::to_owned)
            .ok_or(SourceError::ShardGone)
    }

    async fn read(&self, iterator: &str) -> Result<Batch, SourceError> {
        let output = self
            .client
            .get_records()
            .shard_iterator(iterator)
            .limit(RECORDS_PER_CALL)
            .send()
            .await
            .map_err(classify)?;
        let records = output.records();
        let last = records.iter().rev().find_map(|r| r.dynamodb());
        Ok(Batch {
            records: changes_of(records),
            last_sequence: last.and_then(|d| d.sequence_number()).map(str::to_owned),
            read: records.len(),
            last_written_ms: last
                .and_then(|d| d.approximate_creation_date_time())
                .and_then(|t| t.to_millis().ok()),
            next: output.next_shard_iterator().map(str::to_owned),
        })
    }
}

/// The change events of a batch, in order, with their sequence numbers. A record that is not a
/// comment is logged and skipped (it cannot be applied, and blocking the shard on it would stop
/// all later changes); the batch's `last_sequence` still moves past it.
fn changes_of(records: &[Record]) -> Vec<(String, ChangeEvent)> {
    records
        .iter()
        .filter_map(|record| {
            let sequence = record.dynamodb().and_then(|d| d.sequence_number());
            match change_from_record(record) {
                Ok(event) => Some((sequence.unwrap_or_default().to_owned(), event?)),
                Err(error) => {
                    tracing::warn!(sequence, error = %error, "stream record skipped");
                    metric::SYNC_RECORDS_SKIPPED.counter(&[]).increment(1);
                    None
                }
            }
        })
        .collect()
}

/// The policy, as for the table's errors (`super::error`): what a later attempt may cure is
/// `Unavailable`; the three errors the consumer acts on have their own kinds; the rest is
/// `Failed`.
fn classify<E>(err: SdkError<E>) -> SourceError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            return SourceError::Unavailable(err.into());
        }
        SdkError::ServiceError(_) => {}
        // `ConstructionFailure`, and kinds a later SDK may add: not retryable.
        _ => return SourceError::Failed(err.into()),
    }
    let code = err.code().unwrap_or_default();
    match code {
        EXPIRED_ITERATOR => SourceError::ExpiredIterator,
        TRIMMED_DATA => SourceError::TrimmedData,
        NOT_FOUND => SourceError::ShardGone,
        _ if THROTTLING.contains(&code)
            || err
                .raw_response()
                .is_some_and(|response| response.status().is_server_error()) =>
        {
            SourceError::Unavailable(err.into())
        }
        _ => SourceError::Failed(err.into()),
    }
}
