//! The DynamoDB Streams consumer: follows every shard of the table's stream and applies its
//! records to the index through [`crate::sync::apply`], the one path from a write to the index.
//!
//! It owns shard traversal: listing shards (`DescribeStream`, paginated), shard lineage (a
//! child shard is read only once its parent is finished, so one comment's changes are applied
//! in the order they were made), closed shards (no `NextShardIterator`), expired iterators
//! (a fresh one `AFTER_SEQUENCE_NUMBER` the checkpoint) and checkpoints (written after each
//! applied batch). Turning a record into a [`ChangeEvent`] belongs to the DynamoDB adapter
//! ([`change_from_record`]); where checkpoints are stored belongs to [`Checkpoints`]. Nothing
//! here knows Redis or GraphQL.
//!
//! Run one consumer per table and index: two consumers would interleave their batches.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodbstreams::Client;
use aws_sdk_dynamodbstreams::error::SdkError;
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use tokio_util::sync::CancellationToken;

use super::backoff::{Backoff, sleep_or_cancel, until_cancelled};
use super::shards::{Polled, Position, ShardState, finish, ready, trimmed};
use super::{Checkpoints, SyncError};
use crate::domain::ChangeEvent;
use crate::index::PageIndex;
use crate::store::dynamo::{DynamoStore, change_from_record};

/// Records asked for per `GetRecords` (the API's maximum).
const RECORDS_PER_CALL: i32 = 1_000;
/// How often the shard list is refreshed while nothing closes (new shards appear when the
/// stream rolls over, about every four hours on AWS).
const DESCRIBE_INTERVAL: Duration = Duration::from_secs(30);

/// How the consumer paces itself.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions {
    /// Pause when every shard is caught up. DynamoDB Local shows a record ~0.1 s after its
    /// write, and AWS allows five `GetRecords` per shard per second.
    pub poll_interval: Duration,
    /// Longest pause between retries after a failure (the index or the stream is down).
    pub max_backoff: Duration,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Follows a table's stream into an index.
#[derive(Debug)]
pub struct StreamConsumer<I> {
    client: Client,
    store: DynamoStore,
    index: I,
    checkpoints: Checkpoints,
    options: StreamOptions,
}

impl<I: PageIndex> StreamConsumer<I> {
    /// A consumer of `store`'s table stream; fails when the store has no streams client.
    pub fn new(
        store: &DynamoStore,
        index: I,
        checkpoints: Checkpoints,
        options: StreamOptions,
    ) -> Result<Self, SyncError> {
        let client = store
            .streams_client()
            .cloned()
            .ok_or(SyncError::NoStreamsClient)?;
        Ok(Self {
            client,
            store: store.clone(),
            index,
            checkpoints,
            options,
        })
    }

