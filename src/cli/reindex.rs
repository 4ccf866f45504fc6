//! `dynapage reindex [--sku S]`: rebuilds the Redis index from a parallel scan of the table,
//! safe under live writes (`crate::sync::reindex`), with a progress bar.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::config::BackendArgs;
use crate::domain::Sku;
use crate::startup::{Process, open_backends};

#[derive(Args, Debug)]
pub struct ReindexArgs {
    /// Rebuild only this product. The table is still scanned in full (filtered here), since a
    /// scan cannot be limited to one product.
    #[arg(long, env = "DYNAPAGE_REINDEX_SKU")]
    pub sku: Option<String>,
    /// Scan segments read concurrently.
    #[arg(long, env = "DYNAPAGE_SCAN_SEGMENTS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub segments: u32,
    #[command(flatten)]
    pub backend: BackendArgs,
}

pub(super) async fn run(args: ReindexArgs) -> anyhow::Result<()> {
    args.backend.require_dynamodb_and_redis("reindex")?;
    let sku = args
        .sku
        .as_deref()
        .map(Sku::parse)
        .transpose()
        .context("--sku / DYNAPAGE_REINDEX_SKU")?;
    let shutdown = CancellationToken::new();
    let backends = open_backends(&args.backend, Process::Reindex, &shutdown).await?;
    let progress = progress_bar();
    let report = crate::sync::reindex(
        &backends.store,
        &backends.index,
        sku.as_ref(),
        args.segments,
        &progress,
    )
    .await
    .context("reindex")?;
    progress.finish_and_clear();
    shutdown.cancel();
    println!(
        "reindexed {} comments of {} products ({} scanned) in {} ms",
        report.indexed + report.stale,
        report.products,
        report.scanned,
        report.elapsed.as_millis()
    );
    println!(
        "{} older than what the index held; read again: {} removed, {} repaired",
        report.stale, report.removed, report.repaired
    );
    if report.reranked > 0 {
        println!(
            "{} comments placed in the table's list by helpful votes (written before it existed)",
            report.reranked
        );
    }
    Ok(())
}

/// A spinner counting scanned comments on standard error; hidden when that is not a terminal
/// (logs and CI output stay clean).
pub(super) fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {pos} comments scanned {per_sec} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    )
}
