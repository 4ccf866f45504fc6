//! `verify`'s read of one product's whole index (`PageIndex::entries`): its sets by time, its
//! version hash and its sets by count, in chunks.

use std::collections::HashMap;

use super::RedisIndex;
use super::keys::sort_key_of_by_count;
use super::replies::sort_key;
use crate::domain::{IndexEntry, Rating, Sku, SortKey};
use crate::index::IndexError;

impl RedisIndex {
    /// Every entry of `sku`, newest first, with its version and helpful count (`entries`).
    pub(super) async fn entries_of(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        let versions = self.versions(sku).await?;
        let mut counts: HashMap<SortKey, u64> = HashMap::new();
        for rating in Rating::ALL {
            for (member, score) in self.read_all(&self.keys.by_count(sku, rating)).await? {
                let key = sort_key_of_by_count(&member).ok_or_else(|| {
                    IndexError::Internal(format!("a malformed member by count {member:?}").into())
                })?;
                counts.insert(key, count_of(score, key.millis()));
            }
        }
        let mut entries = Vec::new();
        for rating in Rating::ALL {
            let sets = [self.keys.rating(sku, rating), self.keys.voted(sku, rating)];
            for set in sets {
                for (member, score) in self.read_all(&set).await? {
                    let version = versions.get(&member).copied().unwrap_or(1);
                    let key = sort_key(&member, score)?;
                    entries.push(IndexEntry {
                        sku: sku.clone(),
                        key,
                        rating,
                        version,
                        helpful: counts.get(&key).copied().unwrap_or(0),
                        published: true,
                        status: IndexEntry::status_of_members(sku),
                        author: None,
                        reported: false,
                        verified: false,
                    });
                }
            }
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.key));
        Ok(entries)
    }
}

/// The count a score of a set by count stands for (`by_count.lua`'s `count_of`): the score is
/// `count * 2^31 + createdAt / 1024` (whole seconds of 1,024 ms), exact below 2^22 votes.
fn count_of(score: f64, millis: u64) -> u64 {
    let second = (millis / 1024) as f64;
    ((score - second) / 2_147_483_648.0).round().max(0.0) as u64
}
