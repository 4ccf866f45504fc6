//! `verify`: compares the table with the index and reports drift per product and rating.
//!
//! The table side is a parallel full scan, or with a SKU the product's `byProduct` GSI
//! partition and its queues' `byProductQueue` partitions; the index side is
//! [`PageIndex::entries`] of every list either side knows: products, and moderation queues
//! (`crate::domain::QueueList`), which hold the comments in their status.
//! Comments are matched by id: missing from the index, extra in the index (deleted in the
//! table), or present in both with another rating or timestamp. While writes go on, comments
//! written within the stream delay show up as drift; verify again to tell lag from loss.
//!
//! The table's entries of the checked products are held in memory (about 60 bytes a comment).
//!
//! A full verification also holds each comment's helpful count to the votes the table has for
//! it (`helpful_counts`); with a SKU it does not (no vote is in a product's partition).

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Mutex;

use super::SyncError;
use super::helpful_counts::{HelpfulCheck, HelpfulTally};
use super::scan::parallel_scan;
use crate::domain::{CommentId, IndexEntry, Order, Queue, QueueList, Rating, Sku};
use crate::index::PageIndex;
use crate::store::{CommentStore, KeyQuery, Partition};

/// Items per GSI query when one product is verified.
const QUERY_PAGE: usize = 1_000;

/// A comment both sides have, placed differently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The comment as the table holds it.
    pub table: IndexEntry,
    /// The comment as the index holds it.
    pub index: IndexEntry,
}

/// How one product's index differs from its comments in the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductDrift {
    /// The product.
    pub sku: Sku,
    /// Comments per rating (index 0 is rating 1) in the table and in the index.
    pub table_counts: [u64; 5],
    /// Comments per rating in the index, like `table_counts`.
    pub index_counts: [u64; 5],
    /// In the table, not in the index (newest first).
    pub missing: Vec<IndexEntry>,
    /// In the index, not in the table (newest first).
    pub extra: Vec<IndexEntry>,
    /// In both, with another rating (or timestamp, or version) in the index.
    pub mismatched: Vec<Mismatch>,
}

impl ProductDrift {
    /// Whether the index holds exactly the table's comments, each as the table does.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty() && self.mismatched.is_empty()
    }
}

/// The outcome of a verification.
#[derive(Clone, Debug, Default)]
pub struct DriftReport {
    /// Products compared.
    pub products: usize,
    /// Comments found in the table.
    pub comments: u64,
    /// The products that drifted, by SKU.
    pub drifted: Vec<ProductDrift>,
    /// Helpful counts against votes; `None` when not checked (a verification of one SKU).
    pub helpful: Option<HelpfulCheck>,
}

impl DriftReport {
    /// Whether no product drifted and the helpful counts, if checked, are clean.
    pub fn is_clean(&self) -> bool {
        self.drifted.is_empty() && self.helpful.as_ref().is_none_or(HelpfulCheck::is_clean)
    }
}

/// Compares the table (or only `only`'s partition) with the index.
pub async fn verify<S: CommentStore, I: PageIndex>(
    store: &S,
    index: &I,
    only: Option<&Sku>,
    segments: u32,
) -> Result<DriftReport, SyncError> {
    let mut table: BTreeMap<Sku, Vec<IndexEntry>> = BTreeMap::new();
    let mut helpful = None;
    match only {
        Some(sku) => {
            table.insert(sku.clone(), product_entries(store, sku).await?);
            for queue in Queue::ALL {
                let queue = QueueList::new(queue, Some(sku.clone()));
                let entries = queue_entries(store, &queue).await?;
                table.insert(queue.index_name(), entries);
            }
        }
        None => {
            let collected: Mutex<BTreeMap<Sku, Vec<IndexEntry>>> = Mutex::default();
            let tally = HelpfulTally::default();
            let (collected_ref, tally_ref) = (&collected, &tally);
            parallel_scan(store, segments, move |page| async move {
                tally_ref.absorb(&page);
                let mut map = collected_ref.lock().unwrap_or_else(|p| p.into_inner());
                for comment in &page.items {
                    let entry = IndexEntry::from(comment);
                    map.entry(comment.sku.clone())
                        .or_default()
                        .push(entry.clone());
                    // A comment that is not published is in its two queues (`QueueList`), and
                    // one with an author in the author's two lists (`AuthorList`).
                    for queued in entry
                        .memberships()
                        .into_iter()
                        .filter(|e| e.sku.is_reserved())
                    {
                        map.entry(queued.sku.clone()).or_default().push(queued);
                    }
                }
                Ok(())
            })
            .await?;
            table = collected.into_inner().unwrap_or_else(|p| p.into_inner());
            helpful = Some(tally.check(&table));
            for sku in index.products().await? {
                table.entry(sku).or_default();
            }
        }
    }
    let mut report = DriftReport {
        // Products only: the queues checked with them are lists, not products.
        products: table.keys().filter(|sku| !sku.is_reserved()).count(),
        helpful,
        ..DriftReport::default()
    };
    for (sku, entries) in table {
        if !sku.is_reserved() {
            report.comments += entries.len() as u64;
        }
        // A list holds its members only: a product's published comments, a queue's those in
        // its status; the others must be absent from it.
        let entries = entries.into_iter().filter(|e| e.published).collect();
        let indexed = index.entries(&sku).await?;
        let drift = compare(&sku, entries, indexed);
        tracing::debug!(
            sku = sku.as_str(),
            missing = drift.missing.len(),
            extra = drift.extra.len(),
            mismatched = drift.mismatched.len(),
            "product verified"
        );
        if !drift.is_clean() {
            report.drifted.push(drift);
        }
    }
    Ok(report)
}

