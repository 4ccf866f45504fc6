//! The embedded page index: one [`Treap`] per product, the in-process twin of the Redis sorted
//! sets, with the same versions and tombstones (`crate::index`, "Versions"). Same semantics,
//! same contract tests.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::listed::Listed;
use super::treap::Treap;
use super::{
    Held, IndexError, PageIndex, Positions, ProductVersion, Repair, Stale, Start, TOMBSTONE_TTL,
    View, ViewAnchor, ViewRequest, new_epoch,
};
use crate::domain::{
    AnchorRank, ChangeEvent, CommentId, IndexEntry, Listing, Order, PageLayout, Position, Rating,
    RatingSet, Sku, SortKey, helpful_group,
};

/// The embedded index. Cloning shares the same data.
#[derive(Clone, Debug)]
pub struct MemoryIndex {
    state: Arc<RwLock<State>>,
    tombstone_ttl: Duration,
    /// The epoch of its product versions: random for each index made, so the versions a
    /// restarted process counts again from 0 are never taken for the last process's
    /// ([`ProductVersion`]).
    epoch: u64,
}

impl Default for MemoryIndex {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Default)]
struct State {
    products: HashMap<Sku, Product>,
    /// Deleted comments: the deletion's version and when the tombstone expires.
    tombstones: HashMap<(Sku, CommentId), (u64, Instant)>,
    /// Tombstones in the order they expire (one lifetime for all, so insertion order), with
    /// the expiry they had when queued: a refreshed tombstone is left for its later entry.
    expiry: VecDeque<(Instant, Sku, CommentId)>,
    /// Each product's version (`PageIndex::product_versions`), bumped by every change applied
    /// to it; kept after the product's last comment goes, so a version never comes back.
    versions: HashMap<Sku, u64>,
}

#[derive(Debug, Default)]
struct Product {
    treap: Treap,
    /// The same comments by helpful votes (positions of the list by helpful votes), from the
    /// product's first comment with votes on. Before it, every count is 0 and the list by
    /// helpful votes is the list by time, read from `treap`: a product without votes holds no
    /// second treap (72 bytes a comment and the vector's slack). Made once, in O(n), and kept
    /// when the votes are taken back, so voting and unvoting does not rebuild it each time.
    helpful: Option<Treap<Position>>,
    /// Versions of the comments at version 2 or more (the others are at version 1).
    versions: HashMap<CommentId, u64>,
    /// Helpful counts of the comments with votes (the others have none).
    counts: HashMap<CommentId, u64>,
}

impl Product {
    /// The position of the comment at `key` in the list by helpful votes.
    fn helpful_position(&self, key: &SortKey) -> Position {
        let count = self.counts.get(&key.id()).copied().unwrap_or(0);
        Position {
            group: helpful_group(count),
            key: *key,
        }
    }
}

