//! The stream consumer: follows every shard of a table's change stream and applies its records
//! to the index through [`crate::sync::apply`], the one path from a write to the index.
//!
//! It owns shard traversal: listing shards, shard lineage (a child shard is read only once its
//! parent is finished, so one comment's changes are applied in the order they were made),
//! closed shards (read to their end, then dropped), expired iterators (a fresh one after the
//! checkpoint) and checkpoints (written after each applied batch, never before). What it reads
//! is a [`ChangeSource`]: the table's DynamoDB stream ([`DynamoChangeSource`], which alone knows
//! the SDK and turns records into [`ChangeEvent`]s) or, in tests, a scripted one. Where
//! checkpoints are stored belongs to [`Checkpoints`]. Nothing here knows Redis or GraphQL.
//!
//! # First start
//!
//! A shard without a checkpoint is read from its trim horizon (`TRIM_HORIZON`), never from
//! `LATEST`: the index is filled by a scan (`reindex`, or the start-up scan of the embedded
//! index) before or while the consumer starts, and a change made between that scan and the
//! first read would be lost with `LATEST`. Reading from the horizon replays up to 24 hours of
//! changes the index may already hold; the versions make that harmless (`crate::index`).
//!
//! # Trimmed records
//!
//! When a checkpoint points before the oldest record the stream keeps
//! (`TrimmedDataAccessException`: the consumer was stopped, or fell behind, for longer than the
//! stream's 24 hours), the changes in between are lost to the index. The consumer logs an error
//! (`stream records were trimmed...`, with the shard and its checkpoint), counts it in
//! `dynapage_sync_trimmed_total`, and reads on from the trim horizon, so the index follows
//! again; only `dynapage reindex` recovers what was trimmed.
//!
//! Run one consumer per table and index: two consumers would interleave their batches.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::shards::{Polled, Position, ShardState, finish, ready, trimmed};
use super::{Checkpoints, FIRST_RETRY, SyncError};
use crate::backoff::{Backoff, sleep_or_cancel, until_cancelled};
use crate::clock::now_ms;
use crate::domain::ChangeEvent;
use crate::index::PageIndex;
use crate::store::change_source::{Batch, ChangeSource, SourceError, StartAt};
use crate::store::dynamo::{DynamoChangeSource, DynamoStore};
use crate::telemetry::metric;

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

/// Follows a table's change stream into an index.
#[derive(Debug)]
pub struct StreamConsumer<I, S = DynamoChangeSource> {
    source: S,
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
        let source = DynamoChangeSource::new(store).ok_or(SyncError::NoStreamsClient)?;
        Ok(Self::from_source(source, index, checkpoints, options))
    }
}

impl<I: PageIndex, S: ChangeSource> StreamConsumer<I, S> {
    /// A consumer of any change stream.
    pub fn from_source(
        source: S,
        index: I,
        checkpoints: Checkpoints,
        options: StreamOptions,
    ) -> Self {
        Self {
            source,
            index,
            checkpoints,
            options,
        }
    }

