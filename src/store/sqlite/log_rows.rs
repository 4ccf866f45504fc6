//! The moderation log's rows (`moderation_log`, format 4): written in the transaction of the
//! decision or reply they record, read whole into memory at start-up.

use std::path::Path;

use rusqlite::{Connection, Row, Transaction, params};

use super::OpenError;
use super::RowError;
use super::read_rows;
use crate::domain::{
    CommentId, CommentStatus, EntryId, LogAction, LogEntry, ModerationReason, Sku,
};
use crate::store::memory::MemoryStore;

/// Writes `entry` (an entry already held is left as it is: entries never change).
pub(super) fn put(tx: &Transaction<'_>, entry: &LogEntry) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR IGNORE INTO moderation_log
         (id, comment, sku, actor, action, previous, status, reason, note, at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            entry.id.to_bytes().to_vec(),
            entry.comment.to_bytes().to_vec(),
            entry.sku.as_str(),
            entry.actor,
            entry.action.as_str(),
            entry.previous.as_str(),
            entry.status.as_str(),
            entry.reason.map(ModerationReason::as_str),
            entry.note,
            entry.at_ms as i64,
        ],
    )?;
    Ok(())
}

/// Loads every entry into `memory`.
pub(super) fn load(conn: &Connection, path: &Path, memory: &MemoryStore) -> Result<(), OpenError> {
    let entries = read_all(conn, path)?;
    tracing::info!(entries = entries.len(), "moderation log loaded");
    memory.put_log_now(&entries);
    Ok(())
}

/// Every entry of the data directory `data_dir`, in id order, from one consistent snapshot,
/// without taking the directory's lock (`export`); none in a database older than the log.
pub fn read_log(data_dir: &Path) -> Result<Vec<LogEntry>, OpenError> {
    match read_rows::open_newer_than(data_dir, super::schema::FORMAT_BEFORE_LOG)? {
        Some((conn, database)) => read_all(&conn, &database),
        None => Ok(Vec::new()),
    }
}

fn read_all(conn: &Connection, path: &Path) -> Result<Vec<LogEntry>, OpenError> {
    let sql = "SELECT id, comment, sku, actor, action, previous, status, reason, note, at_ms
               FROM moderation_log ORDER BY id";
    read_rows::all(conn, path, sql, decode)
}

fn decode(row: &Row<'_>) -> rusqlite::Result<Result<LogEntry, RowError>> {
    let bad = |reason: &str| RowError {
        row: "moderation_log".to_owned(),
        reason: reason.to_owned(),
    };
    let id: Vec<u8> = row.get(0)?;
    let comment: Vec<u8> = row.get(1)?;
    let (sku, actor): (String, String) = (row.get(2)?, row.get(3)?);
    let (action, previous, status): (String, String, String) =
        (row.get(4)?, row.get(5)?, row.get(6)?);
    let (reason, note): (Option<String>, Option<String>) = (row.get(7)?, row.get(8)?);
    let at_ms: i64 = row.get(9)?;
    let decoded = (|| {
        Ok(LogEntry {
            id: EntryId::from_bytes(id.try_into().map_err(|_| bad("an id is not 16 bytes"))?),
            comment: CommentId::from_bytes(
                comment
                    .try_into()
                    .map_err(|_| bad("a comment id is not 16 bytes"))?,
            ),
            sku: Sku::parse(&sku).map_err(|_| bad("a SKU is not valid"))?,
            actor,
            action: LogAction::parse(&action).map_err(|_| bad("an action is unknown"))?,
            previous: CommentStatus::parse(&previous).map_err(|_| bad("a status is unknown"))?,
            status: CommentStatus::parse(&status).map_err(|_| bad("a status is unknown"))?,
            reason: reason
                .map(|r| ModerationReason::parse(&r))
                .transpose()
                .map_err(|_| bad("a reason is unknown"))?,
            note,
            at_ms: u64::try_from(at_ms).map_err(|_| bad("a time is negative"))?,
        })
    })();
    Ok(decoded)
}
