//! The cache's memory: entries by key, least recently used out first, bounded by bytes.
//!
//! The bound is on what the entries really take: each entry's own allocations
//! ([`Entry::size`]: its body and every encoding made of it, products, versions, validators,
//! tags, rounded as the allocator rounds them) plus the two maps that hold it (the hash map's
//! buckets, from its capacity, and the recency tree's nodes), so `--response-cache-bytes`
//! bounds memory within a few percent whether the entries are many and tiny or few and large
//! (a test holds the count to a counting allocator). It used to count bodies and keys only, at
//! a quarter of the truth for small entries. One entry may take at most an eighth of the bound:
//! a client cannot flush the whole cache with one huge response.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::entry::{Entry, Key, allocation};

/// What the recency tree takes per entry: a `BTreeMap<u64, Key>` node holds up to 11 pairs in
/// 456 bytes (552 with children), and the cache's pattern (new ticks at the end, old ones taken
/// anywhere) leaves nodes a bit over half full.
const ORDER_BYTES_PER_ENTRY: usize = 80;

/// The entries and their recency, under one lock (held for map operations only).
#[derive(Debug)]
pub(super) struct Store {
    limit: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Key, Slot>,
    /// Recency: the tick of each entry's last use, oldest first.
    order: BTreeMap<u64, Key>,
    tick: u64,
    /// The entries' own sizes, summed.
    bytes: usize,
}

#[derive(Debug)]
struct Slot {
    entry: Arc<Entry>,
    tick: u64,
    size: usize,
}

impl Store {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            inner: Mutex::default(),
        }
    }

    /// The entry under `key`, now the most recently used.
    pub(super) fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        let slot = inner.entries.get_mut(key)?;
        let old = std::mem::replace(&mut slot.tick, tick);
        let entry = slot.entry.clone();
        inner.order.remove(&old);
        inner.order.insert(tick, *key);
        Some(entry)
    }

    /// Puts `entry` under `key`, dropping the least recently used entries until the bound
    /// holds. Returns whether it was kept (an entry over an eighth of the bound is not).
    pub(super) fn insert(&self, key: Key, entry: Arc<Entry>) -> bool {
        let size = entry.size();
        if size + per_entry() > self.limit / 8 {
            return false;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.remove(&key);
        inner.tick += 1;
        let tick = inner.tick;
        inner.order.insert(tick, key);
        inner.bytes += size;
        let slot = Slot { entry, tick, size };
        inner.entries.insert(key, slot);
        inner.shrink_to(self.limit, &key);
        true
    }

    /// Counts what `entry` (under `key`) has grown by since it was put or last counted (an
    /// encoding made for a hit), and drops other entries if the bound no longer holds. An
    /// entry replaced or dropped meanwhile is not counted: it goes when its last hit is sent.
    pub(super) fn grew(&self, key: &Key, entry: &Arc<Entry>) {
        let size = entry.size();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slot) = inner.entries.get_mut(key) else {
            return;
        };
        if !Arc::ptr_eq(&slot.entry, entry) {
            return;
        }
        let before = std::mem::replace(&mut slot.size, size);
        inner.bytes = inner.bytes - before + size;
        inner.shrink_to(self.limit, key);
    }

    /// The bytes charged now: the entries and the maps that hold them (for tests and the
    /// gauge).
    pub(super) fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).total()
    }
}

/// What the maps take per entry beyond the hash map's buckets: its recency node.
fn per_entry() -> usize {
    ORDER_BYTES_PER_ENTRY
}

impl Inner {
    fn remove(&mut self, key: &Key) {
        if let Some(slot) = self.entries.remove(key) {
            self.order.remove(&slot.tick);
            self.bytes -= slot.size;
        }
    }

    /// The entries' sizes and the maps': the hash map's buckets (hashbrown keeps a control
    /// byte per bucket and eight buckets for every seven entries it can hold) and the tree's
    /// nodes.
    fn total(&self) -> usize {
        let capacity = self.entries.capacity();
        let map = if capacity == 0 {
            0
        } else {
            let buckets = (capacity * 8 / 7).next_power_of_two();
            allocation(buckets * (std::mem::size_of::<(Key, Slot)>() + 1) + 16)
        };
        self.bytes + map + self.order.len() * per_entry()
    }

