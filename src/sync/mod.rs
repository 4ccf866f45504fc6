//! Keeping the index true (`docs/architecture.md`, a write): change events from the store are
//! applied to the index, in order, idempotently. The embedded store's feed and the DynamoDB Streams
//! consumer ([`stream`], reading the store's [`ChangeSource`] port) both end in [`apply`], so there
//! is one code path from a write to the index. [`reindex()`] rebuilds the index from the table and
//! [`verify()`] reports where they differ (and where a comment's helpful count differs from its
//! votes).
//!
//! This layer knows nothing of GraphQL; the streams SDK appears only behind [`ChangeSource`]
//! (in the DynamoDB adapter), and Redis only behind [`Checkpoints`].
//!
//! [`ChangeSource`]: crate::store::change_source::ChangeSource

mod checkpoint;
pub mod helpful_counts;
pub mod lambda;
pub mod reindex;
mod scan;
mod shards;
pub mod stream;
pub mod verify;

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::backoff::{Backoff, until_cancelled};
use crate::domain::ChangeEvent;
use crate::index::{IndexError, PageIndex};
use crate::store::StoreError;
use crate::store::change_source::SourceError;
use crate::telemetry::metric;

pub use self::checkpoint::Checkpoints;
pub use self::helpful_counts::{CountMismatch, HelpfulCheck};
pub use self::lambda::apply_lambda_batch;
pub use self::reindex::{ReindexReport, reindex};
pub use self::stream::{StreamConsumer, StreamOptions};
pub use self::verify::{DriftReport, ProductDrift, verify};

/// Why the stream consumer, a rebuild or a verification stopped.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The table has no stream to consume.
    #[error(
        "table `{table}` has no stream: enable one with NEW_AND_OLD_IMAGES (--create-tables does for new tables)"
    )]
    NoStream {
        /// The table's name.
        table: String,
    },
    /// The store has no DynamoDB Streams client to read the stream with.
    #[error("the DynamoDB store was built without a DynamoDB Streams client")]
    NoStreamsClient,
    /// Reading the comment store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading or writing the page index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Listing shards or reading records from the stream failed.
    #[error("reading the change stream failed")]
    Stream(#[from] SourceError),
}

/// Most events applied in one index round trip.
const MAX_BATCH: usize = 1_000;

/// The first pause after a failed index write or stream read (and a seed's failed put); the
/// pauses double from it up to each caller's cap.
pub(crate) const FIRST_RETRY: Duration = Duration::from_millis(50);

/// Applies one ordered batch of changes to the index: the one path from a write to the index
/// (the embedded feed, `sync`, the Lambda handler). Changes older than what the index holds
/// are refused by the index (versions, `crate::index`) and counted, not treated as failures:
/// they are replays, retries or changes a reindex already applied.
pub async fn apply<I: PageIndex>(index: &I, events: &[ChangeEvent]) -> Result<(), IndexError> {
    let stale = index.apply(events).await?;
    metric::SYNC_EVENTS_APPLIED
        .counter(&[])
        .increment((events.len() - stale.len()) as u64);
    if !stale.is_empty() {
        metric::SYNC_EVENTS_STALE
            .counter(&[])
            .increment(stale.len() as u64);
        tracing::debug!(
            events = events.len(),
            stale = stale.len(),
            "stale changes refused"
        );
    }
    Ok(())
}

/// Follows the embedded store's change feed until it closes or `shutdown` fires.
///
/// A batch that fails (the index is down) is retried with backoff and never dropped: the index
/// may lag, but it does not lose a change.
pub async fn follow_feed<I: PageIndex>(
    mut feed: UnboundedReceiver<ChangeEvent>,
    index: I,
    shutdown: CancellationToken,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let Some(received) =
            until_cancelled(feed.recv_many(&mut batch, MAX_BATCH), &shutdown).await
        else {
            return;
        };
        if received == 0 {
            return;
        }
        let mut backoff = Backoff::new(FIRST_RETRY, Duration::from_secs(5));
        while let Err(error) = apply(&index, &batch).await {
            tracing::warn!(events = batch.len(), %error, "index update failed; retrying");
            if !backoff.wait(&shutdown).await {
                return;
            }
        }
        batch.clear();
    }
}
