//! The cache's memory: entries by key, least recently used out first, bounded by bytes.
//!
//! Every entry is charged its body, its tags, its products and its key, plus a fixed
//! [`OVERHEAD`] for the map's slots, so the bound holds whatever the shape of what is cached
//! (many tiny bodies cost their keys too). One entry may take at most an eighth of the bound:
//! a client cannot flush the whole cache with one huge response.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::entry::{Entry, Key};

/// Bytes charged per entry beyond its contents: the two maps' slots and the `Arc`.
pub(super) const OVERHEAD: usize = 160;

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

    /// Puts `entry` under `key`, dropping the least recently used entries until it fits.
    /// Returns whether it was kept (an entry over an eighth of the bound is not).
    pub(super) fn insert(&self, key: Key, entry: Entry) -> bool {
        let size = entry.size() + OVERHEAD;
        if size > self.limit / 8 {
            return false;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.remove(&key);
        while inner.bytes + size > self.limit {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            if let Some(slot) = inner.entries.remove(&oldest) {
                inner.bytes -= slot.size;
            }
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.order.insert(tick, key);
        inner.bytes += size;
        let entry = Arc::new(entry);
        inner.entries.insert(key, Slot { entry, tick, size });
        true
    }

    /// The bytes charged now (for tests and the gauge).
    pub(super) fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

impl Inner {
    fn remove(&mut self, key: &Key) {
        if let Some(slot) = self.entries.remove(key) {
            self.order.remove(&slot.tick);
            self.bytes -= slot.size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: usize) -> Entry {
        Entry::for_tests(vec![b'x'; body])
    }

    #[test]
    fn the_bound_holds_and_the_least_recently_used_goes_first() {
        let store = Store::new(8 * (1_000 + OVERHEAD + 100));
        for k in 0..8u8 {
            assert!(store.insert([k; 32], entry(1_000)));
        }
        assert!(store.get(&[0; 32]).is_some());
        for k in 8..12u8 {
            assert!(store.insert([k; 32], entry(1_000)));
        }
        assert!(store.bytes() <= 8 * (1_000 + OVERHEAD + 100));
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
        assert!(store.insert([1; 32], entry(9_000)));
        assert!(
            store.insert([1; 32], entry(9_000)),
            "replacing is not adding"
        );
        assert!(store.bytes() < 10_000);
    }
}
