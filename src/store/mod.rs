//! The system of record: where comments live and how they are read in sort-key order.
//!
//! [`CommentStore`] is deliberately shaped like a DynamoDB query on a GSI: one partition, one
//! direction, a key condition on one side of the sort key, a `Limit`, and a last-evaluated key
//! that may come back before the limit is reached (DynamoDB's 1 MB cut). The pagination engine
//! is written against that shape, so the embedded twin ([`memory::MemoryStore`]) and the real
//! adapter behave alike and one contract test list covers both.
//!
//! With `--data-dir`, [`sqlite::SqliteStore`] makes the embedded store durable: the same
//! memory copy answers reads, and every write is committed to SQLite before it is applied.
//!
//! Its changes leave through two ports: the embedded store's feed ([`ChangeSink`]) and a change
//! stream read shard by shard ([`change_source::ChangeSource`], which the DynamoDB adapter
//! implements over DynamoDB Streams); the sync layer above reads both.
//!
//! This layer knows nothing of Redis or GraphQL.

mod any;
pub mod change_source;
pub mod dynamo;
pub mod memory;
mod partition;
pub mod sqlite;

use std::future::Future;
use std::ops::Bound;

use std::num::NonZeroU32;

use crate::domain::{
    Access, ChangeEvent, Comment, CommentId, CommentPatch, DecisionRefused, EntryId, Forget,
    LogEntry, Order, Position, Report, ReportDraft, ReportRefused, Sku, Verdict, VerdictRefused,
    VersionCeiling, Voted, Voter, VoterId,
};
use crate::error::BoxError;

pub use self::any::AnyStore;
pub use self::partition::Partition;

/// A key-conditioned read of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyQuery {
    /// The partition read.
    pub partition: Partition,
    /// The order items come back in.
    pub order: Order,
    /// Where reading starts, on the near side of `order`: for [`Order::NewestFirst`] an upper
    /// bound (`sortKey < k` or `<= k`), for [`Order::OldestFirst`] a lower bound. A key condition
    /// rather than a start key, so it works when the comment at `k` no longer exists. A
    /// position in the partition's order ([`Partition::position_of`]): its group is 0 in a
    /// partition by time.
    pub from: Bound<Position>,
    /// At most this many items come back (DynamoDB's `Limit`); fewer may come with
    /// `last_evaluated` set.
    pub limit: usize,
}

impl KeyQuery {
    /// Whether `key` (a position in the partition's order) satisfies the `from` condition.
    pub fn admits(&self, key: &Position) -> bool {
        match (&self.from, self.order) {
            (Bound::Unbounded, _) => true,
            (Bound::Excluded(k), Order::NewestFirst) => key < k,
            (Bound::Included(k), Order::NewestFirst) => key <= k,
            (Bound::Excluded(k), Order::OldestFirst) => key > k,
            (Bound::Included(k), Order::OldestFirst) => key >= k,
        }
    }
}

/// One response to a [`KeyQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryPage {
    /// Items in the query's order.
    pub items: Vec<Comment>,
    /// Set when the store stopped early (limit or size cap): more items *may* follow this
    /// position (in the partition's order). Like DynamoDB, it can be set even when nothing
    /// follows.
    pub last_evaluated: Option<Position>,
}

/// A read of the moderation log ([`CommentStore::moderation_log`]): the shop's whole log or
/// one product's, in one direction by entry id, strictly beyond `after` in that direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogQuery {
    /// One product's entries; `None` for every entry.
    pub sku: Option<Sku>,
    /// `NewestFirst` (descending ids) or `OldestFirst`.
    pub order: Order,
    /// The entry reading continues after (exclusive), in `order`.
    pub after: Option<EntryId>,
    /// At most this many entries come back; fewer may come with `last_evaluated` set.
    pub limit: usize,
}

/// One response to a [`LogQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogPage {
    /// Entries in the query's order.
    pub entries: Vec<LogEntry>,
    /// Set when the store stopped early: more entries *may* follow this one.
    pub last_evaluated: Option<EntryId>,
}

/// A read of one reader's reports ([`CommentStore::reports`]), in one direction by report id,
/// strictly beyond `after` in that direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportQuery {
    /// The reporter's token subject.
    pub reporter: String,
    /// `NewestFirst` (descending ids) or `OldestFirst`.
    pub order: Order,
    /// The report reading continues after (exclusive), in `order`.
    pub after: Option<EntryId>,
    /// At most this many reports come back; fewer may come with `last_evaluated` set.
    pub limit: usize,
}