    /// Consumes the stream until `shutdown` fires. A batch in hand is applied and checkpointed
    /// before returning. Failures of the index or the stream are logged and retried with
    /// backoff; only a table without a stream (or a missing table) ends the consumer early.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), SyncError> {
        let table = self.source.name().to_owned();
        let Some(stream) = self.open(&shutdown).await? else {
            return Ok(());
        };
        tracing::info!(table = %table, stream = %stream, "stream sync started");
        let mut shards: BTreeMap<String, ShardState> = BTreeMap::new();
        let mut described: Option<Instant> = None;
        let mut backoff = Backoff::new(FIRST_RETRY, self.options.max_backoff);
        while !shutdown.is_cancelled() {
            if described.is_none_or(|at| at.elapsed() > DESCRIBE_INTERVAL) {
                // Describing changes nothing, so a stop may abandon it midway.
                let Some(described_now) =
                    until_cancelled(self.describe(&mut shards), &shutdown).await
                else {
                    break;
                };
                match described_now {
                    Ok(()) => described = Some(Instant::now()),
                    Err(error) => {
                        tracing::warn!(table = %table, error = %error, "stream describe failed");
                        metric::SYNC_ERRORS
                            .counter(&[("stage", "describe")])
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
                .map(|(id, state)| self.poll(id, state, &shutdown));
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

    /// Finds the stream, retrying while it is unreachable; `None` if stopped meanwhile.
    async fn open(&self, shutdown: &CancellationToken) -> Result<Option<String>, SyncError> {
        let table = self.source.name();
        let mut backoff = Backoff::new(FIRST_RETRY, self.options.max_backoff);
        loop {
            let Some(found) = until_cancelled(self.source.open(), shutdown).await else {
                return Ok(None);
            };
            match found {
                Ok(stream) => return Ok(Some(stream)),
                Err(SourceError::NoStream) => {
                    return Err(SyncError::NoStream {
                        table: table.to_owned(),
                    });
                }
                Err(SourceError::Unavailable(error)) => {
                    tracing::warn!(table, error = %error, "dynamodb unavailable, retrying");
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
    async fn describe(&self, shards: &mut BTreeMap<String, ShardState>) -> Result<(), SyncError> {
        let listed = self.source.shards().await?;
        for shard in &listed {
            shards.entry(shard.id.clone()).or_insert_with(|| {
                tracing::debug!(
                    shard = shard.id.as_str(),
                    parent = shard.parent.as_deref(),
                    closed = shard.closed,
                    "shard found"
                );
                ShardState {
                    parent: shard.parent.clone(),
                    position: Position::Unknown,
                    iterator: None,
                    finished: false,
                }
            });
        }
        let ids: BTreeSet<&str> = listed.iter().map(|shard| shard.id.as_str()).collect();
        shards.retain(|id, state| !state.finished || ids.contains(id.as_str()));
        metric::SYNC_SHARDS.gauge(&[]).set(ids.len() as f64);
        Ok(())
    }

    /// Reads one batch of `shard`, applies it and checkpoints it.
    async fn poll(
        &self,
        shard: &str,
        state: &mut ShardState,
        shutdown: &CancellationToken,
    ) -> Result<Polled, SyncError> {
        let iterator = match self.iterator_to_read(shard, state, shutdown).await? {
            Ok(iterator) => iterator,
            Err(polled) => return Ok(polled),
        };
        let batch = match self
            .read_batch(shard, state, iterator.clone(), shutdown)
            .await?
        {
            Ok(batch) => batch,
            Err(polled) => return Ok(polled),
        };
        if let Some(last) = &batch.last_sequence {
            let events: Vec<ChangeEvent> =
                batch.records.into_iter().map(|(_, event)| event).collect();
            if !self
                .apply_and_checkpoint(shard, &events, last, shutdown)
                .await
            {
                // Stopped while the index was failing: the batch replays on the next start.
                state.iterator = Some(iterator);
                return Ok(Polled::default());
            }
            state.position = Position::After(last.clone());
            let lag_ms = batch
                .last_written_ms
                .map(|written| (i64::try_from(now_ms()).unwrap_or(i64::MAX) - written).max(0))
                .unwrap_or_default();
            metric::SYNC_RECORDS
                .counter(&[])
                .increment(batch.read as u64);
            metric::SYNC_LAG_MS.gauge(&[]).set(lag_ms as f64);
            tracing::debug!(
                shard,
                records = batch.read,
                events = events.len(),
                lag_ms,
                "stream batch applied"
            );
        }
        state.iterator = batch.next;
        let mut polled = Polled {
            records: batch.read,
            finished: false,
        };
        if state.iterator.is_none() {
            polled.finished = finish(shard, state).finished;
        }
        Ok(polled)
    }

    /// The iterator to read `shard` from: the one the last read left, or a new one from the
    /// checkpoint; `Err` with what this poll amounts to when there is nothing to read (the
    /// shard is gone or trimmed, or a stop came first). Getting an iterator changes nothing.
    async fn iterator_to_read(
        &self,
        shard: &str,
        state: &mut ShardState,
        shutdown: &CancellationToken,
    ) -> Result<Result<String, Polled>, SyncError> {
        if let Some(iterator) = state.iterator.take() {
            return Ok(Ok(iterator));
        }
        let Some(found) = until_cancelled(self.iterator(shard, state), shutdown).await else {
            return Ok(Err(Polled::default()));
        };
        match found {
            Ok(iterator) => Ok(Ok(iterator)),
            Err(SyncError::Stream(SourceError::ShardGone)) => Ok(Err(finish(shard, state))),
            Err(SyncError::Stream(SourceError::TrimmedData)) => {
                trimmed(shard, state);
                Ok(Err(Polled::default()))
            }
            Err(error) => {
                metric::SYNC_ERRORS
                    .counter(&[("stage", "iterator")])
                    .increment(1);
                Err(error)
            }
        }
    }

    /// One read of `shard` at `iterator`; `Err` with what this poll amounts to when it gave no
    /// batch to apply. Reading records changes nothing either: a stop abandons the read and
    /// keeps the iterator.
    async fn read_batch(
        &self,
        shard: &str,
        state: &mut ShardState,
        iterator: String,
        shutdown: &CancellationToken,
    ) -> Result<Result<Batch, Polled>, SyncError> {
        let Some(read) = until_cancelled(self.source.read(&iterator), shutdown).await else {
            state.iterator = Some(iterator);
            return Ok(Err(Polled::default()));
        };
        match read {
            Ok(batch) => Ok(Ok(batch)),
            Err(SourceError::ExpiredIterator) => {
                // Iterators live 15 minutes; get a fresh one from the checkpoint.
                tracing::info!(
                    shard,
                    resume = ?state.position,
                    "shard iterator expired, resuming from the checkpoint"
                );
                metric::SYNC_ITERATORS_EXPIRED.counter(&[]).increment(1);
                Ok(Err(Polled::default()))
            }
            Err(SourceError::TrimmedData) => {
                trimmed(shard, state);
                Ok(Err(Polled::default()))
            }
            Err(SourceError::ShardGone) => Ok(Err(finish(shard, state))),
            Err(error) => {
                state.iterator = Some(iterator);
                metric::SYNC_ERRORS
                    .counter(&[("stage", "get_records")])
                    .increment(1);
                Err(error.into())
            }
        }
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
        let mut backoff = Backoff::new(FIRST_RETRY, self.options.max_backoff);
        loop {
            let result = match super::apply(&self.index, events).await {
                Ok(()) => self.checkpoints.save(shard, last).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => {
                    metric::SYNC_CHECKPOINT_TIMESTAMP
                        .gauge(&[])
                        .set(now_ms() as f64 / 1000.0);
                    return true;
                }
                Err(error) => {
                    metric::SYNC_ERRORS
                        .counter(&[("stage", "apply")])
                        .increment(1);
                    tracing::warn!(shard, events = events.len(), error = %error, "index update failed, retrying");
                    if !backoff.wait(shutdown).await {
                        return false;
                    }
                }
            }
        }
    }

    /// An iterator from the shard's position, loading the checkpoint the first time: a shard
    /// never read starts at its trim horizon ("First start" above).
    async fn iterator(&self, shard: &str, state: &mut ShardState) -> Result<String, SyncError> {
        if state.position == Position::Unknown {
            state.position = match self.checkpoints.load(shard).await? {
                Some(sequence) => Position::After(sequence),
                None => Position::Horizon,
            };
            tracing::info!(shard, resume = ?state.position, "reading shard");
        }
        let at = match &state.position {
            Position::After(sequence) => StartAt::After(sequence.clone()),
            Position::Unknown | Position::Horizon => StartAt::TrimHorizon,
        };
        Ok(self.source.iterator(shard, &at).await?)
    }
}
