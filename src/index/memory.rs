//! The embedded page index: one [`Treap`] per product, the in-process twin of the Redis sorted
//! sets. Same semantics, same contract tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::treap::Treap;
use super::{IndexError, PageIndex};
use crate::domain::{ChangeEvent, IndexEntry, Order, RatingSet, Sku, SortKey};

/// The embedded index. Cloning shares the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryIndex {
    products: Arc<RwLock<HashMap<Sku, Treap>>>,
    staging: Arc<Mutex<HashMap<String, HashMap<Sku, Treap>>>>,
}

impl MemoryIndex {
    pub fn new() -> Self {
        Self::default()
    }

    fn read<T>(&self, f: impl FnOnce(&HashMap<Sku, Treap>) -> T) -> T {
        // Treap operations do not panic midway on valid input, so a poisoned lock still guards
        // consistent data; keep serving rather than fail every later request.
        f(&self.products.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write<T>(&self, f: impl FnOnce(&mut HashMap<Sku, Treap>) -> T) -> T {
        f(&mut self.products.write().unwrap_or_else(|p| p.into_inner()))
    }
}

fn remove(products: &mut HashMap<Sku, Treap>, entry: &IndexEntry) {
    if let Some(treap) = products.get_mut(&entry.sku) {
        treap.remove(&entry.key);
        if treap.count(RatingSet::ALL) == 0 {
            products.remove(&entry.sku);
        }
    }
}

impl PageIndex for MemoryIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        Ok(self.read(|p| p.get(sku).map_or(0, |t| t.count(ratings))))
    }

    async fn key_at(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        order: Order,
        after: Option<SortKey>,
        rank: u64,
    ) -> Result<Option<SortKey>, IndexError> {
        Ok(self.read(|p| {
            let treap = p.get(sku)?;
            let skipped = after.map_or(0, |key| treap.count_through(&key, order, ratings));
            treap.select(skipped.checked_add(rank)?, order, ratings)
        }))
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<(), IndexError> {
        self.write(|products| {
            for event in events {
                match event {
                    ChangeEvent::Upsert { old, new } => {
                        if let Some(old) = old
                            .as_ref()
                            .filter(|old| old.sku != new.sku || old.key != new.key)
                        {
                            remove(products, old);
                        }
                        products
                            .entry(new.sku.clone())
                            .or_default()
                            .insert(new.key, new.rating);
                    }
                    ChangeEvent::Remove { old } => remove(products, old),
                }
            }
        });
        Ok(())
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        Ok(self.read(|p| p.get(sku).map(|t| t.entries(sku)).unwrap_or_default()))
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        let mut skus: Vec<Sku> = self.read(|p| p.keys().cloned().collect());
        skus.sort();
        Ok(skus)
    }

    async fn stage(&self, run: &str, entries: &[IndexEntry]) -> Result<(), IndexError> {
        let mut staging = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let products = staging.entry(run.to_owned()).or_default();
        for entry in entries {
            products
                .entry(entry.sku.clone())
                .or_default()
                .insert(entry.key, entry.rating);
        }
        Ok(())
    }

    async fn commit(&self, run: &str, skus: &[Sku]) -> Result<(), IndexError> {
        let mut staging = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let staged = staging.entry(run.to_owned()).or_default();
        self.write(|products| {
            for sku in skus {
                match staged.remove(sku) {
                    Some(treap) => products.insert(sku.clone(), treap),
                    None => products.remove(sku),
                };
            }
        });
        if staged.is_empty() {
            staging.remove(run);
        }
        Ok(())
    }

    async fn ping(&self) -> Result<(), IndexError> {
        Ok(())
    }
}
