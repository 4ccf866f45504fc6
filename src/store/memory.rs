//! The embedded comment store: an in-process twin of the DynamoDB table and its two GSIs.
//!
//! It answers [`KeyQuery`]s the way DynamoDB does, including an optional cap on items per
//! response (`max_items_per_response`) that makes it stop early with a last-evaluated key, so
//! the engine's short-read loop is exercised without DynamoDB's 1 MB cut. Every write is
//! reported, in order, as a [`ChangeEvent`] to an optional sink, the embedded stand-in for
//! DynamoDB Streams. Helpful votes are kept beside the comments, a set of voters per comment,
//! and leave with their comment when it is deleted.

mod forget;
mod log;
mod reads;
mod reports;
mod tables;

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use self::tables::Tables;
use std::num::NonZeroU32;

use super::{
    ChangeSink, CommentStore, KeyQuery, LogPage, LogQuery, QueryPage, ReportPage, ReportQuery,
    ScanPage, StoreError, VotePage, VoteQuery,
};
use crate::domain::{
    Access, ChangeEvent, Comment, CommentId, CommentPatch, EntryId, Forget, IndexEntry, LogEntry,
    Report, ReportDraft, Sku, Verdict, Voted, Voter, VoterId,
};

/// Items a scan page holds, like a DynamoDB `Scan` page.
const SCAN_PAGE: usize = 1_000;

/// The embedded store. Cloning shares the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    inner: Arc<RwLock<Tables>>,
    max_items_per_response: Option<usize>,
    sink: Option<ChangeSink>,
}

impl MemoryStore {
    /// An empty store with no response cap and no change sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Caps how many items one query response holds, like DynamoDB's 1 MB cut.
    pub fn with_max_items_per_response(mut self, max: usize) -> Self {
        self.max_items_per_response = Some(max.max(1));
        self
    }

