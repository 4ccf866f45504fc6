//! `dynapage import --in FILE`: loads an export ([`super::transfer`]; plain, or zstd-compressed
//! as its first bytes say, [`super::export_file`]) into the durable embedded
//! store (`--data-dir`, whose index follows at once, or at the server's next start) or into
//! DynamoDB (`--store dynamodb`: batch writes, which go through the table's stream like any
//! write, so `sync` indexes them).
//!
//! Idempotent: a comment is written only if the store lacks it or holds an older version of
//! it, so importing twice writes nothing the second time and an import never puts an older
//! state over a newer one. The same holds inside one batch: of the lines of one id, the one
//! with the newest version is written, whatever their order (`cat new.jsonl old.jsonl`).
//! The moderation log's lines ([`super::transfer_log`]) are written as they are, each entry
//! once (an entry the store holds is left: entries are never changed), and so are reports'
//! ([`super::transfer_report`]: a report replaces the one of its comment and reader, so an
//! import of a later export brings a report's outcome along).
//! Resumable: after each written batch, the number of lines done is saved in
//! `FILE.import-progress` with the destination it belongs to; a rerun to the same destination
//! starts after them (a batch redone after a crash is skipped by the version rule), and the
//! file is removed when the import completes.
//!
//! Every line is input from outside (STYLE 17): it is read bounded ([`super::import_lines`]),
//! its fields checked ([`transfer::decode`]: a version from 1 to the ceiling, times in range),
//! and its author and body held to the API's text rules ([`Comment::with_checked_text`]:
//! cleaned like `addComment` cleans them, refused where `addComment` refuses). A line refused
//! stops the import with its file, its number and the reason, before anything of its batch is
//! written (the batches before it are written and saved, so a rerun after the line is mended
//! resumes there): an export never writes such a line, so one means the file was made or
//! edited elsewhere, and skipping it would lose a comment from a migration without anyone
//! looking.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};

use super::copy_progress::{Pace, Progress, remove_if_there, store_name};
use super::export_file::open_lines;
use super::import_lines::BoundedLines;
use super::output::refuse_in_data_dir;
use super::{transfer, transfer_log, transfer_report};
use crate::config::BackendArgs;
use crate::domain::{Comment, LogEntry, Report};
use crate::store::CommentStore;
use crate::store::sqlite::modes;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The JSON Lines file to read (as `export` writes it).
    #[arg(long = "in", env = "DYNAPAGE_IMPORT_IN")]
    pub input: PathBuf,
    /// Comments written per batch (and per saved progress step).
    #[arg(long, env = "DYNAPAGE_IMPORT_BATCH", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
    /// At most this many comments a second (all when unset): spares the destination table's
    /// write capacity.
    #[arg(long, env = "DYNAPAGE_IMPORT_COMMENTS_PER_SECOND", value_parser = clap::value_parser!(u64).range(1..))]
    pub comments_per_second: Option<u64>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// What `FILE.import-progress` holds.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Saved {
    destination: String,
    lines: u64,
}

/// What an import did.
#[derive(Debug, Default)]
struct Tally {
    lines: u64,
    written: u64,
    already_there: u64,
    /// Lines of an id that a line of the same batch with a newer version replaces.
    superseded: u64,
    /// Lines whose author or body the text rules changed (a control or bidi character taken
    /// out, spaces trimmed).
    cleaned: u64,
    /// Moderation log entries written (or found there already: an entry is written once).
    entries: u64,
    /// Reports written (replacing one of the same comment and reader).
    reports: u64,
}

/// The lines read since the last write: comments, and moderation log entries
/// ([`super::transfer_log`]).
#[derive(Default)]
struct Batch {
    comments: Vec<Comment>,
    entries: Vec<LogEntry>,
    reports: Vec<Report>,
}

impl Batch {
    /// Adds the comment or log entry `line` holds, checked (a comment's text cleaned, counted
    /// in `tally`); why not, when it is refused.
    fn read(&mut self, line: &str, tally: &mut Tally) -> Result<(), String> {
        if transfer_log::is_log_line(line) {
            self.entries.push(transfer_log::decode(line)?);
            return Ok(());
        }
        if transfer_report::is_report_line(line) {
            self.reports.push(transfer_report::decode(line)?);
            return Ok(());
        }
        let read = transfer::decode(line)?;
        let comment = read
            .clone()
            .with_checked_text()
            .map_err(|e| e.to_string())?;
        tally.cleaned += u64::from(comment != read);
        self.comments.push(comment);
        Ok(())
    }

    fn len(&self) -> usize {
        self.comments.len() + self.entries.len() + self.reports.len()
    }
}

