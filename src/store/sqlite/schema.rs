//! The database file's format: pragmas, the one table, and the checks that tell our file from
//! a foreign or damaged one before anything is read or written.
//!
//! Durability comes from SQLite's write-ahead log with `synchronous=FULL`: a transaction is
//! in the log and the log is fsynced before `COMMIT` returns, so a commit survives `SIGKILL`
//! and power loss, and a transaction that did not commit is rolled back at the next open.
//! `application_id` marks the file as dynapage's and `user_version` is its format version:
//! 2 since helpful votes (a `helpful_count` column and a `votes` table), 3 since moderation
//! (`status`, `reason`, `note`, `decided_at_ms`) and the shop's replies (`reply_body`,
//! `reply_at_ms`, `reply_updated_at_ms`), 5 since reports, 6 since verified purchases (a
//! `purchase` column and a `purchases` table of claimed order hashes). An older file is upgraded in place, one
//! transaction per step, when it is opened for writing (`serve --data-dir`), and read as it is
//! by readers that take no lock (every comment published, no votes before format 2); an older
//! dynapage refuses a newer file rather than ignore what it holds.
//!
//! A new database is made whole under another name (`comments.sqlite3.new`: marked, its
//! tables created, synced) and only then renamed into place ([`create`]), so a file named
//! `comments.sqlite3` is always one dynapage finished making. Anything else there is refused,
//! never taken for a new store: SQLite reads a zero-length file (a copy that never ran, a
//! full disk, a `touch`) as an empty database, and serving on one would look like every
//! comment was lost, then write a new store over the evidence.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::modes;

/// `application_id` of a dynapage database: "dyna" in ASCII.
pub const APPLICATION_ID: i64 = 0x6479_6e61;
/// `user_version`: the format this code reads and writes.
pub const FORMAT_VERSION: i64 = 6;
/// The format before votes, which opening for writing upgrades.
const FORMAT_BEFORE_VOTES: i64 = 1;
/// The format before moderation, which opening for writing upgrades.
const FORMAT_BEFORE_MODERATION: i64 = 2;
/// The last format without the moderation log.
pub(super) const FORMAT_BEFORE_LOG: i64 = 3;
/// The last format without reports.
pub(super) const FORMAT_BEFORE_REPORTS: i64 = 4;
/// The last format without verified purchases.
pub(super) const FORMAT_BEFORE_PURCHASES: i64 = 5;

