//! A comment as a row of the `comments` table, and back. Decoding validates every column the
//! way the DynamoDB adapter validates an item, so a damaged row is an error naming the row,
//! never a panic or a silently wrong comment.

use rusqlite::{Row, Transaction, params};

use crate::domain::{Comment, CommentId, Rating, Sku, SortKey};

/// The columns in the order [`decode`] reads them.
pub const COLUMNS: &str =
    "id, sku, author, author_sub, body, rating, created_at_ms, updated_at_ms, version";

/// A row that does not decode into a comment.
#[derive(Debug, thiserror::Error)]
#[error("row {row} of the comments table is damaged: {reason}")]
pub struct RowError {
    pub row: String,
    pub reason: String,
}

/// Reads a row selected with [`COLUMNS`].
pub fn decode(row: &Row<'_>) -> rusqlite::Result<Result<Comment, RowError>> {
    let id: Vec<u8> = row.get(0)?;
    let sku: String = row.get(1)?;
    let author: String = row.get(2)?;
    let author_sub: Option<String> = row.get(3)?;
    let body: String = row.get(4)?;
    let rating: i64 = row.get(5)?;
    let created_at_ms: i64 = row.get(6)?;
    let updated_at_ms: Option<i64> = row.get(7)?;
    let version: i64 = row.get(8)?;
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
    let Some(version) = u64::try_from(version).ok().filter(|v| *v >= 1) else {
        return Ok(Err(bad("the version is not positive")));
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
    }))
}

/// Inserts or replaces `comment`.
pub fn put(tx: &Transaction<'_>, comment: &Comment) -> rusqlite::Result<()> {
    let mut statement = tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO comments ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?;
    statement.execute(params![
        comment.id.to_bytes().as_slice(),
        comment.sku.as_str(),
        comment.author,
        comment.author_sub,
        comment.body,
        i64::from(comment.rating.get()),
        comment.created_at_ms as i64,
        comment.updated_at_ms.map(|ms| ms as i64),
        comment.version as i64,
    ])?;
    Ok(())
}

/// Reads one comment by id (inside the writer's transaction).
pub fn get(
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

/// Deletes one comment by id.
pub fn remove(tx: &Transaction<'_>, id: CommentId) -> rusqlite::Result<()> {
    let mut statement = tx.prepare_cached("DELETE FROM comments WHERE id = ?1")?;
    statement.execute([id.to_bytes().as_slice()])?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    match <[u8; 16]>::try_from(bytes) {
        Ok(id) => CommentId::from_bytes(id).to_string(),
        Err(_) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}
