//! Reading the whole database in id order: the start-up load into memory (with progress
//! logs) and `export`'s read beside a running server.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::rows;
use super::schema::{self, FormatError};
use super::{OpenError, RowError};
use crate::domain::{Comment, CommentId, VoterId};
use crate::store::memory::MemoryStore;

/// Comments put into memory per step of the load.
const CHUNK: usize = 10_000;
/// How often the load logs its progress.
const LOG_EVERY: Duration = Duration::from_secs(2);

/// What the start-up load did.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadReport {
    /// How many comments were loaded into memory.
    pub comments: u64,
    /// How long the load took.
    pub elapsed: Duration,
}

/// Loads every comment of `conn` into `memory`, logging progress.
pub(super) fn load(
    conn: &Connection,
    path: &Path,
    memory: &MemoryStore,
) -> Result<LoadReport, OpenError> {
    let started = Instant::now();
    let shown = path.display().to_string();
    let total: i64 = conn
        .query_row("SELECT count(*) FROM comments", [], |row| row.get(0))
        .map_err(|source| sqlite::<OpenError>(path, source))?;
    tracing::info!(
        data = shown.as_str(),
        comments = total,
        "loading the embedded store"
    );
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut loaded = 0u64;
    let mut next_log = started + LOG_EVERY;
    each_row::<OpenError>(conn, path, None, |comment| {
        chunk.push(comment);
        if chunk.len() == CHUNK {
            memory.put_now(&chunk);
            loaded += chunk.len() as u64;
            chunk.clear();
            if Instant::now() >= next_log {
                next_log += LOG_EVERY;
                tracing::info!(
                    loaded,
                    comments = total,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "loading the embedded store"
                );
            }
        }
        Ok(())
    })?;
    memory.put_now(&chunk);
    loaded += chunk.len() as u64;
    load_votes(conn, path, memory)?;
    let report = LoadReport {
        comments: loaded,
        elapsed: started.elapsed(),
    };
    tracing::info!(
        data = shown.as_str(),
        comments = loaded,
        elapsed_ms = report.elapsed.as_millis() as u64,
        "embedded store loaded"
    );
    Ok(report)
}

/// Loads every helpful vote into `memory` (the comments came with their counts).
fn load_votes(conn: &Connection, path: &Path, memory: &MemoryStore) -> Result<(), OpenError> {
    let mut statement = conn
        .prepare("SELECT comment, voter FROM votes")
        .map_err(|source| sqlite::<OpenError>(path, source))?;
    let votes = statement
        .query_map([], |row| {
            Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .map_err(|source| sqlite::<OpenError>(path, source))?;
    let mut held = Vec::new();
    for vote in votes {
        let (comment, voter) = vote.map_err(|source| sqlite::<OpenError>(path, source))?;
        match (<[u8; 16]>::try_from(comment), <[u8; 16]>::try_from(voter)) {
            (Ok(comment), Ok(voter)) => {
                held.push((CommentId::from_bytes(comment), VoterId::from_bytes(voter)));
            }
            _ => {
                return Err(OpenError::Row {
                    path: path.display().to_string(),
                    source: RowError {
                        row: "votes".to_owned(),
                        reason: "a vote's comment or voter is not 16 bytes".to_owned(),
                    },
                });
            }
        }
    }
    tracing::info!(votes = held.len(), "helpful votes loaded");
    memory.load_votes(held);
    Ok(())
}

/// Calls `each` with every comment of the data directory `data_dir` whose id is above `after`,
/// in id order, from one consistent snapshot, without taking the directory's lock. Stops at
/// the first error `each` returns.
pub fn read_ordered<E: From<OpenError>>(
    data_dir: &Path,
    after: Option<CommentId>,
    each: impl FnMut(Comment) -> Result<(), E>,
) -> Result<(), E> {
    let database = super::dir::existing_database(data_dir).map_err(OpenError::from)?;
    let conn = schema::open_for_reading(&database).map_err(OpenError::from)?;
    each_row(&conn, &database, after, each)
}

fn each_row<E: From<OpenError>>(
    conn: &Connection,
    path: &Path,
    after: Option<CommentId>,
    mut each: impl FnMut(Comment) -> Result<(), E>,
) -> Result<(), E> {
    let after = after.map_or_else(Vec::new, |id| id.to_bytes().to_vec());
    let mut statement = conn
        .prepare(&format!(
            "SELECT {} FROM comments WHERE id > ?1 ORDER BY id",
            rows::columns(schema::format(conn).map_err(|source| sqlite(path, source))?)
        ))
        .map_err(|source| sqlite(path, source))?;
    let mut rows = statement
        .query([after])
        .map_err(|source| sqlite(path, source))?;
    while let Some(row) = rows.next().map_err(|source| sqlite(path, source))? {
        let comment = rows::decode(row)
            .map_err(|source| sqlite(path, source))?
            .map_err(|source: RowError| {
                E::from(OpenError::Row {
                    path: path.display().to_string(),
                    source,
                })
            })?;
        each(comment)?;
    }
    Ok(())
}

fn sqlite<E: From<OpenError>>(path: &Path, source: rusqlite::Error) -> E {
    E::from(OpenError::Format(FormatError::Sqlite {
        path: path.display().to_string(),
        source,
    }))
}
