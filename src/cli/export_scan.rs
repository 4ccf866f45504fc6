//! The DynamoDB side of `export`: a resumable scan, then a sort.
//!
//! A scan returns comments in no useful order, so it cannot resume by "after the last line
//! written" the way the embedded store's export does. Instead each page of the scan is
//! appended, as export lines, to `FILE.scan` (synced), and then `FILE.export-progress` records
//! the segment, its `LastEvaluatedKey` and the spool's length ([`ScanState`]). A rerun cuts the
//! spool back to that length (a page written but not recorded is read again) and continues
//! the scan at that key; when the scan is complete, the spool is sorted by id (in memory, as
//! the export always was) and written to `FILE.partial`, a step short enough to redo whole.
//! So an interrupted export reads each page of the table at most twice, and its output is the
//! same bytes as an uninterrupted one's: sorted, with every id once.
//!
//! Like any DynamoDB scan, the copy is not a snapshot: a comment written while it runs may or
//! may not be in it, resumed or not.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::Context;

use super::copy_progress::{Pace, Progress, Saved, ScanState};
use super::export_file::{Format, LineWriter};
use super::{transfer, transfer_log, transfer_report};
use crate::domain::{Comment, LogEntry, Report};
use crate::store::CommentStore;
use crate::store::sqlite::modes;

/// The files of one export to DynamoDB's side.
pub(super) struct ScanFiles<'a> {
    pub spool: &'a Path,
    pub progress: &'a Path,
    pub partial: &'a Path,
}

/// Scans the table into the spool (from `saved`, saved again after every page), then writes
/// the sorted comments to the partial file; returns how many, and how many of them an earlier
/// run had scanned.
pub(super) async fn export<S: CommentStore>(
    store: &S,
    files: &ScanFiles<'_>,
    mut saved: Saved,
    format: Format,
    pace: &mut Pace,
) -> anyhow::Result<(u64, u64)> {
    let mut state = saved
        .scan
        .clone()
        .context("a DynamoDB export keeps a scan state")?;
    if state.segment > 0 || state.resume.is_some() {
        tracing::info!(
            segment = state.segment,
            segments = state.segments,
            comments = state.comments,
            "resuming an interrupted export's scan"
        );
    }
    let resumed_after = state.comments;
    let mut spool = open_spool(files.spool, state.spool_bytes)?;
    let mut progress = Progress::new("export scan");
    while state.segment < state.segments {
        let page = store
            .scan(state.segment, state.segments, state.resume.take())
            .await
            .context("scanning the table")?;
        let mut text = String::new();
        for comment in &page.items {
            text.push_str(&transfer::encode(comment));
            text.push('\n');
        }
        for entry in &page.log {
            text.push_str(&transfer_log::encode(entry));
            text.push('\n');
        }
        for report in &page.reports {
            text.push_str(&transfer_report::encode(report));
            text.push('\n');
        }
        spool
            .write_all(text.as_bytes())
            .and_then(|()| spool.sync_data())
            .with_context(|| format!("writing {}", files.spool.display()))?;
        state.spool_bytes += text.len() as u64;
        state.comments += page.items.len() as u64;
        state.resume = page.resume;
        if state.resume.is_none() {
            state.segment += 1;
        }
        saved.scan = Some(state.clone());
        saved.save(files.progress)?;
        progress.add(page.items.len() as u64);
        if let Some(wait) = pace.add(page.items.len() as u64) {
            tokio::time::sleep(wait).await;
        }
    }
    drop(spool);
    let Spooled {
        comments,
        log,
        reports,
    } = sorted(files.spool)?;
    let file = modes::create_private(files.partial)
        .with_context(|| format!("creating {}", files.partial.display()))?;
    let mut out = LineWriter::new(file, format);
    for comment in &comments {
        out.write(comment)?;
    }
    for entry in &log {
        out.write_log(entry)?;
    }
    for report in &reports {
        out.write_report(report)?;
    }
    out.finish()?;
    Ok((comments.len() as u64, resumed_after))
}

/// The state of a scan not yet begun.
pub(super) fn fresh_state(segments: u32) -> ScanState {
    ScanState {
        segments,
        segment: 0,
        resume: None,
        spool_bytes: 0,
        comments: 0,
    }
}

/// Opens the spool for appending after its first `keep` bytes (all of it that was recorded).
fn open_spool(path: &Path, keep: u64) -> anyhow::Result<File> {
    let context = || format!("opening {}", path.display());
    let mut file = modes::open_private(
        path,
        OpenOptions::new().write(true).create(true).truncate(false),
    )
    .with_context(context)?;
    let len = file.metadata().with_context(context)?.len();
    anyhow::ensure!(
        len >= keep,
        "{} holds {len} bytes, fewer than the {keep} its export progress recorded: remove it and its .export-progress to start over",
        path.display()
    );
    file.set_len(keep).with_context(context)?;
    file.seek(SeekFrom::End(0)).with_context(context)?;
    Ok(file)
}

/// What a scan spooled, sorted.
struct Spooled {
    comments: Vec<Comment>,
    log: Vec<LogEntry>,
    reports: Vec<Report>,
}

/// The spool's comments by id, each once (the newest version, should a scan meet one twice),
/// its moderation log entries by id, each once, and its reports by id, one per comment and
/// reader (the last the scan met).
fn sorted(spool: &Path) -> anyhow::Result<Spooled> {
    let file = File::open(spool).with_context(|| format!("opening {}", spool.display()))?;
    let (mut all, mut log, mut reports) = (Vec::new(), Vec::new(), Vec::new());
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", spool.display()))?;
        let bad = |reason| anyhow::anyhow!("{} line {}: {reason}", spool.display(), number + 1);
        if transfer_log::is_log_line(&line) {
            log.push(transfer_log::decode(&line).map_err(bad)?);
        } else if transfer_report::is_report_line(&line) {
            reports.push(transfer_report::decode(&line).map_err(bad)?);
        } else {
            all.push(transfer::decode(&line).map_err(bad)?);
        }
    }
    all.sort_by(|a, b| a.id.cmp(&b.id).then(b.version.cmp(&a.version)));
    all.dedup_by_key(|c| c.id);
    log.sort_by_key(|e| e.id);
    log.dedup_by_key(|e| e.id);
    let mut by_pair = std::collections::HashMap::new();
    for report in reports {
        by_pair.insert((report.comment, report.reporter.clone()), report);
    }
    let mut reports: Vec<Report> = by_pair.into_values().collect();
    reports.sort_by_key(|r| r.id);
    Ok(Spooled {
        comments: all,
        log,
        reports,
    })
}