impl State {
    /// `sku`'s list as `listing` makes it; `None` for a product without comments.
    fn listed(&self, sku: &Sku, listing: Listing) -> Option<Listed<'_>> {
        self.products.get(sku).map(|p| Listed {
            treap: &p.treap,
            helpful: p.helpful.as_ref(),
            listing,
        })
    }

    fn held(&self, sku: &Sku, key: &SortKey) -> Held {
        if let Some((version, _)) = self.tombstones.get(&(sku.clone(), key.id())) {
            return Held::Deleted { version: *version };
        }
        match self.products.get(sku) {
            Some(product) if product.treap.rating_of(key).is_some() => Held::Live {
                version: product.versions.get(&key.id()).copied().unwrap_or(1),
            },
            _ => Held::Nothing,
        }
    }

    /// Makes `entry` live (at its version), forgetting any tombstone.
    fn put(&mut self, entry: &IndexEntry) {
        self.tombstones.remove(&(entry.sku.clone(), entry.key.id()));
        let product = self.products.entry(entry.sku.clone()).or_default();
        let old = product.helpful_position(&entry.key);
        product.treap.insert(entry.key, entry.rating);
        if entry.helpful > 0 {
            product.counts.insert(entry.key.id(), entry.helpful);
        } else {
            product.counts.remove(&entry.key.id());
        }
        if product.helpful.is_none() && !product.counts.is_empty() {
            // The first comment with votes: until now every position was its sort key in
            // group 0, this comment's `old` one included.
            product.helpful = Some(product.treap.map_keys(|key| Position::flat(*key)));
        }
        let new = product.helpful_position(&entry.key);
        if let Some(helpful) = &mut product.helpful {
            helpful.remove(&old);
            helpful.insert(new, entry.rating);
        }
        if entry.version > 1 {
            product.versions.insert(entry.key.id(), entry.version);
        } else {
            product.versions.remove(&entry.key.id());
        }
    }

    /// Takes the comment at `key` out of the product, and its tombstone too.
    fn forget(&mut self, sku: &Sku, key: &SortKey) {
        self.tombstones.remove(&(sku.clone(), key.id()));
        if let Some(product) = self.products.get_mut(sku) {
            let position = product.helpful_position(key);
            if let Some(helpful) = &mut product.helpful {
                helpful.remove(&position);
            }
            product.counts.remove(&key.id());
            product.treap.remove(key);
            product.versions.remove(&key.id());
            if product.treap.count(RatingSet::ALL) == 0 {
                self.products.remove(sku);
            }
        }
    }

    fn delete(&mut self, sku: &Sku, key: &SortKey, version: u64, expires: Instant) {
        self.forget(sku, key);
        self.tombstones
            .insert((sku.clone(), key.id()), (version, expires));
        self.expiry.push_back((expires, sku.clone(), key.id()));
    }

    /// A change was applied to `sku`.
    fn bump(&mut self, sku: &Sku) {
        *self.versions.entry(sku.clone()).or_default() += 1;
    }

    /// Drops the tombstones whose lifetime has passed.
    fn expire(&mut self, now: Instant) {
        while let Some((expires, _, _)) = self.expiry.front() {
            if *expires > now {
                return;
            }
            let Some((expires, sku, id)) = self.expiry.pop_front() else {
                return;
            };
            let key = (sku, id);
            if self
                .tombstones
                .get(&key)
                .is_some_and(|(_, e)| *e == expires)
            {
                self.tombstones.remove(&key);
            }
        }
    }
}

impl MemoryIndex {
    /// An empty index that keeps tombstones for [`TOMBSTONE_TTL`], with a fresh epoch.
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            tombstone_ttl: TOMBSTONE_TTL,
            epoch: new_epoch(),
        }
    }

    /// Keeps deletions' tombstones for `ttl` instead of [`TOMBSTONE_TTL`] (tests).
    pub fn with_tombstone_ttl(mut self, ttl: Duration) -> Self {
        self.tombstone_ttl = ttl;
        self
    }

    fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        // Treap operations do not panic midway on valid input, so a poisoned lock still guards
        // consistent data; keep serving rather than fail every later request.
        f(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.expire(Instant::now());
        f(&mut state)
    }
}

/// `list` seen from `anchor` under `layout` (`PageIndex::positions`); a product without
/// comments has no list.
fn positions(list: Option<Listed<'_>>, anchor: Option<Position>, layout: PageLayout) -> Positions {
    let Some(list) = list else {
        return Positions {
            anchor: anchor.map(|_| AnchorRank { newer: 0, older: 0 }),
            ..Positions::default()
        };
    };
    let total = list.count();
    let anchor = anchor.map(|position| {
        let member = u64::from(list.holds(&position));
        AnchorRank {
            newer: list.count_through(&position, Order::NewestFirst) - member,
            older: list.count_through(&position, Order::OldestFirst) - member,
        }
    });
    let page_bound = layout
        .page_to_bound(total, anchor)
        .and_then(|page| list.select(layout.bound_rank(page)?, layout.numbering.order()));
    Positions {
        total,
        anchor,
        page_bound,
    }
}

/// Whether a change of `version` wins over what the index holds (`crate::index`, "Versions").
fn is_newer(event: &ChangeEvent, held: Held) -> bool {
    let version = event.version();
    match (event, held) {
        (_, Held::Nothing) => true,
        // A withdrawal (`ChangeEvent::withdraws`) is a deletion at its version.
        (ChangeEvent::Upsert { new, .. }, Held::Live { version: h }) if new.published => {
            version >= h
        }
        (_, Held::Live { version: h } | Held::Deleted { version: h }) => version > h,
    }
}

impl PageIndex for MemoryIndex {
    async fn count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, IndexError> {
        Ok(self.read(|s| s.products.get(sku).map_or(0, |p| p.treap.count(ratings))))
    }

