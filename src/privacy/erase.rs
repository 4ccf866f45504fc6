//! Erasing a person: their reports, their helpful votes, then their comments (deleted or
//! anonymized), each through [`CommentStore::forget`] or `delete`, a page at a time, up to
//! [`IN_FLIGHT`] writes of a page at once (each is independent of the others).
//!
//! Idempotent and resumable: each step forgets what is still there, so a run killed halfway
//! and run again ends where an uninterrupted one would, and a run after a complete one
//! changes nothing (its receipt is all zeros). A dry run reads the same lists and counts.

use futures::{StreamExt, TryStreamExt};

use super::{pages, voter_of};
use crate::domain::{Access, ErasureMode, ErasureReceipt, Forget};
use crate::store::{CommentStore, StoreError};

/// Writes of one page in flight at once.
const IN_FLIGHT: usize = 8;

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

/// One write of an erasure.
enum Step {
    Forget(Forget),
    Delete(crate::domain::CommentId),
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
    if erasure.dry_run {
        return Ok(receipt);
    }
    let reporter = Forget::Reporter {
        reporter: erasure.sub.clone(),
    };
    store.forget(&reporter).await?;
    tracing::info!(
        subject = %voter_of(&erasure.sub),
        mode = %erasure.mode,
        comments_deleted = receipt.comments_deleted,
        comments_anonymized = receipt.comments_anonymized,
        votes_removed = receipt.votes_removed,
        reports_removed = receipt.reports_removed,
        "person erased"
    );
    Ok(receipt)
}

/// Runs `steps` (or, dry, counts each as done), [`IN_FLIGHT`] at once; answers how many
/// changed something.
async fn run<S: CommentStore>(
    store: &S,
    steps: Vec<Step>,
    dry_run: bool,
) -> Result<u64, StoreError> {
    if dry_run {
        return Ok(steps.len() as u64);
    }
    let done: Vec<bool> = futures::stream::iter(steps)
        .map(|step| async move {
            match step {
                Step::Forget(what) => store.forget(&what).await,
                Step::Delete(id) => match store.delete(id, &Access::Any).await {
                    Ok(_) => Ok(true),
                    Err(StoreError::NotFound(_)) => Ok(false),
                    Err(other) => Err(other),
                },
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(done.into_iter().filter(|changed| *changed).count() as u64)
}

async fn erase_reports<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let mut pages = pages::Reports::of(&erasure.sub);
    while let Some(page) = pages.next(store).await? {
        let steps = page
            .iter()
            .map(|report| {
                Step::Forget(Forget::Report {
                    comment: report.comment,
                    reporter: erasure.sub.clone(),
                })
            })
            .collect();
        receipt.reports_removed += run(store, steps, erasure.dry_run).await?;
        progress(receipt);
    }
    Ok(())
}

async fn erase_votes<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let mut pages = pages::Votes::of(&erasure.sub);
    let voter = pages.voter;
    while let Some(page) = pages.next(store).await? {
        let steps = page
            .iter()
            .map(|comment| {
                Step::Forget(Forget::Vote {
                    comment: *comment,
                    voter,
                })
            })
            .collect();
        receipt.votes_removed += run(store, steps, erasure.dry_run).await?;
        progress(receipt);
    }
    Ok(())
}

async fn erase_comments<S: CommentStore>(
    store: &S,
    erasure: &Erasure,
    receipt: &mut ErasureReceipt,
    progress: &mut impl FnMut(&ErasureReceipt),
) -> Result<(), StoreError> {
    let mut pages = pages::Comments::of(&erasure.sub);
    while let Some(page) = pages.next(store).await? {
        let steps = page
            .iter()
            .map(|comment| match erasure.mode {
                ErasureMode::Delete => Step::Delete(comment.id),
                ErasureMode::Anonymize => Step::Forget(Forget::Author {
                    comment: comment.id,
                    sub: erasure.sub.clone(),
                }),
            })
            .collect();
        let done = run(store, steps, erasure.dry_run).await?;
        match erasure.mode {
            ErasureMode::Delete => receipt.comments_deleted += done,
            ErasureMode::Anonymize => receipt.comments_anonymized += done,
        }
        progress(receipt);
    }
    Ok(())
}
