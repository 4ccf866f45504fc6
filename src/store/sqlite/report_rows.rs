//! Reports' rows (`reports`, format 5): one per comment and reporter, written in the
//! transaction of the report or of the decision that closes it, read whole into memory at
//! start-up.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::OpenError;
use super::RowError;
use super::read_rows;
use crate::domain::{CommentId, EntryId, Report, ReportReason, ReportStatus, Sku};
use crate::store::memory::MemoryStore;

const COLUMNS: &str =
    "comment, reporter, id, sku, reason, details, status, created_at_ms, decided_at_ms";

/// Writes `report`, replacing the one of its comment and reporter.
pub(super) fn put(tx: &Transaction<'_>, report: &Report) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO reports ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?
    .execute(params![
        report.comment.to_bytes().to_vec(),
        report.reporter,
        report.id.to_bytes().to_vec(),
        report.sku.as_str(),
        report.reason.as_str(),
        report.details,
        report.status.as_str(),
        millis(report.created_at_ms)?,
        report.decided_at_ms.map(millis).transpose()?,
    ])?;
    Ok(())
}

fn millis(ms: u64) -> rusqlite::Result<i64> {
    i64::try_from(ms).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The report `reporter` filed on `comment`, if any (inside the writer's transaction).
pub(super) fn get(
    tx: &Transaction<'_>,
    comment: CommentId,
    reporter: &str,
) -> rusqlite::Result<Option<Result<Report, RowError>>> {
    tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM reports WHERE comment = ?1 AND reporter = ?2"
    ))?
    .query_row(params![comment.to_bytes().to_vec(), reporter], decode)
    .optional()
}

/// Removes the report `reporter` filed on `comment` (inside the writer's transaction).
pub(super) fn remove(
    tx: &Transaction<'_>,
    comment: CommentId,
    reporter: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM reports WHERE comment = ?1 AND reporter = ?2")?
        .execute(params![comment.to_bytes().to_vec(), reporter])?;
    Ok(())
}

/// Loads every report into `memory`.
pub(super) fn load(conn: &Connection, path: &Path, memory: &MemoryStore) -> Result<(), OpenError> {
    let reports = read_all(conn, path)?;
    tracing::info!(reports = reports.len(), "reports loaded");
    memory.put_reports_now(&reports);
    Ok(())
}

/// Every report of the data directory `data_dir`, from one consistent snapshot, without
/// taking the directory's lock (`export`); none in a database older than reports.
pub fn read_reports(data_dir: &Path) -> Result<Vec<Report>, OpenError> {
    match read_rows::open_newer_than(data_dir, super::schema::FORMAT_BEFORE_REPORTS)? {
        Some((conn, database)) => read_all(&conn, &database),
        None => Ok(Vec::new()),
    }
}

fn read_all(conn: &Connection, path: &Path) -> Result<Vec<Report>, OpenError> {
    let sql = format!("SELECT {COLUMNS} FROM reports ORDER BY id");
    read_rows::all(conn, path, &sql, decode)
}

fn decode(row: &Row<'_>) -> rusqlite::Result<Result<Report, RowError>> {
    let bad = |reason: &str| RowError {
        row: "reports".to_owned(),
        reason: reason.to_owned(),
    };
    let (comment, reporter, id): (Vec<u8>, String, Vec<u8>) =
        (row.get(0)?, row.get(1)?, row.get(2)?);
    let (sku, reason, details, status): (String, String, Option<String>, String) =
        (row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?);
    let (created, decided): (i64, Option<i64>) = (row.get(7)?, row.get(8)?);
    let decoded = (|| {
        let report = Report {
            id: EntryId::from_bytes(id.try_into().map_err(|_| bad("an id is not 16 bytes"))?),
            comment: CommentId::from_bytes(
                comment
                    .try_into()
                    .map_err(|_| bad("a comment id is not 16 bytes"))?,
            ),
            sku: Sku::parse(&sku).map_err(|_| bad("a SKU is not valid"))?,
            reporter,
            reason: ReportReason::parse(&reason).map_err(|_| bad("a reason is unknown"))?,
            details,
            status: ReportStatus::parse(&status).map_err(|_| bad("a status is unknown"))?,
            created_at_ms: u64::try_from(created).map_err(|_| bad("a time is negative"))?,
            decided_at_ms: decided
                .map(u64::try_from)
                .transpose()
                .map_err(|_| bad("a time is negative"))?,
        };
        if !report.is_well_formed() {
            return Err(bad("a report is not well formed"));
        }
        Ok(report)
    })();
    Ok(decoded)
}
