//! `reindex`: rebuilds the index from the table, the repair for any drift.
//!
//! A parallel-segment scan stages every comment under a fresh rebuild run (nothing live
//! changes while it runs), then each product's staged sets are swapped in atomically
//! ([`PageIndex::commit`]). Products the index has but the table no longer has are committed
//! empty, so their stale sets go too.
//!
//! With a SKU, the scan still reads the whole table and keeps that product's comments
//! (a scan cannot be restricted to one GSI partition); only that product is swapped.
//!
//! A write the stream consumer applies while the scan runs may be overwritten by the swap
//! if the scan read the comment before the write; `verify` afterwards shows such leftovers,
//! and the next change of the comment, or another reindex, repairs them.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::SyncError;
use super::scan::parallel_scan;
use crate::domain::{IndexEntry, Sku};
use crate::index::PageIndex;
use crate::store::CommentStore;

/// How often a progress line is logged during the scan.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// What a rebuild did.
#[derive(Clone, Debug)]
pub struct ReindexReport {
    /// The rebuild run id (names the staging keys).
    pub run: String,
    /// Comments read from the table.
    pub scanned: u64,
    /// Comments written to the index (those of the selected product with a SKU).
    pub indexed: u64,
    /// Products swapped in (including emptied ones).
    pub products: usize,
    pub elapsed: Duration,
}

/// Rebuilds the index (or only `only`'s sets) from a scan in `segments` parallel segments,
/// counting scanned comments on `progress`.
pub async fn reindex<S: CommentStore, I: PageIndex>(
    store: &S,
    index: &I,
    only: Option<&Sku>,
    segments: u32,
    progress: &ProgressBar,
) -> Result<ReindexReport, SyncError> {
    let started = Instant::now();
    let run = ulid::Ulid::new().to_string();
    let seen: Mutex<BTreeSet<Sku>> = Mutex::default();
    let scanned = AtomicU64::new(0);
    let indexed = AtomicU64::new(0);
    let last_log = Mutex::new(Instant::now());
    tracing::info!(run = %run, sku = only.map(Sku::as_str), segments, "reindex started");
    {
        let (run, seen, scanned, indexed, last_log) = (&run, &seen, &scanned, &indexed, &last_log);
        parallel_scan(store, segments, move |items| async move {
            let entries: Vec<IndexEntry> = items
                .iter()
                .filter(|c| only.is_none_or(|sku| &c.sku == sku))
                .map(IndexEntry::from)
                .collect();
            index.stage(run, &entries).await?;
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(entries.iter().map(|e| e.sku.clone()));
            let total =
                scanned.fetch_add(items.len() as u64, Ordering::Relaxed) + items.len() as u64;
            indexed.fetch_add(entries.len() as u64, Ordering::Relaxed);
            progress.inc(items.len() as u64);
            let mut last = last_log.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() >= LOG_EVERY {
                *last = Instant::now();
                tracing::info!(
                    scanned = total,
                    indexed = indexed.load(Ordering::Relaxed),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "reindex scanning"
                );
            }
            Ok(())
        })
        .await?;
    }
    let skus: Vec<Sku> = match only {
        Some(sku) => vec![sku.clone()],
        None => {
            let mut skus = seen.into_inner().unwrap_or_else(|p| p.into_inner());
            skus.extend(index.products().await?);
            skus.into_iter().collect()
        }
    };
    index.commit(&run, &skus).await?;
    let report = ReindexReport {
        run,
        scanned: scanned.into_inner(),
        indexed: indexed.into_inner(),
        products: skus.len(),
        elapsed: started.elapsed(),
    };
    tracing::info!(
        run = %report.run,
        scanned = report.scanned,
        indexed = report.indexed,
        products = report.products,
        elapsed_ms = report.elapsed.as_millis() as u64,
        "reindex committed"
    );
    Ok(report)
}
