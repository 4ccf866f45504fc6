//! A comment as a row of the `comments` table, and back. Decoding validates every column the
//! way the DynamoDB adapter validates an item, so a damaged row is an error naming the row,
//! never a panic or a silently wrong comment. Also a helpful vote as a row of `votes`.
//!
//! Every number crosses between `u64` and SQLite's INTEGER (`i64`) through `try_from`, with an
//! error naming the comment: clippy refuses an `as` cast here that could wrap or truncate.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use rusqlite::{OptionalExtension, Row, Transaction, params};

use crate::domain::{
    Comment, CommentId, CommentStatus, Moderation, ModerationReason, OrderHash, Rating, Reply, Sku,
    SortKey, VoterId, decode_reporters, encode_reporters, version_is_valid,
};

/// The columns in the order [`decode`] reads them.
pub(super) const COLUMNS: &str = "id, sku, author, author_sub, body, rating, created_at_ms, \
                           updated_at_ms, version, helpful_count, status, reason, note, \
                           decided_at_ms, reply_body, reply_at_ms, reply_updated_at_ms, \
                           reporters, purchase";
/// The same of a format-1 file (before votes: every count is 0, every comment published), for
/// readers that take no lock and so do not upgrade it (`export` beside an older server).
const COLUMNS_BEFORE_VOTES: &str = "id, sku, author, author_sub, body, rating, created_at_ms, \
                                    updated_at_ms, version, 0, 'PUBLISHED', NULL, NULL, NULL, \
                                    NULL, NULL, NULL, NULL, NULL";
/// The same of a format-2 file (before moderation: every comment published).
const COLUMNS_BEFORE_MODERATION: &str = "id, sku, author, author_sub, body, rating, \
                                         created_at_ms, updated_at_ms, version, helpful_count, \
                                         'PUBLISHED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                                         NULL";
/// The same of a format-3 or -4 file (before reports: none open).
const COLUMNS_BEFORE_REPORTS: &str = "id, sku, author, author_sub, body, rating, created_at_ms, \
                                      updated_at_ms, version, helpful_count, status, reason, \
                                      note, decided_at_ms, reply_body, reply_at_ms, \
                                      reply_updated_at_ms, NULL, NULL";
/// The same of a format-5 file (before verified purchases: none verified).
const COLUMNS_BEFORE_PURCHASES: &str = "id, sku, author, author_sub, body, rating, \
                                        created_at_ms, updated_at_ms, version, helpful_count, \
                                        status, reason, note, decided_at_ms, reply_body, \
                                        reply_at_ms, reply_updated_at_ms, reporters, NULL";

/// The columns to select for [`decode`] from a file of `format`.
pub(super) fn columns(format: i64) -> &'static str {
    match format {
        ..2 => COLUMNS_BEFORE_VOTES,
        2 => COLUMNS_BEFORE_MODERATION,
        3 | 4 => COLUMNS_BEFORE_REPORTS,
        5 => COLUMNS_BEFORE_PURCHASES,
        _ => COLUMNS,
    }
}

