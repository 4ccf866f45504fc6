//! The embedded store's reads that walk its tables: a partition in order, like a DynamoDB
//! `Query` (with the optional cap on items per response), and a scan segment.

use std::ops::Bound;

use super::{MemoryStore, SCAN_PAGE};
use crate::domain::{Comment, CommentId, Order, Position};
use crate::store::{KeyQuery, QueryPage, ScanPage, StoreError};

impl MemoryStore {
    pub(super) fn query_now(&self, query: &KeyQuery) -> QueryPage {
        let tables = self.read();
        let Some(set) = tables.held(&query.partition) else {
            return QueryPage::default();
        };
        let cap = self
            .max_items_per_response
            .map_or(query.limit, |max| query.limit.min(max));
        let range = match query.order {
            Order::NewestFirst => (Bound::Unbounded, query.from),
            Order::OldestFirst => (query.from, Bound::Unbounded),
        };
        let keys = set.range(range);
        let keys: Vec<&Position> = match query.order {
            Order::NewestFirst => keys.rev().take(cap).collect(),
            Order::OldestFirst => keys.take(cap).collect(),
        };
        let items: Vec<Comment> = keys
            .iter()
            .filter_map(|key| tables.comments.get(&key.key.id()).cloned())
            .collect();
        // DynamoDB sets LastEvaluatedKey whenever it stopped because of Limit or the size cap,
        // even if nothing follows; mirror that so callers handle it.
        let last_evaluated = (items.len() == cap && cap > 0).then(|| *keys[cap - 1]);
        QueryPage {
            items,
            last_evaluated,
        }
    }

    /// One page of a scan segment (see `CommentStore::scan`).
    pub(super) fn scan_now(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        let total = u128::from(total_segments.max(1));
        let start = match resume {
            Some(token) => Bound::Excluded(
                token
                    .parse::<CommentId>()
                    .map_err(|e| StoreError::Internal(e.into()))?,
            ),
            None => Bound::Unbounded,
        };
        let tables = self.read();
        let mut items = Vec::new();
        let mut votes = Vec::new();
        let mut last = None;
        for (id, comment) in tables.comments.range((start, Bound::Unbounded)) {
            last = Some(*id);
            if u128::from_be_bytes(id.to_bytes()) % total == u128::from(segment) {
                items.push(comment.clone());
                if let Some(voters) = tables.votes.get(id) {
                    votes.push((*id, voters.len() as u64));
                }
                if items.len() == SCAN_PAGE {
                    break;
                }
            }
        }
        let more = last.is_some_and(|id| {
            tables
                .comments
                .range((Bound::Excluded(id), Bound::Unbounded))
                .next()
                .is_some()
        });
        // The log and the reports come whole with segment 0's last page (the embedded store
        // holds them all).
        let whole = segment == 0 && !more;
        let log = if whole {
            tables.log.all().cloned().collect()
        } else {
            Vec::new()
        };
        let reports = if whole {
            tables.reports.all().cloned().collect()
        } else {
            Vec::new()
        };
        Ok(ScanPage {
            items,
            votes,
            log,
            reports,
            unranked: Vec::new(),
            resume: if more {
                last.map(|id| id.to_string())
            } else {
                None
            },
        })
    }
}
