//! The durable embedded store in a temporary data directory that is removed with it, for the
//! contract suites and the engine's oracle test.

use std::num::NonZeroU32;

use dynapage::domain::{
    Access, Comment, CommentId, CommentPatch, EntryId, LogEntry, Report, ReportDraft, Sku, Verdict,
    Voted, Voter, VoterId,
};
use dynapage::store::sqlite::SqliteStore;
use dynapage::store::{
    CommentStore, KeyQuery, LogPage, LogQuery, QueryPage, ReportPage, ReportQuery, ScanPage,
    StoreError,
};
use tempfile::TempDir;

/// A [`SqliteStore`] that owns its directory.
pub struct TempSqliteStore {
    pub store: SqliteStore,
    pub _dir: TempDir,
}

/// A fresh durable store in a new temporary directory.
pub async fn sqlite_store() -> TempSqliteStore {
    let dir = tempfile::Builder::new()
        .prefix("dynapage-data-")
        .tempdir()
        .expect("a temporary data directory");
    let (store, _) = SqliteStore::open(dir.path(), None).expect("open the embedded store");
    TempSqliteStore { store, _dir: dir }
}

impl CommentStore for TempSqliteStore {
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        self.store.query(query).await
    }

    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        self.store.get_many(ids).await
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        self.store.create(comment).await
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        self.store.update(id, patch, now_ms, access).await
    }

    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        self.store.delete(id, access).await
    }

    async fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        self.store
            .report(id, reporter, draft, hide_threshold, now_ms)
            .await
    }

    async fn reports(&self, query: &ReportQuery) -> Result<ReportPage, StoreError> {
        self.store.reports(query).await
    }

    async fn report_count(&self, reporter: &str) -> Result<u64, StoreError> {
        self.store.report_count(reporter).await
    }

    async fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> Result<Vec<Option<Report>>, StoreError> {
        self.store.reports_of(keys).await
    }

    async fn put_reports(&self, reports: &[Report]) -> Result<(), StoreError> {
        self.store.put_reports(reports).await
    }

    async fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        self.store.moderate(id, verdict, actor, now_ms).await
    }

    async fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        self.store.reply(id, body, actor, now_ms).await
    }

    async fn moderation_log(&self, query: &LogQuery) -> Result<LogPage, StoreError> {
        self.store.moderation_log(query).await
    }

    async fn moderation_log_count(&self, sku: Option<&Sku>) -> Result<u64, StoreError> {
        self.store.moderation_log_count(sku).await
    }

    async fn log_entries(&self, ids: &[EntryId]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        self.store.log_entries(ids).await
    }

    async fn put_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        self.store.put_log(entries).await
    }

    async fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        now_ms: u64,
    ) -> Result<Voted, StoreError> {
        self.store.mark_helpful(id, voter, helpful, now_ms).await
    }

    async fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> Result<Vec<bool>, StoreError> {
        self.store.helpful_votes(voter, ids).await
    }

    async fn votes_by(
        &self,
        query: &dynapage::store::VoteQuery,
    ) -> Result<dynapage::store::VotePage, StoreError> {
        self.store.votes_by(query).await
    }

    async fn forget(&self, what: &dynapage::domain::Forget) -> Result<bool, StoreError> {
        self.store.forget(what).await
    }

    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        self.store.put_batch(comments).await
    }

    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        self.store.scan(segment, total_segments, resume).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.store.ping().await
    }
}