/// Why the database file cannot be opened. Each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file is zero bytes long: an interrupted copy or restore, never a store.
    #[error(
        "{path} is empty (0 bytes), not a dynapage database (an interrupted copy or restore?): move it away, or restore it from a backup; a new store is made only where there is no such file"
    )]
    Empty {
        /// The database file.
        path: String,
    },
    /// The file is not an SQLite database, or is damaged past opening.
    #[error(
        "{path} is not a dynapage database (not an SQLite file, or damaged): move it away, or restore it from a backup"
    )]
    NotADatabase {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is an SQLite database without dynapage's `application_id`.
    #[error(
        "{path} is the SQLite database of another program (application_id {found:#x}): use another --data-dir"
    )]
    Foreign {
        /// The database file.
        path: String,
        /// The `application_id` it has.
        found: i64,
    },
    /// The file's format (`user_version`) is one this version does not read.
    #[error(
        "{path} has format {found}; this dynapage reads format {FORMAT_VERSION} (and upgrades formats 1 to 4 when `serve --data-dir` opens it): use a matching dynapage"
    )]
    Version {
        /// The database file.
        path: String,
        /// The `user_version` it has.
        found: i64,
    },
    /// SQLite's `quick_check` found the file damaged.
    #[error("{path}: SQLite integrity check failed: {detail}")]
    Damaged {
        /// The database file.
        path: String,
        /// What `quick_check` reported.
        detail: String,
    },
    /// Reading, writing, creating or renaming a file failed.
    #[error("{path}: cannot read or write the file")]
    Io {
        /// The file (the database, its temporary copy, or their directory).
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Any other SQLite error.
    #[error("{path}: SQLite error")]
    Sqlite {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS comments (
    id BLOB PRIMARY KEY NOT NULL,
    sku TEXT NOT NULL,
    author TEXT NOT NULL,
    author_sub TEXT,
    body TEXT NOT NULL,
    rating INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER,
    version INTEGER NOT NULL,
    helpful_count INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'PUBLISHED',
    reason TEXT,
    note TEXT,
    decided_at_ms INTEGER,
    reply_body TEXT,
    reply_at_ms INTEGER,
    reply_updated_at_ms INTEGER,
    reporters TEXT,
    purchase TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS purchases (
    hash TEXT PRIMARY KEY NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS votes (
    comment BLOB NOT NULL,
    voter BLOB NOT NULL,
    voted_at_ms INTEGER NOT NULL,
    PRIMARY KEY (comment, voter)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS moderation_log (
    id BLOB PRIMARY KEY NOT NULL,
    comment BLOB NOT NULL,
    sku TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    previous TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    note TEXT,
    at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reports (
    comment BLOB NOT NULL,
    reporter TEXT NOT NULL,
    id BLOB NOT NULL,
    sku TEXT NOT NULL,
    reason TEXT NOT NULL,
    details TEXT,
    status TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    decided_at_ms INTEGER,
    PRIMARY KEY (comment, reporter)
) WITHOUT ROWID";

/// Format 1 to 2: the count column (every comment at 0: there were no votes) and the table.
const UPGRADE_FROM_1: &str = "BEGIN IMMEDIATE;
ALTER TABLE comments ADD COLUMN helpful_count INTEGER NOT NULL DEFAULT 0;
CREATE TABLE votes (
    comment BLOB NOT NULL,
    voter BLOB NOT NULL,
    voted_at_ms INTEGER NOT NULL,
    PRIMARY KEY (comment, voter)
) WITHOUT ROWID;
PRAGMA user_version = 2;
COMMIT;";

/// Format 2 to 3: a comment's moderation (every comment so far was published at once) and the
/// shop's reply (none so far).
const UPGRADE_FROM_2: &str = "BEGIN IMMEDIATE;
ALTER TABLE comments ADD COLUMN status TEXT NOT NULL DEFAULT 'PUBLISHED';
ALTER TABLE comments ADD COLUMN reason TEXT;
ALTER TABLE comments ADD COLUMN note TEXT;
ALTER TABLE comments ADD COLUMN decided_at_ms INTEGER;
ALTER TABLE comments ADD COLUMN reply_body TEXT;
ALTER TABLE comments ADD COLUMN reply_at_ms INTEGER;
ALTER TABLE comments ADD COLUMN reply_updated_at_ms INTEGER;
PRAGMA user_version = 3;
COMMIT;";

/// Format 3 to 4: the moderation log (its table is made by [`CREATE`]; no entry so far).
const UPGRADE_FROM_3: &str = "PRAGMA user_version = 4;";

/// Format 4 to 5: reports (their table is made by [`CREATE`]) and each comment's open
/// reporters (none so far).
const UPGRADE_FROM_4: &str = "BEGIN IMMEDIATE;
ALTER TABLE comments ADD COLUMN reporters TEXT;
PRAGMA user_version = 5;
COMMIT;";

/// Format 5 to 6: a verified comment's order hash (none so far; the claims' table is made by
/// [`CREATE`]).
const UPGRADE_FROM_5: &str = "BEGIN IMMEDIATE;
ALTER TABLE comments ADD COLUMN purchase TEXT;
PRAGMA user_version = 6;
COMMIT;";

/// Opens the database for writing (making it first where there is none, [`create`]): WAL,
/// `synchronous=FULL`, checked.
pub fn open_for_writing(path: &Path) -> Result<Connection, FormatError> {
    match path.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path)?,
        Err(e) => return Err(io(path, e)),
        Ok(_) => {}
    }
    refuse_empty(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| classify(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite(path, e))?;
    let found = check(&conn, path, FORMAT_BEFORE_VOTES)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| classify(path, e))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| sqlite(path, e))?;
    if found == FORMAT_BEFORE_VOTES {
        conn.execute_batch(UPGRADE_FROM_1)
            .map_err(|e| sqlite(path, e))?;
        tracing::info!(data = %path.display(), "database upgraded to format 2 (helpful votes)");
    }
    if found <= FORMAT_BEFORE_MODERATION {
        conn.execute_batch(UPGRADE_FROM_2)
            .map_err(|e| sqlite(path, e))?;
        tracing::info!(data = %path.display(), "database upgraded to format 3 (moderation)");
    }
    conn.execute_batch(CREATE).map_err(|e| sqlite(path, e))?;
    if found <= FORMAT_BEFORE_LOG {
        conn.execute_batch(UPGRADE_FROM_3)
            .map_err(|e| sqlite(path, e))?;
        tracing::info!(data = %path.display(), "database upgraded to format 4 (moderation log)");
    }
    if found <= FORMAT_BEFORE_REPORTS {
        conn.execute_batch(UPGRADE_FROM_4)
            .map_err(|e| sqlite(path, e))?;
        tracing::info!(data = %path.display(), "database upgraded to format 5 (reports)");
    }
    if found <= FORMAT_BEFORE_PURCHASES {
        conn.execute_batch(UPGRADE_FROM_5)
            .map_err(|e| sqlite(path, e))?;
        tracing::info!(data = %path.display(), "database upgraded to format 6 (verified purchases)");
    }
    Ok(conn)
}

/// Makes a new, empty database at `path`, which must not exist: built as `PATH.new` (`0600`,
/// marked as dynapage's, its tables created, synced), renamed into place, and the directory
/// synced, so a crash leaves either no database or a whole one (and a `PATH.new` the next
/// start replaces).
pub fn create(path: &Path) -> Result<(), FormatError> {
    let temporary = PathBuf::from(format!("{}.new", path.display()));
    for leftover in ["", "-journal", "-wal", "-shm"] {
        let leftover = PathBuf::from(format!("{}{leftover}", temporary.display()));
        match std::fs::remove_file(&leftover) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(&leftover, e));
            }
            _ => {}
        }
    }
    modes::create_private(&temporary).map_err(|e| io(&temporary, e))?;
    let conn = Connection::open(&temporary).map_err(|e| sqlite(&temporary, e))?;
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {FORMAT_VERSION};
         BEGIN; {CREATE}; COMMIT;"
    ))
    .map_err(|e| sqlite(&temporary, e))?;
    conn.close().map_err(|(_, e)| sqlite(&temporary, e))?;
    std::fs::File::open(&temporary)
        .and_then(|file| file.sync_all())
        .map_err(|e| io(&temporary, e))?;
    std::fs::rename(&temporary, path).map_err(|e| io(path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| io(dir, e))?;
    }
    tracing::info!(data = %path.display(), "new embedded store created");
    Ok(())
}