/// Every comment of `sku`, read page by page from its `byProduct` partition.
async fn product_entries<S: CommentStore>(
    store: &S,
    sku: &Sku,
) -> Result<Vec<IndexEntry>, SyncError> {
    partition_entries(store, Partition::Product(sku.clone()), |e| e).await
}

/// The entries of one of a product's queues, from its partition (`byProductQueue`).
async fn queue_entries<S: CommentStore>(
    store: &S,
    queue: &QueueList,
) -> Result<Vec<IndexEntry>, SyncError> {
    let partition = Partition::Queue(queue.clone());
    partition_entries(store, partition, |e| e.in_queue(queue)).await
}

/// Every comment of `partition`, read in pages, as the list's entries (`as_listed`).
async fn partition_entries<S: CommentStore>(
    store: &S,
    partition: Partition,
    as_listed: impl Fn(IndexEntry) -> IndexEntry,
) -> Result<Vec<IndexEntry>, SyncError> {
    let mut entries = Vec::new();
    let mut from = Bound::Unbounded;
    loop {
        let page = store
            .query(&KeyQuery {
                partition: partition.clone(),
                order: Order::NewestFirst,
                from,
                limit: QUERY_PAGE,
            })
            .await?;
        entries.extend(page.items.iter().map(IndexEntry::from).map(&as_listed));
        match page.last_evaluated {
            Some(key) => from = Bound::Excluded(key),
            None => return Ok(entries),
        }
    }
}

/// The drift between one product's table entries and index entries.
pub fn compare(sku: &Sku, table: Vec<IndexEntry>, index: Vec<IndexEntry>) -> ProductDrift {
    let mut drift = ProductDrift {
        sku: sku.clone(),
        table_counts: [0; 5],
        index_counts: [0; 5],
        missing: Vec::new(),
        extra: Vec::new(),
        mismatched: Vec::new(),
    };
    let count = |counts: &mut [u64; 5], rating: Rating| counts[rating.index()] += 1;
    let mut in_index: HashMap<CommentId, IndexEntry> = HashMap::with_capacity(index.len());
    for entry in index {
        count(&mut drift.index_counts, entry.rating);
        in_index.insert(entry.key.id(), entry);
    }
    for entry in table {
        // The index keeps no author: compare what it keeps.
        let entry = entry.as_indexed();
        count(&mut drift.table_counts, entry.rating);
        match in_index.remove(&entry.key.id()) {
            None => drift.missing.push(entry),
            Some(indexed) if indexed != entry => drift.mismatched.push(Mismatch {
                table: entry,
                index: indexed,
            }),
            Some(_) => {}
        }
    }
    drift.extra = in_index.into_values().collect();
    drift.missing.sort_by_key(|e| std::cmp::Reverse(e.key));
    drift.extra.sort_by_key(|e| std::cmp::Reverse(e.key));
    drift
        .mismatched
        .sort_by_key(|m| std::cmp::Reverse(m.table.key));
    drift
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SortKey;

    fn entry(millis: u64, random: u128, rating: i64) -> IndexEntry {
        let id = CommentId::from_parts(millis, random);
        IndexEntry {
            verified: false,
            sku: Sku::parse("A").expect("valid sku"),
            key: SortKey::new(millis, id).expect("valid key"),
            rating: Rating::new(rating).expect("valid rating"),
            version: 1,
            helpful: 0,
            published: true,
            status: crate::domain::CommentStatus::Published,
            author: None,
            reported: false,
        }
    }

    #[test]
    fn equal_sides_have_no_drift() {
        let sku = Sku::parse("A").expect("valid sku");
        let all = vec![entry(1, 1, 3), entry(1, 2, 5)];
        let drift = compare(&sku, all.clone(), all);
        assert!(drift.is_clean());
        assert_eq!(drift.table_counts, [0, 0, 1, 0, 1]);
    }

    #[test]
    fn missing_extra_and_moved_comments_are_told_apart() {
        let sku = Sku::parse("A").expect("valid sku");
        let table = vec![entry(3, 1, 1), entry(2, 2, 2), entry(1, 3, 3)];
        let index = vec![entry(2, 2, 4), entry(1, 3, 3), entry(9, 9, 5)];
        let drift = compare(&sku, table, index);
        assert_eq!(drift.missing, vec![entry(3, 1, 1)]);
        assert_eq!(drift.extra, vec![entry(9, 9, 5)]);
        assert_eq!(
            drift.mismatched,
            vec![Mismatch {
                table: entry(2, 2, 2),
                index: entry(2, 2, 4)
            }]
        );
        assert_eq!(drift.table_counts, [1, 1, 1, 0, 0]);
        assert_eq!(drift.index_counts, [0, 0, 1, 1, 1]);
    }
}