/// One response to a [`ReportQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportPage {
    /// Reports in the query's order.
    pub reports: Vec<Report>,
    /// Set when the store stopped early: more reports *may* follow this one.
    pub last_evaluated: Option<EntryId>,
}

/// A read of one voter's helpful votes ([`CommentStore::votes_by`]), in comment-id order,
/// strictly after `after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoteQuery {
    /// The voter's pseudonym.
    pub voter: VoterId,
    /// The comment reading continues after (exclusive).
    pub after: Option<CommentId>,
    /// At most this many votes come back; fewer may come with `last_evaluated` set.
    pub limit: usize,
}

/// One response to a [`VoteQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VotePage {
    /// The comments voted on, in id order (a deleted comment's leftover vote among them in
    /// DynamoDB, whose vote items outlive their comment).
    pub comments: Vec<CommentId>,
    /// Set when the store stopped early: more votes *may* follow this comment.
    pub last_evaluated: Option<CommentId>,
}

/// One response of a full-table scan segment (for `reindex`, `verify` and `export`).
#[derive(Clone, Debug, Default)]
pub struct ScanPage {
    /// The comments this page of the segment read.
    pub items: Vec<Comment>,
    /// The helpful votes this page came across, as `(comment, how many)`: `verify` adds them
    /// up over the whole scan and compares each comment's tally with its `helpful_count`. A
    /// store that keeps votes apart from comments (DynamoDB: an item per vote, anywhere in the
    /// scan) reports them where it meets them; the embedded store with their comment.
    pub votes: Vec<(CommentId, u64)>,
    /// Comments of this page out of place in the partitions: a store that keeps a comment's
    /// places apart from the comment (DynamoDB: `sortKey` and `helpfulRank`) reports the items
    /// whose place by helpful votes is missing (written before those partitions existed) or not
    /// their count's, and those whose keys disagree with their status (a published comment
    /// without them, an unpublished one with them: written by another tool). `reindex` puts
    /// them right ([`CommentStore::rerank`]) and `verify` reports them. The embedded stores
    /// derive the places from the comment: never any.
    pub unranked: Vec<Comment>,
    /// The moderation log's entries this page came across (`export` carries them).
    pub log: Vec<LogEntry>,
    /// The reports this page came across (`export` carries them).
    pub reports: Vec<Report>,
    /// Resume token for the next call of the same segment; `None` when the segment is done.
    pub resume: Option<String>,
}

