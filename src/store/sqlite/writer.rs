//! The single writer: one thread owns the write connection and commits the writes of
//! concurrent requests in groups.
//!
//! Requests queue on a channel. The thread takes every request waiting (up to
//! [`MAX_BATCH`]), runs them in order inside one `BEGIN IMMEDIATE` transaction (each one's
//! conditions checked against the rows as the earlier ones left them), commits once (one
//! fsync of the log for the whole group) and only then applies the effects to the in-memory
//! copy, which emits the changes to the index and to live subscribers, and answers each
//! request. So a client is answered after its write is durable, a change is published only
//! once it is durable, and many writers share each fsync. A request refused on its own
//! conditions (not found, someone else's, a taken id) writes nothing and does not affect the
//! others; a failed commit fails the whole group, and nothing of it is applied or published.

use std::num::NonZeroU32;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::watch;

use super::dir::DataDir;
use super::ops::{Effect, Op, Reply, Request};
use super::{log_rows, report_rows, rows};
use crate::domain::{
    Access, Comment, CommentId, LogEntry, Report, ReportDraft, Verdict, Voted, Voter,
};
use crate::store::StoreError;
use crate::store::memory::MemoryStore;
use crate::telemetry::metric;

/// Most requests committed in one transaction.
pub(super) const MAX_BATCH: usize = 512;

/// Starts the writer thread; it ends (closing the database and releasing the directory's
/// lock) when every sender is dropped. The returned receiver sees its channel close when the
/// thread has ended, normally or by a panic: the thread holds the channel's sender, which it
/// drops last, after the database and the lock.
pub(super) fn start(
    conn: Connection,
    memory: MemoryStore,
    dir: DataDir,
) -> std::io::Result<(Sender<Request>, watch::Receiver<()>)> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let (alive, ended) = watch::channel(());
    std::thread::Builder::new()
        .name("dynapage-writer".into())
        .spawn(move || {
            run(conn, &receiver, &memory, dir);
            drop(alive);
        })?;
    Ok((sender, ended))
}

fn run(mut conn: Connection, receiver: &Receiver<Request>, memory: &MemoryStore, dir: DataDir) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        commit_group(&mut conn, batch, memory);
    }
    // The database is closed (its last checkpoint written) before the directory's lock is
    // released, so the next owner never meets this connection.
    if let Err((_, error)) = conn.close() {
        tracing::error!(error = %error, "closing the embedded store's database failed");
    }
    tracing::debug!(data_dir = %dir.path().display(), "embedded store closed");
    drop(dir);
}

fn commit_group(conn: &mut Connection, batch: Vec<Request>, memory: &MemoryStore) {
    let started = Instant::now();
    let committed = (|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcomes = batch
            .iter()
            .map(|request| execute(&tx, &request.op))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        tx.commit()?;
        Ok::<_, rusqlite::Error>(outcomes)
    })();
    match committed {
        Ok(outcomes) => {
            for (request, outcome) in batch.into_iter().zip(outcomes) {
                let answer = outcome.map(|(reply, effect)| {
                    match effect {
                        Effect::None => {}
                        Effect::Put(comments) => memory.put_now(&comments),
                        Effect::Logged(comment, entries, reports) => {
                            memory.put_log_now(&entries);
                            memory.put_reports_now(&reports);
                            memory.put_now(std::slice::from_ref(&comment));
                        }
                        Effect::Reports(reports) => memory.put_reports_now(&reports),
                        Effect::Log(entries) => memory.put_log_now(&entries),
                        Effect::Forget(what) => {
                            // The copy holds what the database held before this commit, so it
                            // forgets the same (its answer is the writer's, already known).
                            let _ = memory.forget_now(&what);
                        }
                        Effect::Remove(id) => {
                            memory.remove_now(id);
                        }
                        Effect::Vote {
                            comment,
                            voter,
                            helpful,
                        } => memory.vote_now(&comment, voter, helpful),
                    }
                    reply
                });
                let _ = request.reply.send(answer);
            }
            metric::STORE_COMMIT_SECONDS
                .histogram(&[])
                .record(started.elapsed().as_secs_f64());
        }
        Err(error) => {
            tracing::error!(error = %error, writes = batch.len(), "embedded store commit failed; nothing of the group was written");
            let message = error.to_string();
            for request in batch {
                let _ = request
                    .reply
                    .send(Err(StoreError::Unavailable(message.clone().into())));
            }
        }
    }
}

