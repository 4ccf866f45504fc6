//! `reindex`: rebuilds the index from the table, the repair for any drift, safe to run while
//! the table is written and the stream consumer applies its changes.
//!
//! There is no staging and no swap. Versions make the rebuild one more writer of the index
//! (`crate::index`, "Versions"):
//!
//! 1. **Scan.** A parallel-segment scan reads every comment, and each page is applied at once
//!    as upserts carrying the versions the scan read. The index refuses the ones it holds a
//!    newer state of (written or deleted since the scan read them), so the rebuild can never
//!    put an older state over a newer one, whatever the interleaving with the stream.
//! 2. **Confirm.** Two kinds of comments are then read again from the table, strongly
//!    consistent: those the index has but the scan did not see (deleted, or created after
//!    the scan passed them), and those whose scanned state the index refused. Each gets the
//!    table's present state as an ordinary versioned change (a deletion of the comments the
//!    table no longer has); where the index holds a *newer* version than the table itself (a
//!    table restored from a backup, an index changed by hand), the comment is repaired to the
//!    table's state, but only if the index still holds what was read (`PageIndex::repair`).
//!
//! So a reindex under live writes loses nothing, and a reindex that fails midway has made only
//! changes at least as new as what they replaced; there are no staging keys to clean up, and
//! the next run simply goes over everything again. While it runs, counts move as comments are
//! applied (from an empty index they grow to the full count).
//!
//! The moderation queues (`crate::domain::QueueList`) are lists like products' and are rebuilt
//! alike: a scanned comment that is not published is applied to its two queues too, and every
//! queue the index holds is confirmed, so a comment a queue holds in the wrong status leaves it.
//!
//! With a SKU, the scan still reads the whole table and keeps that product's comments (a scan
//! cannot be restricted to one GSI partition); only that product and its own queues are
//! confirmed (the shop's queues hold other products' comments too). The ids of the
//! scanned comments are held in memory until the end (16 bytes each).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use indicatif::ProgressBar;

use super::SyncError;
use super::scan::parallel_scan;
use crate::domain::{ChangeEvent, Comment, CommentId, IndexEntry, Queue, QueueList, Sku};
use crate::index::{Held, PageIndex, Repair};
use crate::store::CommentStore;

/// How often a progress line is logged during the scan.
const LOG_EVERY: Duration = Duration::from_secs(5);
/// Comments read again from the table per `get_many` in the confirm step.
const CONFIRM_CHUNK: usize = 1_000;
/// Products confirmed concurrently.
const PRODUCTS_IN_FLIGHT: usize = 8;

/// What a rebuild did.
#[derive(Clone, Debug, Default)]
pub struct ReindexReport {
    /// Comments read from the table.
    pub scanned: u64,
    /// Comments of the selected product(s) applied to the index (or found already current).
    pub indexed: u64,
    /// Scanned comments the index already held a newer state of (changed during the scan).
    pub stale: u64,
    /// Comments the index had and the table no longer has, removed.
    pub removed: u64,
    /// Comments set to the table's state although the index held a newer version.
    pub repaired: u64,
    /// Comments the store put in their count's place by helpful votes (DynamoDB: items
    /// without the right `helpfulRank`, `CommentStore::rerank`).
    pub reranked: u64,
    /// Products confirmed (including ones the index had and the table no longer has).
    pub products: usize,
    /// How long the rebuild took.
    pub elapsed: Duration,
}

/// A comment to read again from the table: what the index held for it, and the entry the
/// index held or was offered.
struct Doubt {
    entry: IndexEntry,
    held: Held,
}

/// What the scan step learned: the ids it saw per product, the scanned states the index
/// refused, and its counts.
struct Tally {
    seen: Mutex<BTreeMap<Sku, Vec<CommentId>>>,
    refused: Mutex<Vec<Doubt>>,
    scanned: AtomicU64,
    indexed: AtomicU64,
    reranked: AtomicU64,
    started: Instant,
    last_log: Mutex<Instant>,
}

impl Tally {
    fn new() -> Self {
        Self {
            seen: Mutex::default(),
            refused: Mutex::default(),
            scanned: AtomicU64::new(0),
            indexed: AtomicU64::new(0),
            reranked: AtomicU64::new(0),
            started: Instant::now(),
            last_log: Mutex::new(Instant::now()),
        }
    }

