//! [`Publishing`]: an index that tells the live feed what it applied.
//!
//! Whatever feeds the index in this process (the embedded store's change feed, `serve --sync`'s
//! stream consumer) applies through it, so every change the index takes is published once,
//! after it is applied: a subscriber who then asks `totalCount` sees the change counted. Changes
//! the index refused as stale (replays, retries) are not published again.

use tokio::sync::mpsc::UnboundedSender;

use crate::domain::{ChangeEvent, IndexEntry, PageLayout, RatingSet, Sku, SortKey};
use crate::index::{IndexError, PageIndex, Positions, Repair, Stale};

/// `I`, publishing each change it applies to the live feed.
#[derive(Clone, Debug)]
pub struct Publishing<I> {
    inner: I,
    /// `None`: publish nothing (a process without subscribers, such as `sync`).
    feed: Option<UnboundedSender<Vec<ChangeEvent>>>,
}

impl<I> Publishing<I> {
    pub fn new(inner: I, feed: Option<UnboundedSender<Vec<ChangeEvent>>>) -> Self {
        Self { inner, feed }
    }
}

impl<I: PageIndex> PageIndex for Publishing<I> {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        self.inner.count(sku, ratings).await
    }

    async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], IndexError> {
        self.inner.rating_counts(sku).await
    }

    async fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: crate::domain::Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Result<Option<SortKey>, IndexError> {
        self.inner.key_at(sku, ratings, order, after, rank).await
    }

    async fn positions(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        anchor: Option<SortKey>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        self.inner.positions(sku, ratings, anchor, layout).await
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let stale = self.inner.apply(events).await?;
        let Some(feed) = &self.feed else {
            return Ok(stale);
        };
        let refused: std::collections::HashSet<usize> = stale.iter().map(|s| s.event).collect();
        let applied: Vec<ChangeEvent> = events
            .iter()
            .enumerate()
            .filter(|(i, _)| !refused.contains(i))
            .map(|(_, event)| event.clone())
            .collect();
        if !applied.is_empty() {
            // Only fails when the live feed has stopped (the server is shutting down).
            let _ = feed.send(applied);
        }
        Ok(stale)
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
