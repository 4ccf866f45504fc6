//! Automatic persisted queries kept in this server's memory: least recently used out first,
//! bounded by the bytes of the texts it holds, so a flood of registrations (each paid for from
//! its client's budget) can only push out older entries, never grow the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

/// Texts by their SHA-256 (lowercase hex), at most `capacity` bytes of text in all.
#[derive(Debug)]
pub struct MemoryStore {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Hash → (text, the tick of its last use).
    by_hash: HashMap<Arc<str>, (Arc<str>, u64)>,
    /// Tick of last use → hash: the first is the least recently used.
    by_use: BTreeMap<u64, Arc<str>>,
    bytes: usize,
    tick: u64,
}

impl MemoryStore {
    /// A store of at most `capacity` bytes of document text.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::default(),
        }
    }

    /// The text registered under `hash`, now the most recently used.
    pub fn get(&self, hash: &str) -> Option<Arc<str>> {
        let mut entries = self.entries();
        let Entries {
            by_hash,
            by_use,
            tick,
            ..
        } = &mut *entries;
        let (text, used) = by_hash.get_mut(hash)?;
        *tick += 1;
        if let Some(key) = by_use.remove(used) {
            by_use.insert(*tick, key);
        }
        *used = *tick;
        Some(Arc::clone(text))
    }

    /// Keeps `text` under `hash`, evicting the least recently used beyond the capacity. A text
    /// larger than the whole capacity is not kept.
    pub fn insert(&self, hash: &str, text: Arc<str>) {
        if text.len() > self.capacity {
            return;
        }
        let mut entries = self.entries();
        if entries.by_hash.contains_key(hash) {
            return;
        }
        while entries.bytes + text.len() > self.capacity {
            let Some((_, oldest)) = entries.by_use.pop_first() else {
                break;
            };
            if let Some((gone, _)) = entries.by_hash.remove(&oldest) {
                entries.bytes -= gone.len();
            }
        }
        entries.tick += 1;
        let (tick, key) = (entries.tick, Arc::<str>::from(hash));
        entries.bytes += text.len();
        entries.by_use.insert(tick, Arc::clone(&key));
        entries.by_hash.insert(key, (text, tick));
    }

    /// Bytes of text held.
    pub fn bytes(&self) -> usize {
        self.entries().bytes
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Every statement leaves the maps consistent; a panic elsewhere cannot corrupt them.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize, len: usize) -> Arc<str> {
        Arc::from(format!("{n:0len$}"))
    }

    #[test]
    fn evicts_the_least_recently_used_by_bytes() {
        let store = MemoryStore::new(30);
        store.insert("a", text(1, 10));
        store.insert("b", text(2, 10));
        store.insert("c", text(3, 10));
        assert_eq!(store.bytes(), 30);
        // `a` is used, so `b` is now the oldest and leaves for `d`.
        assert!(store.get("a").is_some());
        store.insert("d", text(4, 10));
        assert!(store.get("b").is_none());
        for kept in ["a", "c", "d"] {
            assert!(store.get(kept).is_some(), "{kept} is kept");
        }
        assert_eq!(store.bytes(), 30);
        // One text of 25 bytes pushes out as many as it needs.
        store.insert("e", text(5, 25));
        assert_eq!(store.bytes(), 25);
        assert_eq!(store.get("e").as_deref(), Some(&*text(5, 25)));
    }

    #[test]
    fn keeps_no_text_larger_than_the_capacity_and_no_duplicates() {
        let store = MemoryStore::new(8);
        store.insert("big", text(1, 9));
        assert!(store.get("big").is_none());
        assert_eq!(store.bytes(), 0);
        store.insert("x", text(1, 4));
        store.insert("x", text(1, 4));
        assert_eq!(store.bytes(), 4);
    }
}
