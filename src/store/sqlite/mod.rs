//! The durable embedded store (`serve --data-dir PATH`): comments in an SQLite database in
//! WAL mode, with a copy in memory that answers every read.
//!
//! Why SQLite: its durability is published and tested (the write-ahead log with
//! `synchronous=FULL` fsyncs each commit before it returns; a crash or power loss rolls back
//! only what did not commit), one file is easy to back up (`VACUUM INTO` beside a running
//! server) and to inspect, and `rusqlite`'s bundled build needs only a C compiler.
//!
//! The shape: reads go to a [`MemoryStore`] loaded from the database at start-up, so pages
//! cost what they cost on the in-memory demo; writes go to one writer thread
//! ([`writer`]) that checks their conditions against the database, commits them in groups,
//! and only then applies them to the memory copy, whose change feed reaches the index and
//! live subscribers exactly as the in-memory store's does (one code path). The directory
//! ([`dir`]) is locked for one process; its files are checked ([`schema`]) before use.

pub mod dir;
mod forget;
mod load;
mod log_rows;
mod ops;
mod read_rows;
mod report_rows;
pub use self::log_rows::read_log;
pub use self::report_rows::read_reports;
pub mod modes;
mod rows;
pub mod schema;
mod writer;

pub use self::dir::{DataDir, DataDirError};
pub use self::load::{LoadReport, read_ordered};
pub use self::rows::RowError;
pub use self::schema::FormatError;

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use self::ops::{Op, Reply, Request};
use super::memory::MemoryStore;
use super::{
    ChangeSink, CommentStore, KeyQuery, LogPage, LogQuery, QueryPage, ReportPage, ReportQuery,
    ScanPage, StoreError, VotePage, VoteQuery,
};
use crate::domain::{
    Access, Comment, CommentId, CommentPatch, EntryId, Forget, LogEntry, Report, ReportDraft, Sku,
    Verdict, Voted, Voter, VoterId,
};

/// Why the durable store cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The data directory cannot be used.
    #[error(transparent)]
    Dir(#[from] DataDirError),
    /// The database's files are not in a format this version reads.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A row of the database does not decode.
    #[error("{path}: cannot load the comments")]
    Row {
        /// The database file.
        path: String,
        /// What is wrong with the row.
        #[source]
        source: RowError,
    },
    /// The writer thread could not be spawned.
    #[error("cannot start the embedded store's writer thread")]
    Thread(#[source] std::io::Error),
}

/// The durable store. Cloning shares the same database, memory copy and writer.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    memory: MemoryStore,
    writer: Sender<Request>,
    /// Closed when the writer thread has ended ([`writer::start`]).
    ended: tokio::sync::watch::Receiver<()>,
    path: Arc<Path>,
}

/// The end of a durable store's writer thread, awaited by whoever must know the directory is
/// free again ([`SqliteStore::closed`]).
#[derive(Debug)]
pub struct Closed(tokio::sync::watch::Receiver<()>);