    /// Drops the least recently used entries, never `keep`, until the total is within `limit`.
    fn shrink_to(&mut self, limit: usize, keep: &Key) {
        while self.total() > limit {
            let Some((&tick, &oldest)) = self.order.first_key_value() else {
                return;
            };
            if oldest == *keep {
                // Only the one just put or grown is left: it is within an eighth of the bound.
                if self.order.len() == 1 {
                    return;
                }
                // Make it the newest and go on with the others.
                self.order.remove(&tick);
                self.tick += 1;
                let tick = self.tick;
                self.order.insert(tick, oldest);
                if let Some(slot) = self.entries.get_mut(&oldest) {
                    slot.tick = tick;
                }
                continue;
            }
            self.remove(&oldest);
        }
    }
}

#[cfg(test)]
#[path = "store_size_test.rs"]
mod size_test;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::response_cache::tags::Tags;
    use crate::http::transport::MediaType;
    use crate::pagination::PageStats;

    fn entry(body: usize) -> Arc<Entry> {
        let body = vec![b'x'; body];
        let stats = PageStats::default();
        Arc::new(Entry::new(
            &body,
            MediaType::Json,
            Vec::new(),
            None,
            None,
            Tags::None,
            stats,
        ))
    }

    #[test]
    fn the_bound_holds_and_the_least_recently_used_goes_first() {
        let one = Store::new(usize::MAX);
        one.insert([0; 32], entry(1_000));
        let limit = one.bytes() * 8 + 1_000;
        let store = Store::new(limit);
        for k in 0..8u8 {
            assert!(store.insert([k; 32], entry(1_000)));
        }
        assert!(store.get(&[0; 32]).is_some());
        for k in 8..12u8 {
            assert!(store.insert([k; 32], entry(1_000)));
        }
        assert!(store.bytes() <= limit);
        assert!(store.get(&[0; 32]).is_some(), "used lately, kept");
        assert!(
            store.get(&[1; 32]).is_none(),
            "least recently used, dropped"
        );
        assert!(store.get(&[11; 32]).is_some());
    }

    #[test]
    fn one_entry_cannot_take_more_than_an_eighth() {
        let store = Store::new(80_000);
        assert!(!store.insert([1; 32], entry(10_000)));
        assert_eq!(store.bytes(), 0);
        assert!(store.insert([1; 32], entry(8_000)));
        assert!(
            store.insert([1; 32], entry(8_000)),
            "replacing is not adding"
        );
        assert!(store.bytes() < 10_000);
    }

    #[tokio::test]
    async fn an_encoding_made_for_a_hit_counts_and_may_push_others_out() {
        let body = br#"{"a":"compressible text"}"#.repeat(300);
        let stats = PageStats::default();
        let make = || {
            let entry = Entry::new(
                &body,
                MediaType::Json,
                Vec::new(),
                None,
                None,
                Tags::None,
                stats,
            );
            Arc::new(entry)
        };
        let roomy = Store::new(usize::MAX / 2);
        let kept: Vec<Arc<Entry>> = (0..2u8)
            .map(|k| {
                let entry = make();
                assert!(roomy.insert([k; 32], entry.clone()));
                entry
            })
            .collect();
        let before = roomy.bytes();
        let (gzip, _, made) = kept[1]
            .in_coding(crate::http::compression::Coding::Gzip)
            .await;
        assert!(made);
        roomy.grew(&[1; 32], &kept[1]);
        assert!(
            roomy.bytes() >= before + gzip.len(),
            "the gzip body is counted"
        );
        let counted = roomy.bytes();
        roomy.grew(&[1; 32], &kept[0]);
        assert_eq!(
            roomy.bytes(),
            counted,
            "another entry under the key is not counted"
        );

        let tight = Store::new(before * 8);
        for k in 0..15u8 {
            tight.insert([k; 32], make());
        }
        let newest = make();
        assert!(tight.insert([15; 32], newest.clone()));
        let (_, _, made) = newest
            .in_coding(crate::http::compression::Coding::Brotli)
            .await;
        assert!(made);
        tight.grew(&[15; 32], &newest);
        assert!(
            tight.bytes() <= before * 8,
            "the bound holds after the growth"
        );
        assert!(tight.get(&[15; 32]).is_some(), "the grown entry stays");
    }
}
