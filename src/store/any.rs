//! [`AnyStore`]: the store chosen at start-up, dispatching statically to the implementations.

use std::num::NonZeroU32;

use super::{
    CommentStore, KeyQuery, LogPage, LogQuery, QueryPage, ReportPage, ReportQuery, ScanPage,
    StoreError, VotePage, VoteQuery, dynamo, memory, sqlite,
};
use crate::domain::{
    Access, Comment, CommentId, CommentPatch, EntryId, Forget, LogEntry, Report, ReportDraft, Sku,
    Verdict, Voted, Voter, VoterId,
};

/// The store chosen at start-up (`--store`): static dispatch over the implementations.
#[derive(Clone, Debug)]
pub enum AnyStore {
    /// In process, lost when the process ends (`--store memory` without `--data-dir`).
    Memory(memory::MemoryStore),
    /// The durable embedded store (`--store memory --data-dir PATH`).
    Sqlite(sqlite::SqliteStore),
    /// Amazon DynamoDB (`--store dynamodb`).
    Dynamo(dynamo::DynamoStore),
}

impl AnyStore {
    /// For the durable embedded store, what resolves once its last handle is dropped and its
    /// directory released ([`sqlite::SqliteStore::closed`]); the other stores hold no lock.
    pub fn closed(&self) -> Option<sqlite::Closed> {
        match self {
            AnyStore::Sqlite(store) => Some(store.closed()),
            AnyStore::Memory(_) | AnyStore::Dynamo(_) => None,
        }
    }
}

/// Calls `$call` on the chosen store. The DynamoDB arm is boxed: the AWS SDK's calls are
/// futures of 7 to 15 kB, and a future that holds one inline is that size on every store; every
/// future above it was too (a page's read, the `Query` root's field), and each move of one
/// copied it whole (callgrind: a 15,776-byte and a 19,936-byte copy a pager page, then 9,296
/// bytes a page through `Viewer.reports` and `moderationLog`, on the embedded store). The one
/// allocation is nothing beside a network call.
macro_rules! dispatch_store {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::Memory($store) => $call,
            AnyStore::Sqlite($store) => $call,
            AnyStore::Dynamo($store) => Box::pin(async { $call }).await,
        }
    };
}

impl CommentStore for AnyStore {
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        dispatch_store!(self, s => s.query(query).await)
    }

    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        dispatch_store!(self, s => s.get_many(ids).await)
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        dispatch_store!(self, s => s.create(comment).await)
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        dispatch_store!(self, s => s.update(id, patch, now_ms, access).await)
    }

    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        dispatch_store!(self, s => s.delete(id, access).await)
    }

    async fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        dispatch_store!(self, s => s.moderate(id, verdict, actor, now_ms).await)
    }

    async fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        dispatch_store!(self, s => s.reply(id, body, actor, now_ms).await)
    }

    async fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        dispatch_store!(self, s => s.report(id, reporter, draft, hide_threshold, now_ms).await)
    }

    async fn reports(&self, query: &ReportQuery) -> Result<ReportPage, StoreError> {
        dispatch_store!(self, s => s.reports(query).await)
    }

    async fn report_count(&self, reporter: &str) -> Result<u64, StoreError> {
        dispatch_store!(self, s => s.report_count(reporter).await)
    }

    async fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> Result<Vec<Option<Report>>, StoreError> {
        dispatch_store!(self, s => s.reports_of(keys).await)
    }

    async fn put_reports(&self, reports: &[Report]) -> Result<(), StoreError> {
        dispatch_store!(self, s => s.put_reports(reports).await)
    }

    async fn moderation_log(&self, query: &LogQuery) -> Result<LogPage, StoreError> {
        dispatch_store!(self, s => s.moderation_log(query).await)
    }

    async fn moderation_log_count(&self, sku: Option<&Sku>) -> Result<u64, StoreError> {
        dispatch_store!(self, s => s.moderation_log_count(sku).await)
    }

    async fn log_entries(&self, ids: &[EntryId]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        dispatch_store!(self, s => s.log_entries(ids).await)
    }

    async fn put_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        dispatch_store!(self, s => s.put_log(entries).await)
    }

    async fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        now_ms: u64,
    ) -> Result<Voted, StoreError> {
        dispatch_store!(self, s => s.mark_helpful(id, voter, helpful, now_ms).await)
    }

    async fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> Result<Vec<bool>, StoreError> {
        dispatch_store!(self, s => s.helpful_votes(voter, ids).await)
    }

    async fn votes_by(&self, query: &VoteQuery) -> Result<VotePage, StoreError> {
        dispatch_store!(self, s => s.votes_by(query).await)
    }

    async fn forget(&self, what: &Forget) -> Result<bool, StoreError> {
        dispatch_store!(self, s => s.forget(what).await)
    }

    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        dispatch_store!(self, s => s.put_batch(comments).await)
    }

    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        dispatch_store!(self, s => s.scan(segment, total_segments, resume).await)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        dispatch_store!(self, s => s.ping().await)
    }

    async fn rerank(&self, comments: &[Comment]) -> Result<u64, StoreError> {
        dispatch_store!(self, s => s.rerank(comments).await)
    }
}