    /// Applies one scanned page (its comments of the selected product(s)) to the index and
    /// records what happened.
    async fn absorb<I: PageIndex>(
        &self,
        index: &I,
        only: Option<&Sku>,
        items: &[Comment],
        progress: &ProgressBar,
    ) -> Result<(), SyncError> {
        let events: Vec<ChangeEvent> = items
            .iter()
            .filter(|c| only.is_none_or(|sku| &c.sku == sku))
            .map(|c| ChangeEvent::Upsert {
                old: None,
                new: IndexEntry::from(c),
            })
            .collect();
        let stale = index.apply(&events).await?;
        {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            for event in &events {
                let entry = event.entry();
                // The product's list, and the side lists the comment is in (`QueueList`,
                // `AuthorList`).
                let queues = entry
                    .memberships()
                    .into_iter()
                    .filter(|e| e.sku.is_reserved());
                for list in std::iter::once(entry.sku.clone()).chain(queues.map(|e| e.sku)) {
                    seen.entry(list).or_default().push(entry.key.id());
                }
            }
        }
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(stale.iter().map(|s| Doubt {
                entry: events[s.event].entry().clone(),
                held: s.held,
            }));
        let total = self
            .scanned
            .fetch_add(items.len() as u64, Ordering::Relaxed)
            + items.len() as u64;
        self.indexed
            .fetch_add((events.len() - stale.len()) as u64, Ordering::Relaxed);
        progress.inc(items.len() as u64);
        let mut last = self.last_log.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= LOG_EVERY {
            *last = Instant::now();
            tracing::info!(
                scanned = total,
                indexed = self.indexed.load(Ordering::Relaxed),
                elapsed_ms = self.started.elapsed().as_millis() as u64,
                "reindex scanning"
            );
        }
        Ok(())
    }
}

/// Rebuilds the index (or only `only`'s comments) from a scan in `segments` parallel segments,
/// counting scanned comments on `progress`.
pub async fn reindex<S: CommentStore, I: PageIndex>(
    store: &S,
    index: &I,
    only: Option<&Sku>,
    segments: u32,
    progress: &ProgressBar,
) -> Result<ReindexReport, SyncError> {
    tracing::info!(sku = only.map(Sku::as_str), segments, "reindex started");
    let tally = Tally::new();
    {
        let tally = &tally;
        parallel_scan(store, segments, move |page| async move {
            let unranked: Vec<Comment> = page
                .unranked
                .into_iter()
                .filter(|c| only.is_none_or(|sku| &c.sku == sku))
                .collect();
            let reranked = store.rerank(&unranked).await?;
            tally.reranked.fetch_add(reranked, Ordering::Relaxed);
            tally.absorb(index, only, &page.items, progress).await
        })
        .await?;
    }
    let report = confirm_all(store, index, only, tally).await?;
    tracing::info!(
        scanned = report.scanned,
        indexed = report.indexed,
        stale = report.stale,
        removed = report.removed,
        repaired = report.repaired,
        reranked = report.reranked,
        products = report.products,
        elapsed_ms = report.elapsed.as_millis() as u64,
        "reindex done"
    );
    Ok(report)
}

/// The confirm step for every product the scan saw or the index holds (only `only`, when
/// given), after the scan's `tally`.
async fn confirm_all<S: CommentStore, I: PageIndex>(
    store: &S,
    index: &I,
    only: Option<&Sku>,
    tally: Tally,
) -> Result<ReindexReport, SyncError> {
    let mut seen = tally.seen.into_inner().unwrap_or_else(|p| p.into_inner());
    let refused = tally
        .refused
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let stale = refused.len() as u64;
    let mut doubts: BTreeMap<Sku, Vec<Doubt>> = BTreeMap::new();
    for doubt in refused {
        doubts
            .entry(doubt.entry.sku.clone())
            .or_default()
            .push(doubt);
    }
    let skus: Vec<Sku> = match only {
        // The product and its own queues (the shop's hold other products' comments too).
        Some(sku) => std::iter::once(sku.clone())
            .chain(
                Queue::ALL
                    .into_iter()
                    .map(|queue| QueueList::new(queue, Some(sku.clone())))
                    .map(|queue| queue.index_name()),
            )
            .collect(),
        None => {
            let mut skus: Vec<Sku> = seen.keys().cloned().collect();
            skus.extend(index.products().await?);
            skus.sort();
            skus.dedup();
            skus
        }
    };
    let mut report = ReindexReport {
        scanned: tally.scanned.into_inner(),
        indexed: tally.indexed.into_inner(),
        stale,
        reranked: tally.reranked.into_inner(),
        // Products only: the queues confirmed with them are lists, not products.
        products: skus.iter().filter(|sku| !sku.is_reserved()).count(),
        ..ReindexReport::default()
    };
    let work: Vec<(Sku, Vec<CommentId>, Vec<Doubt>)> = skus
        .into_iter()
        .map(|sku| {
            let mut ids = seen.remove(&sku).unwrap_or_default();
            ids.sort_unstable();
            let mine = doubts.remove(&sku).unwrap_or_default();
            (sku, ids, mine)
        })
        .collect();
    let outcomes: Vec<(u64, u64)> = futures::stream::iter(work)
        .map(|(sku, ids, doubts)| confirm(store, index, sku, ids, doubts))
        .buffer_unordered(PRODUCTS_IN_FLIGHT)
        .try_collect()
        .await?;
    for (removed, repaired) in outcomes {
        report.removed += removed;
        report.repaired += repaired;
    }
    report.elapsed = tally.started.elapsed();
    Ok(report)
}

