//! `dynapage export --out FILE`: every comment of a store as JSON Lines ([`super::transfer`]),
//! in id order, then the moderation log's entries ([`super::transfer_log`]), plain or zstd-compressed (`FILE.jsonl.zst`, [`super::export_file`]), from the
//! durable embedded store (`--data-dir`, read beside a running server from one snapshot) or
//! from DynamoDB (`--store dynamodb`: a scan, sorted in memory).
//!
//! The file is written as `FILE.partial` and renamed when complete, so a `FILE` is always
//! whole. An interrupted export resumes when run again with the same `--out` and source
//! (`FILE.export-progress` names the source): from the embedded store after the last complete
//! line (or zstd frame) of `FILE.partial`; from DynamoDB where its scan stopped
//! ([`super::export_scan`]). Either way the finished file is the same bytes as an
//! uninterrupted export's.
//!
//! `--out` may not be inside a data directory (the one read, or any other), and an existing
//! `FILE` is replaced only with `--force` ([`super::output`]); its files are `0600`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use super::copy_progress::{Pace, Progress, Saved, remove_if_there, store_name};
use super::export_file::{self, Format, LineWriter};
use super::export_scan::{self, ScanFiles};
use super::output::Output;
use crate::config::BackendArgs;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The file to write: JSON Lines, zstd-compressed when the name ends in `.zst`
    /// (`comments.jsonl.zst`). Written as FILE.partial, renamed when complete; run the same
    /// command again to resume an interrupted export. Not inside a data directory.
    #[arg(long, env = "DYNAPAGE_EXPORT_OUT")]
    pub out: PathBuf,
    /// At most this many comments a second (all when unset): spares a production table's read
    /// capacity, or the disk of a running server.
    #[arg(long, env = "DYNAPAGE_EXPORT_COMMENTS_PER_SECOND", value_parser = clap::value_parser!(u64).range(1..))]
    pub comments_per_second: Option<u64>,
    /// Segments of the DynamoDB scan, read one after the other (more segments: smaller steps
    /// to resume from). A resumed export keeps the count it started with.
    #[arg(long, env = "DYNAPAGE_EXPORT_SEGMENTS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub segments: u32,
    /// Replace FILE if it exists.
    #[arg(long, env = "DYNAPAGE_EXPORT_FORCE")]
    pub force: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// The files beside `--out` while an export runs.
struct Files {
    partial: PathBuf,
    progress: PathBuf,
    spool: PathBuf,
}

impl Files {
    fn beside(out: &Path) -> Self {
        let with = |suffix: &str| PathBuf::from(format!("{}.{suffix}", out.display()));
        Self {
            partial: with("partial"),
            progress: with("export-progress"),
            spool: with("scan"),
        }
    }

    /// Removes what an export left that `saved` (the state this run goes on from) does not
    /// cover: with nothing saved, an old partial file or spool is not resumed but replaced.
    fn start_over_unless(&self, saved: Option<&Saved>) -> anyhow::Result<()> {
        if saved.is_none() {
            remove_if_there(&self.partial)?;
            remove_if_there(&self.spool)?;
        }
        Ok(())
    }
}

pub(super) async fn run(args: ExportArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let output = Output {
        path: &args.out,
        flag: "--out / DYNAPAGE_EXPORT_OUT",
        force_flag: "--force / DYNAPAGE_EXPORT_FORCE",
        force: args.force,
    };
    output.check(args.backend.data_dir()?)?;
    let files = Files::beside(&args.out);
    let format = Format::of(&args.out);
    let source = store_name(&args.backend)?;
    let resumed = Saved::load(&files.progress, &source);
    let mut pace = Pace::new(args.comments_per_second);
    let (written, resumed_after) = match args.backend.data_dir()? {
        Some(dir) => {
            files.start_over_unless(resumed.as_ref())?;
            Saved { source, scan: None }.save(&files.progress)?;
            let (dir, partial) = (dir.to_owned(), files.partial.clone());
            tokio::task::spawn_blocking(move || export_embedded(&dir, &partial, format, pace))
                .await??
        }
        None => {
            let resumed = resumed.filter(|saved| {
                saved
                    .scan
                    .as_ref()
                    .is_some_and(|scan| scan.segments == args.segments)
            });
            files.start_over_unless(resumed.as_ref())?;
            let saved = resumed.unwrap_or_else(|| Saved {
                source,
                scan: Some(export_scan::fresh_state(args.segments)),
            });
            saved.save(&files.progress)?;
            let store = crate::startup::open_store(&args.backend).await?;
            let scan_files = ScanFiles {
                spool: &files.spool,
                progress: &files.progress,
                partial: &files.partial,
            };
            export_scan::export(&store, &scan_files, saved, format, &mut pace).await?
        }
    };
    output.place(&files.partial)?;
    remove_if_there(&files.spool)?;
    remove_if_there(&files.progress)?;
    report(written, resumed_after, &args.out, started);
    Ok(())
}

fn report(written: u64, resumed_after: u64, out: &Path, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(
        comments = written,
        resumed_after,
        elapsed_ms = (secs * 1000.0) as u64,
        "export done"
    );
    println!(
        "exported {written} comments to {}, resumed after {resumed_after}, in {secs:.1} s ({:.0} comments/s)",
        out.display(),
        written.saturating_sub(resumed_after) as f64 / secs.max(0.001)
    );
}

/// Writes the embedded store's comments after what `partial` already holds; returns how many
/// the file holds then, and how many it held before.
fn export_embedded(
    dir: &Path,
    partial: &Path,
    format: Format,
    mut pace: Pace,
) -> anyhow::Result<(u64, u64)> {
    let point = export_file::resume_point(partial, format)?;
    if let Some(id) = point.after {
        tracing::info!(after = %id, lines = point.lines, "resuming an interrupted export");
    }
    let mut out = LineWriter::new(point.file, format);
    let mut written = point.lines;
    let mut progress = Progress::new("export");
    crate::store::sqlite::read_ordered::<anyhow::Error>(dir, point.after, |comment| {
        out.write(&comment)?;
        written += 1;
        progress.add(1);
        if let Some(wait) = pace.add(1) {
            std::thread::sleep(wait);
        }
        Ok(())
    })?;
    // The moderation log follows the comments ([`super::transfer_log`]); a resumed export
    // cuts its file before the first entry's line and writes them all again.
    for entry in crate::store::sqlite::read_log(dir)? {
        out.write_log(&entry)?;
    }
    for report in crate::store::sqlite::read_reports(dir)? {
        out.write_report(&report)?;
    }
    out.finish()?;
    Ok((written, point.lines))
}