    /// Reports every write to `sink` as a [`ChangeEvent`].
    pub fn with_change_sink(mut self, sink: ChangeSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Number of comments held.
    pub fn len(&self) -> usize {
        self.read().comments.len()
    }

    /// Whether the store holds no comment.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> RwLockReadGuard<'_, Tables> {
        // A panic while holding the lock cannot leave `Tables` half-written (each write is a
        // few infallible map operations), so a poisoned lock still guards consistent data.
        self.inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tables> {
        self.inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn emit(&self, event: ChangeEvent) {
        if let Some(sink) = &self.sink {
            // A closed receiver means nobody follows the feed any more (shutdown); writes to
            // the system of record must not fail because of that.
            let _ = sink.send(event);
        }
    }

    /// Writes `comments` as they are (replacing any with the same id) and reports each
    /// change: `put_batch`, and the durable store's writer applying what it committed.
    pub(crate) fn put_now(&self, comments: &[Comment]) {
        let mut tables = self.write();
        for comment in comments {
            let old = tables.replace(comment.clone());
            self.emit(ChangeEvent::Upsert {
                old: old.as_ref().map(IndexEntry::from),
                new: IndexEntry::from(comment),
            });
        }
    }

    /// Records a vote (or its withdrawal) the durable store's writer committed, with the
    /// comment as the same commit left it, and reports the change.
    pub(crate) fn vote_now(&self, comment: &Comment, voter: VoterId, helpful: bool) {
        let mut tables = self.write();
        tables.set_vote(comment.id, voter, helpful);
        let old = tables.replace(comment.clone());
        self.emit(ChangeEvent::Upsert {
            old: old.as_ref().map(IndexEntry::from),
            new: IndexEntry::from(comment),
        });
    }

    /// Holds the votes the durable store loaded, without reporting anything (its comments are
    /// loaded with their counts).
    pub(crate) fn load_votes(&self, votes: impl IntoIterator<Item = (CommentId, VoterId)>) {
        let mut tables = self.write();
        for (id, voter) in votes {
            tables.set_vote(id, voter, true);
        }
    }

    /// Removes a comment and its votes without checks and reports the removal (the durable
    /// store's writer, applying a deletion it committed).
    pub(crate) fn remove_now(&self, id: CommentId) -> Option<Comment> {
        let mut tables = self.write();
        let old = tables.remove(id)?;
        tables.remove_votes(id);
        self.emit(ChangeEvent::removal(IndexEntry::from(&old)));
        Some(old)
    }

    /// Replaces comment `id` with what `next` makes of it (`None`: nothing to write, the
    /// comment answered as it is), with the log entries `entries` makes of the old and new
    /// comment, and the old one's open reports closed if the new one closes them, at `now_ms`,
    /// in one step under the lock.
    fn rewrite(
        &self,
        id: CommentId,
        now_ms: u64,
        next: impl FnOnce(&Comment) -> Result<Option<Comment>, StoreError>,
        entries: impl FnOnce(&Comment, &Comment) -> Vec<LogEntry>,
    ) -> Result<Comment, StoreError> {
        let mut tables = self.write();
        let old = tables
            .comments
            .get(&id)
            .cloned()
            .ok_or(StoreError::NotFound(id))?;
        let Some(new) = next(&old)? else {
            return Ok(old);
        };
        for entry in entries(&old, &new) {
            tables.log.append(entry);
        }
        if let Some(outcome) = old.closes_reports(&new) {
            tables.reports.close(id, &old.reporters, outcome, now_ms);
        }
        tables.replace(new.clone());
        self.emit(ChangeEvent::Upsert {
            old: Some(IndexEntry::from(&old)),
            new: IndexEntry::from(&new),
        });
        Ok(new)
    }

    /// Puts log entries as they are (the durable store's writer applying what it committed).
    pub(crate) fn put_log_now(&self, entries: &[LogEntry]) {
        let mut tables = self.write();
        for entry in entries {
            tables.log.append(entry.clone());
        }
    }
}

impl CommentStore for MemoryStore {
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        Ok(self.query_now(query))
    }

    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        let tables = self.read();
        Ok(ids
            .iter()
            .map(|id| tables.comments.get(id).cloned())
            .collect())
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        let mut tables = self.write();
        let comment = Comment {
            version: 1,
            ..comment.clone()
        };
        match tables.comments.get(&comment.id) {
            // The same comment again: a retry of a create that was written (the contract).
            Some(stored) if *stored == comment => return Ok(()),
            Some(_) => return Err(StoreError::AlreadyExists(comment.id)),
            None => {}
        }
        if comment
            .purchase
            .as_ref()
            .is_some_and(|h| tables.is_claimed(h))
        {
            return Err(StoreError::PurchaseUsed);
        }
        self.emit(ChangeEvent::Upsert {
            old: None,
            new: IndexEntry::from(&comment),
        });
        tables.insert(comment);
        Ok(())
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        let mut tables = self.write();
        let old = tables
            .comments
            .get(&id)
            .cloned()
            .ok_or(StoreError::NotFound(id))?;
        if !access.allows(&old) {
            return Err(StoreError::Forbidden(id));
        }
        let new = patch.apply(&old, now_ms)?;
        tables.replace(new.clone());
        self.emit(ChangeEvent::Upsert {
            old: Some(IndexEntry::from(&old)),
            new: IndexEntry::from(&new),
        });
        Ok(new)
    }

    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        let mut tables = self.write();
        let stored = tables.comments.get(&id).ok_or(StoreError::NotFound(id))?;
        if !access.allows(stored) {
            return Err(StoreError::Forbidden(id));
        }
        let old = tables.remove(id).ok_or(StoreError::NotFound(id))?;
        tables.remove_votes(id);
        self.emit(ChangeEvent::removal(IndexEntry::from(&old)));
        Ok(old)
    }

    async fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        self.rewrite(
            id,
            now_ms,
            |old| Ok(Some(old.after_verdict(verdict, now_ms)?)),
            |old, new| LogEntry::of_decision(actor, verdict.decision.logged(), old, new, now_ms),
        )
    }

    async fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        self.rewrite(
            id,
            now_ms,
            |old| Ok(old.after_reply(body, now_ms)?),
            |old, new| {
                vec![LogEntry::of(
                    actor,
                    LogEntry::reply_action(new),
                    old,
                    new,
                    now_ms,
                )]
            },
        )
    }

    async fn moderation_log(&self, query: &LogQuery) -> Result<LogPage, StoreError> {
        Ok(self.read().log.query(query, self.max_items_per_response))
    }

    async fn moderation_log_count(&self, sku: Option<&Sku>) -> Result<u64, StoreError> {
        Ok(self.read().log.count(sku))
    }

    async fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        self.report_now(id, reporter, draft, hide_threshold, now_ms)
    }

    async fn reports(&self, query: &ReportQuery) -> Result<ReportPage, StoreError> {
        Ok(self
            .read()
            .reports
            .query(query, self.max_items_per_response))
    }

    async fn report_count(&self, reporter: &str) -> Result<u64, StoreError> {
        Ok(self.read().reports.count(reporter))
    }

    async fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> Result<Vec<Option<Report>>, StoreError> {
        let tables = self.read();
        Ok(keys
            .iter()
            .map(|(comment, reporter)| tables.reports.get(*comment, reporter).cloned())
            .collect())
    }

    async fn put_reports(&self, reports: &[Report]) -> Result<(), StoreError> {
        self.put_reports_now(reports);
        Ok(())
    }

    async fn log_entries(&self, ids: &[EntryId]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        let tables = self.read();
        Ok(ids.iter().map(|id| tables.log.get(*id).cloned()).collect())
    }

    async fn put_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        self.put_log_now(entries);
        Ok(())
    }

    async fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        _now_ms: u64,
    ) -> Result<Voted, StoreError> {
        let mut tables = self.write();
        let old = tables
            .comments
            .get(&id)
            .filter(|comment| comment.is_public())
            .cloned()
            .ok_or(StoreError::NotFound(id))?;
        if helpful && voter.wrote(&old) {
            return Err(StoreError::OwnComment(id));
        }
        if tables.has_vote(id, voter.id) == helpful {
            return Ok(Voted {
                comment: old,
                changed: false,
            });
        }
        let new = old.after_vote(helpful)?;
        tables.set_vote(id, voter.id, helpful);
        // The comment keeps its place by time and rating, and moves in the partitions by
        // helpful votes.
        tables.replace(new.clone());
        self.emit(ChangeEvent::Upsert {
            old: Some(IndexEntry::from(&old)),
            new: IndexEntry::from(&new),
        });
        Ok(Voted {
            comment: new,
            changed: true,
        })
    }

    async fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> Result<Vec<bool>, StoreError> {
        let tables = self.read();
        Ok(ids.iter().map(|id| tables.has_vote(*id, voter)).collect())
    }

    async fn votes_by(&self, query: &VoteQuery) -> Result<VotePage, StoreError> {
        Ok(self.votes_by_now(query))
    }

    async fn forget(&self, what: &Forget) -> Result<bool, StoreError> {
        self.forget_now(what)
    }

    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        self.put_now(comments);
        Ok(())
    }

    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        self.scan_now(segment, total_segments, resume)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
