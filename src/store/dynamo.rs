//! The DynamoDB adapter: [`DynamoStore`] implements [`CommentStore`] over one table and its
//! two GSIs (`docs/operations/table-layout.md`).
//!
//! It owns the wire: attribute and index names, `AttributeValue` mapping (`item`), table
//! creation (`schema`), the classification of SDK errors (`error`), the reads (`reads`: GSI
//! queries, gets, scans) and the conditional writes (`writes`; helpful votes, which write two
//! items in one transaction, in `votes`), batching (`batch`), the table's
//! stream (`stream`, a [`ChangeSource`](super::change_source::ChangeSource)) and its records as
//! AWS Lambda delivers them (`lambda`) live under this module and nowhere else. It answers
//! exactly like [`MemoryStore`](super::memory::MemoryStore) (one contract test list runs
//! against both), knows nothing of Redis or GraphQL, and never loops over `LastEvaluatedKey` on
//! a query: the pagination engine decides whether to read on.
//!
//! This file holds the store's handle (client, table) and the [`CommentStore`] impl, which
//! sends each call to `reads` or `writes`.

mod attribute;
mod audit;
mod batch;
mod change;
mod client;
mod error;
mod forget;
mod helpful_rank;
mod item;
mod lambda;
mod listing;
mod moderate;
mod purchase;
mod ranks;
mod reads;
mod report_item;
mod reports;
mod schema;
mod stream;
mod vote_key;
mod votes;
mod writes;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;

use self::error::{OnConditionFailed, classify, internal};
use self::item::ID;
use super::{
    CommentStore, KeyQuery, LogPage, LogQuery, QueryPage, ReportPage, ReportQuery, ScanPage,
    StoreError, VotePage, VoteQuery,
};
use crate::domain::{
    Access, Comment, CommentId, CommentPatch, EntryId, Forget, LogEntry, Report, ReportDraft, Sku,
    Verdict, Voted, Voter, VoterId,
};

/// The key [`CommentStore::ping`] reads: no comment id (26 characters of Crockford base32)
/// and no vote item (`vote#…`) can be it.
const PING_KEY: &str = "dynapage#ping";

pub use self::attribute::ItemAttribute;
pub use self::audit::is_log_id;
pub use self::change::{RecordDecodeError, change_from_record};
pub use self::client::DynamoConfig;
pub use self::item::{ItemDecodeError, comment_from_item, sort_key_from_item};
pub use self::lambda::{change_from_lambda_record, lambda_sequence_number};
pub use self::report_item::is_report_id;
pub use self::stream::DynamoChangeSource;
pub use self::vote_key::is_vote_id;

/// The comment store backed by a DynamoDB table. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    /// The DynamoDB Streams client, built from the same settings (endpoint, region,
    /// credentials, timeouts) as `client`; `None` for a store made with [`Self::from_client`].
    streams: Option<aws_sdk_dynamodbstreams::Client>,
    table: Arc<str>,
}

impl DynamoStore {
    /// Builds a client for `config`. Makes no call: use [`Self::check_table`] or
    /// [`Self::create_tables`] at start-up to learn whether the table is there.
    ///
    /// Timeouts are explicit so a dead endpoint fails a request in seconds instead of hanging
    /// it: connect 3 s, each attempt 5 s, the whole operation (with the standard mode's 3
    /// attempts and backoff) 15 s.
    pub async fn connect(config: DynamoConfig) -> Result<Self, StoreError> {
        if config.table.is_empty() {
            return Err(internal("the DynamoDB table name is empty"));
        }
        let sdk_config = client::sdk_config(&config).await;
        Ok(Self::from_client(Client::new(&sdk_config), config.table)
            .with_streams_client(aws_sdk_dynamodbstreams::Client::new(&sdk_config)))
    }

