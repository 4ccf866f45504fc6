//! Live comments: the changes this server's index applies, fanned out to its subscribers
//! (`Subscription.commentEvents`).
//!
//! Whatever feeds the index in this process publishes what it applied ([`Publishing`]); one
//! task ([`run_feed`]) reads the comment of each upsert from the store and the product's rating
//! counts from the index, once per batch, and broadcasts each change to every subscription of
//! this server ([`Hub`]). A subscription keeps what matches its product and rating filter.
//!
//! Each subscriber reads the broadcast at its own pace, from a ring of [`Hub::capacity`] changes
//! shared by all: memory does not grow with slow readers. A subscriber that falls a whole ring
//! behind has lost changes and is told so and closed (`SLOW_SUBSCRIBER`), rather than buffered
//! without bound. The hub also keeps the last [`RECENT`] changes, with the time each was
//! applied, so a subscription that resumes (`after:`) can be given the edits and deletions it
//! missed, or be told that they are no longer held.
//!
//! This feed covers the changes this process applies: the embedded store's, and the table
//! stream's under `serve --sync`. A server that does not apply the stream itself has no events
//! to give, and refuses subscriptions with `SUBSCRIPTIONS_UNAVAILABLE` rather than stay silent.

mod publish;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

pub use publish::Publishing;

use crate::domain::{ChangeEvent, Comment, CommentId, Sku};
use crate::index::PageIndex;
use crate::store::CommentStore;

/// How many recent changes the hub keeps for resuming subscriptions.
pub const RECENT: usize = 10_000;

/// One change the index applied, as subscribers need it.
#[derive(Clone, Debug)]
pub struct LiveChange {
    /// The change itself (old and new ratings decide what a rating filter sees).
    pub change: ChangeEvent,
    /// For an upsert, the comment as the store holds it now; `None` for a deletion, or when
    /// the comment is gone again (a deletion follows).
    pub comment: Option<Comment>,
    /// The product's count of each rating once the change's batch was applied; `None` when the
    /// index could not be asked.
    pub rating_counts: Option<[u64; 5]>,
    /// When it was applied, in epoch milliseconds.
    pub applied_ms: u64,
}

impl LiveChange {
    pub fn sku(&self) -> &Sku {
        &self.change.entry().sku
    }

    pub fn id(&self) -> CommentId {
        self.change.entry().key.id()
    }
}

/// Why a resumed subscription cannot be given every change it missed.
#[derive(Debug, PartialEq, Eq)]
pub struct Forgotten {
    /// The oldest change still held was applied at this time.
    pub oldest_held_ms: Option<u64>,
}

/// The fan-out point of one server.
#[derive(Clone, Debug)]
pub struct Hub {
    sender: broadcast::Sender<Arc<LiveChange>>,
    recent: Arc<Mutex<Recent>>,
    capacity: usize,
    /// Whether anything in this process publishes to the hub.
    fed: bool,
}

#[derive(Debug, Default)]
struct Recent {
    changes: VecDeque<Arc<LiveChange>>,
    /// Set once a change has been dropped from `changes`: older ones are no longer held.
    trimmed: bool,
}

impl Hub {
    /// A hub whose subscribers may fall up to `capacity` changes behind.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let (sender, _) = broadcast::channel(capacity);
        Self {
            sender,
            recent: Arc::default(),
            capacity,
            fed: false,
        }
    }

    /// How many changes a subscriber may fall behind before it is closed.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether this process publishes changes here (the embedded store, or `--sync`).
    pub fn is_fed(&self) -> bool {
        self.fed
    }

    /// The sender [`Publishing`] indexes write to; the hub counts as fed from now on.
    pub fn feed(
        &mut self,
    ) -> (
        UnboundedSender<Vec<ChangeEvent>>,
        UnboundedReceiver<Vec<ChangeEvent>>,
    ) {
        self.fed = true;
        unbounded_channel()
    }

    /// A receiver of every change broadcast from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveChange>> {
        self.sender.subscribe()
    }

    /// The changes to `sku` applied at or after `since_ms`, oldest first, if the hub still
    /// holds every change from then on.
    pub fn since(&self, sku: &Sku, since_ms: u64) -> Result<Vec<Arc<LiveChange>>, Forgotten> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let oldest_held_ms = recent.changes.front().map(|c| c.applied_ms);
        if recent.trimmed && oldest_held_ms.is_none_or(|oldest| oldest > since_ms) {
            return Err(Forgotten { oldest_held_ms });
        }
        Ok(recent
            .changes
            .iter()
            .filter(|c| c.applied_ms >= since_ms && c.sku() == sku)
            .cloned()
            .collect())
    }

    fn broadcast(&self, change: LiveChange) {
        let change = Arc::new(change);
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            if recent.changes.len() == RECENT {
                recent.changes.pop_front();
                recent.trimmed = true;
            }
            recent.changes.push_back(change.clone());
        }
        metrics::counter!("dynapage_live_changes_total").increment(1);
        // No receiver is not an error: nobody is subscribed right now.
        let _ = self.sender.send(change);
    }
}

/// Reads the batches [`Publishing`] indexes send, completes each change (the comment from the
/// store, the product's rating counts from the index: one read of each per batch and product)
/// and broadcasts it, until the feed closes or `shutdown` fires.
pub async fn run_feed<S: CommentStore, I: PageIndex>(
    mut feed: UnboundedReceiver<Vec<ChangeEvent>>,
    store: S,
    index: I,
    hub: Hub,
    shutdown: CancellationToken,
) {
    loop {
        let batch = tokio::select! {
            batch = feed.recv() => match batch {
                Some(batch) => batch,
                None => return,
            },
            () = shutdown.cancelled() => return,
        };
        let applied_ms = now_ms();
        let upserts: Vec<CommentId> = batch
            .iter()
            .filter(|c| matches!(c, ChangeEvent::Upsert { .. }))
            .map(|c| c.entry().key.id())
            .collect();
        let comments = if upserts.is_empty() {
            Vec::new()
        } else {
            match store.get_many(&upserts).await {
                Ok(found) => found,
                Err(error) => {
                    tracing::warn!(%error, changes = batch.len(), "live feed: cannot read the changed comments; their events carry no comment");
                    vec![None; upserts.len()]
                }
            }
        };
        let mut comments = comments.into_iter();
        let mut counts: Vec<(Sku, Option<[u64; 5]>)> = Vec::new();
        for change in batch {
            let sku = change.entry().sku.clone();
            let rating_counts = match counts.iter().find(|(s, _)| *s == sku) {
                Some((_, c)) => *c,
                None => {
                    let c = index.rating_counts(&sku).await.ok();
                    counts.push((sku, c));
                    c
                }
            };
            let comment = match change {
                ChangeEvent::Upsert { .. } => comments.next().flatten(),
                ChangeEvent::Remove { .. } => None,
            };
            hub.broadcast(LiveChange {
                change,
                comment,
                rating_counts,
                applied_ms,
            });
        }
    }
}

/// Now, in epoch milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
