//! An embedded index that records what it was asked to apply, and can be told to fail, so a
//! stream test can say which changes arrived, in which order, how often, and what the
//! checkpoint was at each attempt.

use std::sync::{Arc, Mutex, MutexGuard};

use dynapage::domain::{
    ChangeEvent, IndexEntry, Listing, Order, PageLayout, Position, RatingSet, Sku,
};
use dynapage::index::memory::MemoryIndex;
use dynapage::index::{IndexError, PageIndex, Positions, Repair, Stale, View, ViewRequest};
use dynapage::sync::Checkpoints;

/// One call of `apply`.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub events: Vec<ChangeEvent>,
    /// The checkpoint of the watched shard when the call was made.
    pub checkpoint: Option<String>,
    pub failed: bool,
}

#[derive(Debug, Default)]
struct Log {
    attempts: Vec<Attempt>,
    failures_left: usize,
}

/// Clones share the index and the log.
#[derive(Clone, Debug)]
pub struct RecordingIndex {
    inner: MemoryIndex,
    log: Arc<Mutex<Log>>,
    /// The checkpoints and shard whose position each attempt notes.
    watched: Option<(Checkpoints, String)>,
}

impl RecordingIndex {
    pub fn new() -> Self {
        Self {
            inner: MemoryIndex::new(),
            log: Arc::default(),
            watched: None,
        }
    }

    /// Notes `shard`'s checkpoint in `checkpoints` at every attempt.
    pub fn watching(mut self, checkpoints: &Checkpoints, shard: &str) -> Self {
        self.watched = Some((checkpoints.clone(), shard.to_owned()));
        self
    }

    /// The next `count` applies fail as an unreachable index does, applying nothing.
    pub fn fail_next(&self, count: usize) {
        self.lock().failures_left = count;
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn attempts(&self) -> Vec<Attempt> {
        self.lock().attempts.clone()
    }

    /// Every change applied, in order (failed attempts left out).
    pub fn applied(&self) -> Vec<ChangeEvent> {
        self.attempts()
            .into_iter()
            .filter(|a| !a.failed)
            .flat_map(|a| a.events)
            .collect()
    }
}

impl PageIndex for RecordingIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        self.inner.count(sku, ratings).await
    }

    async fn rating_counts_since(
        &self,
        lists: &[Sku],
        since_ms: u64,
    ) -> Result<Vec<[u64; 5]>, IndexError> {
        self.inner.rating_counts_since(lists, since_ms).await
    }

    async fn key_at(
        &self,
        sku: &Sku,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> Result<Option<Position>, IndexError> {
        self.inner.key_at(sku, listing, order, after, rank).await
    }

    async fn positions(
        &self,
        sku: &Sku,
        listing: Listing,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        self.inner.positions(sku, listing, anchor, layout).await
    }

    async fn view(
        &self,
        sku: &Sku,
        listing: Listing,
        request: ViewRequest,
    ) -> Result<View, IndexError> {
        self.inner.view(sku, listing, request).await
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let checkpoint = match &self.watched {
            Some((checkpoints, shard)) => checkpoints.load(shard).await?,
            None => None,
        };
        let failed = {
            let mut log = self.lock();
            let failed = log.failures_left > 0;
            log.failures_left = log.failures_left.saturating_sub(1);
            log.attempts.push(Attempt {
                events: events.to_vec(),
                checkpoint,
                failed,
            });
            failed
        };
        if failed {
            return Err(IndexError::Unavailable("injected index failure".into()));
        }
        self.inner.apply(events).await
    }

    async fn repair(&self, repairs: &[Repair]) -> Result<Vec<Repair>, IndexError> {
        self.inner.repair(repairs).await
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        self.inner.entries(sku).await
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        self.inner.products().await
    }

    async fn ping(&self) -> Result<(), IndexError> {
        self.inner.ping().await
    }
}