/// Runs one write inside the group's transaction. The outer error is SQLite's (the group
/// fails); the inner one is this write's refusal (nothing written).
fn execute(
    tx: &rusqlite::Transaction<'_>,
    op: &Op,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    match op {
        Op::Create(comment) => create(tx, comment),
        Op::Update {
            id,
            patch,
            now_ms,
            access,
        } => match read_allowed(tx, *id, access)? {
            Ok(old) => {
                let new = match patch.apply(&old, *now_ms) {
                    Ok(new) => new,
                    Err(ceiling) => return Ok(Err(ceiling.into())),
                };
                rows::put(tx, &new)?;
                Ok(Ok((Reply::Comment(new.clone()), Effect::Put(vec![new]))))
            }
            Err(refused) => Ok(Err(refused)),
        },
        Op::Delete { id, access } => match read_allowed(tx, *id, access)? {
            Ok(old) => {
                rows::remove(tx, *id)?;
                Ok(Ok((Reply::Comment(old), Effect::Remove(*id))))
            }
            Err(refused) => Ok(Err(refused)),
        },
        Op::Moderate {
            id,
            verdict,
            actor,
            now_ms,
        } => moderate(tx, *id, verdict, actor, *now_ms),
        Op::Reply {
            id,
            body,
            actor,
            now_ms,
        } => reply(tx, *id, body.as_deref(), actor, *now_ms),
        Op::Report {
            id,
            reporter,
            draft,
            hide_threshold,
            now_ms,
        } => report(tx, *id, reporter, draft, *hide_threshold, *now_ms),
        Op::PutReports(reports) => put_reports(tx, reports),
        Op::Forget(what) => super::forget::forget(tx, what),
        Op::PutLog(entries) => {
            for entry in entries {
                log_rows::put(tx, entry)?;
            }
            Ok(Ok((Reply::Done, Effect::Log(entries.clone()))))
        }
        Op::PutBatch(comments) => put_batch(tx, comments),
        Op::Vote {
            id,
            voter,
            helpful,
            now_ms,
        } => vote(tx, *id, voter, *helpful, *now_ms),
    }
}

/// A create: refused when the id is another comment's ([`StoreError::AlreadyExists`]; the same
/// comment again is a retry, done) or its order hash is claimed ([`StoreError::PurchaseUsed`]).
fn create(
    tx: &rusqlite::Transaction<'_>,
    comment: &Comment,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    let comment = Comment {
        version: 1,
        ..comment.clone()
    };
    match rows::get(tx, comment.id)? {
        // The same comment again: a retry of a create that was written (the contract).
        Some(Ok(stored)) if stored == comment => return Ok(Ok((Reply::Done, Effect::None))),
        Some(_) => return Ok(Err(StoreError::AlreadyExists(comment.id))),
        None => {}
    }
    if let Some(hash) = &comment.purchase
        && rows::is_claimed(tx, hash)?
    {
        return Ok(Err(StoreError::PurchaseUsed));
    }
    rows::put(tx, &comment)?;
    rows::claim(tx, &comment)?;
    Ok(Ok((Reply::Done, Effect::Put(vec![comment]))))
}

/// Reports as they are (`import`), each replacing the one of its comment and reader; a
/// malformed one refuses the batch alone.
fn put_reports(
    tx: &rusqlite::Transaction<'_>,
    reports: &[Report],
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    if reports.iter().any(|r| !r.is_well_formed()) {
        return Ok(Err(StoreError::Internal(
            "a report is not well formed".into(),
        )));
    }
    for report in reports {
        report_rows::put(tx, report)?;
    }
    Ok(Ok((Reply::Done, Effect::Reports(reports.to_vec()))))
}

/// Comments as they are (seeding, `import`).
fn put_batch(
    tx: &rusqlite::Transaction<'_>,
    comments: &[Comment],
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    // Checked whole first: a comment the database cannot hold refuses this batch
    // alone, not the group's transaction (a failed `put` would fail every write in it).
    if let Some(refused) = comments.iter().find_map(|c| rows::check(c).err()) {
        return Ok(Err(StoreError::Internal(refused.into())));
    }
    for comment in comments {
        rows::put(tx, comment)?;
        rows::claim(tx, comment)?;
    }
    Ok(Ok((Reply::Done, Effect::Put(comments.to_vec()))))
}

/// A moderator's decision, in the group's transaction.
fn moderate(
    tx: &rusqlite::Transaction<'_>,
    id: CommentId,
    verdict: &Verdict,
    actor: &str,
    now_ms: u64,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    let old = match read_allowed(tx, id, &Access::Any)? {
        Ok(old) => old,
        Err(refused) => return Ok(Err(refused)),
    };
    let new = match old.after_verdict(verdict, now_ms) {
        Ok(new) => new,
        Err(refused) => return Ok(Err(refused.into())),
    };
    let entries = LogEntry::of_decision(actor, verdict.decision.logged(), &old, &new, now_ms);
    let mut closed = Vec::new();
    if let Some(outcome) = old.closes_reports(&new) {
        for reporter in &old.reporters {
            match report_rows::get(tx, id, reporter)? {
                Some(Ok(report)) => closed.push(report.closed(outcome, now_ms)),
                Some(Err(damaged)) => return Ok(Err(StoreError::Internal(damaged.into()))),
                None => {}
            }
        }
    }
    logged(tx, new, entries, closed)
}

