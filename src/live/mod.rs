//! Live comments: the changes this server's index applies, fanned out to its subscribers
//! (`Subscription.commentEvents`).
//!
//! Whatever feeds the index publishes what it applied ([`Publishing`]): with the embedded index,
//! to this process; with the Redis index, to the Redis change log ([`redis_log`]: a Stream, and
//! why), which every server reads once, with one blocking `XREAD` however many clients it has. One task per server ([`run_feed`]) takes the changes from there, reads the
//! comment of each upsert from the store and the product's rating counts from the index, once
//! per batch, and broadcasts each change to every subscription of this server ([`Hub`]). A
//! subscription keeps what matches its product and rating filter. The hub drops a change it has
//! already broadcast (same comment, version and kind), which a publisher sends again after a
//! crash between applying and publishing.
//!
//! Each subscriber reads the broadcast at its own pace, from a ring of [`Hub::capacity`] changes
//! shared by all: memory does not grow with slow readers. A subscriber that falls a whole ring
//! behind has lost changes and is told so and closed (`SLOW_SUBSCRIBER`), rather than buffered
//! without bound. The hub also keeps the last [`RECENT`] changes, with the time each was
//! applied, so a subscription that resumes (`after:`) can be given the edits and deletions it
//! missed, or be told that they are no longer held.
//!
//! With the Redis index, some process must apply the table's stream (`sync`, `serve --sync` or
//! the Lambda consumer) for events to flow; servers only read the log.
//!
//! What one client may hold of the feed (sockets, subscriptions) is bounded by [`shares`].

mod publish;
pub mod redis_log;
pub mod shares;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

pub use publish::{Publishing, Sink};

use self::redis_log::LogReader;
use crate::clock::now_ms;
use crate::domain::{ChangeEvent, Comment, CommentId, Sku, verified_list};
use crate::index::PageIndex;
use crate::store::CommentStore;
use crate::telemetry::metric;

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
    /// For a verified purchase's change, its product's verified twin's count of each rating
    /// ([`crate::domain::verified_list`]), as [`LiveChange::rating_counts`]; `None` otherwise.
    pub verified_counts: Option<[u64; 5]>,
    /// When it was applied, in epoch milliseconds.
    pub applied_ms: u64,
    /// Its place in this hub's broadcast, from 0 (set by the hub): a subscriber that joins a
    /// cohort after the cohort's run was subscribed skips what came before it joined.
    pub seq: u64,
}

impl LiveChange {
    /// The product of the comment the change is about.
    pub fn sku(&self) -> &Sku {
        &self.change.entry().sku
    }

    /// The id of the comment the change is about.
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
    /// When the hub was made: it knows nothing of changes before.
    started_ms: u64,
}

#[derive(Debug, Default)]
struct Recent {
    changes: VecDeque<Arc<LiveChange>>,
    /// Set once a change has been dropped from `changes`: older ones are no longer held.
    trimmed: bool,
    /// The `seq` the next broadcast change gets.
    next_seq: u64,
    /// `(comment, version, deletion)` of each change in `changes`, to drop repeats.
    seen: std::collections::HashSet<(CommentId, u64, bool)>,
}

fn identity(change: &ChangeEvent) -> (CommentId, u64, bool) {
    (
        change.entry().key.id(),
        change.version(),
        matches!(change, ChangeEvent::Remove { .. }),
    )
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
            started_ms: now_ms(),
        }
    }

    /// How many changes a subscriber may fall behind before it is closed.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A channel for [`Sink::Local`] and [`Source::Local`].
    pub fn local_channel() -> (
        UnboundedSender<Vec<ChangeEvent>>,
        UnboundedReceiver<Vec<ChangeEvent>>,
    ) {
        unbounded_channel()
    }

    /// A receiver of every change broadcast from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveChange>> {
        self.sender.subscribe()
    }

    /// The changes to `sku` applied at or after `since_ms`, oldest first, if the hub holds
    /// every change from then on: it has run since then (a server started later knows nothing
    /// of what came before) and has not dropped any of them.
    pub fn since(&self, sku: &Sku, since_ms: u64) -> Result<Vec<Arc<LiveChange>>, Forgotten> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let oldest_held_ms = recent.changes.front().map(|c| c.applied_ms);
        if since_ms < self.started_ms
            || (recent.trimmed && oldest_held_ms.is_none_or(|oldest| oldest > since_ms))
        {
            return Err(Forgotten { oldest_held_ms });
        }
        Ok(recent
            .changes
            .iter()
            .filter(|c| c.applied_ms >= since_ms && c.sku() == sku)
            .cloned()
            .collect())
    }

    /// The `seq` of the next change the hub broadcasts: a receiver subscribed now gets every
    /// change from it on.
    pub fn next_seq(&self) -> u64 {
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_seq
    }

    /// Whether the hub has broadcast `change` already (a publisher's repeat).
    fn seen(&self, change: &ChangeEvent) -> bool {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent.seen.contains(&identity(change))
    }

    fn broadcast(&self, mut change: LiveChange) {
        // Numbered and sent under the lock, so `next_seq` and a receiver subscribed with it
        // agree on where the receiver starts.
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        change.seq = recent.next_seq;
        recent.next_seq += 1;
        let change = Arc::new(change);
        {
            if recent.changes.len() == RECENT {
                if let Some(old) = recent.changes.pop_front() {
                    let old = identity(&old.change);
                    recent.seen.remove(&old);
                }
                recent.trimmed = true;
            }
            recent.seen.insert(identity(&change.change));
            recent.changes.push_back(change.clone());
        }
        // No receiver is not an error: nobody is subscribed right now.
        let _ = self.sender.send(change);
        drop(recent);
        metric::LIVE_CHANGES.counter(&[]).increment(1);
    }
}

