//! `dynapage export-person --sub SUB --out FILE` and `dynapage erase-person --sub SUB`: a
//! person's data (GDPR arts. 15, 17 and 20) from the store (`--data-dir` with the server
//! stopped, or `--store dynamodb` at any time; a signed-in person exports their own from a
//! running server at `GET /me/export` and erases it with `eraseMyData`). See
//! [`crate::privacy`] and `docs/privacy.md`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;

use super::output::Output;
use crate::config::BackendArgs;
use crate::domain::{ErasureMode, ErasureReceipt};
use crate::privacy::{self, Erasure};

#[derive(Args, Debug)]
pub struct ExportPersonArgs {
    /// The person: the `sub` of their tokens (what their comments, votes and reports keep).
    #[arg(long)]
    pub sub: String,
    /// The JSON file to write (written as FILE.partial, renamed when complete); not inside a
    /// data directory. It holds personal data: it is made readable by its owner only.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Args, Debug)]
pub struct ErasePersonArgs {
    /// The person: the `sub` of their tokens.
    #[arg(long)]
    pub sub: String,
    /// What becomes of their comments: `delete` removes them; `anonymize` keeps body and
    /// rating under the author "Former customer", the subject removed. Votes and reports are
    /// removed either way.
    #[arg(long, default_value = "delete", value_parser = clap::value_parser!(ErasureMode))]
    pub mode: ErasureMode,
    /// Count what would be erased; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

impl clap::builder::ValueParserFactory for ErasureMode {
    type Parser = clap::builder::ValueParser;

    fn value_parser() -> Self::Parser {
        clap::builder::ValueParser::new(|text: &str| text.parse::<ErasureMode>())
    }
}

pub(super) async fn export(args: ExportPersonArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let output = Output {
        path: &args.out,
        flag: "--out",
        force_flag: "--force",
        force: args.force,
    };
    output.check(args.backend.data_dir()?)?;
    let store = crate::startup::open_store(&args.backend).await?;
    let partial = PathBuf::from(format!("{}.partial", args.out.display()));
    let file = private_file(&partial)?;
    let mut out = tokio::io::BufWriter::new(tokio::fs::File::from_std(file));
    let summary = privacy::export(&store, &args.sub, crate::clock::now_ms(), &mut out)
        .await
        .with_context(|| format!("exporting {} to {}", args.sub, partial.display()))?;
    out.into_inner().sync_all().await?;
    output.place(&partial)?;
    println!(
        "exported {} comments, {} helpful votes and {} reports of {} to {} in {:.1} s",
        summary.comments,
        summary.helpful_votes,
        summary.reports,
        args.sub,
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A new file only its owner may read (an export is personal data).
fn private_file(path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

pub(super) async fn erase(args: ErasePersonArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let store = crate::startup::open_store(&args.backend).await?;
    let erasure = Erasure {
        sub: args.sub.clone(),
        mode: args.mode,
        dry_run: args.dry_run,
    };
    let bar = progress_bar();
    let receipt = privacy::erase(&store, &erasure, |receipt| {
        bar.set_position(receipt.total())
    })
    .await
    .with_context(|| {
        format!(
            "erasing {} (run again to resume: it is idempotent)",
            args.sub
        )
    })?;
    bar.finish_and_clear();
    if let crate::store::AnyStore::Sqlite(sqlite) = store {
        sqlite.close().await;
    }
    print_receipt(
        &args.sub,
        &erasure,
        &receipt,
        started.elapsed().as_secs_f64(),
    )
}

fn print_receipt(
    sub: &str,
    erasure: &Erasure,
    receipt: &ErasureReceipt,
    seconds: f64,
) -> anyhow::Result<()> {
    let receipt = serde_json::json!({
        "subject": sub,
        "mode": erasure.mode.as_str(),
        "dryRun": erasure.dry_run,
        "receipt": receipt,
        "seconds": (seconds * 10.0).round() / 10.0,
    });
    println!("{}", serde_json::to_string_pretty(&receipt)?);
    Ok(())
}

/// A counter of what was erased on standard error; hidden when that is not a terminal.
fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {pos} items erased {per_sec} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    )
}