/// Writes `new`, the log `entries` that record it and the `reports` it filed or closed, in
/// the group's transaction.
fn logged(
    tx: &rusqlite::Transaction<'_>,
    new: Comment,
    entries: Vec<LogEntry>,
    reports: Vec<Report>,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    rows::put(tx, &new)?;
    for entry in &entries {
        log_rows::put(tx, entry)?;
    }
    for report in &reports {
        report_rows::put(tx, report)?;
    }
    let effect = Effect::Logged(Box::new(new.clone()), entries, reports);
    Ok(Ok((Reply::Comment(new), effect)))
}

/// A reader's report, in the group's transaction: the first one of the comment and reporter
/// is written with the comment after it (and the log entry of a hiding it causes); a second
/// one answers the first and writes nothing.
fn report(
    tx: &rusqlite::Transaction<'_>,
    id: CommentId,
    reporter: &str,
    draft: &ReportDraft,
    hide_threshold: Option<NonZeroU32>,
    now_ms: u64,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    match report_rows::get(tx, id, reporter)? {
        Some(Ok(existing)) => return Ok(Ok((Reply::Report(Box::new(existing)), Effect::None))),
        Some(Err(damaged)) => return Ok(Err(StoreError::Internal(damaged.into()))),
        None => {}
    }
    let old = match read_allowed(tx, id, &Access::Any)? {
        Ok(old) => old,
        Err(refused) => return Ok(Err(refused)),
    };
    let new = match old.after_report(reporter, hide_threshold, now_ms) {
        Ok(new) => new,
        Err(refused) => return Ok(Err(refused.into())),
    };
    let report = draft.clone().into_report(&old, reporter, now_ms);
    let entries = LogEntry::of_report(&old, &new, now_ms);
    Ok(logged(tx, new, entries, vec![report.clone()])?
        .map(|(_, effect)| (Reply::Report(Box::new(report)), effect)))
}

/// The shop's reply set or removed, in the group's transaction; nothing when it changes nothing.
fn reply(
    tx: &rusqlite::Transaction<'_>,
    id: CommentId,
    body: Option<&str>,
    actor: &str,
    now_ms: u64,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    let old = match read_allowed(tx, id, &Access::Any)? {
        Ok(old) => old,
        Err(refused) => return Ok(Err(refused)),
    };
    match old.after_reply(body, now_ms) {
        Ok(None) => Ok(Ok((Reply::Comment(old), Effect::None))),
        Ok(Some(new)) => {
            let action = LogEntry::reply_action(&new);
            let entry = LogEntry::of(actor, action, &old, &new, now_ms);
            logged(tx, new, vec![entry], Vec::new())
        }
        Err(ceiling) => Ok(Err(ceiling.into())),
    }
}

/// A helpful vote or its withdrawal: the vote row and the comment's count and version, in the
/// group's transaction; nothing when it changes nothing.
fn vote(
    tx: &rusqlite::Transaction<'_>,
    id: CommentId,
    voter: &Voter,
    helpful: bool,
    now_ms: u64,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    let old = match read_allowed(tx, id, &Access::Any)? {
        Ok(old) if old.is_public() => old,
        Ok(_) => return Ok(Err(StoreError::NotFound(id))),
        Err(refused) => return Ok(Err(refused)),
    };
    if helpful && voter.wrote(&old) {
        return Ok(Err(StoreError::OwnComment(id)));
    }
    if rows::has_vote(tx, id, voter.id)? == helpful {
        let unchanged = Voted {
            comment: old,
            changed: false,
        };
        return Ok(Ok((Reply::Voted(unchanged), Effect::None)));
    }
    let new = match old.after_vote(helpful) {
        Ok(new) => new,
        Err(ceiling) => return Ok(Err(ceiling.into())),
    };
    rows::set_vote(tx, id, voter.id, helpful, now_ms)?;
    rows::put(tx, &new)?;
    let voted = Voted {
        comment: new.clone(),
        changed: true,
    };
    let effect = Effect::Vote {
        comment: Box::new(new),
        voter: voter.id,
        helpful,
    };
    Ok(Ok((Reply::Voted(voted), effect)))
}

/// The comment `id` if it exists and `access` covers it.
fn read_allowed(
    tx: &rusqlite::Transaction<'_>,
    id: CommentId,
    access: &Access,
) -> rusqlite::Result<Result<Comment, StoreError>> {
    Ok(match rows::get(tx, id)? {
        None => Err(StoreError::NotFound(id)),
        Some(Err(damaged)) => Err(StoreError::Internal(damaged.into())),
        Some(Ok(old)) if !access.allows(&old) => Err(StoreError::Forbidden(id)),
        Some(Ok(old)) => Ok(old),
    })
}
