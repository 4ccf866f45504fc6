//! CDN purges driven by what the index applies: after each applied batch, the tags of the
//! products it changed (`http::cache_tag`, the names cacheable responses carry in
//! `--cache-tag-header`) are purged from the CDN in front.
//!
//! Purging must never hold up or fail the index update: [`Purger::purge`] only adds the tags
//! to a pending set (coalescing: a product changed a hundred times while a purge is on its way
//! is purged once more, not a hundred times) and wakes the sender task, which sends one
//! request per batch of pending tags, retries a failure with exponential backoff, and counts
//! every outcome (`dynapage_purge_requests_total{outcome}`, `dynapage_purge_tags_total`). The
//! pending set holds at most one entry per product. How the request is spelled for Varnish,
//! Fastly and Cloudflare is `request`'s.

mod request;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use self::request::{PurgeFormat, PurgeTarget};
use crate::domain::Sku;

/// Tags per purge request (Fastly takes up to 256 keys per request, Cloudflare 30 tags per
/// request on most plans, xkey any number).
const MAX_TAGS_PER_REQUEST: usize = 30;
/// Tries per request before its tags are given up (and counted as failed).
const TRIES: u32 = 6;
/// The first retry's wait; each next one doubles.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The handle whatever applies changes holds. Cloning shares the pending set and the task.
#[derive(Clone, Debug)]
pub struct Purger {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<BTreeSet<Sku>>,
    wake: Notify,
}

impl Purger {
    /// Starts the sender task for `target`; it stops when `shutdown` fires, after sending what
    /// is pending once.
    pub fn start(target: PurgeTarget, shutdown: CancellationToken) -> anyhow::Result<Self> {
        let client = request::Client::new(target)?;
        let shared = Arc::new(Shared::default());
        tokio::spawn(send_loop(shared.clone(), client, shutdown));
        Ok(Self { shared })
    }

    /// Purges `products`' pages soon; returns at once.
    pub fn purge<'a>(&self, products: impl IntoIterator<Item = &'a Sku>) {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let before = pending.len();
        pending.extend(products.into_iter().cloned());
        if pending.len() > before {
            drop(pending);
            self.shared.wake.notify_one();
        }
    }
}

/// Sends the pending tags whenever there are some, until `shutdown`.
async fn send_loop(shared: Arc<Shared>, client: request::Client, shutdown: CancellationToken) {
    loop {
        let stopping = tokio::select! {
            () = shared.wake.notified() => false,
            () = shutdown.cancelled() => true,
        };
        loop {
            let batch: Vec<Sku> = {
                let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
                let batch: Vec<Sku> = pending.iter().take(MAX_TAGS_PER_REQUEST).cloned().collect();
                for sku in &batch {
                    pending.remove(sku);
                }
                batch
            };
            if batch.is_empty() {
                break;
            }
            send_with_retries(&client, &batch).await;
        }
        if stopping {
            return;
        }
    }
}

/// One purge of `products`' tags, retried with backoff; never fails, only counts and logs.
async fn send_with_retries(client: &request::Client, products: &[Sku]) {
    let tags: Vec<String> = products.iter().map(crate::http::cache_tag).collect();
    let mut wait = FIRST_BACKOFF;
    for attempt in 1..=TRIES {
        match client.send(&tags).await {
            Ok(()) => {
                metrics::counter!("dynapage_purge_requests_total", "outcome" => "ok").increment(1);
                metrics::counter!("dynapage_purge_tags_total").increment(tags.len() as u64);
                tracing::debug!(tags = tags.len(), attempt, "cdn purge sent");
                return;
            }
            Err(error) => {
                metrics::counter!("dynapage_purge_requests_total", "outcome" => "retry")
                    .increment(1);
                tracing::warn!(error = %error, tags = tags.len(), attempt, "cdn purge failed");
            }
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    metrics::counter!("dynapage_purge_requests_total", "outcome" => "failed").increment(1);
    tracing::error!(tags = tags.len(), "cdn purge given up");
}
