//! A parallel full-table scan for `reindex` and `verify`: `segments` segments read
//! concurrently, each page (its comments, and the helpful votes it met) handed to a visitor as
//! it arrives, so the table never sits in memory at once (unless the visitor keeps it).

use std::future::Future;
use std::time::Duration;

use super::SyncError;
use crate::store::{CommentStore, ScanPage, StoreError};

/// Attempts per scan page while the store reports itself unavailable (throttling).
const PAGE_ATTEMPTS: u32 = 6;

/// Scans the whole table in `segments` concurrent segments, calling `visit` with each page.
pub(super) async fn parallel_scan<S, F, Fut>(
    store: &S,
    segments: u32,
    visit: F,
) -> Result<(), SyncError>
where
    S: CommentStore,
    F: Fn(ScanPage) -> Fut,
    Fut: Future<Output = Result<(), SyncError>>,
{
    let segments = segments.max(1);
    let visit = &visit;
    futures::future::try_join_all((0..segments).map(|segment| async move {
        let mut resume = None;
        loop {
            let mut page = scan_page(store, segment, segments, resume.take()).await?;
            let next = page.resume.take();
            visit(page).await?;
            match next {
                Some(token) => resume = Some(token),
                None => return Ok::<(), SyncError>(()),
            }
        }
    }))
    .await?;
    Ok(())
}

/// One page, retried with backoff while the store is unavailable: a long scan should not
/// fail on one throttled request.
async fn scan_page<S: CommentStore>(
    store: &S,
    segment: u32,
    segments: u32,
    resume: Option<String>,
) -> Result<ScanPage, SyncError> {
    let mut pause = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match store.scan(segment, segments, resume.clone()).await {
            Err(StoreError::Unavailable(error)) if attempt < PAGE_ATTEMPTS => {
                tracing::warn!(segment, attempt, error = %error, "scan page failed, retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            result => return Ok(result?),
        }
    }
}