    async fn rating_counts_since(
        &self,
        lists: &[Sku],
        since_ms: u64,
    ) -> Result<Vec<[u64; 5]>, IndexError> {
        // The first key at `since_ms`: no id is below 0.
        let first = SortKey::new(
            since_ms.min(SortKey::MAX_MILLIS),
            CommentId::from_parts(0, 0),
        )
        .map_err(|e| IndexError::Internal(e.into()))?;
        Ok(self.read(|s| {
            lists
                .iter()
                .map(|list| {
                    let mut counts = [0; 5];
                    if let Some(product) = s.products.get(list) {
                        for (slot, rating) in counts.iter_mut().zip(Rating::ALL) {
                            let only = RatingSet::from_ratings([rating]);
                            *slot = product
                                .treap
                                .count_through(&first, Order::NewestFirst, only);
                        }
                    }
                    counts
                })
                .collect()
        }))
    }

    async fn key_at(
        &self,
        sku: &Sku,
        listing: Listing,
        order: Order,
        after: Option<Position>,
        rank: u64,
    ) -> Result<Option<Position>, IndexError> {
        Ok(self.read(|s| s.listed(sku, listing)?.select_after(after, rank, order)))
    }

    async fn positions(
        &self,
        sku: &Sku,
        listing: Listing,
        anchor: Option<Position>,
        layout: PageLayout,
    ) -> Result<Positions, IndexError> {
        Ok(self.read(|s| positions(s.listed(sku, listing), anchor, layout)))
    }

    async fn view(
        &self,
        sku: &Sku,
        listing: Listing,
        request: ViewRequest,
    ) -> Result<View, IndexError> {
        Ok(self.read(|s| {
            let Start { order, after } = request.start;
            let at = |rank: u64| s.listed(sku, listing)?.select_after(after, rank, order);
            let anchor = match request.anchor {
                ViewAnchor::None => None,
                ViewAnchor::Key(key) => Some(key),
                ViewAnchor::Rank(rank) => at(rank),
            };
            View {
                bound: request.bound.and_then(at),
                anchor,
                positions: positions(s.listed(sku, listing), anchor, request.layout),
            }
        }))
    }

    async fn apply(&self, events: &[ChangeEvent]) -> Result<Vec<Stale>, IndexError> {
        let expires = Instant::now() + self.tombstone_ttl;
        Ok(self.write(|state| {
            let mut stale = Vec::new();
            for (i, event) in events.iter().enumerate() {
                let entry = event.entry();
                let held = state.held(&entry.sku, &entry.key);
                if !is_newer(event, held) {
                    stale.push(Stale { event: i, held });
                    continue;
                }
                state.bump(&entry.sku);
                match event {
                    ChangeEvent::Upsert { new, .. } if new.published => state.put(new),
                    ChangeEvent::Upsert { new, .. } => {
                        state.delete(&new.sku, &new.key, new.version, expires);
                    }
                    ChangeEvent::Remove { old, version } => {
                        state.delete(&old.sku, &old.key, *version, expires);
                    }
                }
            }
            stale
        }))
    }

    async fn repair(&self, repairs: &[Repair]) -> Result<Vec<Repair>, IndexError> {
        Ok(self.write(|state| {
            let mut missed = Vec::new();
            for repair in repairs {
                if state.held(&repair.sku, &repair.key) != repair.expected {
                    missed.push(repair.clone());
                    continue;
                }
                state.bump(&repair.sku);
                match &repair.state {
                    Some(entry) => state.put(entry),
                    None => state.forget(&repair.sku, &repair.key),
                }
            }
            missed
        }))
    }

    async fn entries(&self, sku: &Sku) -> Result<Vec<IndexEntry>, IndexError> {
        Ok(self.read(|s| {
            s.products
                .get(sku)
                .map(|p| {
                    p.treap.entries(
                        sku,
                        |key| p.versions.get(&key.id()).copied().unwrap_or(1),
                        |key| p.counts.get(&key.id()).copied().unwrap_or(0),
                    )
                })
                .unwrap_or_default()
        }))
    }

    async fn products(&self) -> Result<Vec<Sku>, IndexError> {
        let mut skus: Vec<Sku> = self.read(|s| s.products.keys().cloned().collect());
        skus.sort();
        Ok(skus)
    }

    async fn ping(&self) -> Result<(), IndexError> {
        Ok(())
    }

    async fn product_versions(&self, skus: &[Sku]) -> Result<Vec<ProductVersion>, IndexError> {
        let epoch = self.epoch;
        Ok(self.read(|s| {
            skus.iter()
                .map(|sku| ProductVersion {
                    epoch,
                    number: s.versions.get(sku).copied().unwrap_or(0),
                })
                .collect()
        }))
    }
}