/// A row that does not decode into a comment.
#[derive(Debug, thiserror::Error)]
#[error("row {row} of the comments table is damaged: {reason}")]
pub struct RowError {
    /// Which row: the comment's id in hex (`votes` for a row of the votes table).
    pub row: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Reads a row selected with [`COLUMNS`].
pub(super) fn decode(row: &Row<'_>) -> rusqlite::Result<Result<Comment, RowError>> {
    let id: Vec<u8> = row.get(0)?;
    let sku: String = row.get(1)?;
    let author: String = row.get(2)?;
    let author_sub: Option<String> = row.get(3)?;
    let body: String = row.get(4)?;
    let rating: i64 = row.get(5)?;
    let created_at_ms: i64 = row.get(6)?;
    let updated_at_ms: Option<i64> = row.get(7)?;
    let version: i64 = row.get(8)?;
    let helpful_count: i64 = row.get(9)?;
    let shown = hex(&id);
    let bad = |reason: &str| RowError {
        row: shown.clone(),
        reason: reason.to_owned(),
    };
    let Ok(bytes) = <[u8; 16]>::try_from(id.as_slice()) else {
        return Ok(Err(bad("the id is not 16 bytes")));
    };
    let Ok(sku) = Sku::parse(&sku) else {
        return Ok(Err(bad("the sku is not valid")));
    };
    let Ok(rating) = Rating::new(rating) else {
        return Ok(Err(bad("the rating is not 1..5")));
    };
    let millis = |v: i64| u64::try_from(v).ok().filter(|m| *m <= SortKey::MAX_MILLIS);
    let Some(created_at_ms) = millis(created_at_ms) else {
        return Ok(Err(bad("createdAt is out of range")));
    };
    let updated_at_ms = match updated_at_ms.map(millis) {
        Some(None) => return Ok(Err(bad("updatedAt is out of range"))),
        Some(Some(ms)) => Some(ms),
        None => None,
    };
    let Some(version) = u64::try_from(version).ok().filter(|v| version_is_valid(*v)) else {
        return Ok(Err(bad(
            "the version is not between 1 and 2^53 - 2 (the highest version)",
        )));
    };
    let Ok(helpful_count) = u64::try_from(helpful_count) else {
        return Ok(Err(bad("the helpful count is negative")));
    };
    let (moderation, reply) = match moderation_of(row)? {
        Ok(both) => both,
        Err(reason) => return Ok(Err(bad(reason))),
    };
    let reporters: Option<String> = row.get(17)?;
    let reporters = match reporters.as_deref().map(decode_reporters) {
        None => Vec::new(),
        Some(Ok(reporters)) => reporters,
        Some(Err(_)) => return Ok(Err(bad("the open reporters are not a list of subjects"))),
    };
    let purchase: Option<String> = row.get(18)?;
    let purchase = match purchase.as_deref().map(OrderHash::parse) {
        None => None,
        Some(Ok(hash)) => Some(hash),
        Some(Err(_)) => return Ok(Err(bad("the purchase is not an order hash"))),
    };
    Ok(Ok(Comment {
        id: CommentId::from_bytes(bytes),
        sku,
        author,
        author_sub,
        body,
        rating,
        created_at_ms,
        updated_at_ms,
        version,
        helpful_count,
        moderation,
        reply: reply.map(Box::new),
        reporters,
        purchase,
    }))
}

/// A row's moderation and reply (columns 10 to 16), or why they do not decode.
fn moderation_of(
    row: &Row<'_>,
) -> rusqlite::Result<Result<(Moderation, Option<Reply>), &'static str>> {
    let status: String = row.get(10)?;
    let reason: Option<String> = row.get(11)?;
    let note: Option<String> = row.get(12)?;
    let decided_at_ms: Option<i64> = row.get(13)?;
    let reply_body: Option<String> = row.get(14)?;
    let reply_at_ms: Option<i64> = row.get(15)?;
    let reply_updated_at_ms: Option<i64> = row.get(16)?;
    let millis = |v: i64| u64::try_from(v).ok().filter(|m| *m <= SortKey::MAX_MILLIS);
    let Ok(status) = CommentStatus::parse(&status) else {
        return Ok(Err("the status is not a comment status"));
    };
    let Ok(reason) = reason.as_deref().map(ModerationReason::parse).transpose() else {
        return Ok(Err("the reason is not a moderation reason"));
    };
    let decided_at_ms = match decided_at_ms.map(millis) {
        Some(None) => return Ok(Err("decidedAt is out of range")),
        Some(Some(ms)) => Some(ms),
        None => None,
    };
    let reply = match (
        reply_body,
        reply_at_ms.map(millis),
        reply_updated_at_ms.map(millis),
    ) {
        (None, None, None) => None,
        (Some(body), Some(Some(created_at_ms)), None) => Some(Reply {
            body,
            created_at_ms,
            updated_at_ms: None,
        }),
        (Some(body), Some(Some(created_at_ms)), Some(Some(updated))) => Some(Reply {
            body,
            created_at_ms,
            updated_at_ms: Some(updated),
        }),
        _ => return Ok(Err("the reply's columns are incomplete or out of range")),
    };
    let moderation = Moderation {
        status,
        reason,
        note,
        decided_at_ms,
    };
    Ok(Ok((moderation, reply)))
}

