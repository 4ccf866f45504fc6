//! Erasing a person: their reports, their helpful votes, then their comments (deleted or
//! anonymized), each through [`CommentStore::forget`] or `delete`, page by page.
//!
//! Idempotent and resumable: each step forgets what is still there, so a run killed halfway
//! and run again ends where an uninterrupted one would, and a run after a complete one
//! changes nothing (its receipt is all zeros). A dry run reads the same lists and counts.

use std::ops::Bound;

use super::{PAGE, voter_of};
use crate::domain::{Access, AuthorList, ErasureMode, ErasureReceipt, Forget, Order, Position};
use crate::store::{CommentStore, KeyQuery, Partition, ReportQuery, StoreError, VoteQuery};

/// What to erase, and how.
#[derive(Clone, Debug)]
pub struct Erasure {
    /// The person: a token subject.
    pub sub: String,
    /// What becomes of their comments.
    pub mode: ErasureMode,
    /// Count only; write nothing.
    pub dry_run: bool,
}

/// Erases `erasure.sub`'s data from `store` and answers what it removed (or, dry, would);
/// `progress` sees the receipt after each page.
pub async fn erase<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    mut progress: impl FnMut(&ErasureReceipt),
) -> Result<ErasureReceipt, StoreError> {
    let mut receipt = ErasureReceipt::default();
    erase_reports(store, erasure, &mut receipt, &mut progress).await?;
    erase_votes(store, erasure, &mut receipt, &mut progress).await?;
    erase_comments(store, erasure, &mut receipt, &mut progress).await?;
    if !erasure.dry_run {
        let reporter = Forget::Reporter {
            reporter: erasure.sub.clone(),
        };
        store.forget(&reporter).await?;
    }
    tracing::info!(
        subject = %voter_of(&erasure.sub),
        mode = %erasure.mode,
        dry_run = erasure.dry_run,
        comments_deleted = receipt.comments_deleted,
        comments_anonymized = receipt.comments_anonymized,
        votes_removed = receipt.votes_removed,
        reports_removed = receipt.reports_removed,
        "person erased"
    );
    Ok(receipt)
}

/// Forgets `what` (or, dry, counts it as there).
async fn forget<S: CommentStore>(
    store: &S,
    what: Forget,
    dry_run: bool,
) -> Result<bool, StoreError> {
    if dry_run {
        return Ok(true);
    }
    store.forget(&what).await
}

async fn erase_reports<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let mut after = None;
    loop {
        let query = ReportQuery {
            reporter: erasure.sub.clone(),
            order: Order::OldestFirst,
            after,
            limit: PAGE,
        };
        let page = store.reports(&query).await?;
        for report in &page.reports {
            let what = Forget::Report {
                comment: report.comment,
                reporter: erasure.sub.clone(),
            };
            if forget(store, what, erasure.dry_run).await? {
                receipt.reports_removed += 1;
            }
        }
        progress(receipt);
        after = page.reports.last().map(|r| r.id);
        if page.last_evaluated.is_none() || after.is_none() {
            return Ok(());
        }
    }
}

async fn erase_votes<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let voter = voter_of(&erasure.sub);
    let mut after = None;
    loop {
        let page = store
            .votes_by(&VoteQuery {
                voter,
                after,
                limit: PAGE,
            })
            .await?;
        for comment in &page.comments {
            let what = Forget::Vote {
                comment: *comment,
                voter,
            };
            if forget(store, what, erasure.dry_run).await? {
                receipt.votes_removed += 1;
            }
        }
        progress(receipt);
        after = page.comments.last().copied();
        if page.last_evaluated.is_none() || after.is_none() {
            return Ok(());
        }
    }
}

async fn erase_comments<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let partition = Partition::Author(AuthorList::new(erasure.sub.clone(), None));
    let mut from: Bound<Position> = Bound::Unbounded;
    loop {
        let query = KeyQuery {
            partition: partition.clone(),
            order: Order::OldestFirst,
            from,
            limit: PAGE,
        };
        let page = store.query(&query).await?;
        for comment in &page.items {
            // The list is read from an index that may lag (a GSI): only the author's own
            // comment is touched.
            if comment.author_sub.as_deref() != Some(erasure.sub.as_str()) {
                continue;
            }
            match erasure.mode {
                ErasureMode::Delete if erasure.dry_run => receipt.comments_deleted += 1,
                ErasureMode::Delete => match store.delete(comment.id, &Access::Any).await {
                    Ok(_) => receipt.comments_deleted += 1,
                    Err(StoreError::NotFound(_)) => {}
                    Err(other) => return Err(other),
                },
                ErasureMode::Anonymize => {
                    let what = Forget::Author {
                        comment: comment.id,
                        sub: erasure.sub.clone(),
                    };
                    if forget(store, what, erasure.dry_run).await? {
                        receipt.comments_anonymized += 1;
                    }
                }
            }
        }
        progress(receipt);
        let Some(last) = page.items.last() else {
            // An empty page that stopped early (DynamoDB's size cut) goes on from its key.
            match page.last_evaluated {
                Some(key) => {
                    from = Bound::Excluded(key);
                    continue;
                }
                None => return Ok(()),
            }
        };
        if page.last_evaluated.is_none() {
            return Ok(());
        }
        from = Bound::Excluded(partition.position_of(last));
    }
}