/// Refuses a zero-length file, which SQLite would take for an empty database.
fn refuse_empty(path: &Path) -> Result<(), FormatError> {
    let meta = std::fs::metadata(path).map_err(|e| io(path, e))?;
    if meta.is_file() && meta.len() == 0 {
        Err(FormatError::Empty {
            path: path.display().to_string(),
        })
    } else {
        Ok(())
    }
}

/// The format (`user_version`) of an open database.
pub fn format(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Opens an existing database read-only (export, backup, verify beside a running server), in
/// this format or the one before votes (read as comments without votes: nothing upgrades it
/// without the directory's lock).
pub fn open_for_reading(path: &Path) -> Result<Connection, FormatError> {
    refuse_empty(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| classify(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite(path, e))?;
    check(&conn, path, FORMAT_BEFORE_VOTES)?;
    Ok(conn)
}

/// Runs SQLite's `quick_check` (structure of every page and index; `verify`).
pub fn quick_check(conn: &Connection, path: &Path) -> Result<(), FormatError> {
    let detail: String = conn
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|e| classify(path, e))?;
    if detail == "ok" {
        Ok(())
    } else {
        Err(FormatError::Damaged {
            path: path.display().to_string(),
            detail,
        })
    }
}

/// Checks the file is ours, in a format from `oldest` to [`FORMAT_VERSION`]: that format. A
/// database without our mark is refused, an empty one included (ours are marked before they
/// get their name, [`create`]).
fn check(conn: &Connection, path: &Path, oldest: i64) -> Result<i64, FormatError> {
    let pragma = |name: &str| -> Result<i64, FormatError> {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
            .map_err(|e| classify(path, e))
    };
    let application_id = pragma("application_id")?;
    let version = pragma("user_version")?;
    // Reads the schema: a damaged or foreign file fails here if not before.
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| {
        row.get::<_, i64>(0)
    })
    .map_err(|e| classify(path, e))?;
    let shown = || path.display().to_string();
    if application_id != APPLICATION_ID {
        return Err(FormatError::Foreign {
            path: shown(),
            found: application_id,
        });
    }
    if !(oldest..=FORMAT_VERSION).contains(&version) {
        return Err(FormatError::Version {
            path: shown(),
            found: version,
        });
    }
    Ok(version)
}

fn classify(path: &Path, err: rusqlite::Error) -> FormatError {
    let code = err.sqlite_error_code();
    if matches!(
        code,
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    ) {
        FormatError::NotADatabase {
            path: path.display().to_string(),
            source: err,
        }
    } else {
        sqlite(path, err)
    }
}

fn io(path: &Path, source: std::io::Error) -> FormatError {
    FormatError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn sqlite(path: &Path, source: rusqlite::Error) -> FormatError {
    FormatError::Sqlite {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