/// A number of comment `id` that does not fit its column: refused by name, never wrapped by
/// an `as` into a row that reads back as another number (or not at all).
#[derive(Debug, thiserror::Error)]
#[error("comment {id}: {column} {value} is out of range for the database")]
pub(super) struct OutOfRange {
    pub id: CommentId,
    pub column: &'static str,
    pub value: u64,
}

/// `value` as SQLite's INTEGER (i64), or an [`OutOfRange`] naming the comment and the column.
fn integer(id: CommentId, column: &'static str, value: u64) -> rusqlite::Result<i64> {
    i64::try_from(value).map_err(|_| out_of_range(id, column, value))
}

fn out_of_range(id: CommentId, column: &'static str, value: u64) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(OutOfRange { id, column, value }))
}

/// Whether every number of `comment` is one [`put`] writes and [`decode`] reads back: the
/// writer refuses a batch holding one that is not, alone, before anything is written.
pub(super) fn check(comment: &Comment) -> Result<(), OutOfRange> {
    let refused = |column, value| OutOfRange {
        id: comment.id,
        column,
        value,
    };
    if !version_is_valid(comment.version) {
        return Err(refused("version", comment.version));
    }
    for (column, value) in [
        ("created_at_ms", Some(comment.created_at_ms)),
        ("updated_at_ms", comment.updated_at_ms),
        ("decided_at_ms", comment.moderation.decided_at_ms),
        (
            "reply_at_ms",
            comment.reply.as_ref().map(|r| r.created_at_ms),
        ),
        (
            "reply_updated_at_ms",
            comment.reply.as_ref().and_then(|r| r.updated_at_ms),
        ),
    ] {
        if let Some(ms) = value.filter(|ms| *ms > SortKey::MAX_MILLIS) {
            return Err(refused(column, ms));
        }
    }
    if i64::try_from(comment.helpful_count).is_err() {
        return Err(refused("helpful_count", comment.helpful_count));
    }
    Ok(())
}

/// Inserts or replaces `comment`; a number out of range ([`check`]) is an error naming it.
pub(super) fn put(tx: &Transaction<'_>, comment: &Comment) -> rusqlite::Result<()> {
    let id = comment.id;
    check(comment).map_err(|e| out_of_range(e.id, e.column, e.value))?;
    let mut statement = tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO comments ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
    ))?;
    statement.execute(params![
        id.to_bytes().as_slice(),
        comment.sku.as_str(),
        comment.author,
        comment.author_sub,
        comment.body,
        i64::from(comment.rating.get()),
        integer(id, "created_at_ms", comment.created_at_ms)?,
        comment
            .updated_at_ms
            .map(|ms| integer(id, "updated_at_ms", ms))
            .transpose()?,
        integer(id, "version", comment.version)?,
        integer(id, "helpful_count", comment.helpful_count)?,
        comment.moderation.status.as_str(),
        comment.moderation.reason.map(ModerationReason::as_str),
        comment.moderation.note,
        comment
            .moderation
            .decided_at_ms
            .map(|ms| integer(id, "decided_at_ms", ms))
            .transpose()?,
        comment.reply.as_ref().map(|r| r.body.as_str()),
        comment
            .reply
            .as_ref()
            .map(|r| integer(id, "reply_at_ms", r.created_at_ms))
            .transpose()?,
        comment
            .reply
            .as_ref()
            .and_then(|r| r.updated_at_ms)
            .map(|ms| integer(id, "reply_updated_at_ms", ms))
            .transpose()?,
        encode_reporters(&comment.reporters),
        comment.purchase.as_ref().map(OrderHash::as_str),
    ])?;
    Ok(())
}