/// The confirm step for one product (see the module doc): reads again from the table the
/// comments the index has that the scan did not see (`seen` is sorted), and the ones whose
/// scanned state was refused, and makes the index agree with what the table says now.
/// Returns how many comments were removed and how many repaired.
async fn confirm<S: CommentStore, I: PageIndex>(
    store: &S,
    index: &I,
    sku: Sku,
    seen: Vec<CommentId>,
    mut doubts: Vec<Doubt>,
) -> Result<(u64, u64), SyncError> {
    doubts.extend(
        index
            .entries(&sku)
            .await?
            .into_iter()
            .filter(|e| seen.binary_search(&e.key.id()).is_err())
            .map(|entry| Doubt {
                held: Held::Live {
                    version: entry.version,
                },
                entry,
            }),
    );
    let (mut removed, mut repaired) = (0, 0);
    for chunk in doubts.chunks(CONFIRM_CHUNK) {
        let ids: Vec<CommentId> = chunk.iter().map(|d| d.entry.key.id()).collect();
        let now = store.get_many(&ids).await?;
        let mut events = Vec::new();
        let mut repairs = Vec::new();
        for (doubt, table) in chunk.iter().zip(now) {
            match decide(doubt, table.as_ref()) {
                Decision::Nothing => {}
                Decision::Apply(event) => events.push(event),
                Decision::Repair(repair) => repairs.push(repair),
            }
        }
        let removals = events
            .iter()
            .filter(|e| matches!(e, ChangeEvent::Remove { .. }))
            .count();
        let stale = index.apply(&events).await?;
        removed += (removals
            - stale
                .iter()
                .filter(|s| matches!(events[s.event], ChangeEvent::Remove { .. }))
                .count()) as u64;
        let missed = index.repair(&repairs).await?;
        repaired += (repairs.len() - missed.len()) as u64;
    }
    if removed > 0 || repaired > 0 {
        tracing::info!(sku = sku.as_str(), removed, repaired, "reindex corrected");
    }
    Ok((removed, repaired))
}

enum Decision {
    Nothing,
    Apply(ChangeEvent),
    Repair(Repair),
}

/// What to do about a doubted comment, given the table's present state of it.
fn decide(doubt: &Doubt, table: Option<&Comment>) -> Decision {
    let repair = |state: Option<IndexEntry>| {
        Decision::Repair(Repair {
            sku: doubt.entry.sku.clone(),
            key: doubt.entry.key,
            expected: doubt.held,
            state,
        })
    };
    match (table, doubt.held) {
        // Gone from the table and not live in the index: nothing to do.
        (None, Held::Nothing | Held::Deleted { .. }) => Decision::Nothing,
        // Gone from the table: the index deletes it (one version after what it holds, so the
        // real deletion, when its change arrives, is at least as new and keeps it deleted).
        (None, Held::Live { version }) => Decision::Apply(ChangeEvent::removal(IndexEntry {
            version,
            ..doubt.entry.clone()
        })),
        (Some(comment), held) => {
            // The comment as the list holds it: a queue holds it only in the queue's status.
            let entry = IndexEntry::from(comment).in_list(&doubt.entry.sku);
            let behind = match held {
                Held::Nothing => false,
                Held::Live { version } => entry.version < version,
                Held::Deleted { version } => entry.version <= version,
            };
            if behind {
                // The table is behind the index: the table is the truth (a comment that is
                // not published is in no public set, and in no queue but its status's).
                repair(Some(entry).filter(|entry| entry.published))
            } else {
                Decision::Apply(ChangeEvent::Upsert {
                    old: None,
                    new: entry,
                })
            }
        }
    }
}
