//! The cache's read of its products' versions, bounded in time and guarded by a breaker.
//!
//! Why: with the Redis index, every hit reads its versions in Redis. That read used to wait as
//! long as any index call (the connection's 2 s timeout) and had no memory of failure, so a
//! stalled Redis added 2–2.5 s to every cached page while uncached pages answered at once, and
//! under traffic the waiting requests filled `--max-concurrent-requests` and everyone got 503.
//! The docs promise (docs/api/caching.md) that an index outage costs only `totalCount` and deep offsets.
//!
//! So the read waits at most [`READ_TIMEOUT`] (it answers in well under a millisecond when
//! Redis is well), and a failure opens the breaker: for [`RETRY_AFTER`] the cache is bypassed
//! without asking Redis (requests run as with the cache off, and nothing is kept), then one
//! request tries again and closes it if Redis answers. The state is shared by every request of
//! the process. Each bypass is counted as `dynapage_response_cache_total{outcome="unavailable"}`;
//! the start and the end of an outage are logged once each.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::domain::Sku;
use crate::index::{AnyIndex, PageIndex, ProductVersion};

/// How long a hit waits for its versions before it is run instead.
pub(super) const READ_TIMEOUT: Duration = Duration::from_millis(100);
/// After a failed read, how long the cache is bypassed before one request tries again.
pub(super) const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The index's versions, read under the breaker.
#[derive(Debug)]
pub(super) struct Versions {
    index: AnyIndex,
    started: Instant,
    /// 0 while reads succeed; else the microsecond since `started` (plus one) from which one
    /// read tries the index again.
    again_at: AtomicU64,
}

impl Versions {
    pub(super) fn new(index: AnyIndex) -> Self {
        Self {
            index,
            started: Instant::now(),
            again_at: AtomicU64::new(0),
        }
    }

    /// The versions of `skus`, or `None` when the index did not answer in time (or the
    /// breaker is open): then the request is run and its answer not kept.
    pub(super) async fn read(&self, skus: &[Sku]) -> Option<Vec<ProductVersion>> {
        let now = self.started.elapsed().as_micros() as u64 + 1;
        let again = now + RETRY_AFTER.as_micros() as u64;
        let at = self.again_at.load(Ordering::Relaxed);
        // One request moves the retry time on and tries; the others pass the cache by.
        let tries = at == 0
            || (now >= at
                && self
                    .again_at
                    .compare_exchange(at, again, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok());
        if !tries {
            return None;
        }
        let error =
            match tokio::time::timeout(READ_TIMEOUT, self.index.product_versions(skus)).await {
                Ok(Ok(versions)) => {
                    if at != 0 {
                        self.again_at.store(0, Ordering::Relaxed);
                        tracing::info!("the response cache reads versions again");
                    }
                    return Some(versions);
                }
                Ok(Err(error)) => error.to_string(),
                Err(_) => format!("no answer within {} ms", READ_TIMEOUT.as_millis()),
            };
        if self.again_at.swap(again, Ordering::Relaxed) == 0 {
            tracing::warn!(
                error,
                retry_after_ms = RETRY_AFTER.as_millis() as u64,
                "the response cache could not read versions; bypassing it until the index answers"
            );
        }
        None
    }
}
