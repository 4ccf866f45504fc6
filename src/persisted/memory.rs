//! Automatic persisted queries kept in this server's memory: least recently used out first,
//! bounded by the bytes it holds, so a flood of registrations (each paid for from its client's
//! budget) can only push out older entries, never grow the process.
//!
//! Each entry is counted as its text, its hash and [`ENTRY_OVERHEAD`] for what holds them:
//! counted by their texts alone, small entries took about sixteen times what
//! `--persisted-queries-bytes` said (issue 42).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes an entry takes beyond its text and its hash, measured with this server's allocator
/// (`examples` of BENCHMARKS.md, "Memory of the persisted queries"): the text's and the hash's
/// `Arc` headers (16 bytes each), the hash map's slot (40 bytes, at its load factor about 60)
/// and the recency tree's (24 bytes in nodes about two-thirds full, about 40), each allocation
/// rounded up to its size class.
pub const ENTRY_OVERHEAD: usize = 192;

/// What one entry of `hash` and `text` is counted as.
fn size(hash: &str, text: &str) -> usize {
    text.len() + hash.len() + ENTRY_OVERHEAD
}

/// Texts by their SHA-256 (lowercase hex), at most `capacity` bytes in all ([`size`]).
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
        let size = size(hash, &text);
        if size > self.capacity {
            return;
        }
        let mut entries = self.entries();
        if entries.by_hash.contains_key(hash) {
            return;
        }
        while entries.bytes + size > self.capacity {
            let Some((_, oldest)) = entries.by_use.pop_first() else {
                break;
            };
            if let Some((gone, _)) = entries.by_hash.remove(&oldest) {
                entries.bytes -= self::size(&oldest, &gone);
            }
        }
        entries.tick += 1;
        let (tick, key) = (entries.tick, Arc::<str>::from(hash));
        entries.bytes += size;
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

    /// What an entry of a one-letter hash and a text of `len` is counted as.
    fn entry(len: usize) -> usize {
        1 + len + ENTRY_OVERHEAD
    }

    #[test]
    fn evicts_the_least_recently_used_by_bytes() {
        let store = MemoryStore::new(3 * entry(10));
        store.insert("a", text(1, 10));
        store.insert("b", text(2, 10));
        store.insert("c", text(3, 10));
        assert_eq!(store.bytes(), 3 * entry(10));
        // `a` is used, so `b` is now the oldest and leaves for `d`.
        assert!(store.get("a").is_some());
        store.insert("d", text(4, 10));
        assert!(store.get("b").is_none());
        for kept in ["a", "c", "d"] {
            assert!(store.get(kept).is_some(), "{kept} is kept");
        }
        assert_eq!(store.bytes(), 3 * entry(10));
        // One large entry pushes out as many as it needs.
        let large = 2 * entry(10) + 10;
        store.insert("e", text(5, large - entry(0)));
        assert_eq!(store.bytes(), large);
        assert_eq!(store.get("e").as_deref(), Some(&*text(5, large - entry(0))));
    }

    #[test]
    fn small_entries_count_what_holds_them_not_only_their_text() {
        let store = MemoryStore::new(10 * 1024);
        for n in 0..1_000 {
            store.insert(&format!("{n:064}"), text(n, 12));
        }
        // A 12-byte text under a 64-digit hash takes far more than 12 bytes: at most about
        // 10 KiB / (12 + 64 + ENTRY_OVERHEAD) of them are kept.
        let kept = (0..1_000)
            .filter(|n| store.get(&format!("{n:064}")).is_some())
            .count();
        assert_eq!(kept, 10 * 1024 / (12 + 64 + ENTRY_OVERHEAD));
        assert!(store.bytes() <= 10 * 1024);
    }

    #[test]
    fn keeps_no_text_larger_than_the_capacity_and_no_duplicates() {
        let store = MemoryStore::new(entry(8));
        store.insert("big", text(1, 9));
        assert!(store.get("big").is_none());
        assert_eq!(store.bytes(), 0);
        store.insert("x", text(1, 4));
        store.insert("x", text(1, 4));
        assert_eq!(store.bytes(), entry(4));
    }
}
