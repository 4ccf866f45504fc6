//! CDN purges driven by what the index applies: after each applied batch, the tags of the
//! products it changed (`tags`, the names cacheable responses carry in
//! `--cache-tag-header`) are purged from the CDN in front.
//!
//! Purging must never hold up or fail the index update: [`Purger::purge`] only notes the
//! products and wakes the sender task, which sends one request per batch of due tags, retries
//! a failure with exponential backoff, and counts every outcome
//! (`dynapage_purge_requests_total{outcome}`, `dynapage_purge_tags_total`). How the request is
//! spelled for Varnish, Fastly and Cloudflare is `request`'s.
//!
//! **One purge per product per window.** A product's first change is purged at once. A change
//! within [`WINDOW`] of that product's last purge waits for the window's end, and all such
//! changes are purged then, together: a vote toggled a hundred times in a second (each toggle
//! is a change of its comment) costs the CDN two purges, not a hundred, and the last toggle is
//! purged at most one window late. Another product is never held up by this one's window.
//!
//! **Bounded.** Waiting products are a set (a product is in it once however often it
//! changes), of at most [`MAX_WAITING`] products; past that a change's purge is dropped and
//! counted (`outcome="dropped"`), and its CDN copies expire with `max-age`. The record of
//! recent purges holds only the products purged within the last window.

mod request;
mod tags;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use self::request::{PurgeFormat, PurgeTarget};
pub use self::tags::{tag, tag_len};
use crate::domain::Sku;
use crate::telemetry::metric;

/// Tags per purge request (Fastly takes up to 256 keys per request, Cloudflare 30 tags per
/// request on most plans, xkey any number).
const MAX_TAGS_PER_REQUEST: usize = 30;
/// Tries per request before its tags are given up (and counted as failed).
const TRIES: u32 = 6;
/// The first retry's wait; each next one doubles.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// A product purged is purged again at most once within this (module comment).
pub const WINDOW: Duration = Duration::from_secs(1);
/// The most products waiting for a purge.
pub const MAX_WAITING: usize = 100_000;

/// The handle whatever applies changes holds. Cloning shares the pending set and the task.
#[derive(Clone, Debug)]
pub struct Purger {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Notify,
}

/// The products waiting, and when each product was last purged.
#[derive(Debug, Default)]
struct State {
    /// Due now: changed outside their window.
    due: BTreeSet<Sku>,
    /// Changed within their window: due when it ends (`purged` + [`WINDOW`]).
    held: BTreeSet<Sku>,
    /// When each product was last sent a purge, for the products purged within the window.
    purged: HashMap<Sku, Instant>,
}

impl State {
    fn waiting(&self) -> usize {
        self.due.len() + self.held.len()
    }

    /// Notes a change of `sku` at `now`.
    fn changed(&mut self, sku: &Sku, now: Instant) -> bool {
        if self.due.contains(sku) || self.held.contains(sku) {
            return false;
        }
        if self.waiting() >= MAX_WAITING {
            metric::PURGE_REQUESTS
                .counter(&[("outcome", "dropped")])
                .increment(1);
            return false;
        }
        let within = self.purged.get(sku).is_some_and(|at| now < *at + WINDOW);
        if within {
            self.held.insert(sku.clone());
        } else {
            self.due.insert(sku.clone());
        }
        true
    }

    /// Moves the held products whose window has ended to `due`, forgets purges older than the
    /// window, and answers when the next held product is due.
    fn advance(&mut self, now: Instant) -> Option<Instant> {
        self.purged.retain(|_, at| now < *at + WINDOW);
        let purged = &self.purged;
        let ended: Vec<Sku> = (self.held.iter())
            .filter(|sku| !purged.contains_key(*sku))
            .cloned()
            .collect();
        for sku in ended {
            self.held.remove(&sku);
            self.due.insert(sku);
        }
        (self.held.iter())
            .filter_map(|sku| self.purged.get(sku))
            .map(|at| *at + WINDOW)
            .min()
    }