    /// Wraps an already configured client (without a streams client: add one with
    /// [`Self::with_streams_client`] if the sync worker is to read the table's stream).
    pub fn from_client(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            streams: None,
            table: Arc::from(table.into()),
        }
    }

    /// Uses `streams` to read the table's stream.
    pub fn with_streams_client(mut self, streams: aws_sdk_dynamodbstreams::Client) -> Self {
        self.streams = Some(streams);
        self
    }

    /// The DynamoDB Streams client for this table's stream (same endpoint, region and
    /// credentials as the table's client), for the sync worker.
    pub fn streams_client(&self) -> Option<&aws_sdk_dynamodbstreams::Client> {
        self.streams.as_ref()
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table, both GSIs and the stream if the table is missing, and waits until
    /// they are ACTIVE (`--create-tables`). Idempotent.
    pub async fn create_tables(&self) -> Result<(), StoreError> {
        schema::create_tables(&self.client, &self.table).await
    }

    /// [`StoreError::MissingTable`] when the table does not exist; an internal error when it
    /// lacks a GSI. For start-up, before serving.
    pub async fn check_table(&self) -> Result<(), StoreError> {
        schema::check_table(&self.client, &self.table).await
    }

    /// Deletes the table if it exists (tests and teardown).
    pub async fn delete_table(&self) -> Result<(), StoreError> {
        schema::delete_table(&self.client, &self.table).await
    }

    /// The ARN of the table's latest stream, which the sync worker reads.
    pub async fn stream_arn(&self) -> Result<Option<String>, StoreError> {
        schema::stream_arn(&self.client, &self.table).await
    }

    fn classify<E>(
        &self,
        err: aws_sdk_dynamodb::error::SdkError<E>,
        on_condition_failed: OnConditionFailed,
    ) -> StoreError
    where
        E: aws_sdk_dynamodb::error::ProvideErrorMetadata
            + std::error::Error
            + Send
            + Sync
            + 'static,
    {
        classify(&self.table, err, on_condition_failed)
    }
}

fn decode(item: &HashMap<String, AttributeValue>) -> Result<Comment, StoreError> {
    comment_from_item(item).map_err(|err| StoreError::Internal(err.into()))
}

impl CommentStore for DynamoStore {
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        reads::query(self, query).await
    }

    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        reads::get_many(self, ids).await
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        writes::create(self, comment).await
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        writes::update(self, id, patch, now_ms, access).await
    }

    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        writes::delete(self, id, access).await
    }

    async fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        moderate::moderate(self, id, verdict, actor, now_ms).await
    }

    async fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        moderate::reply(self, id, body, actor, now_ms).await
    }

    async fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        reports::report(self, id, reporter, draft, hide_threshold, now_ms).await
    }

    async fn reports(&self, query: &ReportQuery) -> Result<ReportPage, StoreError> {
        reports::query(self, query).await
    }

    async fn report_count(&self, reporter: &str) -> Result<u64, StoreError> {
        reports::count(self, reporter).await
    }

    async fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> Result<Vec<Option<Report>>, StoreError> {
        reports::get_many(self, keys).await
    }

    async fn put_reports(&self, reports: &[Report]) -> Result<(), StoreError> {
        reports::put(self, reports).await
    }

    async fn moderation_log(&self, query: &LogQuery) -> Result<LogPage, StoreError> {
        audit::query(self, query).await
    }

    async fn moderation_log_count(&self, sku: Option<&Sku>) -> Result<u64, StoreError> {
        audit::count(self, sku).await
    }

    async fn log_entries(&self, ids: &[EntryId]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        audit::get_many(self, ids).await
    }

    async fn put_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        audit::put(self, entries).await
    }

    async fn rerank(&self, comments: &[Comment]) -> Result<u64, StoreError> {
        ranks::rerank(self, comments).await
    }

    async fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        now_ms: u64,
    ) -> Result<Voted, StoreError> {
        votes::mark_helpful(self, id, voter, helpful, now_ms).await
    }

    async fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> Result<Vec<bool>, StoreError> {
        votes::helpful_votes(self, voter, ids).await
    }

    async fn votes_by(&self, query: &VoteQuery) -> Result<VotePage, StoreError> {
        forget::votes_by(self, query).await
    }

    async fn forget(&self, what: &Forget) -> Result<bool, StoreError> {
        forget::forget(self, what).await
    }

    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        writes::put_batch(self, comments).await
    }

    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        reads::scan(self, segment, total_segments, resume).await
    }

    /// A `GetItem` of a key no item has (eventually consistent: half a read unit), not
    /// `DescribeTable`: DynamoDB Local answers `DescribeTable` by counting every index's items
    /// (at 1.1 million comments it outlasted `/readyz`'s two seconds, and the probes that
    /// queued behind it kept DynamoDB Local busy for good), and on AWS it is a control-plane
    /// call, not a read of the table that pages read.
    async fn ping(&self) -> Result<(), StoreError> {
        self.client
            .get_item()
            .table_name(self.table.as_ref())
            .key(ID, AttributeValue::S(PING_KEY.to_owned()))
            .projection_expression("#id")
            .expression_attribute_names("#id", ID)
            .send()
            .await
            .map_err(|err| self.classify(err, OnConditionFailed::Unexpected))?;
        Ok(())
    }
}