/// Where a server's hub takes applied changes from.
#[derive(Debug)]
pub enum Source {
    /// What [`Publishing`] indexes of this process send ([`Sink::Local`]).
    Local(UnboundedReceiver<Vec<ChangeEvent>>),
    /// The Redis change log ([`Sink::Redis`]).
    Redis(LogReader),
}

impl Source {
    /// The next batch; `None` once the source has closed or `shutdown` fired. A Redis error
    /// is logged and retried with backoff (the log is read on from where it stopped).
    async fn next(&mut self, shutdown: &CancellationToken) -> Option<Vec<ChangeEvent>> {
        match self {
            Source::Local(feed) => tokio::select! {
                batch = feed.recv() => batch,
                () = shutdown.cancelled() => None,
            },
            Source::Redis(log) => log.next_batch(shutdown).await,
        }
    }
}

/// Takes the changes from `source`, completes each (the comment from the store, the product's
/// rating counts from the index: one read of each per batch and product) and broadcasts it,
/// until the source closes or `shutdown` fires.
pub async fn run_feed<S: CommentStore, I: PageIndex>(
    mut source: Source,
    store: S,
    index: I,
    hub: Hub,
    shutdown: CancellationToken,
) {
    loop {
        let Some(mut batch) = source.next(&shutdown).await else {
            return;
        };
        batch.retain(|change| !hub.seen(change));
        if batch.is_empty() {
            continue;
        }
        let applied_ms = now_ms();
        // With nobody subscribed, changes are only kept for resuming, without their comments
        // (a resumed subscription reads those from the store): a server without subscribers
        // adds no reads to a busy table (a bulk load, a seed).
        let listening = hub.sender.receiver_count() > 0;
        let upserts: Vec<CommentId> = batch
            .iter()
            .filter(|c| matches!(c, ChangeEvent::Upsert { .. }))
            .map(|c| c.entry().key.id())
            .collect();
        let comments = if upserts.is_empty() || !listening {
            Vec::new()
        } else {
            match store.get_many(&upserts).await {
                Ok(found) => found,
                Err(error) => {
                    tracing::warn!(%error, changes = batch.len(), "live feed: cannot read the changed comments; their events carry no comment");
                    Vec::new()
                }
            }
        };
        let mut comments = comments.into_iter();
        let mut counts: Vec<(Sku, Option<[u64; 5]>)> = Vec::new();
        for change in batch {
            let sku = change.entry().sku.clone();
            let rating_counts = counts_of(&mut counts, &index, &sku, listening).await;
            let verified_counts = match change.entry().verified {
                true => counts_of(&mut counts, &index, &verified_list(&sku), listening).await,
                false => None,
            };
            let comment = match change {
                ChangeEvent::Upsert { .. } => comments.next().flatten(),
                ChangeEvent::Remove { .. } => None,
            };
            hub.broadcast(LiveChange {
                change,
                comment,
                rating_counts,
                verified_counts,
                applied_ms,
                seq: 0,
            });
        }
    }
}

/// `list`'s count of each rating, read from `index` once per batch (`counts` keeps what was
/// read); `None` when nobody listens or the index cannot be asked.
async fn counts_of<I: PageIndex>(
    counts: &mut Vec<(Sku, Option<[u64; 5]>)>,
    index: &I,
    list: &Sku,
    listening: bool,
) -> Option<[u64; 5]> {
    if let Some((_, c)) = counts.iter().find(|(s, _)| s == list) {
        return *c;
    }
    if !listening {
        return None;
    }
    let c = index.rating_counts(list).await.ok();
    counts.push((list.clone(), c));
    c
}
