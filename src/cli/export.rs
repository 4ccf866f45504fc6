//! `dynapage export --out FILE`: every comment of a store as JSON Lines ([`super::transfer`]),
//! in id order, from the durable embedded store (`--data-dir`, read beside a running server
//! from one snapshot) or from DynamoDB (`--store dynamodb`: a scan, sorted in memory).
//!
//! The file is written as `FILE.partial` and renamed when complete, so a `FILE` is always
//! whole. An interrupted export of the embedded store resumes after the last complete line of
//! its `.partial` file; one of DynamoDB starts over (its scan has no order to resume in).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use super::transfer;
use crate::config::BackendArgs;
use crate::domain::{Comment, CommentId};
use crate::store::CommentStore;

/// Segments of the DynamoDB scan.
const SEGMENTS: u32 = 4;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The JSON Lines file to write (written as FILE.partial, renamed when complete).
    #[arg(long, env = "DYNAPAGE_EXPORT_OUT")]
    pub out: PathBuf,
    #[command(flatten)]
    pub backend: BackendArgs,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let partial = PathBuf::from(format!("{}.partial", args.out.display()));
    let mut progress = Progress::new("export");
    let written = match args.backend.data_dir()? {
        Some(dir) => {
            let (dir, partial) = (dir.to_owned(), partial.clone());
            tokio::task::spawn_blocking(move || export_embedded(&dir, &partial, &mut progress))
                .await??
        }
        None => {
            let store = crate::startup::open_store(&args.backend).await?;
            let comments = scan_all(&store, &mut progress).await?;
            write_all(&partial, &comments)?
        }
    };
    std::fs::rename(&partial, &args.out)
        .with_context(|| format!("renaming {} to {}", partial.display(), args.out.display()))?;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(
        comments = written,
        elapsed_ms = (secs * 1000.0) as u64,
        "export done"
    );
    println!(
        "exported {written} comments to {} in {secs:.1} s ({:.0} comments/s)",
        args.out.display(),
        written as f64 / secs.max(0.001)
    );
    Ok(())
}

/// Progress of a long copy: a log line every few seconds.
pub struct Progress {
    what: &'static str,
    done: u64,
    started: Instant,
    next: Instant,
}

impl Progress {
    pub fn new(what: &'static str) -> Self {
        let now = Instant::now();
        Self {
            what,
            done: 0,
            started: now,
            next: now + Duration::from_secs(2),
        }
    }

    pub fn add(&mut self, n: u64) {
        self.done += n;
        if Instant::now() >= self.next {
            self.next += Duration::from_secs(2);
            tracing::info!(
                what = self.what,
                comments = self.done,
                elapsed_ms = self.started.elapsed().as_millis() as u64,
                "progress"
            );
        }
    }
}

/// Writes the embedded store's comments after what `partial` already holds.
fn export_embedded(dir: &Path, partial: &Path, progress: &mut Progress) -> anyhow::Result<u64> {
    let (file, after, kept) = resume_point(partial)?;
    if let Some(id) = after {
        tracing::info!(after = %id, lines = kept, "resuming an interrupted export");
    }
    let mut out = BufWriter::new(file);
    let mut written = kept;
    crate::store::sqlite::read_ordered::<anyhow::Error>(dir, after, |comment| {
        writeln!(out, "{}", transfer::encode(&comment))?;
        written += 1;
        progress.add(1);
        Ok(())
    })?;
    finish(out)?;
    Ok(written)
}

/// Opens `partial` for appending after its last complete line (cutting off a torn one), and
/// returns the id of that line and the number of lines kept.
fn resume_point(partial: &Path) -> anyhow::Result<(File, Option<CommentId>, u64)> {
    let context = || format!("opening {}", partial.display());
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(partial)
        .with_context(context)?;
    let (mut good_len, mut last, mut lines) = (0u64, None, 0u64);
    let mut reader = BufReader::new(&file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).with_context(context)?;
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let Ok(comment) = transfer::decode(line.trim_end()) else {
            break;
        };
        good_len += n as u64;
        last = Some(comment.id);
        lines += 1;
    }
    file.set_len(good_len).with_context(context)?;
    file.seek(SeekFrom::End(0)).with_context(context)?;
    Ok((file, last, lines))
}

async fn scan_all<S: CommentStore>(
    store: &S,
    progress: &mut Progress,
) -> anyhow::Result<Vec<Comment>> {
    let mut all = Vec::new();
    for segment in 0..SEGMENTS {
        let mut resume = None;
        loop {
            let page = store
                .scan(segment, SEGMENTS, resume)
                .await
                .context("scanning the table")?;
            progress.add(page.items.len() as u64);
            all.extend(page.items);
            resume = page.resume;
            if resume.is_none() {
                break;
            }
        }
    }
    all.sort_by_key(|c| c.id);
    Ok(all)
}

fn write_all(partial: &Path, comments: &[Comment]) -> anyhow::Result<u64> {
    let file = File::create(partial).with_context(|| format!("creating {}", partial.display()))?;
    let mut out = BufWriter::new(file);
    for comment in comments {
        writeln!(out, "{}", transfer::encode(comment))?;
    }
    finish(out)?;
    Ok(comments.len() as u64)
}

fn finish(out: BufWriter<File>) -> anyhow::Result<()> {
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(())
}
