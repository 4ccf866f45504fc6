//! `dynapage import --in FILE`: loads an export ([`super::transfer`]; plain, or zstd-compressed
//! as its first bytes say, [`super::export_file`]) into the durable embedded
//! store (`--data-dir`, whose index follows at once, or at the server's next start) or into
//! DynamoDB (`--store dynamodb`: batch writes, which go through the table's stream like any
//! write, so `sync` indexes them).
//!
//! Idempotent: a comment is written only if the store lacks it or holds an older version of
//! it, so importing twice writes nothing the second time and an import never puts an older
//! state over a newer one. Resumable: after each written batch, the number of lines done is
//! saved in `FILE.import-progress` with the destination it belongs to; a rerun to the same
//! destination starts after them (a batch redone after a crash is skipped by the version
//! rule), and the file is removed when the import completes.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};

use super::copy_progress::{Pace, Progress, remove_if_there, store_name};
use super::export_file::open_lines;
use super::transfer;
use crate::config::BackendArgs;
use crate::domain::Comment;
use crate::store::CommentStore;

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
}

pub async fn run(args: ImportArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let destination = store_name(&args.backend)?;
    let progress_file = PathBuf::from(format!("{}.import-progress", args.input.display()));
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
    let mut batch = Vec::new();
    for (number, line) in lines.lines().enumerate() {
        let number = number as u64 + 1;
        let line = line.with_context(|| format!("reading {}", args.input.display()))?;
        if number <= resume_after || line.trim().is_empty() {
            continue;
        }
        let comment = transfer::decode(&line).map_err(|reason| {
            anyhow::anyhow!("{} line {number}: {reason}", args.input.display())
        })?;
        batch.push(comment);
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
        "imported {}: {} comments written, {} already there, resumed after line {resume_after}, in {secs:.1} s ({:.0} comments/s)",
        args.input.display(),
        tally.written,
        tally.already_there,
        (tally.written + tally.already_there) as f64 / secs.max(0.001)
    );
    Ok(())
}

/// Writes the comments of `batch` the store lacks or holds older, and empties it.
async fn write_batch<S: CommentStore>(
    store: &S,
    batch: &mut Vec<Comment>,
    tally: &mut Tally,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let ids: Vec<_> = batch.iter().map(|c| c.id).collect();
    let held = store.get_many(&ids).await.context("reading the store")?;
    let fresh: Vec<Comment> = batch
        .drain(..)
        .zip(held)
        .filter(|(comment, held)| held.as_ref().is_none_or(|h| h.version < comment.version))
        .map(|(comment, _)| comment)
        .collect();
    tally.already_there += ids.len() as u64 - fresh.len() as u64;
    store.put_batch(&fresh).await.context("writing the store")?;
    tally.written += fresh.len() as u64;
    progress.add(ids.len() as u64);
    Ok(())
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
    std::fs::write(&temporary, serde_json::to_vec(&saved)?)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("saving the import progress in {}", path.display()))
}
