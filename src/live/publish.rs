//! [`Publishing`]: an index that tells the live feed what it applied.
//!
//! Whatever feeds the index (the embedded store's change feed, the stream consumer of `sync` and
//! `serve --sync`, the Lambda handler) applies through it, so every change the index takes is
//! published after it is applied: a subscriber who then asks `totalCount` sees the change
//! counted. Where it is published ([`Sink`]): to this process's hub with the embedded index, to
//! the Redis change log (which every server reads) with the Redis index.
//!
//! A change the index refused as an exact replay of what it holds (same version) is published
//! again: a process that applied a batch and stopped before publishing it republishes it when
//! the batch is retried, and the hub drops what it has already seen. So each change reaches
//! subscribers once, even across a crash between the two steps.
//!
//! With a [`Purger`], the products of the changes applied are purged from the CDN too
//! (`crate::purge`): queued, never awaited, so a CDN that is down never holds up the index.

use tokio::sync::mpsc::UnboundedSender;

use super::redis_log::RedisLog;
use crate::domain::{ChangeEvent, IndexEntry, Listing, PageLayout, Position, RatingSet, Sku};
use crate::index::{Held, IndexError, PageIndex, Positions, Repair, Stale, View, ViewRequest};
use crate::purge::Purger;

/// Where applied changes are published.
#[derive(Clone, Debug)]
pub enum Sink {
    /// Nowhere (`reindex`, `verify`: nobody subscribes to what they apply).
    None,
    /// This process's hub (the embedded index: only this process serves it).
    Local(UnboundedSender<Vec<ChangeEvent>>),
    /// The Redis change log, which every server reads.
    Redis(RedisLog),
}

/// `I`, publishing each change it applies.
#[derive(Clone, Debug)]
pub struct Publishing<I> {
    inner: I,
    sink: Sink,
    /// Purges the CDN's copies of the products each applied batch changed (`--purge-url`).
    purger: Option<Purger>,
}

impl<I> Publishing<I> {
    /// `inner`, publishing each change it applies to `sink`, purging nothing.
    pub fn new(inner: I, sink: Sink) -> Self {
        Self {
            inner,
            sink,
            purger: None,
        }
    }

    /// The same, also purging the CDN after each applied batch (never waiting for it).
    pub fn with_purger(mut self, purger: Option<Purger>) -> Self {
        self.purger = purger;
        self
    }
}

/// Whether the index refused `event` because it holds exactly that change already.
fn is_replay(event: &ChangeEvent, held: Held) -> bool {
    match (event, held) {
        (ChangeEvent::Upsert { new, .. }, Held::Live { version }) if new.published => {
            version == new.version
        }
        // A withdrawal is held as a deletion at its version.
        (ChangeEvent::Upsert { new, .. }, Held::Deleted { version }) if !new.published => {
            version == new.version
        }
        (ChangeEvent::Remove { version: v, .. }, Held::Deleted { version }) => version == *v,
        _ => false,
    }
}

impl<I: PageIndex> PageIndex for Publishing<I> {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        self.inner.count(sku, ratings).await
    }

    async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], IndexError> {
        self.inner.rating_counts(sku).await
    }

    async fn rating_counts_many(&self, skus: &[Sku]) -> Result<Vec<[u64; 5]>, IndexError> {
        self.inner.rating_counts_many(skus).await
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
        order: crate::domain::Order,
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
        let stale = self.inner.apply(events).await?;
        if let Some(purger) = &self.purger {
            let refused: std::collections::HashSet<usize> = stale.iter().map(|s| s.event).collect();
            purger.purge(
                (events.iter().enumerate())
                    .filter(|(i, _)| !refused.contains(i))
                    .map(|(_, event)| &event.entry().sku),
            );
        }
        if matches!(self.sink, Sink::None) {
            return Ok(stale);
        }
        let refused: std::collections::HashMap<usize, Held> =
            stale.iter().map(|s| (s.event, s.held)).collect();
        let published: Vec<ChangeEvent> = events
            .iter()
            .enumerate()
            .filter(|(i, event)| refused.get(i).is_none_or(|held| is_replay(event, *held)))
            .map(|(_, event)| event.clone())
            .collect();
        if published.is_empty() {
            return Ok(stale);
        }
        match &self.sink {
            Sink::None => {}
            // Only fails when the hub has stopped (the server is shutting down).
            Sink::Local(hub) => {
                let _ = hub.send(published);
            }
            // A failure fails the batch, which is then retried: the index refuses it as
            // replays, and it is published then.
            Sink::Redis(log) => log.append(&published).await?,
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

    async fn product_versions(
        &self,
        skus: &[Sku],
    ) -> Result<Vec<crate::index::ProductVersion>, IndexError> {
        self.inner.product_versions(skus).await
    }
}
