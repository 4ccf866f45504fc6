//! A store's change stream, cut into shards, behind a small trait: the port between the
//! adapters that publish a table's changes and the stream consumer that reads them.
//!
//! The consumer (`crate::sync::stream`) owns shard traversal, lineage, checkpoints and what to
//! do when an iterator expires or records were trimmed; a [`ChangeSource`] only answers the
//! three calls a shard stream has (list shards, get an iterator, read a batch) in domain types.
//! The DynamoDB Streams implementation lives in the DynamoDB adapter
//! ([`DynamoChangeSource`](super::dynamo::DynamoChangeSource)), which is the only place that
//! sees the SDK; the tests drive the consumer with a scripted in-memory source, to produce what
//! DynamoDB Local cannot (shard splits, expired iterators, trimmed records).
//!
//! It sits in the store layer, beside [`CommentStore`](super::CommentStore), so that adapters
//! implement it without depending on `sync`, which sits above the store and depends on it.

use std::future::Future;

use crate::domain::ChangeEvent;
use crate::error::BoxError;

/// One shard as the stream lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// The shard's id.
    pub id: String,
    /// The shard this one continues (after a split or a roll-over): it is read only once its
    /// parent is finished.
    pub parent: Option<String>,
    /// The shard has an ending sequence number: no record will be added to it.
    pub closed: bool,
}

/// Where an iterator starts reading a shard.
///
/// There is no `LATEST`: the consumer never asks for it (see `crate::sync::stream`, "First
/// start"), because records written before it started would be lost to the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartAt {
    /// The oldest record the stream still keeps (`TRIM_HORIZON`).
    TrimHorizon,
    /// Just after this sequence number (`AFTER_SEQUENCE_NUMBER`, a checkpoint).
    After(String),
}

/// One read of a shard.
#[derive(Debug, Default)]
pub struct Batch {
    /// The batch's changes in stream order, each with its record's sequence number.
    pub records: Vec<(String, ChangeEvent)>,
    /// The sequence number of the last record read, which is where a checkpoint goes. It may
    /// be past the last change: a record that is not a change is logged and skipped by the
    /// source, and must not be read again. `None` when the read found no record.
    pub last_sequence: Option<String>,
    /// How many records were read, skipped ones included.
    pub read: usize,
    /// When the last record was written (milliseconds since the epoch), for the lag metric.
    pub last_written_ms: Option<i64>,
    /// The iterator to read on with; `None` when the shard is closed and read to its end.
    pub next: Option<String>,
}

/// Why a call on a [`ChangeSource`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The iterator is too old to use (DynamoDB's live 15 minutes): get another one.
    #[error("the shard iterator expired")]
    ExpiredIterator,
    /// The records asked for are older than the stream keeps (24 hours on DynamoDB).
    #[error("the records asked for were trimmed from the stream")]
    TrimmedData,
    /// The shard is no longer in the stream.
    #[error("the shard is no longer in the stream")]
    ShardGone,
    /// The table has no stream to read.
    #[error("the table has no stream")]
    NoStream,
    /// A later attempt may succeed (throttled, unreachable, timed out).
    #[error("the change stream is unavailable")]
    Unavailable(#[source] BoxError),
    /// A later attempt will fail the same way (a missing table, a misconfiguration).
    #[error("the change stream refused the call")]
    Failed(#[source] BoxError),
}

/// A change stream read shard by shard. Calls on different shards may run concurrently.
pub trait ChangeSource: Send + Sync + 'static {
    /// What the stream belongs to (the table), for logs.
    fn name(&self) -> &str;

    /// Finds the stream; called before any other call, and again after an `Unavailable`.
    /// Returns what identifies the stream in logs (its ARN).
    fn open(&self) -> impl Future<Output = Result<String, SourceError>> + Send;

    /// Every shard the stream lists now, parents before children or not.
    fn shards(&self) -> impl Future<Output = Result<Vec<ShardInfo>, SourceError>> + Send;

    /// An iterator reading `shard` from `at`.
    fn iterator(
        &self,
        shard: &str,
        at: &StartAt,
    ) -> impl Future<Output = Result<String, SourceError>> + Send;

    /// The next records from `iterator`, and the iterator to read on with.
    fn read(&self, iterator: &str) -> impl Future<Output = Result<Batch, SourceError>> + Send;
}