    /// Takes up to [`MAX_TAGS_PER_REQUEST`] due products, noting them purged at `now`.
    fn take(&mut self, now: Instant) -> Vec<Sku> {
        let batch: Vec<Sku> = self
            .due
            .iter()
            .take(MAX_TAGS_PER_REQUEST)
            .cloned()
            .collect();
        for sku in &batch {
            self.due.remove(sku);
            self.purged.insert(sku.clone(), now);
        }
        batch
    }
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
        let now = Instant::now();
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut noted = false;
        for sku in products {
            noted |= state.changed(sku, now);
        }
        drop(state);
        if noted {
            self.shared.wake.notify_one();
        }
    }
}

/// Sends the due tags whenever there are some, and the held ones when their window ends,
/// until `shutdown`.
async fn send_loop(shared: Arc<Shared>, client: request::Client, shutdown: CancellationToken) {
    loop {
        let next = shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .advance(Instant::now());
        let held = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let stopping = tokio::select! {
            () = shared.wake.notified() => false,
            () = held => false,
            () = shutdown.cancelled() => true,
        };
        loop {
            let batch = {
                let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
                if stopping {
                    // Nothing waits for a window that will never end.
                    let held = std::mem::take(&mut state.held);
                    state.due.extend(held);
                }
                let now = Instant::now();
                state.advance(now);
                state.take(now)
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
    let tags: Vec<String> = products.iter().map(tag).collect();
    let mut wait = FIRST_BACKOFF;
    for attempt in 1..=TRIES {
        match client.send(&tags).await {
            Ok(()) => {
                metric::PURGE_REQUESTS
                    .counter(&[("outcome", "ok")])
                    .increment(1);
                metric::PURGE_TAGS.counter(&[]).increment(tags.len() as u64);
                tracing::debug!(tags = tags.len(), attempt, "cdn purge sent");
                return;
            }
            Err(error) => {
                metric::PURGE_REQUESTS
                    .counter(&[("outcome", "retry")])
                    .increment(1);
                tracing::warn!(error = %error, tags = tags.len(), attempt, "cdn purge failed");
            }
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    metric::PURGE_REQUESTS
        .counter(&[("outcome", "failed")])
        .increment(1);
    tracing::error!(tags = tags.len(), "cdn purge given up");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku(s: &str) -> Sku {
        Sku::parse(s).expect("a SKU")
    }

    #[test]
    fn a_product_is_purged_at_once_then_at_most_once_more_per_window() {
        let mut state = State::default();
        let start = Instant::now();
        assert!(state.changed(&sku("A"), start));
        assert_eq!(state.take(start), [sku("A")], "the first change at once");
        for i in 1..100 {
            state.changed(&sku("A"), start + Duration::from_millis(i));
        }
        assert!(state.changed(&sku("B"), start + Duration::from_millis(5)));
        let at = start + Duration::from_millis(100);
        let next = state.advance(at);
        assert_eq!(state.take(at), [sku("B")], "another product is not held up");
        assert_eq!(next, Some(start + WINDOW), "A waits for its window's end");
        let end = start + WINDOW;
        assert_eq!(state.advance(end), None);
        assert_eq!(
            state.take(end),
            [sku("A")],
            "the hundred changes in one purge"
        );
        assert!(state.take(end).is_empty());
        assert!(state.purged.len() <= 2);
        assert_eq!(state.advance(end + WINDOW), None);
        assert!(state.purged.is_empty(), "old purges are forgotten");
    }

    #[test]
    fn the_waiting_set_is_bounded() {
        let mut state = State::default();
        let now = Instant::now();
        for i in 0..MAX_WAITING {
            assert!(state.changed(&sku(&format!("P{i}")), now));
        }
        assert!(!state.changed(&sku("ONE_TOO_MANY"), now));
        assert_eq!(state.waiting(), MAX_WAITING);
    }
}
