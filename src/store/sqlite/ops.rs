//! What the single writer ([`super::writer`]) is asked to do, what it answers, and what a
//! committed write changes in the in-memory copy.

use std::num::NonZeroU32;

use tokio::sync::oneshot;

use crate::domain::{
    Access, Comment, CommentId, CommentPatch, Forget, LogEntry, Report, ReportDraft, Verdict,
    Voted, Voter, VoterId,
};
use crate::store::StoreError;

/// A write the writer thread carries out.
#[derive(Debug)]
pub(super) enum Op {
    Create(Comment),
    Update {
        id: CommentId,
        patch: CommentPatch,
        now_ms: u64,
        access: Access,
    },
    Delete {
        id: CommentId,
        access: Access,
    },
    Moderate {
        id: CommentId,
        verdict: Verdict,
        actor: String,
        now_ms: u64,
    },
    Reply {
        id: CommentId,
        body: Option<String>,
        actor: String,
        now_ms: u64,
    },
    Report {
        id: CommentId,
        reporter: String,
        draft: ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    },
    PutReports(Vec<Report>),
    Forget(Forget),
    PutLog(Vec<LogEntry>),
    PutBatch(Vec<Comment>),
    Vote {
        id: CommentId,
        voter: Voter,
        helpful: bool,
        now_ms: u64,
    },
}

/// A committed write's answer.
#[derive(Debug)]
pub(super) enum Reply {
    Done,
    Comment(Comment),
    Voted(Voted),
    Report(Box<Report>),
    /// Whether forgetting changed anything.
    Forgot(bool),
}

/// What a committed write changes in the in-memory copy.
pub(super) enum Effect {
    None,
    Put(Vec<Comment>),
    /// A comment rewritten with the log entries that record why, and the reports it filed or
    /// closed.
    Logged(Box<Comment>, Vec<LogEntry>, Vec<Report>),
    Reports(Vec<Report>),
    Log(Vec<LogEntry>),
    Remove(CommentId),
    /// Something of a person's forgotten: the in-memory copy forgets the same.
    Forget(Forget),
    Vote {
        // Boxed: a comment is far larger than the other effects.
        comment: Box<Comment>,
        voter: VoterId,
        helpful: bool,
    },
}

#[derive(Debug)]
pub(super) struct Request {
    pub op: Op,
    pub reply: oneshot::Sender<Result<Reply, StoreError>>,
}
