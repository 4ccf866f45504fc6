//! Reading a whole table of the database (the moderation log's, the reports'): at start-up
//! into memory, and for `export` from a data directory without taking its lock.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, Row};

use super::OpenError;
use super::RowError;
use super::schema::FormatError;

/// The database of the data directory `data_dir`, opened for reading, and its path; `None`
/// when its format is `before` or older (the table was not there yet).
pub(super) fn open_newer_than(
    data_dir: &Path,
    before: i64,
) -> Result<Option<(Connection, PathBuf)>, OpenError> {
    let database = super::dir::existing_database(data_dir)?;
    let conn = super::schema::open_for_reading(&database)?;
    let format = super::schema::format(&conn).map_err(|source| sqlite(&database, source))?;
    Ok((format > before).then_some((conn, database)))
}

/// Every row `sql` selects, each decoded by `decode`; the first damaged one is an error naming
/// the database.
pub(super) fn all<T>(
    conn: &Connection,
    path: &Path,
    sql: &str,
    decode: fn(&Row<'_>) -> rusqlite::Result<Result<T, RowError>>,
) -> Result<Vec<T>, OpenError> {
    let failed = |source| sqlite(path, source);
    let mut statement = conn.prepare(sql).map_err(failed)?;
    let mut rows = statement.query([]).map_err(failed)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let item = decode(row)
            .map_err(failed)?
            .map_err(|source| OpenError::Row {
                path: path.display().to_string(),
                source,
            })?;
        out.push(item);
    }
    Ok(out)
}

fn sqlite(path: &Path, source: rusqlite::Error) -> OpenError {
    OpenError::Format(FormatError::Sqlite {
        path: path.display().to_string(),
        source,
    })
}