pub(super) async fn run(args: ImportArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let destination = store_name(&args.backend)?;
    let progress_file = PathBuf::from(format!("{}.import-progress", args.input.display()));
    // The progress is saved beside the input: not inside a data directory.
    if let Some(dir) = progress_file.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        refuse_in_data_dir(dir, "--in / DYNAPAGE_IMPORT_IN", &args.input)?;
    }
    let resume_after = saved_lines(&progress_file, &destination);
    let lines = open_lines(&args.input)?;
    let store = crate::startup::open_store(&args.backend).await?;
    if resume_after > 0 {
        tracing::info!(lines = resume_after, "resuming an interrupted import");
    }
    let mut tally = Tally {
        lines: resume_after,
        ..Tally::default()
    };
    let mut progress = Progress::new("import");
    let mut pace = Pace::new(args.comments_per_second);
    let mut batch = Batch::default();
    let mut lines = BoundedLines::new(lines);
    while let Some(line) = lines.next_line() {
        let (number, line) = line.with_context(|| format!("reading {}", args.input.display()))?;
        if number <= resume_after || line.trim().is_empty() {
            continue;
        }
        let done = tally.lines;
        let refused = |reason: String| {
            anyhow::anyhow!(
                "{} line {number}: {reason}; nothing of its batch was written (mend or remove the line and run the import again: it resumes after line {done})",
                args.input.display(),
            )
        };
        batch.read(line, &mut tally).map_err(refused)?;
        if batch.len() as u64 == args.batch {
            write_batch(&store, &mut batch, &mut tally, &mut progress).await?;
            tally.lines = number;
            save(&progress_file, &destination, number)?;
            if let Some(wait) = pace.add(args.batch) {
                tokio::time::sleep(wait).await;
            }
        }
    }
    write_batch(&store, &mut batch, &mut tally, &mut progress).await?;
    remove_if_there(&progress_file)?;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(
        written = tally.written,
        already_there = tally.already_there,
        elapsed_ms = (secs * 1000.0) as u64,
        "import done"
    );
    println!(
        "imported {}: {} comments written, {} already there, {} older lines of an id replaced by a newer line, {} texts cleaned, {} moderation log entries, {} reports, resumed after line {resume_after}, in {secs:.1} s ({:.0} comments/s)",
        args.input.display(),
        tally.written,
        tally.already_there,
        tally.superseded,
        tally.cleaned,
        tally.entries,
        tally.reports,
        (tally.written + tally.already_there) as f64 / secs.max(0.001)
    );
    Ok(())
}

/// Writes the comments of `batch` the store lacks or holds older, and its log entries (each
/// once), and empties it.
async fn write_batch<S: CommentStore>(
    store: &S,
    batch: &mut Batch,
    tally: &mut Tally,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let entries = std::mem::take(&mut batch.entries);
    store
        .put_log(&entries)
        .await
        .context("writing the moderation log")?;
    tally.entries += entries.len() as u64;
    progress.add(entries.len() as u64);
    let reports = std::mem::take(&mut batch.reports);
    store
        .put_reports(&reports)
        .await
        .context("writing the reports")?;
    tally.reports += reports.len() as u64;
    progress.add(reports.len() as u64);
    if batch.comments.is_empty() {
        return Ok(());
    }
    let lines = batch.comments.len() as u64;
    let newest = newest_of_each(std::mem::take(&mut batch.comments));
    tally.superseded += lines - newest.len() as u64;
    let ids: Vec<_> = newest.iter().map(|c| c.id).collect();
    let held = store.get_many(&ids).await.context("reading the store")?;
    let fresh: Vec<Comment> = newest
        .into_iter()
        .zip(held)
        .filter(|(comment, held)| held.as_ref().is_none_or(|h| h.version < comment.version))
        .map(|(comment, _)| comment)
        .collect();
    tally.already_there += ids.len() as u64 - fresh.len() as u64;
    store.put_batch(&fresh).await.context("writing the store")?;
    tally.written += fresh.len() as u64;
    progress.add(lines);
    Ok(())
}

/// One comment per id, the one with the newest version (the first of equal ones, as the
/// version rule keeps the first written across batches), in the order of their first lines.
///
/// Every store's `put_batch` writes a batch in order, so the last line of an id would win
/// whatever its version (and DynamoDB refuses a `BatchWriteItem` with two puts of one key
/// outright); and `get_many` answers each id once, so two lines of one id would both be
/// compared with the stored version and both pass.
fn newest_of_each(batch: Vec<Comment>) -> Vec<Comment> {
    let mut at: HashMap<_, usize> = HashMap::with_capacity(batch.len());
    let mut kept: Vec<Comment> = Vec::with_capacity(batch.len());
    for comment in batch {
        match at.get(&comment.id) {
            Some(&i) if kept[i].version < comment.version => kept[i] = comment,
            Some(_) => {}
            None => {
                at.insert(comment.id, kept.len());
                kept.push(comment);
            }
        }
    }
    kept
}

fn saved_lines(path: &Path, destination: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    match serde_json::from_str::<Saved>(&text) {
        Ok(saved) if saved.destination == destination => saved.lines,
        Ok(_) => {
            tracing::warn!(file = %path.display(), "a saved import progress for another destination is ignored");
            0
        }
        Err(_) => 0,
    }
}

fn save(path: &Path, destination: &str, lines: u64) -> anyhow::Result<()> {
    let temporary = PathBuf::from(format!("{}.tmp", path.display()));
    let saved = Saved {
        destination: destination.to_owned(),
        lines,
    };
    modes::write_private(&temporary, &serde_json::to_vec(&saved)?)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("saving the import progress in {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CommentDraft, CommentId};

    fn at(id: CommentId, version: u64, body: &str) -> Comment {
        Comment {
            id,
            version,
            ..CommentDraft::new("SKU", "ann", body, 3)
                .expect("valid")
                .into_comment(1_000)
        }
    }

    #[test]
    fn the_newest_line_of_an_id_wins_whatever_the_order() {
        let (a, b) = (CommentId::from_parts(1, 1), CommentId::from_parts(1, 2));
        let kept = newest_of_each(vec![
            at(a, 3, "a new"),
            at(b, 1, "b"),
            at(a, 1, "a old"),
            at(a, 2, "a middle"),
            at(b, 1, "b again, same version"),
        ]);
        let seen: Vec<_> = kept
            .iter()
            .map(|c| (c.id, c.version, c.body.as_str()))
            .collect();
        assert_eq!(seen, [(a, 3, "a new"), (b, 1, "b")]);
        let kept = newest_of_each(vec![at(a, 1, "old"), at(a, 2, "new")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].body, "new");
    }
}