/// Records the claim of a verified comment's order hash, if it has one: where a comment comes
/// in (its create, or an import), not on every later write of it.
pub(super) fn claim(tx: &Transaction<'_>, comment: &Comment) -> rusqlite::Result<()> {
    if let Some(hash) = &comment.purchase {
        tx.prepare_cached("INSERT OR IGNORE INTO purchases (hash) VALUES (?1)")?
            .execute([hash.as_str()])?;
    }
    Ok(())
}

/// Whether `hash` is claimed already: by a verified comment, kept or deleted.
pub(super) fn is_claimed(tx: &Transaction<'_>, hash: &OrderHash) -> rusqlite::Result<bool> {
    tx.prepare_cached("SELECT 1 FROM purchases WHERE hash = ?1")?
        .query_row([hash.as_str()], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Reads one comment by id (inside the writer's transaction).
pub(super) fn get(
    tx: &Transaction<'_>,
    id: CommentId,
) -> rusqlite::Result<Option<Result<Comment, RowError>>> {
    let mut statement =
        tx.prepare_cached(&format!("SELECT {COLUMNS} FROM comments WHERE id = ?1"))?;
    let mut rows = statement.query([id.to_bytes().as_slice()])?;
    match rows.next()? {
        Some(row) => Ok(Some(decode(row)?)),
        None => Ok(None),
    }
}

/// Deletes one comment by id, and its votes.
pub(super) fn remove(tx: &Transaction<'_>, id: CommentId) -> rusqlite::Result<()> {
    let mut statement = tx.prepare_cached("DELETE FROM comments WHERE id = ?1")?;
    statement.execute([id.to_bytes().as_slice()])?;
    let mut statement = tx.prepare_cached("DELETE FROM votes WHERE comment = ?1")?;
    statement.execute([id.to_bytes().as_slice()])?;
    Ok(())
}

/// Whether `voter` has a vote on comment `id`.
pub(super) fn has_vote(
    tx: &Transaction<'_>,
    id: CommentId,
    voter: VoterId,
) -> rusqlite::Result<bool> {
    let mut statement =
        tx.prepare_cached("SELECT 1 FROM votes WHERE comment = ?1 AND voter = ?2")?;
    let found: Option<i64> = statement
        .query_row(
            params![id.to_bytes().as_slice(), voter.to_bytes().as_slice()],
            |row| row.get(0),
        )
        .optional()?;
    Ok(found.is_some())
}

/// Records (`helpful`) or removes `voter`'s vote on comment `id`.
pub(super) fn set_vote(
    tx: &Transaction<'_>,
    id: CommentId,
    voter: VoterId,
    helpful: bool,
    now_ms: u64,
) -> rusqlite::Result<()> {
    let (id, voter) = (id.to_bytes(), voter.to_bytes());
    if helpful {
        let mut statement = tx.prepare_cached(
            "INSERT OR IGNORE INTO votes (comment, voter, voted_at_ms) VALUES (?1, ?2, ?3)",
        )?;
        let at = i64::try_from(now_ms)
            .map_err(|_| out_of_range(CommentId::from_bytes(id), "voted_at_ms", now_ms))?;
        statement.execute(params![id.as_slice(), voter.as_slice(), at])?;
    } else {
        let mut statement =
            tx.prepare_cached("DELETE FROM votes WHERE comment = ?1 AND voter = ?2")?;
        statement.execute(params![id.as_slice(), voter.as_slice()])?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    match <[u8; 16]>::try_from(bytes) {
        Ok(id) => CommentId::from_bytes(id).to_string(),
        Err(_) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}