impl Closed {
    /// Resolves once the writer thread has ended: the database closed and the directory's
    /// lock released. The thread ends when the last handle of the store is dropped.
    pub async fn wait(mut self) {
        // Nothing is ever sent: `changed` fails once the thread has dropped the sender.
        while self.0.changed().await.is_ok() {}
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store in the data directory `path`: locks it, checks
    /// its database, loads every comment into memory (logging progress), and then reports
    /// every write to `sink`, if given. The load itself is not reported: the caller builds the
    /// index from the loaded store.
    pub fn open(path: &Path, sink: Option<ChangeSink>) -> Result<(Self, LoadReport), OpenError> {
        let dir = DataDir::open(path)?;
        let database = dir.database();
        let conn = schema::open_for_writing(&database)?;
        let memory = MemoryStore::new();
        let report = load::load(&conn, &database, &memory)?;
        log_rows::load(&conn, &database, &memory)?;
        report_rows::load(&conn, &database, &memory)?;
        let memory = match sink {
            Some(sink) => memory.with_change_sink(sink),
            None => memory,
        };
        let (writer, ended) =
            writer::start(conn, memory.clone(), dir).map_err(OpenError::Thread)?;
        Ok((
            Self {
                memory,
                writer,
                ended,
                path: Arc::from(path),
            },
            report,
        ))
    }

    /// Drops this handle and waits until the store is closed: the writer thread ended, the
    /// database closed and the directory's lock released (tests, tools that reopen it). Every
    /// other handle must be dropped too; this waits for them.
    pub async fn close(self) {
        let closed = self.closed();
        drop(self);
        closed.wait().await;
    }

    /// What resolves once every handle is dropped and the directory released: a process that
    /// stops serving and may open the directory again (tests, an embedding program) waits for
    /// it, since the writer thread ends a moment after the last handle goes.
    pub fn closed(&self) -> Closed {
        Closed(self.ended.clone())
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of comments held.
    pub fn len(&self) -> usize {
        self.memory.len()
    }

    /// Whether the store holds no comment.
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty()
    }

    async fn call(&self, op: Op) -> Result<Reply, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.writer
            .send(Request { op, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the embedded store's writer thread has stopped".into())
}

/// Copies the database of the data directory `data_dir` into a new file `copy` while a server
/// may be writing it: `VACUUM INTO` reads one consistent snapshot. Any file at `copy` is
/// replaced; the copy is `0600` from its first byte (made empty with that mode, which
/// `VACUUM INTO` accepts) and fsynced. Returns its size in bytes. Where the copy may be
/// written, and under which final name, is the caller's (`backup`).
pub fn backup(data_dir: &Path, copy: &Path) -> Result<u64, OpenError> {
    let database = dir::existing_database(data_dir)?;
    let conn = schema::open_for_reading(&database)?;
    let io = |source| {
        OpenError::Dir(DataDirError::Io {
            path: copy.to_owned(),
            source,
        })
    };
    match std::fs::remove_file(copy) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    modes::create_private(copy).map_err(io)?;
    conn.execute("VACUUM INTO ?1", [copy.display().to_string()])
        .map_err(|source| {
            OpenError::Format(FormatError::Sqlite {
                path: database.display().to_string(),
                source,
            })
        })?;
    std::fs::File::open(copy)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    std::fs::metadata(copy).map(|m| m.len()).map_err(io)
}

/// Runs SQLite's `quick_check` on the database of the data directory `data_dir` (for
/// `verify`; no lock is taken).
pub fn quick_check(data_dir: &Path) -> Result<(), OpenError> {
    let database = dir::existing_database(data_dir)?;
    let conn = schema::open_for_reading(&database)?;
    Ok(schema::quick_check(&conn, &database)?)
}

impl CommentStore for SqliteStore {
    async fn query(&self, query: &KeyQuery) -> Result<QueryPage, StoreError> {
        self.memory.query(query).await
    }

    async fn get_many(&self, ids: &[CommentId]) -> Result<Vec<Option<Comment>>, StoreError> {
        self.memory.get_many(ids).await
    }

    async fn create(&self, comment: &Comment) -> Result<(), StoreError> {
        self.call(Op::Create(comment.clone())).await.map(|_| ())
    }

    async fn update(
        &self,
        id: CommentId,
        patch: &CommentPatch,
        now_ms: u64,
        access: &Access,
    ) -> Result<Comment, StoreError> {
        let op = Op::Update {
            id,
            patch: patch.clone(),
            now_ms,
            access: access.clone(),
        };
        match self.call(op).await? {
            Reply::Comment(comment) => Ok(comment),
            _ => Err(StoreError::Internal("an update answered no comment".into())),
        }
    }

    async fn delete(&self, id: CommentId, access: &Access) -> Result<Comment, StoreError> {
        let op = Op::Delete {
            id,
            access: access.clone(),
        };
        match self.call(op).await? {
            Reply::Comment(comment) => Ok(comment),
            _ => Err(StoreError::Internal(
                "a deletion answered no comment".into(),
            )),
        }
    }

    async fn moderate(
        &self,
        id: CommentId,
        verdict: &Verdict,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        let op = Op::Moderate {
            id,
            verdict: verdict.clone(),
            actor: actor.to_owned(),
            now_ms,
        };
        match self.call(op).await? {
            Reply::Comment(comment) => Ok(comment),
            _ => Err(StoreError::Internal(
                "a decision answered no comment".into(),
            )),
        }
    }

    async fn reply(
        &self,
        id: CommentId,
        body: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Comment, StoreError> {
        let op = Op::Reply {
            id,
            body: body.map(str::to_owned),
            actor: actor.to_owned(),
            now_ms,
        };
        match self.call(op).await? {
            Reply::Comment(comment) => Ok(comment),
            _ => Err(StoreError::Internal("a reply answered no comment".into())),
        }
    }

    async fn report(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        let op = Op::Report {
            id,
            reporter: reporter.to_owned(),
            draft: draft.clone(),
            hide_threshold,
            now_ms,
        };
        match self.call(op).await? {
            Reply::Report(report) => Ok(*report),
            _ => Err(StoreError::Internal("a report answered no report".into())),
        }
    }

    async fn reports(&self, query: &ReportQuery) -> Result<ReportPage, StoreError> {
        self.memory.reports(query).await
    }

    async fn report_count(&self, reporter: &str) -> Result<u64, StoreError> {
        self.memory.report_count(reporter).await
    }

    async fn reports_of(
        &self,
        keys: &[(CommentId, String)],
    ) -> Result<Vec<Option<Report>>, StoreError> {
        self.memory.reports_of(keys).await
    }

    async fn put_reports(&self, reports: &[Report]) -> Result<(), StoreError> {
        match self.call(Op::PutReports(reports.to_vec())).await? {
            Reply::Done => Ok(()),
            _ => Err(StoreError::Internal(
                "putting reports answered something".into(),
            )),
        }
    }

    async fn moderation_log(&self, query: &LogQuery) -> Result<LogPage, StoreError> {
        self.memory.moderation_log(query).await
    }

    async fn moderation_log_count(&self, sku: Option<&Sku>) -> Result<u64, StoreError> {
        self.memory.moderation_log_count(sku).await
    }

    async fn log_entries(&self, ids: &[EntryId]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        self.memory.log_entries(ids).await
    }

    async fn put_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        match self.call(Op::PutLog(entries.to_vec())).await? {
            Reply::Done => Ok(()),
            _ => Err(StoreError::Internal(
                "a log import answered something".into(),
            )),
        }
    }

    async fn mark_helpful(
        &self,
        id: CommentId,
        voter: &Voter,
        helpful: bool,
        now_ms: u64,
    ) -> Result<Voted, StoreError> {
        let op = Op::Vote {
            id,
            voter: voter.clone(),
            helpful,
            now_ms,
        };
        match self.call(op).await? {
            Reply::Voted(voted) => Ok(voted),
            _ => Err(StoreError::Internal("a vote answered no comment".into())),
        }
    }

    async fn helpful_votes(
        &self,
        voter: VoterId,
        ids: &[CommentId],
    ) -> Result<Vec<bool>, StoreError> {
        self.memory.helpful_votes(voter, ids).await
    }

    async fn votes_by(&self, query: &VoteQuery) -> Result<VotePage, StoreError> {
        self.memory.votes_by(query).await
    }

    async fn forget(&self, what: &Forget) -> Result<bool, StoreError> {
        match self.call(Op::Forget(what.clone())).await? {
            Reply::Forgot(changed) => Ok(changed),
            _ => Err(StoreError::Internal(
                "forgetting answered something else".into(),
            )),
        }
    }

    async fn put_batch(&self, comments: &[Comment]) -> Result<(), StoreError> {
        if comments.is_empty() {
            return Ok(());
        }
        self.call(Op::PutBatch(comments.to_vec())).await.map(|_| ())
    }

    async fn scan(
        &self,
        segment: u32,
        total_segments: u32,
        resume: Option<String>,
    ) -> Result<ScanPage, StoreError> {
        self.memory.scan(segment, total_segments, resume).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        // The thread has ended when its sender is gone.
        if self.ended.has_changed().is_err() {
            Err(stopped())
        } else {
            Ok(())
        }
    }
}