    /// Consumes the stream until `shutdown` fires. A batch in hand is applied and checkpointed
    /// before returning. Failures of the index or the stream are logged and retried with
    /// backoff; only a table without a stream (or a missing table) ends the consumer early.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), SyncError> {
        let table = self.store.table().to_owned();
        let Some(arn) = self.stream_arn(&shutdown).await? else {
            return Ok(());
        };
        tracing::info!(table = %table, stream = %arn, "stream sync started");
        let mut shards: BTreeMap<String, ShardState> = BTreeMap::new();
        let mut described: Option<Instant> = None;
        let mut backoff = Backoff::new(self.options.max_backoff);
        while !shutdown.is_cancelled() {
            if described.is_none_or(|at| at.elapsed() > DESCRIBE_INTERVAL) {
                // Describing changes nothing, so a stop may abandon it midway.
                let Some(described_now) =
                    until_cancelled(self.describe(&arn, &mut shards), &shutdown).await
                else {
                    break;
                };
                match described_now {
                    Ok(()) => described = Some(Instant::now()),
                    Err(error) => {
                        tracing::warn!(table = %table, error = %error, "stream describe failed");
                        metrics::counter!("dynapage_sync_errors_total", "stage" => "describe")
                            .increment(1);
                        backoff.wait(&shutdown).await;
                        continue;
                    }
                }
            }
            let ready = ready(&shards);
            let polls = shards
                .iter_mut()
                .filter(|(id, _)| ready.contains(*id))
                .map(|(id, state)| self.poll(&arn, id, state, &shutdown));
            let results = futures::future::join_all(polls).await;
            let (mut records, mut failed, mut closed) = (0, false, false);
            for result in results {
                match result {
                    Ok(polled) => {
                        records += polled.records;
                        closed |= polled.finished;
                    }
                    Err(error) => {
                        failed = true;
                        tracing::warn!(table = %table, error = %error, "stream poll failed");
                    }
                }
            }
            if closed {
                // A closed shard usually means its children exist now: look for them.
                described = None;
            }
            if failed {
                backoff.wait(&shutdown).await;
            } else {
                backoff.reset();
                if records == 0 && !closed {
                    sleep_or_cancel(self.options.poll_interval, &shutdown).await;
                }
            }
        }
        tracing::info!(table = %table, "stream sync stopped");
        Ok(())
    }

    /// The stream's ARN, retrying while DynamoDB is unreachable; `None` if stopped meanwhile.
    async fn stream_arn(&self, shutdown: &CancellationToken) -> Result<Option<String>, SyncError> {
        let mut backoff = Backoff::new(self.options.max_backoff);
        loop {
            let Some(found) = until_cancelled(self.store.stream_arn(), shutdown).await else {
                return Ok(None);
            };
            match found {
                Ok(Some(arn)) => return Ok(Some(arn)),
                Ok(None) => {
                    return Err(SyncError::NoStream {
                        table: self.store.table().to_owned(),
                    });
                }
                Err(crate::store::StoreError::Unavailable(error)) => {
                    tracing::warn!(table = self.store.table(), error = %error, "dynamodb unavailable, retrying");
                }
                Err(error) => return Err(error.into()),
            }
            if !backoff.wait(shutdown).await {
                return Ok(None);
            }
        }
    }

    /// Adds the shards the stream lists that are not known yet, and forgets finished shards
    /// the stream no longer lists (trimmed after 24 hours).
    async fn describe(
        &self,
        arn: &str,
        shards: &mut BTreeMap<String, ShardState>,
    ) -> Result<(), SyncError> {
        let mut listed = BTreeSet::new();
        let mut start: Option<String> = None;
        loop {
            let output = self
                .client
                .describe_stream()
                .stream_arn(arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(stream_error)?;
            let Some(description) = output.stream_description() else {
                break;
            };
            for shard in description.shards() {
                let Some(id) = shard.shard_id() else { continue };
                listed.insert(id.to_owned());
                shards.entry(id.to_owned()).or_insert_with(|| {
                    tracing::debug!(shard = id, parent = shard.parent_shard_id(), "shard found");
                    ShardState {
                        parent: shard.parent_shard_id().map(str::to_owned),
                        position: Position::Unknown,
                        iterator: None,
                        finished: false,
                    }
                });
            }
            match description.last_evaluated_shard_id() {
                Some(last) => start = Some(last.to_owned()),
                None => break,
            }
        }
        shards.retain(|id, state| !state.finished || listed.contains(id));
        metrics::gauge!("dynapage_sync_shards").set(listed.len() as f64);
        Ok(())
    }

    /// Reads one batch of `shard`, applies it and checkpoints it.
    async fn poll(
        &self,
        arn: &str,
        shard: &str,
        state: &mut ShardState,
        shutdown: &CancellationToken,
    ) -> Result<Polled, SyncError> {
        let iterator = match state.iterator.take() {
            Some(iterator) => iterator,
            None => {
                let Some(found) = until_cancelled(self.iterator(arn, shard, state), shutdown).await
                else {
                    return Ok(Polled::default());
                };
                match found? {
                    Some(iterator) => iterator,
                    None => return Ok(finish(shard, state)),
                }
            }
        };
        // Reading records changes nothing either; a stop abandons the read, keeping the iterator.
        let read = self
            .client
            .get_records()
            .shard_iterator(&iterator)
            .limit(RECORDS_PER_CALL)
            .send();
        let Some(read) = until_cancelled(read, shutdown).await else {
            state.iterator = Some(iterator);
            return Ok(Polled::default());
        };
        let output = match read {
            Ok(output) => output,
            Err(err) => {
                let service = err.as_service_error();
                if service.is_some_and(|e| e.is_expired_iterator_exception()) {
                    // Iterators live 15 minutes; get a fresh one from the checkpoint.
                    tracing::info!(
                        shard,
                        "shard iterator expired, resuming from the checkpoint"
                    );
                    return Ok(Polled::default());
                }
                if service.is_some_and(|e| e.is_trimmed_data_access_exception()) {
                    trimmed(shard, state);
                    return Ok(Polled::default());
                }
                if service.is_some_and(|e| e.is_resource_not_found_exception()) {
                    return Ok(finish(shard, state));
                }
                state.iterator = Some(iterator);
                metrics::counter!("dynapage_sync_errors_total", "stage" => "get_records")
                    .increment(1);
                return Err(stream_error(err));
            }
        };
        let records = output.records();
        if let Some(last) = records
            .iter()
            .rev()
            .find_map(|r| r.dynamodb().and_then(|d| d.sequence_number()))
        {
            let events = events_of(shard, records);
            if !self
                .apply_and_checkpoint(shard, &events, last, shutdown)
                .await
            {
                // Stopped while the index was failing: the batch replays on the next start.
                state.iterator = Some(iterator);
                return Ok(Polled::default());
            }
            state.position = Position::After(last.to_owned());
            let lag_ms = records
                .last()
                .and_then(|r| r.dynamodb())
                .and_then(|d| d.approximate_creation_date_time())
                .and_then(|t| t.to_millis().ok())
                .map(|created| (now_ms() - created).max(0))
                .unwrap_or_default();
            metrics::counter!("dynapage_sync_records_total").increment(records.len() as u64);
            metrics::gauge!("dynapage_sync_lag_ms").set(lag_ms as f64);
            tracing::debug!(
                shard,
                records = records.len(),
                events = events.len(),
                lag_ms,
                "stream batch applied"
            );
        }
        state.iterator = output.next_shard_iterator().map(str::to_owned);
        let mut polled = Polled {
            records: records.len(),
            finished: false,
        };
        if state.iterator.is_none() {
            polled.finished = finish(shard, state).finished;
        }
        Ok(polled)
    }

    /// Applies a batch and saves its checkpoint, retrying both until they succeed (`true`) or
    /// `shutdown` fires (`false`). A batch is never dropped: the index may lag, not lose.
    async fn apply_and_checkpoint(
        &self,
        shard: &str,
        events: &[ChangeEvent],
        last: &str,
        shutdown: &CancellationToken,
    ) -> bool {
        let mut backoff = Backoff::new(self.options.max_backoff);
        loop {
            let result = match super::apply(&self.index, events).await {
                Ok(()) => self.checkpoints.save(shard, last).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => {
                    metrics::gauge!("dynapage_sync_checkpoint_timestamp_seconds")
                        .set(now_ms() as f64 / 1000.0);
                    return true;
                }
                Err(error) => {
                    metrics::counter!("dynapage_sync_errors_total", "stage" => "apply")
                        .increment(1);
                    tracing::warn!(shard, events = events.len(), error = %error, "index update failed, retrying");
                    if !backoff.wait(shutdown).await {
                        return false;
                    }
                }
            }
        }
    }

    /// A shard iterator from the shard's position (loading the checkpoint the first time);
    /// `None` when the shard no longer exists.
    async fn iterator(
        &self,
        arn: &str,
        shard: &str,
        state: &mut ShardState,
    ) -> Result<Option<String>, SyncError> {
        if state.position == Position::Unknown {
            state.position = match self.checkpoints.load(shard).await? {
                Some(sequence) => Position::After(sequence),
                None => Position::Horizon,
            };
            tracing::info!(shard, resume = ?state.position, "reading shard");
        }
        let request = self
            .client
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard);
        let request = match &state.position {
            Position::After(sequence) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(sequence),
            Position::Unknown | Position::Horizon => {
                request.shard_iterator_type(ShardIteratorType::TrimHorizon)
            }
        };
        match request.send().await {
            Ok(output) => Ok(output.shard_iterator().map(str::to_owned)),
            Err(err) => {
                let service = err.as_service_error();
                if service.is_some_and(|e| e.is_resource_not_found_exception()) {
                    return Ok(None);
                }
                if service.is_some_and(|e| e.is_trimmed_data_access_exception()) {
                    trimmed(shard, state);
                    return Err(stream_error(err));
                }
                Err(stream_error(err))
            }
        }
    }
}

/// The change events of a batch, in order. A record that is not a comment is logged and
/// skipped (it cannot be applied, and blocking the shard on it would stop all later changes).
fn events_of(shard: &str, records: &[Record]) -> Vec<ChangeEvent> {
    records
        .iter()
        .filter_map(|record| match change_from_record(record) {
            Ok(event) => event,
            Err(error) => {
                let sequence = record.dynamodb().and_then(|d| d.sequence_number());
                tracing::warn!(shard, sequence, error = %error, "stream record skipped");
                metrics::counter!("dynapage_sync_records_skipped_total").increment(1);
                None
            }
        })
        .collect()
}

fn stream_error<E>(err: SdkError<E>) -> SyncError
where
    E: std::error::Error + Send + Sync + 'static,
{
    SyncError::Stream(Box::new(err))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