/// Why a store call failed. Adapters classify their client's errors into these in one place.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No comment has the id.
    #[error("comment {0} not found")]
    NotFound(CommentId),
    /// The caller's [`Access`] does not cover the comment: someone else's.
    #[error("comment {0} belongs to someone else")]
    Forbidden(CommentId),
    /// A voter's helpful vote for a comment they wrote (the own-comment rule, [`Voter::wrote`]).
    #[error("comment {0} is your own: its author cannot mark it helpful")]
    OwnComment(CommentId),
    /// A comment with the id exists already (`create`).
    #[error("comment {0} already exists")]
    AlreadyExists(CommentId),
    /// A verified comment whose order and product ([`crate::domain::OrderHash`]) already
    /// verified a comment (`create`): one verified comment per order and product, ever; nothing
    /// is written.
    #[error(
        "`purchaseProof` was already used: one verified comment per order and product (a deleted one included)"
    )]
    PurchaseUsed,
    /// The write would take the comment past the highest version ([`crate::domain::MAX_VERSION`]):
    /// nothing is written. Only a comment imported at a made-up version can get there.
    #[error(transparent)]
    VersionCeiling(#[from] VersionCeiling),
    /// A moderation decision that does not apply to the comment's status: nothing is written.
    #[error(transparent)]
    Decision(#[from] DecisionRefused),
    /// A report refused (its author's, a comment not published, a full one): nothing written.
    #[error(transparent)]
    Report(#[from] ReportRefused),
    /// Throttling, timeouts and connection failures that outlasted the client's retries.
    #[error("the comment store is unavailable")]
    Unavailable(#[source] BoxError),
    /// The DynamoDB table does not exist.
    #[error("table `{table}` does not exist (start with --create-tables to create it)")]
    MissingTable {
        /// The table's name.
        table: String,
    },
    /// Anything else: a bug or a misconfiguration, not the client's fault.
    #[error("unexpected comment store error")]
    Internal(#[source] BoxError),
}

impl From<VerdictRefused> for StoreError {
    fn from(refused: VerdictRefused) -> Self {
        match refused {
            VerdictRefused::Decision(refused) => refused.into(),
            VerdictRefused::Ceiling(ceiling) => ceiling.into(),
        }
    }
}

/// The system of record for comments.
///
/// Writes are conditional: `create` refuses an existing id, `update` and `delete` a missing one,
/// and a comment their [`Access`] does not cover ([`StoreError::Forbidden`]: nothing is written
/// on a refusal; a comment's owner never changes, so the check may read it before the write).
/// Every write gives the comment its next version ([`Comment::version`]): `create` writes
/// version 1; `update` and a vote ([`CommentStore::mark_helpful`]) one more than the version
/// the comment is at when they write, in one atomic step (a lock, a transaction, an increment
/// in an update expression), so racing writes each get a version of their own and none puts
/// back what another changed; a deletion's change carries one more than the deleted comment's.
pub trait CommentStore: Send + Sync + 'static {
    /// Reads one partition in sort-key order (see [`KeyQuery`]).
    fn query(&self, query: &KeyQuery)
    -> impl Future<Output = Result<QueryPage, StoreError>> + Send;

    /// Fetches comments by id; the answer has one slot per id, in the same order.
    fn get_many(
        &self,
        ids: &[CommentId],
    ) -> impl Future<Output = Result<Vec<Option<Comment>>, StoreError>> + Send;

    /// Writes a new comment at version 1; [`StoreError::AlreadyExists`] if its id is taken by
    /// another comment. Creating the very same comment again succeeds and changes nothing: a
    /// client (or an SDK) that retries a create whose answer it lost must not be told it failed.
    /// A verified comment ([`Comment::purchase`]) claims its order hash in the same atomic
    /// write; [`StoreError::PurchaseUsed`] if another comment claimed it before (claims stay
    /// when their comment is deleted or erased: they hold no person's data, only the hash).
    fn create(&self, comment: &Comment) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Applies an edit and returns the comment as it now is (one version later);
    /// [`StoreError::NotFound`] if absent, [`StoreError::Forbidden`] if `access` does not cover it.
    fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> impl Future<Output = Result<Comment, StoreError>> + Send;

    /// Deletes a comment and returns what it was; [`StoreError::NotFound`] if absent,
    /// [`StoreError::Forbidden`] if `access` does not cover it.
    fn delete(
        &self,
        id: CommentId,
        access: &Access,
    ) -> impl Future<Output = Result<Comment, StoreError>> + Send;

    /// Applies `actor`'s verdict ([`Comment::after_verdict`]) and returns the comment as it
    /// now is (one version later), in one atomic step like an edit, with its moderation log
    /// entries ([`LogEntry::of_decision`]) and its open reports closed
    /// ([`Comment::closes_reports`]): all are written or none. A published comment enters the
    /// partitions, any other leaves them. [`StoreError::NotFound`] if absent,
    /// [`StoreError::Decision`] if the decision does not apply to its status (nothing written).
    fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Comment, StoreError>> + Send;

    /// Sets the shop's reply to comment `id` to `body` (cleaned and checked by the caller), or
    /// removes it (`None`), and answers the comment as it now is: one version later, with the
    /// log entry of `actor`'s reply, in one atomic step; or as it was when that changes nothing
    /// (nothing written, nothing logged). [`StoreError::NotFound`] if absent.
    fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Comment, StoreError>> + Send;

    /// Files `reporter`'s report of comment `id` and answers it; a second report of the same
    /// comment by the same reporter writes nothing and answers the first (whatever it became).
    /// The report, the comment after it ([`Comment::after_report`]: the reporter among its open
    /// ones, its next version, hidden at `hide_threshold`) and the log entry of such a hiding
    /// are written in one atomic step. [`StoreError::NotFound`] if absent,
    /// [`StoreError::Report`] if refused.
    fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> impl Future<Output = Result<Report, StoreError>> + Send;

    /// Reads one reader's reports (see [`ReportQuery`]).
    fn reports(
        &self,
        query: &ReportQuery,
    ) -> impl Future<Output = Result<ReportPage, StoreError>> + Send;

    /// How many reports `reporter` has filed.
    fn report_count(&self, reporter: &str) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The reports of `(comment, reporter)` pairs, one slot per pair, in order.
    fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> impl Future<Output = Result<Vec<Option<Report>>, StoreError>> + Send;

    /// Writes reports as they are (`import`): a report already held for its comment and
    /// reporter is replaced (a closed one read after its open self).
    fn put_reports(
        &self,
        reports: &[Report],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads the moderation log (see [`LogQuery`]).
    fn moderation_log(
        &self,
        query: &LogQuery,
    ) -> impl Future<Output = Result<LogPage, StoreError>> + Send;

    /// How many entries the moderation log holds: one product's, or every one.
    fn moderation_log_count(
        &self,
        sku: Option<&Sku>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Log entries by id, one slot per id, in order.
    fn log_entries(
        &self,
        ids: &[EntryId],
    ) -> impl Future<Output = Result<Vec<Option<LogEntry>>, StoreError>> + Send;

    /// Writes log entries as they are (`import`), each once: an entry already held is left.
    fn put_log(&self, entries: &[LogEntry]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records `voter`'s helpful vote on comment `id` (`helpful: true`) or takes it back
    /// (`false`), and answers the comment as it now is.
    ///
    /// One vote per voter and comment: the vote and the comment's `helpful_count` change in one
    /// atomic write (in DynamoDB, one transaction, conditional on the vote's presence), so a
    /// retried or concurrent call never counts twice. A call that changes something gives the
    /// comment its next version (and reports the change, like an edit, though `updated_at`
    /// stays: a vote is not an edit); one that changes nothing (a second `true`, a `false`
    /// without a vote) writes nothing. [`StoreError::NotFound`] if the comment is absent or
    /// not published (nobody votes on what the public cannot see),
    /// [`StoreError::OwnComment`] for `true` from its author ([`Voter::wrote`]).
    fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        now_ms: u64,
    ) -> impl Future<Output = Result<Voted, StoreError>> + Send;

    /// For each of `ids`, whether `voter` marked it helpful: one slot per id, in order. One
    /// batched read (in DynamoDB, `BatchGetItem` of the vote items, at most 100 ids per call).
    /// Callers ask about comments they have read: for a deleted comment the embedded stores
    /// answer `false`, DynamoDB whether the vote item it left behind is there.
    fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>> + Send;

    /// Reads one voter's helpful votes (see [`VoteQuery`]): a per-voter index (DynamoDB: the
    /// sparse GSI `byVoter`), never a scan. A person's export and erasure read their votes so.
    fn votes_by(
        &self,
        query: &VoteQuery,
    ) -> impl Future<Output = Result<VotePage, StoreError>> + Send;

    /// Forgets one thing of a person's ([`Forget`]) with what it changes in its comment (the
    /// comment's next version, reported like any write) in one atomic step, and answers
    /// whether anything changed: forgetting what is already forgotten writes nothing, so an
    /// erasure can be run again until it finds nothing. A comment at the version ceiling
    /// refuses the step ([`StoreError::VersionCeiling`]).
    fn forget(&self, what: &Forget) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Bulk-writes new comments (seeding), with the versions they carry. Not conditional;
    /// callers supply fresh ids.
    fn put_batch(
        &self,
        comments: &[Comment],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads one segment of a parallel full scan, resuming at `resume`.
    fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> impl Future<Output = Result<ScanPage, StoreError>> + Send;

    /// A cheap call that fails when the store cannot be reached (readiness).
    fn ping(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Puts `comments` (as a scan reported them in [`ScanPage::unranked`]) in their count's
    /// place in the partitions by helpful votes, each only while it is at the version scanned
    /// (a comment written meanwhile is read again and placed by what it now is); returns how
    /// many it wrote. A store that derives the place from the count has nothing to do.
    fn rerank(&self, comments: &[Comment]) -> impl Future<Output = Result<u64, StoreError>> + Send {
        let _ = comments;
        async { Ok(0) }
    }
}

/// Something that learns about every write the embedded store makes, in order.
pub type ChangeSink = tokio::sync::mpsc::UnboundedSender<ChangeEvent>;
