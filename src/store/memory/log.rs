//! The embedded store's moderation log: every entry by id, and each product's ids, so that the
//! shop's log and a product's are both read in id order without a filter.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use crate::domain::{EntryId, LogEntry, Order, Sku};
use crate::store::{LogPage, LogQuery};

#[derive(Debug, Default)]
pub(super) struct Log {
    entries: BTreeMap<EntryId, LogEntry>,
    by_sku: HashMap<Sku, BTreeSet<EntryId>>,
}

impl Log {
    /// Adds `entry` unless an entry with its id is held (entries are never changed).
    pub(super) fn append(&mut self, entry: LogEntry) {
        if self.entries.contains_key(&entry.id) {
            return;
        }
        self.by_sku
            .entry(entry.sku.clone())
            .or_default()
            .insert(entry.id);
        self.entries.insert(entry.id, entry);
    }

    /// How many entries the shop's log (`None`) or a product's holds.
    pub(super) fn count(&self, sku: Option<&Sku>) -> u64 {
        match sku {
            None => self.entries.len() as u64,
            Some(sku) => self.by_sku.get(sku).map_or(0, |ids| ids.len() as u64),
        }
    }

    /// The entry with id `id`.
    pub(super) fn get(&self, id: EntryId) -> Option<&LogEntry> {
        self.entries.get(&id)
    }

    /// Every entry, oldest first (`scan`).
    pub(super) fn all(&self) -> impl Iterator<Item = &LogEntry> {
        self.entries.values()
    }

    /// One page of `query`, at most `cap` entries (a stand-in for DynamoDB's 1 MB cut).
    pub(super) fn query(&self, query: &LogQuery, cap: Option<usize>) -> LogPage {
        let range = match (query.order, query.after) {
            (_, None) => (Bound::Unbounded, Bound::Unbounded),
            (Order::NewestFirst, Some(after)) => (Bound::Unbounded, Bound::Excluded(after)),
            (Order::OldestFirst, Some(after)) => (Bound::Excluded(after), Bound::Unbounded),
        };
        let order = query.order;
        let ids = match &query.sku {
            None => ordered(self.entries.range(range).map(|(id, _)| *id), order),
            Some(sku) => match self.by_sku.get(sku) {
                None => Box::new(std::iter::empty()),
                Some(ids) => ordered(ids.range(range).copied(), order),
            },
        };
        let limit = cap.map_or(query.limit, |cap| cap.min(query.limit));
        let entries: Vec<LogEntry> = ids
            .take(limit)
            .filter_map(|id| self.entries.get(&id).cloned())
            .collect();
        let last_evaluated = (entries.len() == limit && limit > 0)
            .then(|| entries.last().map(|e| e.id))
            .flatten();
        LogPage {
            entries,
            last_evaluated,
        }
    }
}

/// `ids` (ascending) read in `order`.
pub(super) fn ordered<'a, T: 'a>(
    ids: impl DoubleEndedIterator<Item = T> + 'a,
    order: Order,
) -> Box<dyn Iterator<Item = T> + 'a> {
    match order {
        Order::OldestFirst => Box::new(ids),
        Order::NewestFirst => Box::new(ids.rev()),
    }
}
